package irq

import (
	"errors"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Adopted eventfds are the same counters: a raise through the adopted
// Vectors is read on a duplicate the "guest" kept.
func TestAdoptRaisesTheSameEventfds(t *testing.T) {
	v, err := New(3)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	var handed, guest []int
	for _, fd := range v.FDs() {
		d, err := unix.Dup(fd)
		if err != nil {
			t.Fatal(err)
		}
		g, err := unix.Dup(fd)
		if err != nil {
			t.Fatal(err)
		}
		handed, guest = append(handed, d), append(guest, g)
	}
	defer func() {
		for _, g := range guest {
			unix.Close(g)
		}
	}()
	a, err := Adopt(handed)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSetWith(2, 3, map[int]*Vectors{1: a})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.VF(1) != a || s.VF(0) == nil || s.VF(0).Len() != 3 {
		t.Fatal("NewSetWith did not keep the adopted vectors or make the others")
	}
	if err := s.Raise(1, 2); err != nil {
		t.Fatal(err)
	}
	if n, err := Wait(guest[2], time.Minute); err != nil || n != 1 {
		t.Fatalf("the guest's copy of vector 2: %d, %v", n, err)
	}
	if n, _ := Drain(guest[0]); n != 0 {
		t.Fatalf("vector 0 raised %d times", n)
	}
}

func TestAdoptRefusesWhatIsNotAnEventfd(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := Adopt([]int{int(f.Fd())}); !errors.Is(err, ErrVector) {
		t.Fatalf("Adopt(/dev/null): %v, want ErrVector", err)
	}
	if _, err := Adopt(nil); !errors.Is(err, ErrVector) {
		t.Fatalf("Adopt(nil): %v", err)
	}
	v, err := New(2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewSetWith(1, 3, map[int]*Vectors{0: v}); !errors.Is(err, ErrVF) {
		t.Fatalf("2 adopted vectors where 3 are configured: %v, want ErrVF", err)
	}
	if v.Len() != 0 {
		t.Fatal("NewSetWith's error left the adopted vectors open")
	}
}
