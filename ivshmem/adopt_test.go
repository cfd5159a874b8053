package ivshmem_test

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/ivshmem"
)

// A server's listening socket and client connection, kept by duplicates
// as systemd's file-descriptor store keeps them, are taken over by a new
// server: the client, set up once by the first, is served on by the second
// (its end is the second's OnDisconnect) and never saw its connection
// close while the first went.
func TestAdoptAfterTheServerGoes(t *testing.T) {
	dir := t.TempDir()
	shm, err := os.Create(filepath.Join(dir, "bar"))
	if err != nil {
		t.Fatal(err)
	}
	defer shm.Close()
	if err := shm.Truncate(8 << 20); err != nil {
		t.Fatal(err)
	}
	vec, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(vec)
	path := filepath.Join(dir, "vf0.sock")
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	kept := make(chan int, 1)
	a, err := ivshmem.Listen(path, ivshmem.Options{SHM: shm, Vectors: func() []int { return []int{vec} }, Logger: quiet,
		OnClient: func(_ int64, c *net.UnixConn) {
			rc, err := c.SyscallConn()
			if err != nil {
				t.Error(err)
				return
			}
			_ = rc.Control(func(fd uintptr) {
				d, err := unix.Dup(int(fd))
				if err != nil {
					t.Error(err)
				}
				kept <- d
			})
		}})
	if err != nil {
		t.Fatal(err)
	}
	aDone := make(chan error, 1)
	go func() { aDone <- a.Serve() }()
	lnFD := -1
	if err := a.ControlListener(func(fd uintptr) { lnFD, err = unix.Dup(int(fd)) }); err != nil || lnFD < 0 {
		t.Fatalf("ControlListener: %v", err)
	}
	cl, err := ivshmem.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cl.Close(); cl.State.CloseFDs() }()
	if err := cl.Setup(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	connFD := <-kept
	// The first server goes; the duplicates keep both sockets open.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}

	// What is refused is closed: the tests hand over duplicates.
	dup := func(fd int) int {
		d, err := unix.Dup(fd)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if _, err := ivshmem.ListenFD(dup(connFD), path, ivshmem.Options{SHM: shm, Vectors: func() []int { return nil }}); !errors.Is(err, ivshmem.ErrNotAdoptable) {
		t.Fatalf("ListenFD of a connection: %v", err)
	}
	if _, err := ivshmem.ListenFD(dup(lnFD), path+".other", ivshmem.Options{SHM: shm, Vectors: func() []int { return nil }}); !errors.Is(err, ivshmem.ErrNotAdoptable) {
		t.Fatalf("ListenFD on another path: %v", err)
	}
	lnCopy := dup(lnFD)
	connected, gone := make(chan int64, 1), make(chan int64, 1)
	b, err := ivshmem.ListenFD(lnFD, path, ivshmem.Options{SHM: shm, Vectors: func() []int { return []int{vec} }, Logger: quiet,
		OnConnect: func(id int64) { connected <- id }, OnDisconnect: func(id int64) { gone <- id }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Adopt(dup(int(shm.Fd()))); !errors.Is(err, ivshmem.ErrNotAdoptable) {
		t.Fatalf("Adopt of a file: %v", err)
	}
	if _, err := b.Adopt(lnCopy); err == nil {
		t.Fatal("Adopt of a listening socket")
	}
	id, err := b.Adopt(connFD)
	if err != nil {
		t.Fatal(err)
	}
	bDone := make(chan error, 1)
	go func() { bDone <- b.Serve() }()
	if got := <-connected; got != id {
		t.Fatalf("OnConnect(%d), adopted as %d", got, id)
	}
	if n, _, c := b.Stats(); n != 1 || !c {
		t.Fatalf("adopting server: %d clients, connected %v", n, c)
	}
	// The client has had nothing since its setup (no second one) and its
	// connection is open: a nonblocking peek finds no data and no end.
	var raw int
	if err := cl.Control(func(fd uintptr) { raw = int(fd) }); err != nil {
		t.Fatal(err)
	}
	var p [1]byte
	if n, _, err := unix.Recvfrom(raw, p[:], unix.MSG_PEEK|unix.MSG_DONTWAIT); err != unix.EAGAIN {
		t.Fatalf("client's connection after the adoption: %d bytes, %v; want open and empty", n, err)
	}
	cl.Close()
	if got := <-gone; got != id {
		t.Fatalf("OnDisconnect(%d)", got)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-bDone; err != nil {
		t.Fatal(err)
	}
}
