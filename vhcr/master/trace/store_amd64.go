//go:build amd64 && !race

package trace

import "sync/atomic"

// On amd64 (TSO) stores become visible in program order and loads are not
// reordered with loads, so plain MOVs suffice on both sides: the writer
// stores the record's words and then the cursor, and a reader that loads
// the cursor after copying a slot sees any overwrite that began. The
// compiler keeps stores in program order and loads before a later
// sync/atomic load (a MOV on amd64). publish is a plain store, not
// atomic.StoreUint64, which is XCHG: a locked instruction that drains the
// store buffer, about 20 cycles on every record.

func storeSlot(s *slot, w0, w1, w2, w3, w4, w5, w6, w7 uint64) {
	s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7] = w0, w1, w2, w3, w4, w5, w6, w7
}

func publish(p *uint64, v uint64) { *p = v }

func loadCursor(p *uint64) uint64 { return atomic.LoadUint64(p) }

func loadSlot(s *slot, w *Words) {
	w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7] = s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]
}
