package adminc

import (
	"bufio"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"
)

func TestDefaultSocket(t *testing.T) {
	for spec, want := range map[string]string{
		"file:/dev/shm/vhcrd-bar":      "/dev/shm/vhcrd-bar.sock",
		"vfio:0000:00:01.0#region2":    "/run/vhcrd/vfio-0000:00:01.0-2.sock",
		"sysfs:0000:03:00.1#resource2": "/run/vhcrd/sysfs-0000:03:00.1-2.sock",
	} {
		if got, err := DefaultSocket(spec); err != nil || got != want {
			t.Errorf("DefaultSocket(%q) = %q, %v; want %q", spec, got, err, want)
		}
	}
	if _, err := DefaultSocket("nonsense:x"); err == nil {
		t.Error("a bad spec has a socket")
	}
}

// serveOnce answers one request on a fresh socket with answer and returns
// the socket's path and the request line it will have read.
func serveOnce(t *testing.T, answer string) (string, <-chan string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "admin.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(got)
			return
		}
		defer c.Close()
		line, _ := bufio.NewReader(c).ReadString('\n')
		got <- line
		_, _ = c.Write([]byte(answer))
	}()
	return path, got
}

func TestCall(t *testing.T) {
	path, got := serveOnce(t, `{"ok":true}`+"\n")
	line, err := Call(Socket{Path: path}, map[string]any{"cmd": "vf.list"}, 5*time.Second)
	if err != nil || string(line) != "{\"ok\":true}\n" {
		t.Fatalf("Call: %q, %v", line, err)
	}
	if req := <-got; req != `{"cmd":"vf.list"}`+"\n" {
		t.Errorf("request %q", req)
	}

	path, _ = serveOnce(t, "# error: no such VF 9\n")
	if _, err := Call(Socket{Path: path}, map[string]any{"cmd": "vf.show", "vf": 9}, 5*time.Second); !errors.Is(err, ErrRefused) || err.Error() != "vhcrd: no such VF 9" {
		t.Errorf("refusal: %v", err)
	}

	if _, err := Call(Socket{Path: filepath.Join(t.TempDir(), "none.sock")}, map[string]any{}, time.Second); err == nil || errors.Is(err, ErrRefused) {
		t.Errorf("no server: %v", err)
	}
}
