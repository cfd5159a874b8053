package master

import "github.com/vhcrd/vhcrd/vhcr"

// Persistence: each VF's channel state is kept in the header (PF-private
// words, read only at PF start), so that a restarted PF resumes the
// channels, posted commands included.

// restoreVF adopts the state a previous PF persisted for VF i, if it is
// consistent; the acknowledged toggle is the one in slave_read.
func (p *PF) restoreVF(i int) bool {
	st := &p.vfs[i]
	w0 := st.persist[0].Load()
	if w0&(1<<31) == 0 {
		return false
	}
	cmd := vhcr.CommCmd(w0 & 0xff)
	addr := uint64(st.persist[2].Load())<<32 | uint64(st.persist[3].Load())
	switch cmd {
	case vhcr.CommReset, vhcr.CommVHCR0, vhcr.CommVHCR1, vhcr.CommVHCR2:
	case vhcr.CommVHCREn, vhcr.CommVHCRPost:
		st.vhcr = addr
		if st.mapVHCR() != nil {
			return false
		}
	default:
		return false
	}
	active := w0&(1<<8) != 0
	if active && p.hca.ActivateVF(i) != nil {
		return false
	}
	st.lastCmd, st.active, st.vhcr = cmd, active, addr
	st.ack = st.sr.Load() & vhcr.ToggleBit
	w := st.sw.Load()
	if w&vhcr.ToggleBit == st.ack {
		st.lastWord = w // idle
	} else {
		st.lastWord = ^w // a command was posted and not acknowledged: serve it
	}
	return true
}

func (p *PF) persistVF(i int) {
	st := &p.vfs[i]
	w0 := uint32(1)<<31 | uint32(st.lastCmd)
	if st.active {
		w0 |= 1 << 8
	}
	st.persist[0].Store(w0)
	st.persist[1].Store(st.ack)
	st.persist[2].Store(uint32(st.vhcr >> 32))
	st.persist[3].Store(uint32(st.vhcr))
}
