package irq

import (
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// hang guards a wait that must succeed at once: it bounds a broken test,
// it times nothing.
const hang = 10 * time.Second

func newVectors(t *testing.T, n int) *Vectors {
	t.Helper()
	v, err := New(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	return v
}

// newSet is NewSet(vfs, vectors), closed when the test or benchmark ends.
func newSet(tb testing.TB, vfs, vectors int) *Set {
	tb.Helper()
	s, err := NewSet(vfs, vectors)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func fd(t *testing.T, v *Vectors, i int) int {
	t.Helper()
	f, err := v.FD(i)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestRaiseCoalesces(t *testing.T) {
	v := newVectors(t, 2)
	if c, err := Drain(fd(t, v, 0)); err != nil || c != 0 {
		t.Fatalf("fresh vector: count %d, %v", c, err)
	}
	for range 3 {
		if err := v.Raise(0); err != nil {
			t.Fatal(err)
		}
	}
	if c, err := Wait(fd(t, v, 0), hang); err != nil || c != 3 {
		t.Fatalf("after 3 raises: count %d, %v; want 3", c, err)
	}
	if c, _ := Drain(fd(t, v, 0)); c != 0 {
		t.Fatalf("read resets the counter: %d", c)
	}
	if c, _ := Drain(fd(t, v, 1)); c != 0 {
		t.Fatalf("vector 1 raised by a raise of vector 0: %d", c)
	}
}

func TestBadVector(t *testing.T) {
	v := newVectors(t, 2)
	for _, i := range []int{-1, 2, 1 << 40} {
		if err := v.Raise(i); !errors.Is(err, ErrVector) {
			t.Errorf("Raise(%d) = %v, want ErrVector", i, err)
		}
		if _, err := v.FD(i); !errors.Is(err, ErrVector) {
			t.Errorf("FD(%d) = %v, want ErrVector", i, err)
		}
	}
	for _, n := range []int{0, -1, MaxVectors + 1} {
		if _, err := New(n); !errors.Is(err, ErrVector) {
			t.Errorf("New(%d) = %v, want ErrVector", n, err)
		}
	}
}

func TestSet(t *testing.T) {
	s := newSet(t, 3, 2)
	if err := s.Raise(2, 1); err != nil {
		t.Fatal(err)
	}
	if c, _ := Drain(fd(t, s.VF(2), 1)); c != 1 {
		t.Fatalf("VF 2 vector 1: count %d", c)
	}
	if c, _ := Drain(fd(t, s.VF(1), 1)); c != 0 {
		t.Fatalf("VF 1 vector 1 raised by VF 2's: %d", c)
	}
	if err := s.Raise(3, 0); !errors.Is(err, ErrVF) {
		t.Errorf("Raise(VF 3) = %v, want ErrVF", err)
	}
	if err := s.Raise(0, 2); !errors.Is(err, ErrVector) {
		t.Errorf("Raise(VF 0, vector 2) = %v, want ErrVector", err)
	}
	if s.VF(-1) != nil || s.VF(3) != nil || s.NumVFs() != 3 {
		t.Error("VF out of range")
	}
}

func TestClose(t *testing.T) {
	v, err := New(2)
	if err != nil {
		t.Fatal(err)
	}
	f := fd(t, v, 0)
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if err := v.Raise(0); !errors.Is(err, ErrClosed) {
		t.Errorf("Raise after Close = %v", err)
	}
	if _, err := v.FD(0); !errors.Is(err, ErrClosed) {
		t.Errorf("FD after Close = %v", err)
	}
	if v.Len() != 0 {
		t.Errorf("Len after Close = %d", v.Len())
	}
	if _, err := unix.FcntlInt(uintptr(f), unix.F_GETFD, 0); err != unix.EBADF {
		t.Errorf("fd %d still open after Close: %v", f, err)
	}
}

func TestFlags(t *testing.T) {
	v := newVectors(t, 1)
	f := fd(t, v, 0)
	fl, err := unix.FcntlInt(uintptr(f), unix.F_GETFL, 0)
	if err != nil || fl&unix.O_NONBLOCK == 0 {
		t.Errorf("not O_NONBLOCK: %#x %v", fl, err)
	}
	fdfl, err := unix.FcntlInt(uintptr(f), unix.F_GETFD, 0)
	if err != nil || fdfl&unix.FD_CLOEXEC == 0 {
		t.Errorf("not FD_CLOEXEC: %#x %v", fdfl, err)
	}
}

func TestSaturated(t *testing.T) {
	v := newVectors(t, 1)
	f := fd(t, v, 0)
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], 1<<64-2) // the counter's maximum
	if _, err := unix.Write(f, b[:]); err != nil {
		t.Fatal(err)
	}
	if err := v.Raise(0); err != nil {
		t.Fatalf("Raise on a saturated counter = %v, want nil (pending)", err)
	}
	if v.Saturated() != 1 {
		t.Fatalf("Saturated = %d, want 1", v.Saturated())
	}
	if c, _ := Drain(f); c != 1<<64-2 {
		t.Fatalf("count %d", c)
	}
}

func TestWaitTimeout(t *testing.T) {
	v := newVectors(t, 1)
	if _, err := Wait(fd(t, v, 0), 0); !errors.Is(err, ErrTimeout) {
		t.Fatalf("Wait on an idle vector = %v, want ErrTimeout", err)
	}
}

func TestRaiseAllocs(t *testing.T) {
	s := newSet(t, 1, 1)
	if a := testing.AllocsPerRun(1000, func() { _ = s.Raise(0, 0) }); a != 0 {
		t.Fatalf("Raise: %v allocs", a)
	}
	if a := testing.AllocsPerRun(1000, func() { _ = s.Raise(0, 5) }); a != 0 {
		t.Fatalf("Raise of a bad vector: %v allocs", a)
	}
}

func TestHandOver(t *testing.T) {
	v := newVectors(t, 3)
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(f int) *net.UnixConn {
		of := osFile(f)
		c, err := net.FileConn(of) // a dup: of is closed here
		_ = of.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c.(*net.UnixConn)
	}
	a, b := conn(pair[0]), conn(pair[1])
	if err := SendFDs(a, []byte("vf0"), v.FDs()...); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, got, err := RecvFDs(b, buf, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, f := range got {
			_ = unix.Close(f)
		}
	}()
	if string(buf[:n]) != "vf0" || len(got) != 3 {
		t.Fatalf("got %q with %d fds", buf[:n], len(got))
	}
	if err := v.Raise(2); err != nil {
		t.Fatal(err)
	}
	if c, err := Wait(got[2], hang); err != nil || c != 1 {
		t.Fatalf("received vector 2: %d, %v", c, err)
	}
	if c, _ := Drain(got[0]); c != 0 {
		t.Fatalf("received vector 0 raised: %d", c)
	}
	// too many descriptors for the receiver: refused, none leaked
	if err := SendFDs(a, nil, v.FDs()...); err != nil {
		t.Fatal(err)
	}
	if _, _, err := RecvFDs(b, buf, 1); !errors.Is(err, unix.EMSGSIZE) {
		t.Fatalf("3 fds into room for 1: %v", err)
	}
}

// BenchmarkRaise is the raise path: one eventfd write, no allocation.
func BenchmarkRaise(b *testing.B) {
	s := newSet(b, 1, 1)
	f, _ := s.VF(0).FD(0)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := s.Raise(0, 0); err != nil {
			b.Fatal(err)
		}
		if i&0xffff == 0 {
			_, _ = Drain(f)
		}
	}
}
