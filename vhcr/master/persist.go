package master

import (
	"fmt"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"slices"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/vhcr/pfstate"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// Persistence: each VF's channel state is kept in a record in the PF state
// file (pfstate.go; without one, in PF-private words of the header), read
// only at PF start, so that a restarted PF resumes the channels, posted
// commands included. With a state file the header's first word of each
// record only mirrors the last command for vfclient.Attachment.ChannelUp. Every change of the state is
// written here before the VF can see it acknowledged (acknowledge,
// violation); a VHCR_POST after a VHCR_POST changes nothing and writes
// nothing, so the hot path does not pay for it.
//
// A record (pfstate.Record, its words and bits package pfstate's) is four
// words: the last command with the active and valid bits, a check word, and
// the vHCR address. The check word is the CRC32C of the three others, the
// VF's number and the PF_GEN the record was written under, and is stored
// last: a PF killed between two stores of a record leaves a record whose
// check fails. A restarted PF trusts a record checked
// under the header's PF_GEN, or under PF_GEN+1 (a PF that died while it
// rewrote the records at its start, before it advanced PF_GEN). What it
// cannot trust it says, one log line per cause, and it tells each VF that
// was using its channel the way mlx4 does when its PF goes away: bit 17 in
// slave_read with the VF's own toggle, so that a pending post is answered
// and the VF resets itself.

// record is the persisted part of a VF's channel state.
type record struct {
	lastCmd mlx4.CommCmd
	active  bool
	vhcr    uint64
}

// recordRegs are the registers of a channel record slot.
type recordRegs struct{ lastCmd, check, vhcrHi, vhcrLo bar.Reg }

// mapRecord maps the channel record slot at off of r.
func mapRecord(r bar.Region, off int64) (recordRegs, error) {
	var rr recordRegs
	for _, w := range []struct {
		reg *bar.Reg
		off int64
	}{{&rr.lastCmd, pfstate.WordLastCmd}, {&rr.check, pfstate.WordCheck}, {&rr.vhcrHi, pfstate.WordVHCRHi}, {&rr.vhcrLo, pfstate.WordVHCRLo}} {
		var err error
		if *w.reg, err = bar.NewReg(r, off+w.off); err != nil {
			return recordRegs{}, err
		}
	}
	return rr, nil
}

func (r record) encoded() pfstate.Record {
	return pfstate.Record{LastCmd: uint8(r.lastCmd), Active: r.active, VHCR: r.vhcr}
}

// saved decodes VF i's record as written under generation gen or gen+1:
// the newer of its two slots that is intact where the record is in the
// state file, its one slot in the header. An empty cause means it is
// intact. It also points the next write at the other slot.
func (st *vfChannel) saved(i int, gen uint32) (rec record, cause string) {
	best := -1
	var bestSeq uint32
	for s := 0; s < st.nslot; s++ {
		r, seq, c := st.savedSlot(s, i, gen)
		if c != "" {
			if cause == "" || best < 0 && c != "no state record" {
				cause = c
			}
			continue
		}
		if best < 0 || pfstate.Newer(seq, bestSeq) {
			best, bestSeq, rec = s, seq, r
		}
	}
	if best < 0 {
		return record{}, cause
	}
	st.seq, st.slot = bestSeq, (best+1)%st.nslot
	return rec, ""
}

// savedSlot decodes slot s of VF i's record.
func (st *vfChannel) savedSlot(s, i int, gen uint32) (rec record, seq uint32, cause string) {
	reg := &st.persist[s]
	r, seq, cause := pfstate.DecodeRecord(reg.lastCmd.Load(), reg.check.Load(), reg.vhcrHi.Load(), reg.vhcrLo.Load(), i, gen, st.nslot)
	return record{lastCmd: mlx4.CommCmd(r.LastCmd), active: r.Active, vhcr: r.VHCR}, seq, cause
}

// plausible checks a record against the channel sequence: the address
// bits a command has not set yet are zero, only VHCR_EN and VHCR_POST are
// active, an FLR is not.
func (rec record) plausible() string {
	var unset uint64
	switch rec.lastCmd {
	case mlx4.MLX4_COMM_CMD_RESET, mlx4.MLX4_COMM_CMD_FLR:
		unset = ^uint64(0)
	case mlx4.MLX4_COMM_CMD_VHCR0, mlx4.MLX4_COMM_CMD_VHCR1, mlx4.MLX4_COMM_CMD_VHCR2:
		unset = 1<<mlx4.CommVHCRShift(rec.lastCmd) - 1 // the parts the next commands bring
	case mlx4.MLX4_COMM_CMD_VHCR_EN, mlx4.MLX4_COMM_CMD_VHCR_POST:
		if !rec.active {
			return fmt.Sprintf("saved state %v without the active bit", rec.lastCmd)
		}
		return ""
	default:
		return fmt.Sprintf("saved last command %#x is not a comm command", uint8(rec.lastCmd))
	}
	if rec.active || rec.vhcr&unset != 0 {
		return fmt.Sprintf("saved state %v active=%v with vHCR address %#x is not a state of the channel sequence", rec.lastCmd, rec.active, rec.vhcr)
	}
	return ""
}

// restoreVF adopts the state a previous PF persisted for VF i under gen
// and returns "", or says why it cannot be trusted and changes nothing.
// The acknowledged toggle is the one in slave_read.
func (p *PF) restoreVF(i int, gen uint32) string {
	st := &p.vfs[i]
	rec, cause := st.saved(i, gen)
	if cause == "" {
		cause = rec.plausible()
	}
	if cause != "" {
		return cause
	}
	if rec.lastCmd == mlx4.MLX4_COMM_CMD_FLR {
		// An FLR was in progress: it released everything, and no EndFLR
		// will come to this PF; the VF starts again from RESET.
		rec = record{lastCmd: mlx4.MLX4_COMM_CMD_RESET}
	}
	if rec.active {
		st.vhcr = rec.vhcr
		if err := st.mapVHCR(); err != nil {
			st.vhcr = 0
			return fmt.Sprintf("saved vHCR address %#x: %v", rec.vhcr, err)
		}
		if err := p.hca.ActivateVF(i); err != nil {
			st.vhcr, st.vhcrBox, st.vhcrMem = 0, dma.Mailbox{}, nil
			return "reactivating the VF's admin state: " + err.Error()
		}
	}
	st.lastCmd, st.active, st.vhcr = rec.lastCmd, rec.active, rec.vhcr
	sr := st.sr.Load()
	st.ack = sr & mlx4.CommToggle
	w := st.sw.Load()
	switch {
	case w&mlx4.CommToggle == st.ack:
		st.lastWord = w // idle
	case sr&pfstate.SlaveReadUnanswered != 0:
		// taken in and left unanswered on purpose (unanswered.go): not
		// served again until the VF rewrites its registers
		st.lastWord, st.srMark, st.unanswered = w, sr, true
		p.unanswered = true
	default:
		st.lastWord = ^w // a command was posted and not acknowledged: serve it
	}
	return ""
}

// distrust handles VF i whose saved state cannot be trusted. A VF whose
// registers are both zero never used its channel: it starts from RESET
// and nothing is said. Any other VF is reset and told with bit 17 and the
// toggle of its slave_write (answering a pending post); its registers are
// never zeroed. It reports whether the VF was told.
func (p *PF) distrust(i int) bool {
	st := &p.vfs[i]
	w, sr := st.sw.Load(), st.sr.Load()
	st.lastCmd, st.active, st.vhcr = mlx4.MLX4_COMM_CMD_RESET, false, 0
	st.vhcrBox, st.vhcrMem = dma.Mailbox{}, nil
	st.lastWord, st.ack, st.unanswered = w, w&mlx4.CommToggle, false
	if w == 0 && sr == 0 {
		return false
	}
	p.resetFunction(i, ResetSavedState)
	p.persistVF(i)
	st.sr.Store(st.ack | mlx4.COMM_CHAN_EVENT_INTERNAL_ERR)
	return true
}

// persistVF writes VF i's channel state if it changed since the last
// write (a VHCR_POST after a VHCR_POST changes nothing): the record's
// words, then its check word. In the state file it goes to the slot not
// holding the last record, with the next sequence, so that a PF killed
// between two stores leaves the last record intact (the state of before);
// in the header, a torn record fails its check.
func (p *PF) persistVF(i int) {
	st := &p.vfs[i]
	rec := record{st.lastCmd, st.active, st.vhcr}
	if st.recOK && rec == st.rec {
		return
	}
	seq := (st.seq + 1) & pfstate.RecSeqMask
	w0, hi, lo := rec.encoded().Words(seq, st.nslot)
	reg := &st.persist[st.slot]
	reg.lastCmd.Store(w0)
	reg.vhcrHi.Store(hi)
	p.journal.ChannelTorn()
	reg.vhcrLo.Store(lo)
	reg.check.Store(pfstate.RecordCheck(w0, hi, lo, i, p.gen))
	st.seq, st.slot = seq, (st.slot+1)%st.nslot
	if st.mirror != (bar.Reg{}) {
		mirror, _, _ := rec.encoded().Words(0, 1) // the header's first word carries no sequence
		st.mirror.Store(mirror)
	}
	st.rec, st.recOK = rec, true
}

// restore adopts the state saved in the header of b for every VF where it
// can be trusted and distrusts the others; it logs one line per cause and
// returns the number of VFs restored. A region never served (magic and
// PF_GEN zero) is a first start: its registers are cleared silently.
func (p *PF) restore(b bar.Region, l wire.Layout, gen uint32) int {
	magic, _ := b.Load32(wire.HdrMagic)
	if magic == 0 && gen == 0 {
		for i := range p.vfs {
			p.vfs[i].sw.Store(0)
			p.vfs[i].sr.Store(0)
		}
		return 0
	}
	global := p.stateCause // the objects are lost: every VF that used its channel is told
	if old, err := wire.ReadLayout(b); global != "" {
	} else if err != nil {
		global = err.Error()
	} else if old != l.Through(b) {
		global = fmt.Sprintf("the header describes another layout (%d VFs, windows of %#x at %#x) than this PF serves (%d VFs, windows of %#x at %#x)",
			old.NumVFs, old.Window, old.DMABase, l.NumVFs, l.Window, l.DMABase)
	} else if v, _ := b.Load32(wire.HdrStateVer); v != wire.StateVersion {
		global = fmt.Sprintf("saved state version %d, this build writes %d", v, wire.StateVersion)
	}
	told := map[string][]int{}
	var causes []string
	n := 0
	for i := range p.vfs {
		cause := global
		if cause == "" {
			cause = p.restoreVF(i, gen)
		}
		if p.trace.Enabled() {
			p.trace.Restart(p.stamp(), i, cause == "")
		}
		if cause == "" {
			n++
			continue
		}
		if p.distrust(i) {
			if told[cause] == nil {
				causes = append(causes, cause)
			}
			told[cause] = append(told[cause], i)
		}
	}
	if p.vfsBefore != 0 {
		// The operator changed --num-vfs: one line says so and what it
		// costs, whatever the state file and the header held.
		var reset []int
		for _, c := range causes {
			reset = append(reset, told[c]...)
		}
		slices.Sort(reset)
		msg := fmt.Sprintf("VF count changed from %d to %d: the previous PF's objects and channels are dropped, every VF starts afresh", p.vfsBefore, len(p.vfs))
		if len(reset) == 0 {
			p.log.Info(msg, "generation", gen)
		} else {
			p.log.Warn(msg+"; VFs that were using their channel are reset with bit 17", "vfs", reset, "generation", gen)
		}
		return n
	}
	for _, c := range causes {
		p.log.Warn("saved comm channel state not trusted: resetting its VFs with bit 17", "cause", c, "vfs", told[c], "generation", gen)
	}
	return n
}
