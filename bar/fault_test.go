package bar_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/vhcrd/vhcrd/bar"
)

// A file that shrinks under its mapping makes the next access past the new
// end fault (SIGBUS); under Guard that is an error naming the address, and
// Contains maps the address back to the region and offset.
func TestGuardTurnsAShrunkFileIntoAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bar")
	r, _, err := bar.CreateFile(path, 4*bar.PageSize)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	reg, err := bar.NewReg(r, 2*bar.PageSize+8)
	if err != nil {
		t.Fatal(err)
	}
	if err := bar.Guard(func() { reg.Store(7) }); err != nil {
		t.Fatalf("access before the truncation: %v", err)
	}
	if err := os.Truncate(path, bar.PageSize); err != nil {
		t.Fatal(err)
	}
	// The first page is still backed.
	if err := bar.Guard(func() { _, _ = r.Load32(0) }); err != nil {
		t.Fatalf("access below the new end: %v", err)
	}
	other, err := bar.NewMem("other", bar.PageSize)
	if err != nil {
		t.Fatal(err)
	}
	for name, access := range map[string]func(){
		"Reg.Load":  func() { _ = reg.Load() },
		"Reg.Store": func() { reg.Store(1) },
		"Load32":    func() { _, _ = r.Load32(3 * bar.PageSize) },
		"ReadAt":    func() { _, _ = r.ReadAt(make([]byte, 16), 2*bar.PageSize) },
	} {
		err := bar.Guard(access)
		var fe *bar.FaultError
		if !errors.Is(err, bar.ErrFault) || !errors.As(err, &fe) {
			t.Errorf("%s past the new end: %v, want a FaultError", name, err)
			continue
		}
		off, ok := bar.Contains(r, fe.Addr)
		if !ok || off < bar.PageSize || off >= 4*bar.PageSize {
			t.Errorf("%s: Contains(%#x) = %#x, %v; want an offset in the lost pages", name, fe.Addr, off, ok)
		}
		if _, ok := bar.Contains(other, fe.Addr); ok {
			t.Errorf("%s: a heap region contains the faulting address", name)
		}
	}
}

func TestGuardPassesOtherPanicsOn(t *testing.T) {
	defer func() {
		if r := recover(); r != "not a fault" {
			t.Fatalf("recovered %v, want the original panic", r)
		}
	}()
	_ = bar.Guard(func() { panic("not a fault") })
	t.Fatal("Guard swallowed a panic that was not a fault")
}

// Backed follows the file behind a mapping (and a view of it) as it
// shrinks and grows; heap memory is not file-backed.
func TestBacked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dma")
	r, _, err := bar.CreateFile(path, 4*bar.PageSize)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	v, err := bar.Sub(r, 2*bar.PageSize, 2*bar.PageSize)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int64{4 * bar.PageSize, 3 * bar.PageSize, bar.PageSize, 0, 8 * bar.PageSize} {
		if err := os.Truncate(path, size); err != nil {
			t.Fatal(err)
		}
		want := min(size, 4*bar.PageSize)
		if n, ok := bar.Backed(r); !ok || n != want {
			t.Errorf("file of %#x bytes: Backed = %#x, %v; want %#x", size, n, ok, want)
		}
		wantView := min(max(size-2*bar.PageSize, 0), 2*bar.PageSize)
		if n, ok := bar.Backed(v); !ok || n != wantView {
			t.Errorf("file of %#x bytes: the view's Backed = %#x, %v; want %#x", size, n, ok, wantView)
		}
	}
	m, err := bar.NewMem("heap", bar.PageSize)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := bar.Backed(m); ok {
		t.Error("heap memory reports a backing file")
	}
	r.Close()
	if _, ok := bar.Backed(r); ok {
		t.Error("a closed file reports a backing file")
	}
}
