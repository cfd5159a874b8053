package master

import (
	"encoding/binary"
	"fmt"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"

	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/vhcr/faultinj"
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/internal/tick"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// VHCR_POST (mlx4_master_process_vhcr) is one path built from the helpers
// below, in this order: read the vHCR once into a four-word shadow; decode
// it (mlx4's decoder); admit the command against its table row; copy the
// mailboxes; then process: the intent (tx := journal.Begin, journal.go),
// execute (hca.HCA.Exec) and tx.Commit, and deliver: the outbox, the
// write-back, the EQE and the toggle; then account. postFast is the guard
// of the common command in front of the same process.

// inflight is one VHCR_POST on its way: the command as admitted (its row,
// nil for an opcode without one, and its status), how it completes, the
// toggle it is acknowledged with, and its journal transaction. Its vHCR
// words and its outbox page are the PF's (words, outPage): the fast path
// fills no more of it than it needs.
type inflight struct {
	vf     int
	c      *hca.Cmd
	e      *Entry
	tx     tx
	status mlx4.Status
	way    completion
	token  uint16 // the completion EQE's token (execute)
	toggle uint32
	fault  *faultinj.Rule // an injected fault acting on its result (faults.go), or nil
}

// postFast is VHCR_POST's fast path, in front of the general one as
// sync.Mutex's Lock is in front of lockSlow: the channel is in sequence (the
// previous command was a VHCR_POST and slave_read still holds its
// acknowledgement), the vHCR is mapped, and the decoded command's row has
// the plain flag (no mailbox, executed; computed once in NewTable), it is
// admitted (hca.Admit: its op_modifier legal) and the 'e' bit is clear.
// For such a command it runs process and reports true; for any other it
// returns false having changed nothing the VF sees, and serve takes the
// general path, which reads the vHCR afresh.
func (p *PF) postFast(i int, st *vfChannel, w uint32) bool {
	m := st.vhcrMem
	if m == nil || st.sr.Load()&mlx4.CommToggle != st.ack || p.fmask&faultinj.PointPost != 0 {
		return false
	}
	w0, w1, w2, w3 := mlx4.VHCRWords(m)
	c := p.decode(i, st, w0, w1, w2, w3)
	e := p.table.Lookup(c.Op)
	if e == nil || !e.plain || c.EBit || hca.Admit(c, &e.Command) != mlx4.OK {
		return false
	}
	t0, timed := p.start()
	st.lastWord = w
	p.words = [4]uint64{w0, w1, w2, w3}
	x := inflight{vf: i, c: c, e: e, toggle: w & mlx4.CommToggle}
	if err := p.process(&x, t0, timed); err != nil {
		// Not expected (no mailbox, a mapped vHCR), but handled as the
		// general path does: the VF is reset.
		p.traceComm(i, mlx4.MLX4_COMM_CMD_VHCR_POST, x.toggle, 0)
		p.violation(i, x.toggle, ResetDMA, err.Error(), w)
	}
	return true
}

// post processes VHCR_POST for VF i in general: it reads and admits the
// command, checks its mailboxes and its way of completion, and processes
// it. An error is a DMA failure that must reset the VF (vHCR unreadable,
// outbox unwritable, write-back failed); the command is then not
// accounted.
func (p *PF) post(i int, toggle uint32) error {
	st := &p.vfs[i]
	t0, timed := p.start()
	w0, w1, w2, w3, err := p.readVHCR(st)
	if err != nil {
		p.stats.DMA[i]++
		return fmt.Errorf("reading the vHCR: %w", err)
	}
	c := p.decode(i, st, w0, w1, w2, w3)
	p.words = [4]uint64{w0, w1, w2, w3}
	x := inflight{vf: i, c: c, toggle: toggle}
	x.e, x.status = p.admit(c)
	event := c.EBit && p.hca.HasEQ(i, EventTypeCmd)
	if p.fmask&faultinj.PointPost != 0 && !st.fault.replay {
		if r := p.faults.Match(faultinj.PointPost, i, int(c.Op), event); r != nil && p.postFault(&x, r) {
			return nil
		}
	}
	if err := p.mailboxes(st, &x); err != nil {
		return err
	}
	if x.status == mlx4.OK && c.EBit && !event {
		// No EQ mapped for command completions: mlx4 would accept and never
		// complete, leaving the VF to time out. Refuse at once instead.
		x.status = c.Refuse(mlx4.BAD_SYS_STATE, refusal.EventsNoEQ)
	}
	if event {
		x.way = byEQE
		if !st.mlx4Way(c.Token) {
			x.way = byEarly
		}
		st.lastMlx4 = x.way == byEQE
	}
	p.eqeFault = x.fault
	err = p.process(&x, t0, timed)
	p.eqeFault = nil
	return err
}

// mailboxes checks an admitted command's outbox writable (an error: the
// VF is reset) and copies its inbox into the shadow (unreadable: the
// command is refused).
func (p *PF) mailboxes(st *vfChannel, x *inflight) error {
	c := x.c
	var err error
	if x.status == mlx4.OK && x.e.HasOutbox {
		// The outbox must be writable before anything executes: a command
		// whose results cannot be delivered must have no effect (mlx4 only
		// finds out after executing, then resets the VF; we reset too).
		if p.outPage, err = st.win.Mailbox(c.OutParam, dma.Write); err != nil {
			p.stats.DMA[x.vf]++
			return fmt.Errorf("outbox: %w", err)
		}
		c.Outbox = &p.outbox
	}
	if x.status == mlx4.OK && x.e.HasInbox {
		// The inbox, copied once into the shadow (low 8 bits masked, as
		// INBOX_MASK does; ACCESS_MEM needs 4 KiB alignment).
		c.InParam &= mlx4.InboxMask
		if in, err := st.win.Mailbox(c.InParam, dma.Read); err != nil || in.CopyIn(p.inbox[:], 0) != nil {
			p.stats.DMA[x.vf]++
			x.status = c.Refuse(mlx4.INTERNAL_ERR, refusal.InboxDMA)
		} else {
			c.Inbox = &p.inbox
		}
	}
	return nil
}

// process is the post path after admission, the fast path's and the
// general one's: the intent (tx := journal.Begin, durable before anything
// the VF can see), the early acknowledgement, execute and commit,
// deliver, account.
func (p *PF) process(x *inflight, t0 uint64, timed bool) error {
	x.tx = p.journal.Begin(x.vf, x.c, x.e, x.status, x.way, x.toggle, &p.words)
	if x.way == byEarly && (x.fault == nil || !p.faultAck(x)) {
		// The early way: accept now, the VF may post its next command.
		p.acknowledge(x.vf, mlx4.MLX4_COMM_CMD_VHCR_POST, x.toggle)
	}
	x.tx.Accepted()
	p.execute(x)
	if x.fault != nil {
		p.faultResult(x)
	}
	if err := p.deliver(x); err != nil {
		return err
	}
	p.account(x.vf, x.e, x.c, x.status, x.toggle, timed, t0)
	if x.way != polled {
		p.flushEQE()
	}
	return nil
}

// execute runs an admitted command (status OK) or keeps a refused one's
// status, takes its completion token, and commits its result
// (tx.Commit). A restarted PF runs a command accepted the early way whose
// record had not committed through it too (resumeEarly).
func (p *PF) execute(x *inflight) {
	if x.status == mlx4.OK {
		x.status = p.hca.Exec(x.c)
	}
	x.token = x.c.Token
	if x.way == byEQE {
		st := &p.vfs[x.vf]
		st.cmdToken++
		x.token = st.cmdToken
	}
	x.tx.Commit(x.c, result{status: x.status, token: x.token, imm: x.e != nil && x.e.OutIsImm, event: x.way != polled})
}

// deliver gives the VF a committed result: the outbox, then (the early
// way) the completion EQE, or the write-back, mlx4's EQE and the toggle.
func (p *PF) deliver(x *inflight) error {
	i, c := x.vf, x.c
	st := &p.vfs[i]
	if x.status == mlx4.OK && c.Outbox != nil {
		if err := p.outPage.CopyOut(0, p.outbox[:]); err != nil {
			p.stats.DMA[i]++
			return fmt.Errorf("writing the outbox: %w", err) // executed: its effect stays; the channel is reset
		}
	}
	imm := x.e != nil && x.e.OutIsImm
	if x.way == byEarly {
		p.completionEQE(i, x.token, x.status, imm, c.OutParam)
		x.tx.Delivered()
		return nil
	}
	// writeBack's mapped case inline (storeBack: two stores; writeBack is
	// too large to inline and its call is a tenth of a NOP's own work).
	if x.fault != nil && x.fault.Kind == faultinj.NoWriteback {
		// injected: the vHCR is left as the VF wrote it
	} else if m := st.vhcrMem; m != nil {
		storeBack(m, imm, c.OutParam, mlx4.StatusWord(x.status, p.words[3]))
	} else if err := p.writeBack(st, imm, c.OutParam, mlx4.StatusWord(x.status, p.words[3])); err != nil {
		p.stats.DMA[i]++
		return fmt.Errorf("writing the vHCR: %w", err)
	}
	if x.way == byEQE {
		// mlx4's way (complete.go): the vHCR written back, then the
		// EQE with ++event_eq[CMD].token, status 0, out_param 0, then
		// the toggle.
		p.completionEQE(i, x.token, mlx4.OK, false, 0)
	}
	x.tx.Delivered()
	if x.fault != nil && p.faultAck(x) {
		return nil
	}
	if st.lastCmd == mlx4.MLX4_COMM_CMD_VHCR_POST {
		// A VHCR_POST after a VHCR_POST: the channel record is unchanged,
		// and acknowledge's persistVF would find that and write nothing;
		// the toggle alone saves its two calls (3 ns of a NOP's ~35).
		st.reply(x.toggle)
	} else {
		p.acknowledge(i, mlx4.MLX4_COMM_CMD_VHCR_POST, x.toggle)
	}
	return nil
}

// readVHCR copies VF i's vHCR once into the four-word shadow: four 8-byte
// loads from a mapped window, else through the vHCR's mailbox. The words
// come back in registers for the decoder; the post path then keeps one copy
// in p.words, which the journal's intent records and deliver's status word
// (w3's flags and opcode) reads.
func (p *PF) readVHCR(st *vfChannel) (w0, w1, w2, w3 uint64, err error) {
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
func (p *PF) decode(i int, st *vfChannel, w0, w1, w2, w3 uint64) *hca.Cmd {
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
func (p *PF) writeBack(st *vfChannel, imm bool, out uint64, word uint32) error {
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
		p.vfs[i].refused = Refusal{Op: c.Op, Status: status, Reason: c.Reason, Toggle: toggle >> mlx4.CommToggleShift}
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
