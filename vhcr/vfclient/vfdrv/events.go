package vfdrv

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

// Completions is the 'e'-bit protocol a driver speaks.
type Completions uint8

const (
	// CompletionsEarly: a token per command (1, 2, 3, ..., never 0 or
	// 0xffff), the PF accepts at once, the EQE echoes the token and
	// carries the status and immediate output; up to MaxInFlight commands
	// in flight.
	CompletionsEarly Completions = iota
	// CompletionsMlx4: as Linux's mlx4_core VF in event mode
	// (mlx4_slave_cmd, mlx4_comm_cmd_wait, mlx4_cmd_event): token 0xffff
	// (CMD_POLL_TOKEN) in the vHCR, one command at a time; it waits for the
	// CMD EQE whose token is its context's (1, 2, 3, ... from RESET, one per
	// command posted), then for the toggle, and reads status and immediate
	// output from the vHCR written back.
	CompletionsMlx4
)

func (c Completions) String() string {
	if c == CompletionsMlx4 {
		return "mlx4"
	}
	return "early"
}

// resultRing is how many completed results the driver keeps for Wait.
const resultRing = 64

// events is the driver's event-mode state.
type events struct {
	on       bool
	eq       *EQ // receives completions (and the async events of mask)
	mask     uint64
	token    uint16 // last token used
	seq      uint64 // next ticket
	inflight []pending
	results  [resultRing]result
	slots    []uint64 // one outbox page per in-flight position

	// mlx4 mode: the context token (mlx4_cmd_context.token), advanced per
	// command posted; what dispatch saw of the command it waits for.
	ctxToken uint16
	waiting  bool
	matched  bool
	stray    bool
	strayTok uint16
}

type pending struct {
	ticket Ticket
	token  uint16
	op     mlx4.Opcode
	slot   int // outbox page index, -1 without an outbox
}

type result struct {
	ticket Ticket
	done   bool
	err    error
	res    Result
	out    []byte // lazily allocated outbox copy
}

// forget drops all event state (after RESET).
func (e *events) forget() {
	*e = events{}
}

// nextToken returns the next token: 1, 2, 3, ..., never 0 or the poll
// token 0xffff.
func (e *events) nextToken() uint16 {
	e.token++
	if e.token == 0 || e.token == mlx4.PollToken {
		e.token = 1
	}
	return e.token
}

// PostEvent posts r with the 'e' bit, waits for the PF to accept it and then
// for its completion EQE. A command the PF refuses at acceptance (no EQ
// mapped: BAD_SYS_STATE) completes at once with the status the PF wrote to
// the vHCR.
func (d *Driver) PostEvent(ctx context.Context, r *vfclient.Request) (Result, error) {
	t, err := d.Submit(ctx, r)
	if err != nil {
		return Result{}, err
	}
	return d.Wait(ctx, t)
}

// Submit posts r with the 'e' bit and returns once the PF has accepted it
// (toggled slave_read): the VF may then post its next command. Up to
// MaxInFlight commands may be accepted and not yet completed; Submit waits
// for the oldest beyond that. Completions arrive in posting order.
func (d *Driver) Submit(ctx context.Context, r *vfclient.Request) (Ticket, error) {
	e := &d.ev
	for len(e.inflight) >= d.opt.MaxInFlight {
		if err := d.waitOldest(ctx); err != nil {
			return 0, err
		}
	}
	if err := d.credit(ctx); err != nil {
		return 0, err
	}
	ent, _ := mlx4.CmdInfo(r.Op)
	inParam := r.InParam
	if r.In != nil {
		if len(r.In) > mlx4.MailboxSize {
			return 0, fmt.Errorf("%w: inbox of %d bytes", ErrArgument, len(r.In))
		}
		in := d.mem[vfclient.VFPageInbox*bar.PageSize : (vfclient.VFPageInbox+1)*bar.PageSize]
		n := copy(in, r.In)
		clear(in[n:])
		inParam = vfclient.VFPageInbox * bar.PageSize
	}
	outParam := r.OutParam
	slot := -1
	if ent.HasOutbox {
		var err error
		if slot, outParam, err = d.outboxSlot(); err != nil {
			return 0, err
		}
	}
	mlx4Mode := d.opt.Completions == CompletionsMlx4
	if mlx4Mode && e.eq == nil {
		return 0, ErrNoEvents // it could only wait out its timeout
	}
	var token uint16
	if mlx4Mode {
		token = mlx4.PollToken // mlx4_slave_cmd: vhcr->token = CMD_POLL_TOKEN
	} else {
		token = e.nextToken()
	}
	toggle := d.VF.SlaveRead() >> mlx4.CommToggleShift // idle: the VF's toggle; the post flips it
	// The vHCR in place, as vfclient.VF.Post writes it, with the 'e' bit.
	vh := d.mem[vfclient.VFPageVHCR*bar.PageSize : vfclient.VFPageVHCR*bar.PageSize+mlx4.VHCRSize]
	binary.BigEndian.PutUint64(vh[mlx4.OffInParam:], inParam)
	binary.BigEndian.PutUint32(vh[mlx4.OffInMod:], r.InMod)
	binary.BigEndian.PutUint32(vh[mlx4.OffInMod+4:], 0)
	binary.BigEndian.PutUint64(vh[mlx4.OffOutParam:], outParam)
	binary.BigEndian.PutUint64(vh[mlx4.OffToken:], mlx4.Word3(token, mlx4.FlagE, r.OpMod, r.Op))
	if err := d.VF.Comm(ctx, mlx4.MLX4_COMM_CMD_VHCR_POST, 0, 0); err != nil {
		return 0, err
	}
	if d.opt.Ledger != nil {
		d.opt.Ledger.Posted(r.Op, true)
	}
	if mlx4Mode {
		return d.completeMlx4(ctx, r.Op, ent.OutIsImm, slot, vh, toggle^1)
	}
	if err := d.VF.WaitAck(ctx); err != nil {
		if errors.Is(err, vfclient.ErrInternal) {
			// The PF reset the function: whatever was in flight is gone with
			// its EQ. The caller starts again from Reset.
			d.abandon(err)
		}
		return 0, fmt.Errorf("%v accepted?: %w", r.Op, err)
	}
	return d.accepted(r.Op, ent.OutIsImm, vh, token, slot), nil
}

// accepted gives the command the PF accepted its ticket: completed already
// when the vHCR holds a refusal (no EQE will come), else in flight.
func (d *Driver) accepted(op mlx4.Opcode, outIsImm bool, vh []byte, token uint16, slot int) Ticket {
	e := &d.ev
	t := Ticket(e.seq)
	e.seq++
	res := &e.results[t%resultRing]
	res.ticket, res.done, res.err, res.res = t, false, nil, Result{}
	if st := mlx4.Status(vh[mlx4.OffStatus]); st != mlx4.OK {
		// Completed at acceptance through the vHCR: no EQE will come.
		d.Stats.Refused++
		res.done = true
		res.res = Result{Status: st, Token: token}
		if outIsImm {
			res.res.OutParam = binary.BigEndian.Uint64(vh[mlx4.OffOutParam:])
		}
		d.count(op, st, true)
		d.ledger(op, res.res)
		return t
	}
	e.inflight = append(e.inflight, pending{ticket: t, token: token, op: op, slot: slot})
	return t
}

// completeMlx4 completes a command posted in mlx4 mode, as Linux's
// mlx4_comm_cmd_wait: the context token advances (context->token +=
// token_mask + 1, the mask 0 for a VF's one context); the driver consumes
// EQEs until the CMD EQE with that token, then waits for the toggle
// (comm_pending), then reads the status and the immediate output from the
// vHCR (mlx4_slave_cmd) and the outbox. A CMD EQE with another token fails
// the command (ErrStrayCompletion). An acknowledgement without an EQE and
// a non-OK status in the vHCR is the PF's refusal at acceptance (no EQ for
// completions: Linux would wait out its timeout); with bit 17 the PF reset
// the function. It returns an already completed ticket.
func (d *Driver) completeMlx4(ctx context.Context, op mlx4.Opcode, outImm bool, slot int, vh []byte, toggle uint32) (Ticket, error) {
	e := &d.ev
	e.ctxToken++
	want := e.ctxToken
	e.waiting, e.matched, e.stray = true, false, false
	defer func() { e.waiting = false }()
	refused := false
	var w waiter
	for !e.matched {
		sr := d.VF.SlaveRead()
		acked := sr>>mlx4.CommToggleShift == toggle
		if acked && sr&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR != 0 {
			d.abandon(vfclient.ErrInternal)
			return 0, fmt.Errorf("%v: %w", op, vfclient.ErrInternal)
		}
		if d.pump(e.eq) > 0 {
			w = waiter{}
			continue
		}
		if e.stray {
			return 0, fmt.Errorf("%v: token %d, waiting for %d: %w", op, e.strayTok, want, ErrStrayCompletion)
		}
		if acked && mlx4.Status(vh[mlx4.OffStatus]) != mlx4.OK {
			refused = true
			break
		}
		if err := d.idle(ctx, &w); err != nil {
			return 0, fmt.Errorf("%v token %d: %w", op, want, err)
		}
	}
	if err := d.VF.WaitAck(ctx); err != nil {
		if errors.Is(err, vfclient.ErrInternal) {
			d.abandon(err)
		}
		return 0, fmt.Errorf("%v completed, toggle: %w", op, err)
	}
	t := Ticket(e.seq)
	e.seq++
	res := &e.results[t%resultRing]
	st := mlx4.Status(vh[mlx4.OffStatus])
	res.ticket, res.done, res.err = t, true, nil
	res.res = Result{Status: st, Event: !refused}
	if !refused {
		res.res.Token = want
	}
	if outImm {
		res.res.OutParam = binary.BigEndian.Uint64(vh[mlx4.OffOutParam:])
	}
	if refused {
		d.Stats.Refused++
	} else {
		d.Stats.Completions++
	}
	if slot >= 0 && st == mlx4.OK && slot < len(e.slots) {
		if res.out == nil {
			res.out = make([]byte, mlx4.MailboxSize)
		}
		off := e.slots[slot]
		dmaCopy(res.out, d.mem[off:off+mlx4.MailboxSize])
		res.res.Out = res.out
	}
	d.count(op, st, true)
	d.ledger(op, res.res)
	return t, nil
}

// Wait returns the result of t, consuming EQEs until its completion
// arrives (up to the VF's Post timeout).
func (d *Driver) Wait(ctx context.Context, t Ticket) (Result, error) {
	e := &d.ev
	if uint64(t) >= e.seq || e.seq-uint64(t) > resultRing {
		return Result{}, ErrTicket
	}
	var w waiter
	for {
		res := &e.results[t%resultRing]
		if res.ticket != t {
			return Result{}, ErrTicket
		}
		if res.done {
			return res.res, res.err
		}
		if e.eq == nil {
			return Result{}, ErrNoEvents
		}
		if d.pump(e.eq) > 0 {
			w = waiter{}
			continue
		}
		if err := d.idle(ctx, &w); err != nil {
			return Result{}, fmt.Errorf("ticket %d: %w", t, err)
		}
	}
}

// abandon fails every in-flight command with err and leaves event mode.
func (d *Driver) abandon(err error) {
	e := &d.ev
	for _, p := range e.inflight {
		res := &e.results[p.ticket%resultRing]
		res.done, res.err = true, fmt.Errorf("%v token %d: %w", p.op, p.token, err)
	}
	e.inflight = e.inflight[:0]
	e.on, e.eq = false, nil
}

// Drain waits for every accepted 'e' command.
func (d *Driver) Drain(ctx context.Context) error {
	for len(d.ev.inflight) > 0 {
		if err := d.waitOldest(ctx); err != nil {
			return err
		}
	}
	return nil
}

// InFlight is the number of accepted, uncompleted 'e' commands.
func (d *Driver) InFlight() int { return len(d.ev.inflight) }

func (d *Driver) waitOldest(ctx context.Context) error {
	t := d.ev.inflight[0].ticket
	_, err := d.Wait(ctx, t)
	if err != nil && len(d.ev.inflight) > 0 && d.ev.inflight[0].ticket == t {
		// Give up on it (timeout): the driver cannot tell whether its EQE
		// will ever come; mlx4 enters its error state here.
		d.ev.inflight = append(d.ev.inflight[:0], d.ev.inflight[1:]...)
	}
	return err
}

// outboxSlot returns an outbox page for a new in-flight command: one page
// per position, so that a pipelined command's outbox never overwrites one
// the VF has not read yet.
func (d *Driver) outboxSlot() (int, uint64, error) {
	e := &d.ev
	var used [resultRing / 2]bool
	for _, p := range e.inflight {
		if p.slot >= 0 {
			used[p.slot] = true
		}
	}
	for i := range d.opt.MaxInFlight {
		if used[i] {
			continue
		}
		for len(e.slots) <= i {
			iova, err := d.pool.get(1)
			if err != nil {
				return 0, 0, err
			}
			e.slots = append(e.slots, iova)
		}
		return i, e.slots[i], nil
	}
	return 0, 0, fmt.Errorf("%w: no free outbox slot", ErrArgument)
}

// pump consumes every software-owned EQE of q, dispatches it and rings the
// doorbell, with the arm bit if the driver waits on an IRQ eventfd (a
// polling driver asks for no interrupt it would not wait for, and costs
// the PF no eventfd write). It returns how many it consumed.
func (d *Driver) pump(q *EQ) int {
	n := 0
	for {
		eqe, ok := q.ring.next()
		if !ok {
			break
		}
		n++
		q.consumed++
		d.dispatch(&eqe)
	}
	if n > 0 {
		q.ringDoorbell(d.irq >= 0)
		if q.db.Valid() {
			d.Stats.Doorbells++
		}
	}
	return n
}

func (d *Driver) dispatch(eqe *EQE) {
	if eqe.Type != mlx4.EventCmd {
		if eqe.Type == mlx4.EventComp && d.compEvent(eqe.Object) {
			d.Stats.CompEvents++
			return
		}
		d.Stats.Async++
		if d.opt.OnEvent != nil {
			d.opt.OnEvent(*eqe)
		}
		return
	}
	e := &d.ev
	if d.opt.Completions == CompletionsMlx4 {
		// mlx4_cmd_event: only the token the command waits for completes it.
		switch {
		case e.waiting && !e.matched && eqe.Token == e.ctxToken:
			e.matched = true
		default:
			d.Stats.Stray++
			if e.waiting && !e.stray {
				e.stray, e.strayTok = true, eqe.Token
			}
		}
		return
	}
	for i, p := range e.inflight {
		if p.token != eqe.Token {
			continue
		}
		for _, skipped := range e.inflight[:i] {
			d.Stats.Lost++
			res := &e.results[skipped.ticket%resultRing]
			res.done, res.err = true, fmt.Errorf("%v token %d: %w", skipped.op, skipped.token, ErrLostCompletion)
		}
		d.complete(p, eqe)
		e.inflight = append(e.inflight[:0], e.inflight[i+1:]...) // in place: no allocation
		return
	}
	d.Stats.Stray++
}

func (d *Driver) complete(p pending, eqe *EQE) {
	d.Stats.Completions++
	res := &d.ev.results[p.ticket%resultRing]
	res.done = true
	res.res = Result{Status: mlx4.Status(eqe.Status), OutParam: eqe.OutParam, Token: eqe.Token, Event: true}
	if p.slot >= 0 && res.res.Status == mlx4.OK && p.slot < len(d.ev.slots) {
		if res.out == nil {
			res.out = make([]byte, mlx4.MailboxSize)
		}
		off := d.ev.slots[p.slot]
		dmaCopy(res.out, d.mem[off:off+mlx4.MailboxSize])
		res.res.Out = res.out
	}
	d.count(p.op, res.res.Status, true)
	d.ledger(p.op, res.res)
}

// ledger reports a completion to Options.Ledger.
func (d *Driver) ledger(op mlx4.Opcode, r Result) {
	if d.opt.Ledger != nil {
		d.opt.Ledger.Completed(op, r)
	}
}

// credit makes sure the completion EQ has room for one more command and
// the async events the driver reserves room for: when the PF reads the
// doorbell its view is what the VF consumed; otherwise (RecycleEQ, no BAR)
// it counts every EQE it ever wrote, and the driver re-creates the EQ
// before it fills.
func (d *Driver) credit(ctx context.Context) error {
	q := d.ev.eq
	if q == nil {
		return nil
	}
	reserve := uint64(max(1, q.ring.nent/8))
	nent := uint64(q.ring.nent)
	if !d.opt.RecycleEQ && d.opt.BAR != nil {
		for uint64(len(d.ev.inflight))+1+reserve > nent && len(d.ev.inflight) > 0 {
			if err := d.waitOldest(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	if q.consumed+uint64(len(d.ev.inflight))+1+reserve <= nent {
		return nil
	}
	if err := d.Drain(ctx); err != nil {
		return err
	}
	return d.recycle(ctx)
}

// recycle gives the completion EQ a fresh start when the PF would believe
// it full: with nothing in flight, consume what is left, take the EQ back
// (HW2SW_EQ), hand every entry to hardware again and re-create it on the
// same ring, MTT and EQN (SW2HW_EQ), then map its event types again
// (HW2SW_EQ unmapped them), all in poll mode. CQs naming the EQN keep it.
// Async events the PF raises in that window find no EQ (the PF counts
// them).
func (d *Driver) recycle(ctx context.Context) error {
	q := d.ev.eq
	d.pump(q)
	if _, err := d.mustPoll(ctx, &vfclient.Request{Op: mlx4.HW2SW_EQ, InMod: uint32(q.EQN)}); err != nil {
		return fmt.Errorf("recycling EQ %d: %w", q.EQN, err)
	}
	q.live = false
	if err := d.sw2hwEQ(ctx, q); err != nil {
		return fmt.Errorf("recycling EQ %d: %w", q.EQN, err)
	}
	if err := d.mapEQ(ctx, q, d.ev.mask, false); err != nil {
		return fmt.Errorf("recycling EQ %d: %w", q.EQN, err)
	}
	d.Stats.Recycles++
	return nil
}

// MaxPipeline bounds the requests of one Pipeline call.
const MaxPipeline = resultRing / 2

// Pipeline posts reqs in order without waiting for a completion before
// posting the next (in event mode each is posted once the previous one was
// accepted; the PF executes them in order, so a later command may depend on
// an earlier one's effect, not on its output). In poll mode they go one
// after another, and the Out of a poll-mode result is valid only until the
// next command (the VF has one outbox page for poll mode). It returns every
// result and, after all completed, the first non-OK status as a
// *CommandError.
func (d *Driver) Pipeline(ctx context.Context, reqs []vfclient.Request) ([]Result, error) {
	if len(reqs) > MaxPipeline {
		return nil, fmt.Errorf("%w: %d requests in one pipeline", ErrArgument, len(reqs))
	}
	res := make([]Result, len(reqs))
	if d.ev.on {
		var tks [MaxPipeline]Ticket
		for i := range reqs {
			t, err := d.Submit(ctx, &reqs[i])
			if err != nil {
				return res, fmt.Errorf("%v: %w", reqs[i].Op, err)
			}
			tks[i] = t
		}
		for i := range reqs {
			r, err := d.Wait(ctx, tks[i])
			if err != nil {
				return res, fmt.Errorf("%v: %w", reqs[i].Op, err)
			}
			res[i] = r
		}
	} else {
		for i := range reqs {
			r, err := d.Poll(ctx, &reqs[i])
			if err != nil {
				return res, fmt.Errorf("%v: %w", reqs[i].Op, err)
			}
			res[i] = r
		}
	}
	for i := range res {
		if res[i].Status != mlx4.OK {
			return res, &CommandError{Op: reqs[i].Op, Status: res[i].Status}
		}
	}
	return res, nil
}
