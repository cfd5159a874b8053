package wire

import (
	"testing"

	"github.com/vhcrd/vhcrd/bar"
)

// FuzzReadLayout: any header bytes either decode to a layout that fits the
// region or are rejected; never a panic.
func FuzzReadLayout(f *testing.F) {
	l, _ := NewLayout(4, 64<<10, false, 0, 0, "/dev/shm/x")
	m, _ := bar.NewMem("seed", l.ControlSize())
	_ = l.Write(m)
	b, _ := m.Bytes()
	f.Add(append([]byte(nil), b[:0x200]...))
	in, _ := NewLayout(2, 16<<10, true, 0, 0, "")
	m2, _ := bar.NewMem("seed", in.ControlSize())
	_ = in.Write(m2)
	b2, _ := m2.Bytes()
	f.Add(append([]byte(nil), b2[:0x200]...))
	f.Fuzz(func(t *testing.T, hdr []byte) {
		r, _ := bar.NewMem("f", 0x10000)
		_, _ = r.WriteAt(hdr[:min(len(hdr), 0x1000)], 0)
		got, err := ReadLayout(r)
		if err != nil {
			return
		}
		if got.VFBARSize < VFBARSize || got.VFBARSize&(got.VFBARSize-1) != 0 || (got.DMAInBAR && got.DMASize > r.Size()) || got.NumVFs < 1 {
			t.Fatalf("accepted a layout that does not fit: %+v", got)
		}
	})
}
