// Package adminc is the client half of vhcrd's admin socket, shared by
// vhcrd's own admin commands (vf, port) and vfctl (flr, port): where the
// socket of a BAR region is, and one request/answer exchange on it (one JSON
// line each way; an answer "# error: ..." is a refusal). The server is
// cmd/vhcrd/admin.go; `vhcrd trace` streams instead and uses package
// vhcr/master/trace's Follow.
package adminc

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

// ErrRefused wraps the daemon's "# error: ..." answer.
var ErrRefused = errors.New("vhcrd")

// DefaultSocket is the admin socket of the vhcrd serving the BAR spec: the
// file's path + ".sock" for a file region, /run/vhcrd/SCHEME-DEV[-N].sock
// for a device.
func DefaultSocket(barSpec string) (string, error) {
	sp, err := bar.ParseSpec(barSpec)
	if err != nil {
		return "", fmt.Errorf("--bar: %w", err)
	}
	if sp.Scheme == "file" {
		return sp.Path + ".sock", nil
	}
	return vfclient.DevicePath(vfclient.RunDir, sp, ".sock"), nil
}

// Socket is an admin socket to call: its path and, where known, the BAR
// spec of the PF that serves it ("" for none), by which a dial that fails
// is explained.
type Socket struct {
	Path string
	BAR  string
}

// Dial connects to s within timeout. Where the socket cannot be reached
// (no file, nobody listening) and s.BAR is a file region, the region's
// owner claim decides (vfclient.CheckPF): no holder is reported at once (a PF
// that was killed wraps vfclient.ErrPFDead, one that stopped vfclient.ErrNoPF); a
// holder is a PF starting, whose socket is waited for until timeout.
func (s Socket) Dial(timeout time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(timeout)
	ctrl := ""
	if sp, err := bar.ParseSpec(s.BAR); err == nil && sp.Scheme == "file" && sp.Offset == 0 {
		ctrl = sp.Path
	}
	for {
		c, err := net.DialTimeout("unix", s.Path, max(time.Until(deadline), time.Millisecond))
		if err == nil {
			return c, nil
		}
		absent := errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
		var ne net.Error
		if !absent && errors.As(err, &ne) && ne.Timeout() {
			// The deadline passed before the dial tried (a loaded machine,
			// a short timeout): the socket file as it is now decides.
			_, serr := os.Stat(s.Path)
			absent = errors.Is(serr, os.ErrNotExist)
		}
		if ctrl == "" || !absent {
			return nil, fmt.Errorf("admin socket: %w (is vhcrd serving? see --admin-socket)", err)
		}
		if perr := vfclient.CheckPF(ctrl); perr != nil {
			if errors.Is(perr, os.ErrNotExist) {
				return nil, fmt.Errorf("admin socket: %w (is vhcrd serving? no region %s)", err, ctrl)
			}
			return nil, fmt.Errorf("admin socket %s: %w", s.Path, perr)
		}
		if !time.Now().Before(deadline) {
			return nil, fmt.Errorf("admin socket: %w (a PF holds %s but has not opened this socket: starting, or serving with another --admin-socket)", err, ctrl)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Call sends req, as one JSON line, to the admin socket s and returns the
// one-line answer (newline included). A refusal is an error wrapping
// ErrRefused; timeout bounds the whole exchange.
func Call(s Socket, req any, timeout time.Duration) ([]byte, error) {
	conn, err := s.Dial(timeout)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	line, err := bufio.NewReaderSize(conn, 1<<20).ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && line != "") {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	if msg, ok := strings.CutPrefix(line, "# error: "); ok {
		return nil, fmt.Errorf("%w: %s", ErrRefused, strings.TrimSpace(msg))
	}
	return []byte(line), nil
}

// Refusal is the last_refusal of a vf.show answer: the last VHCR_POST of
// the VF that the PF answered with a status other than OK, the reason the
// PF recorded (the refusal counter's label) and the toggle of the
// slave_write word that posted it.
type Refusal struct {
	Opcode     string `json:"opcode"`
	Status     string `json:"status"`
	StatusCode uint8  `json:"status_code"`
	Reason     string `json:"reason"`
	Text       string `json:"reason_text"`
	Toggle     uint32 `json:"toggle"`
}

// LastRefusal asks the admin socket s for VF vf's last refusal (vf.show);
// nil and no error when the PF has refused none of its commands.
func LastRefusal(s Socket, vf int, timeout time.Duration) (*Refusal, error) {
	line, err := Call(s, map[string]any{"cmd": "vf.show", "vf": vf}, timeout)
	if err != nil {
		return nil, err
	}
	var a struct {
		Refused *Refusal `json:"last_refusal"`
	}
	if err := json.Unmarshal(line, &a); err != nil {
		return nil, fmt.Errorf("admin socket: vf.show: %w", err)
	}
	return a.Refused, nil
}
