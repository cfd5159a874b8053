package mastertest

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/vhcr/irq"
)

// NewWithInterrupts is NewWith with o.Interrupts an irq.Set of vectors
// MSI-X vectors for each of the n VFs, closed when the test ends.
func NewWithInterrupts(t testing.TB, n, vectors int, o Options) (*Rig, *irq.Set) {
	t.Helper()
	set, err := irq.NewSet(n, vectors)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	o.Interrupts = set
	return NewWith(t, n, o), set
}

// VectorFile is a copy of VF vf's vector v eventfd, as a VF process
// receives it (SCM_RIGHTS gives a new descriptor); closed when the test
// ends.
func VectorFile(t testing.TB, s *irq.Set, vf, v int) *os.File {
	t.Helper()
	fd, err := s.VF(vf).FD(v)
	if err != nil {
		t.Fatal(err)
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(dup), "irq")
	t.Cleanup(func() { f.Close() })
	return f
}
