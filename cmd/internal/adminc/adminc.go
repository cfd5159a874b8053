// Package adminc is the client half of vhcrd's admin socket, shared by
// vhcrd's own admin commands (vf, port) and vfctl (flr, port): where the
// socket of a BAR region is, and one request/answer exchange on it (one JSON
// line each way; an answer "# error: ..." is a refusal). The server is
// cmd/vhcrd/admin.go; `vhcrd trace` streams instead and uses package
// vhcr/trace's Follow.
package adminc

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr"
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
	return vhcr.DevicePath(vhcr.RunDir, sp, ".sock"), nil
}

// Call sends req, as one JSON line, to the admin socket at path and returns
// the one-line answer (newline included). A refusal is an error wrapping
// ErrRefused; timeout bounds the whole exchange.
func Call(path string, req any, timeout time.Duration) ([]byte, error) {
	conn, err := net.DialTimeout("unix", path, timeout)
	if err != nil {
		return nil, fmt.Errorf("admin socket: %w (is vhcrd serving? see --admin-socket)", err)
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

// LastRefusal asks the admin socket at path for VF vf's last refusal
// (vf.show); nil and no error when the PF has refused none of its commands.
func LastRefusal(path string, vf int, timeout time.Duration) (*Refusal, error) {
	line, err := Call(path, map[string]any{"cmd": "vf.show", "vf": vf}, timeout)
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
