package ivshmem_test

import (
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/ivshmem"
)

type rig struct {
	srv          *ivshmem.Server
	shm          *os.File
	vec          []int
	connected    chan int64
	disconnected chan int64
}

func newRig(t *testing.T, nvec int) *rig {
	t.Helper()
	dir := t.TempDir()
	shm, err := os.Create(filepath.Join(dir, "bar"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shm.Close() })
	if err := shm.Truncate(8 << 20); err != nil {
		t.Fatal(err)
	}
	r := &rig{shm: shm, connected: make(chan int64, 8), disconnected: make(chan int64, 8)}
	for range nvec {
		fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		r.vec = append(r.vec, fd)
	}
	r.srv, err = ivshmem.Listen(filepath.Join(dir, "vf0.sock"), ivshmem.Options{
		SHM: shm, Vectors: func() []int { return r.vec },
		OnConnect:    func(id int64) { r.connected <- id },
		OnDisconnect: func(id int64) { r.disconnected <- id },
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.srv.Serve() }()
	t.Cleanup(func() {
		r.srv.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return r
}

func dial(t *testing.T, r *rig) *ivshmem.Client {
	t.Helper()
	c, err := ivshmem.Dial(r.srv.Path())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); c.State.CloseFDs() })
	return c
}

// The setup arrives in the spec's order, the shared memory fd is the file,
// and each vector fd is the server's eventfd: a write on the server's side
// is read on the client's.
func TestSetup(t *testing.T) {
	r := newRig(t, 4)
	st, err := os.Stat(r.srv.Path())
	if err != nil || st.Mode().Perm() != 0o600 || st.Mode().Type() != os.ModeSocket {
		t.Fatalf("socket: %v, mode %v", err, st.Mode())
	}
	c := dial(t, r)
	if err := c.Setup(4, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	s := c.State
	if s.Version != 0 || s.ID != 0 || len(s.Vectors) != 4 || len(s.Peers) != 0 {
		t.Fatalf("setup: version %d id %d vectors %d peers %d", s.Version, s.ID, len(s.Vectors), len(s.Peers))
	}
	var a, b unix.Stat_t
	if err := unix.Fstat(s.SHM, &a); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fstat(int(r.shm.Fd()), &b); err != nil {
		t.Fatal(err)
	}
	if a.Ino != b.Ino || a.Dev != b.Dev || a.Size != 8<<20 {
		t.Fatalf("shared memory fd: inode %d size %d, want the file's inode %d", a.Ino, a.Size, b.Ino)
	}
	for i, fd := range s.Vectors {
		var one [8]byte
		binary.NativeEndian.PutUint64(one[:], uint64(i+1))
		if _, err := unix.Write(r.vec[i], one[:]); err != nil {
			t.Fatal(err)
		}
		var got [8]byte
		if _, err := unix.Read(fd, got[:]); err != nil || binary.NativeEndian.Uint64(got[:]) != uint64(i+1) {
			t.Fatalf("vector %d: read %v, %d", i, err, binary.NativeEndian.Uint64(got[:]))
		}
	}
	if id := <-r.connected; id != 0 {
		t.Fatalf("OnConnect(%d)", id)
	}
}

// One client per device: a second is refused while the first is
// connected; after the first goes (OnDisconnect), the next is served with
// a new ID.
func TestOneClientAtATime(t *testing.T) {
	r := newRig(t, 2)
	first := dial(t, r)
	if err := first.Setup(2, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	<-r.connected
	second := dial(t, r)
	// The refusal is a version no client accepts (QEMU exits on it), not
	// only an end of file (QEMU 7.2 retries its read of one for ever).
	if err := second.Setup(2, 10*time.Second); !errors.Is(err, ivshmem.ErrRefused) || !errors.Is(err, ivshmem.ErrProtocol) {
		t.Fatalf("second client: %v, want ErrRefused (the refusal's version message)", err)
	}
	if second.State.Version != -1 {
		t.Fatalf("second client accepted version %d", second.State.Version)
	}
	if clients, refused, connected := r.srv.Stats(); clients != 1 || refused != 1 || !connected {
		t.Fatalf("stats: %d clients, %d refused, connected %v", clients, refused, connected)
	}
	first.Close()
	if id := <-r.disconnected; id != 0 {
		t.Fatalf("OnDisconnect(%d)", id)
	}
	third := dial(t, r)
	if err := third.Setup(2, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if third.State.ID != 1 {
		t.Fatalf("third client ID %d, want 1", third.State.ID)
	}
	// Close ends the connected client's service: OnDisconnect runs.
	r.srv.Close()
	if id := <-r.disconnected; id != 1 {
		t.Fatalf("OnDisconnect(%d) at Close", id)
	}
}

// A socket path in use by a live server is refused; a stale one replaced.
func TestListenSocketInUse(t *testing.T) {
	r := newRig(t, 1)
	_, err := ivshmem.Listen(r.srv.Path(), ivshmem.Options{SHM: r.shm, Vectors: func() []int { return nil }})
	if !errors.Is(err, ivshmem.ErrInUse) {
		t.Fatalf("second Listen: %v", err)
	}
}

func TestSetupStateRejects(t *testing.T) {
	const fd = 100
	for _, tc := range []struct {
		name string
		msgs []ivshmem.Msg
	}{
		{"version 1", []ivshmem.Msg{{Val: 1, FD: -1}}},
		{"version with fd", []ivshmem.Msg{{Val: 0, FD: fd}}},
		{"ID with fd", []ivshmem.Msg{{Val: 0, FD: -1}, {Val: 3, FD: fd}}},
		{"ID 65536", []ivshmem.Msg{{Val: 0, FD: -1}, {Val: 65536, FD: -1}}},
		{"negative ID", []ivshmem.Msg{{Val: 0, FD: -1}, {Val: -1, FD: -1}}},
		{"shm without fd", []ivshmem.Msg{{Val: 0, FD: -1}, {Val: 3, FD: -1}, {Val: -1, FD: -1}}},
		{"second shm", []ivshmem.Msg{{Val: 0, FD: -1}, {Val: 3, FD: -1}, {Val: -1, FD: fd}, {Val: -1, FD: fd + 1}}},
		{"own disconnect", []ivshmem.Msg{{Val: 0, FD: -1}, {Val: 3, FD: -1}, {Val: -1, FD: fd}, {Val: 3, FD: -1}}},
		{"unknown peer gone", []ivshmem.Msg{{Val: 0, FD: -1}, {Val: 3, FD: -1}, {Val: -1, FD: fd}, {Val: 4, FD: -1}}},
		{"peer -2", []ivshmem.Msg{{Val: 0, FD: -1}, {Val: 3, FD: -1}, {Val: -1, FD: fd}, {Val: -2, FD: fd + 1}}},
	} {
		s := ivshmem.NewSetupState()
		var err error
		for _, m := range tc.msgs {
			if err = s.Apply(m); err != nil {
				break
			}
		}
		if !errors.Is(err, ivshmem.ErrProtocol) {
			t.Errorf("%s: %v, want ErrProtocol", tc.name, err)
		}
	}
	// What QEMU accepts: peers before and after the memory, then a
	// disconnect.
	s := ivshmem.NewSetupState()
	for _, m := range []ivshmem.Msg{{Val: 0, FD: -1}, {Val: 3, FD: -1}, {Val: 1, FD: 7}, {Val: -1, FD: fd}, {Val: 3, FD: 8}, {Val: 3, FD: 9}, {Val: 1, FD: -1}} {
		if err := s.Apply(m); err != nil {
			t.Fatalf("%+v: %v", m, err)
		}
	}
	if !s.Ready() || s.SHM != fd || len(s.Vectors) != 2 || len(s.Peers) != 0 || len(s.Gone) != 1 {
		t.Fatalf("state %+v", s)
	}
}
