package master

import "github.com/vhcrd/vhcrd/vhcr"

// Persistence: each VF's channel state is kept in the header (PF-private
// words, read only at PF start), so that a restarted PF resumes the
// channels, posted commands included. Every change of the state is written
// here before the VF can see it acknowledged (acknowledge, violation).

// record is the persisted part of a VF's channel state.
type record struct {
	lastCmd vhcr.CommCmd
	active  bool
	vhcr    uint64
}

// saved decodes VF i's record from the header; ok is false where no valid
// record was written.
func (st *vfState) saved() (rec record, ok bool) {
	w0 := st.persist[0].Load()
	if w0&(1<<31) == 0 {
		return record{}, false
	}
	rec.lastCmd = vhcr.CommCmd(w0 & 0xff)
	rec.active = w0&(1<<8) != 0
	rec.vhcr = uint64(st.persist[2].Load())<<32 | uint64(st.persist[3].Load())
	return rec, true
}

// restoreVF adopts the state a previous PF persisted for VF i, if it is
// consistent; the acknowledged toggle is the one in slave_read.
func (p *PF) restoreVF(i int) bool {
	st := &p.vfs[i]
	rec, ok := st.saved()
	if !ok {
		return false
	}
	cmd, active, addr := rec.lastCmd, rec.active, rec.vhcr
	switch cmd {
	case vhcr.CommFLR:
		// An FLR was in progress: it released everything, and no EndFLR
		// will come to this PF; the VF starts again from RESET.
		cmd, active, addr = vhcr.CommReset, false, 0
	case vhcr.CommReset, vhcr.CommVHCR0, vhcr.CommVHCR1, vhcr.CommVHCR2:
	case vhcr.CommVHCREn, vhcr.CommVHCRPost:
		st.vhcr = addr
		if st.mapVHCR() != nil {
			return false
		}
	default:
		return false
	}
	if active && p.hca.ActivateVF(i) != nil {
		return false
	}
	st.lastCmd, st.active, st.vhcr = cmd, active, addr
	st.rec, st.recOK = rec, true
	p.persistVF(i) // writes only if the FLR case changed it
	st.ack = st.sr.Load() & vhcr.ToggleBit
	w := st.sw.Load()
	if w&vhcr.ToggleBit == st.ack {
		st.lastWord = w // idle
	} else {
		st.lastWord = ^w // a command was posted and not acknowledged: serve it
	}
	return true
}

// persistVF writes VF i's channel state to the header if it changed since
// the last write (a VHCR_POST after a VHCR_POST changes nothing).
func (p *PF) persistVF(i int) {
	st := &p.vfs[i]
	rec := record{st.lastCmd, st.active, st.vhcr}
	if st.recOK && rec == st.rec {
		return
	}
	w0 := uint32(1)<<31 | uint32(rec.lastCmd)
	if rec.active {
		w0 |= 1 << 8
	}
	st.persist[0].Store(w0)
	st.persist[1].Store(st.ack)
	st.persist[2].Store(uint32(rec.vhcr >> 32))
	st.persist[3].Store(uint32(rec.vhcr))
	st.rec, st.recOK = rec, true
}
