package hca

// The per-QP key cache: the last MPT-backed key a QP's WQEs named, checked
// (function, HW state, key, PD) and translated (its MTT entries), so that
// a stream of WQEs on the same region skips the table walk (the MPT and
// MTT maps, the decoded entry). Only the access flags and the bounds are
// checked per use, as checkKey does after the walk, in the same order.
//
// An entry is good while h.tptGen is the one it was filled under. tptGen
// moves at every command (before and after it executes: SW2HW_MPT,
// HW2SW_MPT, WRITE_MTT, FREE_RES and every other change of an MPT, an MTT
// or the tracker comes through Exec), at every function reset (FLR) and at
// Load (the restart path), so no entry outlives a change of what it
// cached. The poller runs commands and the data path alike: no atomics.

// keyCache is one QP's entry.
type keyCache struct {
	ok     bool
	gen    uint64
	key    uint32
	access uint32 // the MPT's access flags
	m      mref   // the region, before the bounds of a use
}

// tptChanged invalidates every QP's key cache.
func (h *HCA) tptChanged() { h.tptGen++ }

// cachedKey applies w's entry for key if it is good: done reports a hit,
// with the result checkKey would give.
func (h *HCA) cachedKey(w *wq, key, need uint32, addr, n uint64, m *mref) (keyErr, bool) {
	c := &w.kc
	if !c.ok || c.key != key || c.gen != h.tptGen {
		return keyOK, false
	}
	if c.access&need != need {
		return keyAccess, true
	}
	*m = c.m
	return m.bounds(addr, n), true
}

// cacheKey fills w's entry with a key that passed the walk.
func (h *HCA) cacheKey(w *wq, key, access uint32, m *mref) {
	w.kc = keyCache{ok: true, gen: h.tptGen, key: key, access: access, m: *m}
}
