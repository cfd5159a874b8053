package master

import (
	"fmt"

	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// The PF's side of the state file (pfstate.go) at start: what a restarted
// PF does with what it finds (the journal's write side is journal.go).

// loadState restores the model from the state file: the checkpoint, then
// the committed records replayed quietly. It returns the last record if it
// never committed, and why the state cannot be trusted ("" if it can).
func (p *PF) loadState(ps *pstate, l wire.Layout, gen uint32) (pending *jrec, cause string) {
	defer func() {
		if cause != "" {
			// nothing of untrusted state is re-delivered, nor carried
			// into the next checkpoint
			for i := range ps.last {
				ps.forget(i)
			}
		}
	}()
	cause, fresh := ps.checkHeader(l)
	if fresh && gen != 0 {
		return nil, fmt.Sprintf("the previous PF (generation %d) left no PF state file", gen)
	}
	if fresh || cause != "" {
		return nil, cause
	}
	if g := ps.gen(); g != gen && g != gen+1 {
		return nil, fmt.Sprintf("PF state file written under PF generation %d, the regions were served under %d (another PF's state file)", g, gen)
	}
	ck, err := ps.readCheckpoint()
	if err != nil {
		return nil, "PF state checkpoint: " + err.Error()
	}
	if len(ck.Tokens) != len(p.vfs) || len(ck.Last) != len(p.vfs) {
		return nil, fmt.Sprintf("PF state checkpoint of %d VFs", len(ck.Tokens))
	}
	if err := p.hca.Load(ck.HCA, p.window); err != nil {
		return nil, "PF state checkpoint: " + err.Error()
	}
	for i := range p.vfs {
		p.vfs[i].cmdToken = ck.Tokens[i]
	}
	ps.seq = ck.Seq
	copy(ps.ckLast, ck.Last)
	for i := range ps.last {
		ps.last[i] = noRecord
	}
	pending, err = p.replay(ps)
	if err != nil {
		return nil, err.Error()
	}
	// Every VF's last record must be in what was replayed: one beyond the
	// journal's end means records were lost (a corrupt record ended it).
	for i := range p.vfs {
		if s := ps.lastSeq(i); s > ps.seq {
			return nil, fmt.Sprintf("PF state journal ends at record %d, VF %d's last record is record %d (a corrupt record)", ps.seq, i, s)
		}
	}
	for vf := range p.vfs {
		for eqn := 0; eqn < ps.eqs; eqn++ {
			if prod, live := ps.pos(vf, eqn); live {
				p.hca.SetEQProd(vf, eqn, prod)
			}
		}
	}
	p.hca.RefreshEQs()
	return pending, ""
}

func (p *PF) window(vf int) *dma.Window { w, _ := p.space.Window(vf); return w }

// replay executes the journal's committed records after the checkpoint in
// order, quietly, and checks that each gives the status it recorded.
func (p *PF) replay(ps *pstate) (*jrec, error) {
	j := ps.b[ps.g.Journal.Off:ps.g.Journal.End()]
	p.hca.SetQuiet(true)
	defer p.hca.SetQuiet(false)
	off := int64(0)
	for {
		rec, ok := readRecord(j, off, ps.seq+1, len(p.vfs))
		if !ok {
			return nil, nil
		}
		if !rec.committed {
			r := rec
			r.inbox = append([]byte(nil), rec.inbox...)
			ps.seq = rec.seq
			return &r, nil
		}
		st := &p.vfs[rec.vf]
		switch rec.kind {
		case recReset:
			p.hca.ResetFunction(rec.vf)
			st.cmdToken = 0
			ps.forget(rec.vf)
		case recActivate:
			_ = p.hca.ActivateVF(rec.vf) // fails as it failed, undoing itself
		case recCmd:
			if c := p.replayCmd(&rec); rec.flags&flagExec != 0 && p.table.Lookup(c.Op) != nil && p.table.Lookup(c.Op).journal {
				if s := p.hca.Exec(c); s != rec.res.Status {
					return nil, fmt.Errorf("PF state journal: record %d (VF %d, %v) replays to %v, recorded %v", rec.seq, rec.vf, c.Op, s, rec.res.Status)
				}
			}
			ps.last[rec.vf] = off
			if rec.flags&flagEvent != 0 && rec.flags&flagEarly == 0 {
				st.cmdToken++
			}
		}
		ps.seq = rec.seq
		off += rec.size
	}
}

// replayCmd rebuilds a journaled command from its shadows.
func (p *PF) replayCmd(rec *jrec) *hca.Cmd {
	c := &p.cmd
	c.DecodeVHCR(rec.w[0], rec.w[1], rec.w[2], rec.w[3])
	c.VF, c.Mem, c.Reason, c.Inbox, c.Outbox = rec.vf, p.vfs[rec.vf].win, refusal.None, nil, nil
	if e := p.table.Lookup(c.Op); e != nil {
		if e.HasInbox {
			c.InParam &= mlx4.InboxMask
			clear(p.inbox[copy(p.inbox[:], rec.inbox):])
			c.Inbox = &p.inbox
		}
		if e.HasOutbox {
			clear(p.outbox[:])
			c.Outbox = &p.outbox
		}
	}
	return c
}

// resume finishes what the previous PF left of VF i's last command, once
// the channels are restored and the journal is on: a committed result the
// VF has not seen is delivered again (outbox, write-back, EQE, toggle)
// without executing; a command accepted the early way whose record never
// committed is executed now from its shadows. A poll-mode command that
// never committed is still pending on the channel and is served as usual.
func (p *PF) resume(i int, pending *jrec, ps *pstate) {
	st := &p.vfs[i]
	if !st.active || st.lastCmd != mlx4.MLX4_COMM_CMD_VHCR_POST && st.lastCmd != mlx4.MLX4_COMM_CMD_VHCR_EN {
		return // a VHCR_POST follows VHCR_EN or VHCR_POST only
	}
	if st.unanswered {
		return // left unanswered by the previous PF on purpose (restoreVF)
	}
	w := st.sw.Load()
	posted := w&^mlx4.CommToggle == mlx4.CommVHCRPostWord && w&mlx4.CommToggle != st.ack
	if pending != nil && pending.vf == i {
		// Accepted the early way: its toggle is the acknowledged one (the
		// VF may have posted its next command since). Else it was not
		// acknowledged and is still pending on the channel.
		if pending.kind == recCmd && pending.flags&flagEarly != 0 && pending.toggle == st.ack {
			p.resumeEarly(i, pending)
		}
		return
	}
	s, ok := ps.lastResult(i)
	if !ok || pending != nil && s.Seq == pending.seq {
		return
	}
	if s.Flags&flagEarly != 0 {
		p.redeliverEQE(i, &s)
		return
	}
	if !posted || w&mlx4.CommToggle != s.Toggle {
		return
	}
	w0, w1, w2, w3, err := p.readVHCR(st)
	if err != nil || !sameCommand(&s, w0, w1, w2, w3) {
		return // another command: served as usual
	}
	c := p.decode(i, st, s.W[0], s.W[1], s.W[2], s.W[3])
	if s.Flags&flagOutbox != 0 {
		// the outbox as it was written: the kept bytes, zeros after them
		clear(p.outbox[copy(p.outbox[:], s.Outbox):])
		out, err := st.win.Mailbox(c.OutParam, dma.Write)
		if err != nil || out.CopyOut(0, p.outbox[:]) != nil {
			return // served as usual: the DMA failure resets the VF
		}
	}
	if p.writeBack(st, s.Flags&flagImm != 0, s.Out, mlx4.StatusWord(s.Status, s.W[3])) != nil {
		return
	}
	if s.Flags&flagEvent != 0 {
		p.redeliverEQE(i, &s)
	}
	st.lastWord = w
	p.acknowledge(i, mlx4.MLX4_COMM_CMD_VHCR_POST, s.Toggle)
	p.stats.Redelivered++
}

// redeliverEQE posts a committed command's completion EQE unless its EQ's
// producer index shows it was written.
func (p *PF) redeliverEQE(i int, s *LastResult) {
	if s.Flags&flagEvent == 0 || s.EQN < 0 {
		return
	}
	if prod, ok := p.hca.EQProd(i, int(s.EQN)); !ok || prod != s.ProdBefore {
		return
	}
	if s.Flags&flagEarly != 0 {
		p.completionEQE(i, s.Token, s.Status, s.Flags&flagImm != 0, s.Out)
	} else {
		p.completionEQE(i, s.Token, mlx4.OK, false, 0)
	}
	p.flushEQE()
	p.stats.Redelivered++
}

// resumeEarly executes a command accepted the early way before the
// previous PF died, from its journaled shadows, and completes it by EQE:
// the post path's intent, execute and deliver, without the acknowledgement
// the previous PF gave.
func (p *PF) resumeEarly(i int, rec *jrec) {
	st := &p.vfs[i]
	p.words = rec.w
	x := inflight{vf: i, c: p.replayCmd(rec), way: byEarly, toggle: rec.toggle}
	x.e, x.status = p.admit(x.c)
	if x.status == mlx4.OK && rec.flags&flagExec == 0 {
		x.status = x.c.Refuse(mlx4.INTERNAL_ERR, refusal.InboxDMA) // the inbox was not readable
	}
	if x.c.Outbox != nil {
		var err error
		if p.outPage, err = st.win.Mailbox(x.c.OutParam, dma.Write); err != nil {
			x.status = mlx4.INTERNAL_ERR
		}
	}
	x.tx = p.journal.Begin(i, x.c, x.e, x.status, x.way, x.toggle, &p.words)
	x.tx.Accepted()
	p.execute(&x)
	if err := p.deliver(&x); err != nil {
		p.violation(i, st.ack, ResetDMA, err.Error(), st.sw.Load())
	}
	p.flushEQE()
	p.stats.Resumed++
}

// freshHCA empties the model (state that could not be trusted may have
// been partly loaded or replayed): the image of a new HCA of the same
// configuration.
func (p *PF) freshHCA() error {
	h, err := hca.New(p.hca.Cfg, p.hca.NumVFs)
	if err != nil {
		return err
	}
	for i := range p.vfs {
		p.vfs[i].cmdToken = 0
	}
	return p.hca.Load(h.Image(), p.window)
}

// sameCommand reports whether the vHCR words name the command of slot s:
// the fields the VF writes, ignoring those the PF writes back (the status,
// and the immediate output of an out_is_imm command).
func sameCommand(s *LastResult, w0, w1, w2, w3 uint64) bool {
	var a, b hca.Cmd
	a.DecodeVHCR(s.W[0], s.W[1], s.W[2], s.W[3])
	b.DecodeVHCR(w0, w1, w2, w3)
	if s.Flags&flagImm != 0 {
		b.OutParam = a.OutParam
	}
	return a == b
}
