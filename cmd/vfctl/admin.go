package main

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/cmd/internal/adminc"
	"github.com/vhcrd/vhcrd/vhcr/irq"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

// postAdminAt sends one request to the admin socket of --admin-socket, or
// of the vhcrd serving --bar; with jsonOut it prints the answer (one JSON
// line), else text, the caller's.
func postAdminAt(sock, barSpec string, req map[string]any, timeout time.Duration, jsonOut bool, text string) error {
	path := sock
	if path == "" {
		var err error
		if path, err = adminc.DefaultSocket(barSpec); err != nil {
			return usageErr(err)
		}
	}
	line, err := adminc.Call(adminc.Socket{Path: path, BAR: pfBAR(sock, barSpec)}, req, timeout)
	if err != nil {
		return err
	}
	if jsonOut {
		_, err = os.Stdout.Write(line)
		return err
	}
	_, err = fmt.Println(text)
	return err
}

// vfIRQ asks the vhcrd serving barSpec for VF vf's MSI-X eventfds (the
// admin socket's vf.irq) and returns vector 0's, the vector of the EQs
// vfdrv creates; the others are closed.
func vfIRQ(barSpec string, vf int) (*os.File, error) {
	path, err := adminc.DefaultSocket(barSpec)
	if err != nil {
		return nil, err
	}
	_, fds, err := adminc.CallFDs(adminc.Socket{Path: path, BAR: barSpec}, map[string]any{"cmd": "vf.irq", "vf": vf}, 10*time.Second, irq.MaxVectors)
	if err != nil {
		return nil, err
	}
	if len(fds) == 0 {
		return nil, fmt.Errorf("VF %d: no MSI-X vectors handed over", vf)
	}
	for _, fd := range fds[1:] {
		_ = unix.Close(fd)
	}
	return os.NewFile(uintptr(fds[0]), fmt.Sprintf("vf%d-msix0", vf)), nil
}

// reasonWait bounds the admin socket exchange that asks for a refusal's
// reason: a refused command's status is printed either way.
const reasonWait = 2 * time.Second

// pfReason is the reason the PF recorded for VF v's command op, which it
// answered with status: VF v's last refusal as the admin socket of the
// vhcrd serving barSpec reports it (vf.show), if that is this command (the
// same opcode, status and slave_write toggle). Nil when no admin socket
// answers or the PF's last refusal is another command's.
func pfReason(barSpec string, v *vfclient.VF, op mlx4.Opcode, status mlx4.Status) *adminc.Refusal {
	path, err := adminc.DefaultSocket(barSpec)
	if err != nil {
		return nil
	}
	// No BAR in the socket: a socket nobody answers is not waited for.
	r, err := adminc.LastRefusal(adminc.Socket{Path: path}, v.Index, min(reasonWait, *timeout))
	if err != nil || r == nil {
		return nil
	}
	if r.Opcode != op.String() || r.StatusCode != uint8(status) || r.Toggle != v.SlaveRead()>>mlx4.CommToggleShift {
		return nil
	}
	return r
}

// withReason is a command's status as vfctl prints it: "BAD_PARAM (0x03)",
// followed by the PF's reason where r is not nil.
func withReason(status mlx4.Status, r *adminc.Refusal) string {
	if r == nil {
		return status.String()
	}
	return fmt.Sprintf("%s: %s (%s)", status.String(), r.Reason, r.Text)
}

// pfBAR is the BAR spec that explains a socket that cannot be reached: the
// one the socket path was derived from (none for an explicit socket).
func pfBAR(sock, barSpec string) string {
	if sock != "" {
		return ""
	}
	return barSpec
}
