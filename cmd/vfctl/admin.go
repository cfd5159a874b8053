package main

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/cmd/internal/adminc"
	"github.com/vhcrd/vhcrd/vhcr/irq"
)

// postAdminAt sends one request to the admin socket of --admin-socket, or
// of the vhcrd serving --bar, and prints the answer.
func postAdminAt(sock, barSpec string, req map[string]any, timeout time.Duration) error {
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
	_, err = os.Stdout.Write(line)
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

// pfBAR is the BAR spec that explains a socket that cannot be reached: the
// one the socket path was derived from (none for an explicit socket).
func pfBAR(sock, barSpec string) string {
	if sock != "" {
		return ""
	}
	return barSpec
}
