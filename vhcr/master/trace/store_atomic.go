//go:build !amd64 || race

package trace

import "sync/atomic"

// Under the race detector, and on weakly ordered machines, every word goes
// through sync/atomic: the detector sees the accesses, and atomic stores and
// loads keep the order the reader relies on (arm64 STLR and LDAR are not
// locked read-modify-writes). On amd64 this is XCHG per word: race builds
// only.

func storeSlot(s *slot, w0, w1, w2, w3, w4, w5, w6, w7 uint64) {
	atomic.StoreUint64(&s[0], w0)
	atomic.StoreUint64(&s[1], w1)
	atomic.StoreUint64(&s[2], w2)
	atomic.StoreUint64(&s[3], w3)
	atomic.StoreUint64(&s[4], w4)
	atomic.StoreUint64(&s[5], w5)
	atomic.StoreUint64(&s[6], w6)
	atomic.StoreUint64(&s[7], w7)
}

func publish(p *uint64, v uint64) { atomic.StoreUint64(p, v) }

func loadCursor(p *uint64) uint64 { return atomic.LoadUint64(p) }

func loadSlot(s *slot, w *Words) {
	for i := range w {
		w[i] = atomic.LoadUint64(&s[i])
	}
}
