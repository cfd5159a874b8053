package restrack

import "math/bits"

// bitmap allocates numbers in [lo, n): mlx4's bitmap allocators (QPN ranges
// with alignment, CQN, SRQN, MPT index, counters, XRCDs) and the MTT range
// allocator (2^order entries aligned to 2^order, like the buddy allocator).
// Numbers below lo are reserved for the firmware and the PF.
type bitmap struct {
	w    []uint64
	lo   int
	n    int
	hint int
}

func newBitmap(lo, n int) bitmap {
	if lo > n {
		lo = n
	}
	return bitmap{w: make([]uint64, (n+63)/64), lo: lo, n: n, hint: lo}
}

// firstSet returns the first set bit in [from, to), or -1.
func (b *bitmap) firstSet(from, to int) int {
	for i := from; i < to; {
		wi, off := i>>6, i&63
		w := b.w[wi] >> off
		if w != 0 {
			j := i + bits.TrailingZeros64(w)
			if j < to {
				return j
			}
			return -1
		}
		i += 64 - off
	}
	return -1
}

func (b *bitmap) setRange(from, to int, v bool) {
	for i := from; i < to; i++ {
		if v {
			b.w[i>>6] |= 1 << (i & 63)
		} else {
			b.w[i>>6] &^= 1 << (i & 63)
		}
	}
}

// alloc finds count free numbers starting at a multiple of align (a power of
// two), marks them used and returns the first; -1 if none.
func (b *bitmap) alloc(count, align int) int {
	if count <= 0 || align <= 0 || align&(align-1) != 0 || count > b.n {
		return -1
	}
	for pass := 0; pass < 2; pass++ {
		start := b.hint
		if pass == 1 {
			start = b.lo
		}
		for base := roundUp(start, align); base >= 0 && base+count <= b.n; {
			if base < b.lo {
				base = roundUp(b.lo, align)
				continue
			}
			j := b.firstSet(base, base+count)
			if j < 0 {
				b.setRange(base, base+count, true)
				b.hint = base + count
				if b.hint >= b.n {
					b.hint = b.lo
				}
				return base
			}
			base = roundUp(j+1, align)
		}
	}
	return -1
}

// free releases [base, base+count); out-of-range parts are ignored.
func (b *bitmap) free(base, count int) {
	if base < b.lo {
		count -= b.lo - base
		base = b.lo
	}
	if count <= 0 || base >= b.n {
		return
	}
	if base+count > b.n {
		count = b.n - base
	}
	b.setRange(base, base+count, false)
}

func roundUp(x, align int) int { return (x + align - 1) &^ (align - 1) }
