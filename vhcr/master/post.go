package master

import (
	"encoding/binary"
	"fmt"

	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/vhcr"
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/internal/crashpoint"
	"github.com/vhcrd/vhcrd/vhcr/internal/tick"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// VHCR_POST (mlx4_master_process_vhcr) is one path built from the helpers
// below, in this order: read the vHCR once into a four-word shadow; decode
// it (mlx4's decoder); admit the command against its table row; copy the
// mailboxes; execute (hca.HCA.Exec); finish: write the status word and the
// immediate output back, acknowledge, and account. postFast is the same
// path for the common command with the steps it does not need left out,
// and an early-return test in front of it.

// postFast is VHCR_POST's fast path, in front of the general one as
// sync.Mutex's Lock is in front of lockSlow: the channel is in sequence (the
// previous command was a VHCR_POST and slave_read still holds its
// acknowledgement), the vHCR is mapped, and the decoded command's row has
// the plain flag (no mailbox, executed; computed once in NewTable), it is
// admitted (hca.Admit: its op_modifier legal) and the 'e' bit is clear.
// For such a command it runs the same helpers and reports true; for any
// other it returns false having changed nothing the VF sees, and serve
// takes the general path, which reads the vHCR afresh.
func (p *PF) postFast(i int, st *vfState, w uint32) bool {
	m := st.vhcrMem
	if m == nil || st.sr.Load()&vhcr.ToggleBit != st.ack {
		return false
	}
	w0, w1, w2, w3 := mlx4.VHCRWords(m)
	c := p.decode(i, st, w0, w1, w2, w3)
	e := p.table.Lookup(c.Op)
	if e == nil || !e.plain || c.EBit || hca.Admit(c, &e.Command) != mlx4.OK {
		return false
	}
	t0, timed := p.start()
	if e.journal && p.ps != nil {
		// Journaled as on the general path (pfstate.go): intent, execute,
		// result committed, then the write-back and the toggle.
		sh := [4]uint64{w0, w1, w2, w3}
		toggle := w & vhcr.ToggleBit
		p.makeRoom(recHdr)
		if p.ps != nil {
			p.ps.intent(recCmd, i, flagExec, toggle, &sh, nil)
		}
		p.hit(crashpoint.PostAccepted)
		status := p.hca.Exec(c)
		p.hit(crashpoint.PostExecuting)
		p.journalResult(i, c, status, e.OutIsImm, false, 0)
		storeBack(m, e.OutIsImm, c.OutParam, mlx4.StatusWord(status, w3))
		p.hit(crashpoint.PostWrittenBack)
		st.lastWord = w
		st.reply(toggle)
		p.account(i, e, c, status, toggle, timed, t0)
		return true
	}
	crashpoint.Hit(crashpoint.PostAccepted)
	status := p.hca.Exec(c)
	crashpoint.Hit(crashpoint.PostExecuting)
	storeBack(m, e.OutIsImm, c.OutParam, mlx4.StatusWord(status, w3))
	crashpoint.Hit(crashpoint.PostWrittenBack)
	st.lastWord = w
	st.reply(w & vhcr.ToggleBit) // acknowledge: the last command stays VHCR_POST
	p.account(i, e, c, status, w&vhcr.ToggleBit, timed, t0)
	return true
}

// post processes VHCR_POST for VF i in general: it acknowledges (first, for
// a command with the 'e' bit completed the seed's way; after the write-back
// and the EQE for one completed mlx4's way: complete.go) and accounts. An
// error is a DMA failure that must reset the VF (vHCR unreadable, outbox
// unwritable, write-back failed); the command is then not accounted.
func (p *PF) post(i int, toggle uint32) error {
	st := &p.vfs[i]
	t0, timed := p.start()
	w0, w1, w2, w3, err := p.readVHCR(st)
	if err != nil {
		p.stats.DMA[i]++
		return fmt.Errorf("reading the vHCR: %w", err)
	}
	c := p.decode(i, st, w0, w1, w2, w3)
	e, status := p.admit(c)
	var out dma.Mailbox
	if status == mlx4.OK && e.HasOutbox {
		// The outbox must be writable before anything executes: a command
		// whose results cannot be delivered must have no effect (mlx4 only
		// finds out after executing, then resets the VF; we reset too).
		if out, err = st.win.Mailbox(c.OutParam, dma.Write); err != nil {
			p.stats.DMA[i]++
			return fmt.Errorf("outbox: %w", err)
		}
		c.Outbox = &p.outbox
	}
	if status == mlx4.OK && e.HasInbox {
		// The inbox, copied once into the shadow (low 8 bits masked, as
		// INBOX_MASK does; ACCESS_MEM needs 4 KiB alignment).
		c.InParam &= mlx4.InboxMask
		if in, err := st.win.Mailbox(c.InParam, dma.Read); err != nil || in.CopyIn(p.inbox[:], 0) != nil {
			p.stats.DMA[i]++
			status = c.Refuse(mlx4.INTERNAL_ERR, refusal.InboxDMA)
		} else {
			c.Inbox = &p.inbox
		}
	}
	event := c.EBit && p.hca.HasEQ(i, EventTypeCmd)
	if status == mlx4.OK && c.EBit && !event {
		// No EQ mapped for command completions: mlx4 would accept and never
		// complete, leaving the VF to time out. Refuse at once instead.
		status = c.Refuse(mlx4.BAD_SYS_STATE, refusal.EventsNoEQ)
	}
	seed := event && !st.mlx4Way(c.Token)
	if event {
		st.lastMlx4 = !seed
	}
	w := [4]uint64{w0, w1, w2, w3}
	journaled := p.ps != nil && (event || status == mlx4.OK && e.journal)
	if journaled {
		// The intent is durable before anything the VF can see: the
		// seed's early acknowledgement, or any effect of the command.
		p.journalIntent(i, c, e, status, seed, event, toggle, &w)
	}
	if seed {
		// The seed's way: accept now, the VF may post its next command.
		p.acknowledge(i, vhcr.CommVHCRPost, toggle)
	}
	p.hit(crashpoint.PostAccepted)
	status, err = p.execute(i, c, e, status, out, toggle, &w, event, seed, journaled)
	if err != nil {
		return err
	}
	p.account(i, e, c, status, toggle, timed, t0)
	if event {
		p.flushEQE()
	}
	return nil
}

// execute runs an admitted command (status OK) or answers a refused one,
// commits its result where it was journaled, and delivers it: the outbox,
// then (the seed's way) the completion EQE, or the write-back, mlx4's EQE
// and the toggle. It returns the final status. A restarted PF runs a
// journaled command that had not committed through it too.
func (p *PF) execute(i int, c *hca.Cmd, e *Entry, status mlx4.Status, out dma.Mailbox, toggle uint32, w *[4]uint64, event, seed, journaled bool) (mlx4.Status, error) {
	st := &p.vfs[i]
	if status == mlx4.OK {
		status = p.hca.Exec(c)
	}
	p.hit(crashpoint.PostExecuting)
	if status == mlx4.OK && c.Outbox != nil {
		if err := out.CopyOut(0, p.outbox[:]); err != nil {
			p.stats.DMA[i]++
			if journaled {
				p.journalCommitted(i, status) // executed: its effect stays; the channel is reset
			}
			return status, fmt.Errorf("writing the outbox: %w", err)
		}
	}
	imm := e != nil && e.OutIsImm
	token := c.Token
	if event && !seed {
		st.cmdToken++
		token = st.cmdToken
	}
	if journaled {
		p.journalResult(i, c, status, imm, event, token)
	}
	if seed {
		p.completionEQE(i, token, status, imm, c.OutParam)
		p.hit(crashpoint.PostWrittenBack)
		return status, nil
	}
	if err := p.writeBack(st, imm, c.OutParam, mlx4.StatusWord(status, w[3])); err != nil {
		p.stats.DMA[i]++
		return status, fmt.Errorf("writing the vHCR: %w", err)
	}
	if event {
		// mlx4's way (complete.go): the vHCR written back, then the
		// EQE with ++event_eq[CMD].token, status 0, out_param 0, then
		// the toggle.
		p.completionEQE(i, token, mlx4.OK, false, 0)
	}
	p.hit(crashpoint.PostWrittenBack)
	p.acknowledge(i, vhcr.CommVHCRPost, toggle)
	return status, nil
}

// readVHCR copies VF i's vHCR once into the four-word shadow: four 8-byte
// loads from a mapped window, else through the vHCR's mailbox. The shadow
// is held in registers (an array or a decoded struct would live on the
// stack and put a store-to-load round trip on every field).
func (p *PF) readVHCR(st *vfState) (w0, w1, w2, w3 uint64, err error) {
	if m := st.vhcrMem; m != nil {
		w0, w1, w2, w3 = mlx4.VHCRWords(m)
		return w0, w1, w2, w3, nil
	}
	if err = st.vhcrBox.CopyIn(p.shadow[:], 0); err != nil {
		return 0, 0, 0, 0, err
	}
	w0, w1, w2, w3 = mlx4.VHCRWords(&p.shadow)
	return w0, w1, w2, w3, nil
}

// decode fills the PF's reused command from VF i's vHCR shadow with mlx4's
// decoder and clears what the previous command left.
func (p *PF) decode(i int, st *vfState, w0, w1, w2, w3 uint64) *hca.Cmd {
	c := &p.cmd
	c.DecodeVHCR(w0, w1, w2, w3)
	c.VF, c.Mem, c.Reason, c.Inbox, c.Outbox = i, st.win, refusal.None, nil, nil
	return c
}

// admit looks c's row up and applies the admission rule (hca.Admit, the
// one the executors' entry applies too); e is nil for an opcode without a
// row.
func (p *PF) admit(c *hca.Cmd) (*Entry, mlx4.Status) {
	e := p.table.Lookup(c.Op)
	if e == nil {
		return nil, hca.Admit(c, nil)
	}
	return e, hca.Admit(c, &e.Command)
}

// writeBack writes what the PF owns of the vHCR: the immediate output for
// an out_is_imm row, then the status word (mlx4.StatusWord: the status and
// the flags and opcode as the VF wrote them). Plain stores where the window
// is mapped, else through the vHCR's mailbox.
func (p *PF) writeBack(st *vfState, imm bool, out uint64, word uint32) error {
	if m := st.vhcrMem; m != nil {
		storeBack(m, imm, out, word)
		return nil
	}
	if imm {
		binary.BigEndian.PutUint64(p.shadow[mlx4.OffOutParam:], out)
		if err := st.vhcrBox.CopyOut(mlx4.OffOutParam, p.shadow[mlx4.OffOutParam:mlx4.OffOutParam+8]); err != nil {
			return err
		}
	}
	binary.BigEndian.PutUint32(p.shadow[mlx4.OffStatus:], word)
	return st.vhcrBox.CopyOut(mlx4.OffStatus, p.shadow[mlx4.OffStatus:mlx4.OffStatus+4])
}

// storeBack is writeBack into a mapped vHCR.
func storeBack(m *[mlx4.VHCRSize]byte, imm bool, out uint64, word uint32) {
	if imm {
		binary.BigEndian.PutUint64(m[mlx4.OffOutParam:], out)
	}
	binary.BigEndian.PutUint32(m[mlx4.OffStatus:], word)
}

// start begins timing the command if it is sampled.
func (p *PF) start() (t0 uint64, timed bool) {
	if p.stats.sample() {
		return tick.Now(), true
	}
	return 0, false
}

// account counts and traces command c of VF i after its acknowledgement,
// off the VF's critical path; e is nil for an opcode not in the table.
func (p *PF) account(i int, e *Entry, c *hca.Cmd, status mlx4.Status, toggle uint32, timed bool, t0 uint64) {
	idx := 0
	if e != nil {
		idx = e.Index()
	}
	p.stats.countCommand(i, idx, status)
	p.stats.countRefusal(i, c.Reason)
	if status != mlx4.OK {
		p.vfs[i].refused = Refusal{Op: c.Op, Status: status, Reason: c.Reason, Toggle: toggle >> 31}
	}
	if timed {
		t1 := tick.Now()
		p.stats.observe(classOf(e), t1-t0)
		p.now = t1
		if p.trace.Enabled() {
			p.trace.Post(t0, t1, toggle, c, status)
		}
	} else if p.trace.Enabled() {
		p.trace.PostUntimed(p.now, toggle, c, status)
	}
}

// hit is a named point of the post path and the commit: the crash tier's
// kill (crashpoint, -tags crashpoints) and the tests' in-process one.
func (p *PF) hit(name string) {
	crashpoint.Hit(name)
	if p.testHit != nil {
		p.testHit(name)
	}
}
