package hca

import (
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// TestMrefRunCoalesces: a translated region's contiguous MTT entries make
// one run (a copy in one piece), bounded by what the caller wants; a gap
// in the IOVAs, a missing entry or the end of the MTT ends the run.
func TestMrefRunCoalesces(t *testing.T) {
	const pg = uint64(1) << mlx4.PageShift
	p := uint64(mlx4.MTT_FLAG_PRESENT)
	m := mref{start: 0x10000, end: 0x10000 + 8*pg, shift: mlx4.PageShift,
		// pages 0-2 contiguous at 0x100000, page 3 elsewhere, page 4 the
		// next after it, page 5 absent, pages 6-7 contiguous
		mtt: []uint64{0x100000 | p, 0x100000 + pg | p, 0x100000 + 2*pg | p, 0x200000 | p, 0x200000 + pg | p, 0x100000 + 3*pg, 0x300000 | p, 0x300000 + pg | p}}
	for _, c := range []struct {
		addr, want, iova, run uint64
		ok                    bool
	}{
		{0x10000, 8 * pg, 0x100000, 3 * pg, true},
		{0x10000 + 100, 8 * pg, 0x100000 + 100, 3*pg - 100, true},
		{0x10000, 1, 0x100000, pg, true}, // at least to the end of the page
		{0x10000, pg + 1, 0x100000, 2 * pg, true},
		{0x10000 + 2*pg, 8 * pg, 0x100000 + 2*pg, pg, true},
		{0x10000 + 3*pg + 8, 8 * pg, 0x200000 + 8, 2*pg - 8, true},
		{0x10000 + 5*pg, 8 * pg, 0, 0, false},
		{0x10000 + 6*pg, 8 * pg, 0x300000, 2 * pg, true},
		{0x10000 + 8*pg, 1, 0, 0, false},
	} {
		iova, run, ok := m.at(c.addr, c.want)
		if iova != c.iova || run != c.run || ok != c.ok {
			t.Errorf("at(%#x, %#x) = %#x, %#x, %v; want %#x, %#x, %v", c.addr, c.want, iova, run, ok, c.iova, c.run, c.ok)
		}
	}
}
