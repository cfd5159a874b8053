package adminc

import (
	"bufio"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// controlFile writes a control file in PF_STATE st and returns its path.
func controlFile(t *testing.T, st uint32) string {
	t.Helper()
	l, err := wire.NewLayout(1, 64<<10, true, 0x40000, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bar")
	f, _, err := bar.CreateFile(path, l.ControlSize())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := l.Write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Store32(wire.HdrPFState, st); err != nil {
		t.Fatal(err)
	}
	return path
}

// A socket nobody listens on is explained by the PF's owner claim: no
// holder and SERVING is a dead PF, reported at once; no holder and
// stopped is no PF; a holder is a PF starting, whose socket is waited for.
func TestCallTellsADeadPFFromAStartingOne(t *testing.T) {
	path := controlFile(t, wire.PFStateServing)
	s := Socket{Path: path + ".sock", BAR: "file:" + path}
	if _, err := Call(s, map[string]any{"cmd": "vf.list"}, time.Minute); !errors.Is(err, vfclient.ErrPFDead) {
		t.Fatalf("killed PF: %v, want ErrPFDead", err)
	}
	stopped := controlFile(t, wire.PFStateStopped)
	if _, err := Call(Socket{Path: stopped + ".sock", BAR: "file:" + stopped}, map[string]any{}, time.Minute); !errors.Is(err, vfclient.ErrNoPF) {
		t.Fatalf("stopped PF: %v, want ErrNoPF", err)
	}
	o, err := bar.Own(path) // a PF starting: the claim, no socket yet
	if err != nil {
		t.Fatal(err)
	}
	defer o.Release()
	if _, err := Call(s, map[string]any{}, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "has not opened this socket") {
		t.Fatalf("starting PF, short timeout: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Call(s, map[string]any{"cmd": "vf.list"}, time.Minute)
		done <- err
	}()
	ln, err := net.Listen("unix", s.Path) // the PF opens its socket
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	// Read the request before answering, as the PF does: a socket closed
	// before the client has written makes its write fail (EPIPE).
	if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write([]byte("[]\n"))
	c.Close()
	if err := <-done; err != nil {
		t.Fatalf("the started PF's answer: %v", err)
	}
}
