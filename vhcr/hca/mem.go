package hca

// Memory protection on the data path: every address a WQE names goes
//
//	lkey/rkey → MPT → MTT → the owning VF's DMA window
//
// as the HCA's TPT does. The key's MPT is its index key_to_hw_index(key) =
// key >> 8 | key << 24 (mlx4's hw_index_to_key inverted), masked to the
// MPT table; the MPT must be in hardware (SW2HW_MPT done, no HW2SW_MPT
// since), its key field must equal the whole 32-bit key (the variant byte
// included, so a key of a freed and re-registered MPT does not match), its
// function must be the QP's (the model's equivalent of the function bits
// firmware keeps beside the PD: two VFs' PD numbers never match, whatever
// the VFs number them) and its PD (pd_flags 16:0, what mlx4_mr_enable
// writes) the QP's PD. Then the access the operation needs (local write for a
// receive's scatter and an RDMA READ's or atomic's local sink; remote
// write, remote read, atomic for the responder's rkey) and the bounds
// [start, start+length). A translated region's pages come from its MTT
// entries (entity_size is the page shift; entry i maps the i-th page from
// start's page); a physical region (MLX4_MPT_FLAG_PHYSICAL) maps IOVAs
// unchanged. Every chunk is then checked by the window itself (Translate),
// so no address leaves the owning VF's window.
//
// The VF's reserved lkey (QUERY_FUNC_CAP reserved_lkey: the model's
// modelReservedLKey + ((VF+1) << 8 & 0xff00), the key mlx4_ib gives its PDs
// as local_dma_lkey and uses for its own QPs, IPoIB's and the MAD proxy's)
// is a physical region over the VF's whole window with local read and
// write, as a reserved lkey is on hardware: no MPT, no PD, never a remote
// key. MLX4_INVALID_LKEY (0x100, the PF's reserved key) is no VF's.
//
// None of this allocates: a checked key is an mref value the caller holds.

import (
	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// keyErr is why a key check failed; each maps to a syndrome by the side
// that made the check.
type keyErr uint8

const (
	keyOK     keyErr = iota
	keyBad           // no MPT for the key, not in HW, key mismatch, another function's
	keyPD            // PD mismatch
	keyAccess        // access not granted
	keyBounds        // outside [start, start+length), or a page with no MTT entry
)

// mref is a checked region: where a key's bytes are.
type mref struct {
	win   *dma.Window
	phys  bool
	start uint64
	end   uint64 // start + length, saturated
	shift uint
	mtt   []uint64 // the allocation's entries from the region's first
}

// reservedLKey is VF vf's reserved lkey (QUERY_FUNC_CAP).
func reservedLKey(vf int) uint32 { return modelReservedLKey + uint32((vf+1)<<8&0xff00) }

// keyIndex is key_to_hw_index: the MPT index a key names.
func keyIndex(key uint32) uint32 { return mlx4.HWIndexOf(key) }

// checkKey checks key for [addr, addr+n) with access need on behalf of
// QP w (its function, PD and window) and fills m. remote: an rkey (the
// reserved lkey is no rkey).
func (h *HCA) checkKey(w *wq, key uint32, need uint32, remote bool, addr, n uint64, m *mref) keyErr {
	if !remote && key == reservedLKey(w.vf) {
		*m = mref{win: w.win, phys: true, start: 0, end: uint64(w.win.Size())}
		return m.bounds(addr, n)
	}
	if r, hit := h.cachedKey(w, key, need, addr, n, m); hit {
		return r
	}
	mpt := h.fw.mpts[h.Res.MPTID(keyIndex(key))]
	if mpt == nil || !mpt.Valid || mpt.tr == nil || mpt.tr.State != restrack.QPHW || mpt.tr.Owner != w.vf {
		return keyBad
	}
	if !mpt.decoded {
		mpt.dec, _ = mlx4.DecodeMPT(mpt.Entry[:]) // the stored entry is whole
		mpt.decoded = true
	}
	e := &mpt.dec
	if e.Key != key || !e.Region() {
		return keyBad
	}
	if e.PD&mlx4.MPT_PD_MASK != w.pd&mlx4.MPT_PD_MASK {
		return keyPD
	}
	if e.Access&need != need {
		return keyAccess
	}
	end := e.Start + e.Length
	if end < e.Start {
		end = ^uint64(0)
	}
	*m = mref{win: w.win, phys: e.Physical, start: e.Start, end: end, shift: uint(e.EntitySize)}
	if !e.Physical {
		if m.shift < mlx4.PageShift || m.shift > 30 {
			return keyBounds
		}
		// The region's entries from mtt_addr: as many as its pages
		// (mlx4_mr_enable writes mtt_sz only for a fast-register MR in
		// the free state; a registered region's is 0), never past the
		// allocation.
		ents := h.fw.mtt[e.MTTBase]
		psize := uint64(1) << m.shift
		need := (e.Start&(psize-1) + e.Length + psize - 1) >> m.shift
		if e.Length > 1<<62 {
			need = uint64(len(ents))
		}
		if e.MTTSize != 0 {
			need = min(need, uint64(e.MTTSize))
		}
		m.mtt = ents[:min(uint64(len(ents)), need)]
	}
	h.cacheKey(w, key, e.Access, m)
	return m.bounds(addr, n)
}

func (m *mref) bounds(addr, n uint64) keyErr {
	if addr < m.start || addr+n < addr || addr+n > m.end {
		return keyBounds
	}
	return keyOK
}

// at returns the IOVA of region address addr and how many bytes from it
// are contiguous in the window: to the end of its page, and on across the
// following pages while their MTT entries are present and map the next
// IOVA, until the run covers want bytes (a registration of contiguous
// memory copies in one piece, not page by page); ok false where the region
// has no page there.
func (m *mref) at(addr, want uint64) (iova, run uint64, ok bool) {
	if m.phys {
		return addr, m.end - addr, true
	}
	pg := addr>>m.shift - m.start>>m.shift
	if pg >= uint64(len(m.mtt)) {
		return 0, 0, false
	}
	e := m.mtt[pg]
	if e&mlx4.MTT_FLAG_PRESENT == 0 {
		return 0, 0, false
	}
	psize := uint64(1) << m.shift
	off := addr & (psize - 1)
	base := e &^ (psize - 1)
	run = psize - off
	for next := base + psize; run < want && pg+1 < uint64(len(m.mtt)); next += psize {
		pg++
		if e = m.mtt[pg]; e&mlx4.MTT_FLAG_PRESENT == 0 || e&^(psize-1) != next {
			break
		}
		run += psize
	}
	return base + off, run, true
}

// copyRegions moves n bytes from src at saddr to dst at daddr, chunk by
// chunk of contiguous IOVA on both sides; false if a page is missing or a
// window refuses (the caller's protection error).
func (h *HCA) copyRegions(dst *mref, daddr uint64, src *mref, saddr uint64, n uint64) bool {
	for n > 0 {
		s, sr, ok1 := src.at(saddr, n)
		d, dr, ok2 := dst.at(daddr, n)
		if !ok1 || !ok2 {
			return false
		}
		k := min(n, sr, dr)
		if k > 1<<30 {
			k = 1 << 30
		}
		if dma.Copy(dst.win, d, src.win, s, int(k), h.dp.bounce[:]) != nil {
			return false
		}
		saddr, daddr, n = saddr+k, daddr+k, n-k
	}
	return true
}

// writeRegion writes b into dst at daddr.
func (m *mref) write(daddr uint64, b []byte) bool {
	for len(b) > 0 {
		d, dr, ok := m.at(daddr, uint64(len(b)))
		if !ok {
			return false
		}
		k := min(uint64(len(b)), dr)
		if m.win.CopyOut(d, b[:k]) != nil {
			return false
		}
		daddr += k
		b = b[k:]
	}
	return true
}

// read reads len(b) bytes of the region at saddr into b.
func (m *mref) read(b []byte, saddr uint64) bool {
	for len(b) > 0 {
		s, sr, ok := m.at(saddr, uint64(len(b)))
		if !ok {
			return false
		}
		k := min(uint64(len(b)), sr)
		if m.win.CopyIn(b[:k], s) != nil {
			return false
		}
		saddr += k
		b = b[k:]
	}
	return true
}
