package vfdrv

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

func newDriver(t *testing.T, r *mastertest.Rig, vf int, opt Options) *Driver {
	t.Helper()
	opt.BAR = r.VFBARs[vf]
	d, err := New(r.InitVF(t, vf), opt)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func counts(t *testing.T, r *mastertest.Rig, vf int) [restrack.NumTypes]int {
	t.Helper()
	var c [restrack.NumTypes]int
	if err := r.PF.Do(func() { c = r.HCA.Counts(vf) }); err != nil {
		t.Fatal(err)
	}
	return c
}

func ok(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// lifecycle creates a CQ, an SRQ, an MR and two QPs (one on the SRQ), walks
// the first QP through every state and destroys everything.
func lifecycle(t *testing.T, d *Driver, eqn int) {
	t.Helper()
	ctx := context.Background()
	cq, err := d.CreateCQ(ctx, 7, eqn)
	ok(t, "CreateCQ", err)
	cc, err := d.QueryCQ(ctx, cq)
	ok(t, "QueryCQ", err)
	if cc.LogSize != 7 || int(cc.CompEQN) != eqn || cc.MTTBase != cq.MTT.Base {
		t.Fatalf("QUERY_CQ: %+v", cc)
	}
	srq, err := d.CreateSRQ(ctx, 4, 1)
	ok(t, "CreateSRQ", err)
	mr, err := d.CreateMR(ctx, 2, mlx4.PERM_LOCAL_READ|mlx4.PERM_LOCAL_WRITE, 1)
	ok(t, "CreateMR", err)
	m, err := d.QueryMR(ctx, mr)
	ok(t, "QueryMR", err)
	if m.Start != mr.IOVA || m.Length != 2*mlx4.PageSize || m.MTTBase != mr.MTT.Base || m.MTTSize != 0 || m.Key != mr.Key {
		t.Fatalf("QUERY_MPT: %+v, MR %+v", m, mr)
	}
	qp, err := d.CreateQP(ctx, QPConfig{ST: mlx4.QP_ST_RC, SendCQ: cq.CQN, RecvCQ: cq.CQN, PD: 1, RemoteQPN: 0x99, DestLID: 6})
	ok(t, "CreateQP", err)
	ud, err := d.CreateQP(ctx, QPConfig{ST: mlx4.QP_ST_UD, SendCQ: cq.CQN, RecvCQ: cq.CQN, UseSRQ: true, SRQN: srq.SRQN, PD: 1, QKey: 0x11111111})
	ok(t, "CreateQP UD", err)
	for _, to := range []mlx4.QPState{mlx4.QP_STATE_INIT, mlx4.QP_STATE_INIT, mlx4.QP_STATE_RTR, mlx4.QP_STATE_RTS, mlx4.QP_STATE_RTS, mlx4.QP_STATE_SQD, mlx4.QP_STATE_SQD, mlx4.QP_STATE_RTS, mlx4.QP_STATE_ERR, mlx4.QP_STATE_RST, mlx4.QP_STATE_INIT, mlx4.QP_STATE_RTR} {
		ok(t, "Modify to "+to.String(), d.Modify(ctx, qp, to))
		if to == mlx4.QP_STATE_RST {
			continue // not in HW: QUERY_QP is RESOURCE_BUSY
		}
		c, err := d.QueryQP(ctx, qp)
		ok(t, "QueryQP", err)
		if c.State != to || c.CQNSend != cq.CQN || c.CQNRecv != cq.CQN || c.LocalQPN != qp.QPN || c.ST != mlx4.QP_ST_RC {
			t.Fatalf("QUERY_QP after →%v: %+v", to, c)
		}
	}
	ok(t, "UD to INIT", d.ModifyPath(ctx, ud, mlx4.QP_STATE_INIT))
	// An illegal transition: the PF refuses and the driver's view is kept.
	s, err := d.Transition(ctx, ud, mlx4.RTR2RTS_QP, 0)
	ok(t, "Transition", err)
	if s != mlx4.BAD_PARAM {
		t.Fatalf("RTR2RTS on an INIT QP: %v, want BAD_PARAM", s)
	}
	ok(t, "UD path", d.ModifyPath(ctx, ud, mlx4.QP_STATE_RTR, mlx4.QP_STATE_RTS, mlx4.QP_STATE_SQD, mlx4.QP_STATE_RTS, mlx4.QP_STATE_ERR, mlx4.QP_STATE_RST, mlx4.QP_STATE_INIT))
	if ud.State != mlx4.QP_STATE_INIT {
		t.Fatalf("UD QP state %v after its path", ud.State)
	}
	// A path whose first transition the PF refuses: the rest fail behind
	// it and the driver's view stays RST.
	bad, err := d.CreateQP(ctx, QPConfig{ST: mlx4.QP_ST_RC, SendCQ: cq.CQN, RecvCQ: cq.CQN, PKeyIndex: 99})
	ok(t, "CreateQP", err)
	if err := d.ModifyPath(ctx, bad, mlx4.QP_STATE_INIT, mlx4.QP_STATE_RTR); StatusOf(err) != mlx4.BAD_PARAM || bad.State != mlx4.QP_STATE_RST {
		t.Fatalf("path with a bad P_Key index: %v, state %v", err, bad.State)
	}
	ok(t, "DestroyQP bad", d.DestroyQP(ctx, bad))
	// A CQ used by a QP cannot leave HW; destroying in order works.
	if err := d.DestroyCQ(ctx, cq); !errors.Is(err, mlx4.RESOURCE_BUSY) || !errors.Is(err, ErrCommand) {
		t.Fatalf("DestroyCQ in use: %v", err)
	}
	ok(t, "DestroyQP", d.DestroyQP(ctx, qp))
	ok(t, "DestroyQP UD", d.DestroyQP(ctx, ud))
	ok(t, "DestroyMR", d.DestroyMR(ctx, mr))
	ok(t, "DestroySRQ", d.DestroySRQ(ctx, srq))
	ok(t, "DestroyCQ", d.DestroyCQ(ctx, cq))
}

// remaining checks that only EQs and their MTTs are left.
func remaining(t *testing.T, r *mastertest.Rig, vf, eqs int) {
	t.Helper()
	c := counts(t, r, vf)
	for ty, n := range c {
		if restrack.Type(ty) == restrack.Counter && n <= 2 {
			continue // the PF's per-port counter from INIT2RTR stays until RESET (handle_counter)
		}
		want := 0
		if restrack.Type(ty) == restrack.EQ || restrack.Type(ty) == restrack.MTT {
			want = eqs
		}
		if n != want {
			t.Errorf("VF %d: %d %v left, want %d (%v)", vf, n, restrack.Type(ty), want, c)
		}
	}
}

// TestModifyTakesQPCTable: Modify picks its command from qp.c's op[][] as
// mlx4_qp_modify does: RST→ERR is 2ERR_QP, which mlx4's GEN_QP wrapper
// refuses for a QP not in HW (RESOURCE_BUSY), and the driver's view stays
// RST; RST→RTS is no command at all (ErrArgument, nothing posted).
func TestModifyTakesQPCTable(t *testing.T) {
	r := mastertest.New(t, 1)
	r.Start(t)
	d := newDriver(t, r, 0, Options{})
	ctx := context.Background()
	eq, err := d.CreateEQ(ctx, 2, 7)
	ok(t, "CreateEQ", err)
	cq, err := d.CreateCQ(ctx, 7, eq.EQN)
	ok(t, "CreateCQ", err)
	qp, err := d.CreateQP(ctx, QPConfig{ST: mlx4.QP_ST_RC, SendCQ: cq.CQN, RecvCQ: cq.CQN, PD: 1})
	ok(t, "CreateQP", err)
	if err := d.Modify(ctx, qp, mlx4.QP_STATE_ERR); StatusOf(err) != mlx4.RESOURCE_BUSY || qp.State != mlx4.QP_STATE_RST {
		t.Fatalf("RST→ERR: %v, state %v; want RESOURCE_BUSY, RST", err, qp.State)
	}
	posted := d.Stats.Commands
	if err := d.Modify(ctx, qp, mlx4.QP_STATE_RTS); !errors.Is(err, ErrArgument) || d.Stats.Commands != posted {
		t.Fatalf("RST→RTS: %v after %d commands, want ErrArgument and none posted", err, d.Stats.Commands-posted)
	}
	ok(t, "Modify to INIT", d.Modify(ctx, qp, mlx4.QP_STATE_INIT))
	ok(t, "Modify to ERR", d.Modify(ctx, qp, mlx4.QP_STATE_ERR))
	ok(t, "DestroyQP", d.DestroyQP(ctx, qp))
	ok(t, "DestroyCQ", d.DestroyCQ(ctx, cq))
}

func TestLifecyclePoll(t *testing.T) {
	r := mastertest.New(t, 1)
	r.Start(t)
	d := newDriver(t, r, 0, Options{})
	ctx := context.Background()
	eq, err := d.CreateEQ(ctx, 2, 7)
	ok(t, "CreateEQ", err)
	lifecycle(t, d, eq.EQN)
	remaining(t, r, 0, 1)
	// Non-OK: the illegal transition, the bad path (RST2INIT and the
	// INIT2RTR behind it) and the pipelined destroy of the CQ in use
	// (HW2SW_CQ busy, so its FREE_RES of the CQ and of the MTT fail too).
	if d.Stats.Events != 0 || d.Stats.Inbox == 0 || d.Stats.NonOK != 6 {
		t.Errorf("stats %+v", d.Stats)
	}
	c, err := d.QueryEQ(ctx, eq)
	ok(t, "QueryEQ", err)
	if c.LogSize != 7 || c.Producer != 0 {
		t.Errorf("QUERY_EQ %+v", c)
	}
	ok(t, "DestroyEQ", d.DestroyEQ(ctx, eq))
	remaining(t, r, 0, 0)
}

func TestLifecycleEvents(t *testing.T) {
	for _, recycle := range []bool{false, true} {
		t.Run(map[bool]string{false: "doorbell", true: "recycle"}[recycle], func(t *testing.T) { lifecycleEvents(t, recycle) })
	}
}

func lifecycleEvents(t *testing.T, recycle bool) {
	r := mastertest.New(t, 1)
	r.Start(t)
	d := newDriver(t, r, 0, Options{RecycleEQ: recycle})
	ctx := context.Background()
	eq, err := d.EnableEvents(ctx, 4, 7)
	ok(t, "EnableEvents", err)
	// Enough lifecycles that the 128-entry EQ wraps several times: the PF
	// learns the consumer index from the doorbell, or the driver re-creates
	// the EQ before the PF would believe it full.
	for range 8 {
		lifecycle(t, d, eq.EQN)
	}
	remaining(t, r, 0, 1)
	st := d.Stats
	if st.Events == 0 || st.Completions+st.Refused != st.Events || st.Lost != 0 || st.Stray != 0 || st.Refused != 0 {
		t.Errorf("stats %+v", st)
	}
	if recycle != (st.Recycles > 0) || st.Completions < 4*128 {
		t.Errorf("recycle %v: %d re-creations for %d completions", recycle, st.Recycles, st.Completions)
	}
	// every EQE consumed is a completion or an async event (the QP on the
	// SRQ that goes to ERR gets SRQ_LAST_WQE_REACHED)
	if !recycle && (st.Doorbells == 0 || eq.Consumer() != uint32(st.Completions+st.Async)&0xffffff) {
		t.Errorf("%d doorbells, consumer %d, stats %+v", st.Doorbells, eq.Consumer(), st)
	}
	if n := r.HCA.Stats(0).Overruns.Load(); n != 0 {
		t.Errorf("%d overruns", n)
	}
	if n := r.HCA.Stats(0).Completes.Load(); n != st.Completions {
		t.Errorf("PF wrote %d completion EQEs, the driver matched %d", n, st.Completions)
	}
	ok(t, "DisableEvents", d.DisableEvents(ctx))
	remaining(t, r, 0, 0)
	if d.Events() {
		t.Fatal("still in event mode")
	}
}

// The PF acts on what it copied: an 'e' command whose inbox and vHCR the VF
// overwrites right after acceptance executes as first written.
func TestEventInboxOverwrittenAfterAcceptance(t *testing.T) {
	r := mastertest.New(t, 1)
	r.Start(t)
	d := newDriver(t, r, 0, Options{})
	ctx := context.Background()
	eq, err := d.EnableEvents(ctx, 6, 7)
	ok(t, "EnableEvents", err)
	cqn, err := d.alloc(ctx, ResCQ, opReserveAndMap, 0)
	ok(t, "ALLOC_RES CQ", err)
	b, err := d.newBuffer(ctx, 1, false)
	ok(t, "buffer", err)
	var in [mlx4.CQContextSize]byte
	mlx4.CQContext{LogSize: 7, CompEQN: uint8(eq.EQN), MTTBase: b.MTT.Base}.Encode(in[:])
	tk, err := d.Submit(ctx, &vfclient.Request{Op: mlx4.SW2HW_CQ, InMod: cqn, In: in[:]})
	ok(t, "Submit", err)
	// Accepted: rewrite the inbox (an EQ that does not exist, another size)
	// and the vHCR (another opcode and CQN).
	mem := d.VF.Memory()
	bad := mlx4.CQContext{LogSize: 3, CompEQN: 77, MTTBase: b.MTT.Base + 1}
	bad.Encode(mem[vfclient.VFPageInbox*mlx4.PageSize:])
	binary.BigEndian.PutUint32(mem[mlx4.OffInMod:], cqn+1)
	binary.BigEndian.PutUint32(mem[mlx4.OffStatus:], uint32(mlx4.HW2SW_CQ))
	res, err := d.Wait(ctx, tk)
	ok(t, "Wait", err)
	if res.Status != mlx4.OK || !res.Event {
		t.Fatalf("SW2HW_CQ: %+v", res)
	}
	cq := &CQ{CQN: cqn, LogSize: 7, EQN: eq.EQN, buffer: b, hw: true}
	c, err := d.QueryCQ(ctx, cq)
	ok(t, "QueryCQ", err)
	if c.LogSize != 7 || int(c.CompEQN) != eq.EQN || c.MTTBase != b.MTT.Base {
		t.Fatalf("the PF used the rewritten inbox: %+v", c)
	}
	ok(t, "DestroyCQ", d.DestroyCQ(ctx, cq))
}

func TestEventWithoutEQIsRefused(t *testing.T) {
	r := mastertest.New(t, 1)
	r.Start(t)
	d := newDriver(t, r, 0, Options{})
	res, err := d.PostEvent(context.Background(), &vfclient.Request{Op: mlx4.NOP})
	ok(t, "PostEvent", err)
	if res.Status != mlx4.BAD_SYS_STATE || res.Event {
		t.Fatalf("'e' NOP without an EQ: %+v, want BAD_SYS_STATE from the vHCR", res)
	}
	if d.Stats.Refused != 1 || d.InFlight() != 0 {
		t.Fatalf("stats %+v, in flight %d", d.Stats, d.InFlight())
	}
	if err := d.UseEvents(true); !errors.Is(err, ErrNoEvents) {
		t.Fatalf("UseEvents without an EQ: %v", err)
	}
}

func TestPipelinedCompletionsInOrder(t *testing.T) {
	r := mastertest.New(t, 1)
	r.Start(t)
	d := newDriver(t, r, 0, Options{MaxInFlight: 4})
	ctx := context.Background()
	_, err := d.EnableEvents(ctx, 8, 7)
	ok(t, "EnableEvents", err)
	var tks []Ticket
	for range 4 {
		tk, err := d.Submit(ctx, &vfclient.Request{Op: mlx4.ALLOC_RES, InMod: ResCQ, OpMod: opReserveAndMap})
		ok(t, "Submit", err)
		tks = append(tks, tk)
	}
	if d.InFlight() != 4 {
		t.Fatalf("%d in flight after 4 accepted commands", d.InFlight())
	}
	// A fifth waits for the oldest.
	tk, err := d.Submit(ctx, &vfclient.Request{Op: mlx4.QUERY_FW})
	ok(t, "Submit", err)
	tks = append(tks, tk)
	seen := map[uint64]bool{}
	var last uint16
	for i, tk := range tks {
		res, err := d.Wait(ctx, tk)
		ok(t, "Wait", err)
		if res.Status != mlx4.OK || !res.Event {
			t.Fatalf("command %d: %+v", i, res)
		}
		if i > 0 && res.Token != last+1 {
			t.Fatalf("command %d: token %d after %d", i, res.Token, last)
		}
		last = res.Token
		if i < 4 {
			if seen[res.OutParam] {
				t.Fatalf("CQN %d twice", res.OutParam)
			}
			seen[res.OutParam] = true
		} else if len(res.Out) != mlx4.MailboxSize {
			t.Fatalf("QUERY_FW outbox %d bytes", len(res.Out))
		}
	}
	if d.Stats.Lost != 0 || d.Stats.Stray != 0 || d.Stats.Completions != 5 {
		t.Fatalf("stats %+v", d.Stats)
	}
	if c := counts(t, r, 0); c[restrack.CQ] != 4 {
		t.Fatalf("%d CQs", c[restrack.CQ])
	}
	if _, err := d.Wait(ctx, Ticket(1000)); !errors.Is(err, ErrTicket) {
		t.Fatalf("unknown ticket: %v", err)
	}
}

// A full EQ counts an overrun and does not block the PF: the third
// completion into a two-entry EQ is dropped, a poll-mode command after it
// completes, and the two completions that fit are delivered.
func TestEQOverrunCounted(t *testing.T) {
	r := mastertest.New(t, 2)
	r.Start(t)
	d := newDriver(t, r, 0, Options{MaxInFlight: 4})
	other := newDriver(t, r, 1, Options{})
	ctx := context.Background()
	q, err := d.CreateEQ(ctx, 3, 1)
	ok(t, "CreateEQ", err)
	ok(t, "MapEQ", d.MapEQ(ctx, q, 1<<mlx4.EventCmd))
	var tks []Ticket
	for range 3 {
		tk, err := d.Submit(ctx, &vfclient.Request{Op: mlx4.NOP})
		ok(t, "Submit", err)
		tks = append(tks, tk)
	}
	// Poll mode behind the three: when it completes, they have executed.
	resp, err := d.VF.Post(ctx, &vfclient.Request{Op: mlx4.NOP})
	ok(t, "poll NOP", err)
	if resp.Status != mlx4.OK {
		t.Fatalf("poll NOP: %v", resp.Status)
	}
	if res, err := other.Poll(ctx, &vfclient.Request{Op: mlx4.QUERY_FW}); err != nil || res.Status != mlx4.OK {
		t.Fatalf("VF 1 behind the overrun: %v %v", res.Status, err)
	}
	if n := r.HCA.Stats(0).Overruns.Load(); n != 1 {
		t.Fatalf("%d overruns, want 1", n)
	}
	d.ev.eq = q // consume the two that fit
	for _, tk := range tks[:2] {
		res, err := d.Wait(ctx, tk)
		ok(t, "Wait", err)
		if res.Status != mlx4.OK {
			t.Fatalf("NOP: %v", res.Status)
		}
	}
	if d.InFlight() != 1 {
		t.Fatalf("%d in flight", d.InFlight())
	}
}

func TestResetReleasesOnlyThatVF(t *testing.T) {
	r := mastertest.New(t, 2)
	r.Start(t)
	ctx := context.Background()
	a := newDriver(t, r, 0, Options{})
	b := newDriver(t, r, 1, Options{})
	aeq, err := a.EnableEvents(ctx, 0, 7)
	ok(t, "EnableEvents", err)
	beq, err := b.CreateEQ(ctx, 0, 7)
	ok(t, "CreateEQ", err)
	objs := func(d *Driver, eqn int) (*CQ, *QP, *MR) {
		cq, err := d.CreateCQ(ctx, 7, eqn)
		ok(t, "CreateCQ", err)
		qp, err := d.CreateQP(ctx, QPConfig{ST: mlx4.QP_ST_RC, SendCQ: cq.CQN, RecvCQ: cq.CQN})
		ok(t, "CreateQP", err)
		ok(t, "Modify", d.Modify(ctx, qp, mlx4.QP_STATE_INIT))
		mr, err := d.CreateMR(ctx, 1, mlx4.PERM_LOCAL_READ, 1)
		ok(t, "CreateMR", err)
		return cq, qp, mr
	}
	objs(a, aeq.EQN)
	bcq, bqp, bmr := objs(b, beq.EQN)
	before := counts(t, r, 1)
	ok(t, "Reset", a.Reset(ctx))
	for ty, n := range counts(t, r, 0) {
		if n != 0 {
			t.Errorf("VF 0 after RESET: %d %v", n, restrack.Type(ty))
		}
	}
	if after := counts(t, r, 1); after != before {
		t.Fatalf("VF 1's objects changed: %v → %v", before, after)
	}
	if a.Events() || a.EQ() != nil {
		t.Fatal("driver still in event mode after RESET")
	}
	// VF 1 goes on; VF 0 starts again from scratch.
	ok(t, "VF 1 DestroyQP", b.DestroyQP(ctx, bqp))
	ok(t, "VF 1 DestroyMR", b.DestroyMR(ctx, bmr))
	ok(t, "VF 1 DestroyCQ", b.DestroyCQ(ctx, bcq))
	eq, err := a.EnableEvents(ctx, 0, 7)
	ok(t, "EnableEvents again", err)
	lifecycle(t, a, eq.EQN)
}

func TestDoorbellAndAsyncEvents(t *testing.T) {
	r := mastertest.New(t, 1)
	r.Start(t)
	var got []EQE
	d := newDriver(t, r, 0, Options{OnEvent: func(e EQE) { got = append(got, e) }})
	ctx := context.Background()
	eq, err := d.EnableEvents(ctx, 10, 7)
	ok(t, "EnableEvents", err)
	cq, err := d.CreateCQ(ctx, 7, eq.EQN)
	ok(t, "CreateCQ", err)
	var perr error
	if err := r.PF.Do(func() { perr = r.HCA.CQError(cq.CQN, 1) }); err != nil {
		t.Fatal(err)
	}
	ok(t, "CQError", perr)
	if n := d.PollEQ(eq); n != 1 {
		t.Fatalf("PollEQ consumed %d", n)
	}
	if len(got) != 1 || got[0].Type != mlx4.EventCQError || got[0].Object != cq.CQN || got[0].Status != 1 || got[0].SlaveID != 1 {
		t.Fatalf("async events %+v", got)
	}
	// The doorbell word holds the consumer index, without the arm bit: the
	// driver polls (TestIRQDrivers has the armed one).
	w, err := r.VFBARs[0].Load32(DoorbellOffset(eq.EQN))
	ok(t, "Load32", err)
	if want := eq.Consumer(); w != want || uint64(eq.Consumer()) != d.Stats.Completions+1 {
		t.Fatalf("doorbell %#x, want %#x (consumer %d)", w, want, eq.Consumer())
	}
	ok(t, "DestroyCQ", d.DestroyCQ(ctx, cq))
}

// A creation the PF refuses half way is undone: nothing of it is left.
func TestCreateFailureUnwinds(t *testing.T) {
	for _, events := range []bool{false, true} {
		r := mastertest.New(t, 1)
		r.Start(t)
		d := newDriver(t, r, 0, Options{})
		ctx := context.Background()
		if events {
			_, err := d.EnableEvents(ctx, 0, 7)
			ok(t, "EnableEvents", err)
		} else {
			_, err := d.CreateEQ(ctx, 0, 7)
			ok(t, "CreateEQ", err)
		}
		if _, err := d.CreateCQ(ctx, 7, 99); StatusOf(err) != mlx4.BAD_PARAM {
			t.Fatalf("events %v: CQ on a missing EQ: %v", events, err)
		}
		if _, err := d.CreateCQ(ctx, 22, 0); !errors.Is(err, ErrNoMemory) {
			t.Fatalf("events %v: a CQ larger than the window: %v", events, err)
		}
		remaining(t, r, 0, 1)
		// The pages came back: a CQ and an MR fit again and again.
		for range 20 {
			cq, err := d.CreateCQ(ctx, 7, 0)
			ok(t, "CreateCQ", err)
			ok(t, "DestroyCQ", d.DestroyCQ(ctx, cq))
		}
		if d.pool.chunks == nil || len(d.pool.chunks) > 8 {
			t.Fatalf("events %v: %d page runs taken from the VF", events, len(d.pool.chunks))
		}
	}
}

// The PF resets the function in the middle of event mode (here: an 'e'
// command whose outbox lies outside the window): the driver fails what was
// in flight, leaves event mode, and starts again after Reset.
func TestPFResetDuringEvents(t *testing.T) {
	r := mastertest.New(t, 1)
	r.Start(t)
	d := newDriver(t, r, 0, Options{})
	ctx := context.Background()
	_, err := d.EnableEvents(ctx, 0, 7)
	ok(t, "EnableEvents", err)
	t1, err := d.Submit(ctx, &vfclient.Request{Op: mlx4.NOP})
	ok(t, "Submit", err)
	d.ev.slots = []uint64{1 << 40} // a driver bug: an outbox the VF does not have
	if _, err := d.Submit(ctx, &vfclient.Request{Op: mlx4.QUERY_FW}); !errors.Is(err, vfclient.ErrInternal) {
		t.Fatalf("outbox outside the window: %v", err)
	}
	if _, err := d.Wait(ctx, t1); !errors.Is(err, vfclient.ErrInternal) {
		t.Fatalf("in flight across the PF's reset: %v", err)
	}
	if d.Events() || d.InFlight() != 0 {
		t.Fatal("still in event mode")
	}
	ok(t, "Reset", d.Reset(ctx))
	remaining(t, r, 0, 0)
	eq, err := d.EnableEvents(ctx, 0, 7)
	ok(t, "EnableEvents again", err)
	lifecycle(t, d, eq.EQN)
}

// Pipelined commands with outboxes each get their own outbox page: four
// QUERY_CQs in flight return four different contexts.
func TestPipelinedOutboxes(t *testing.T) {
	r := mastertest.New(t, 1)
	r.Start(t)
	d := newDriver(t, r, 0, Options{MaxInFlight: 4})
	ctx := context.Background()
	eq, err := d.EnableEvents(ctx, 0, 7)
	ok(t, "EnableEvents", err)
	var cqs []*CQ
	var reqs []vfclient.Request
	for i := range 4 {
		cq, err := d.CreateCQ(ctx, 4+i, eq.EQN)
		ok(t, "CreateCQ", err)
		cqs = append(cqs, cq)
		reqs = append(reqs, vfclient.Request{Op: mlx4.QUERY_CQ, InMod: cq.CQN})
	}
	var tks []Ticket
	for i := range reqs {
		tk, err := d.Submit(ctx, &reqs[i])
		ok(t, "Submit", err)
		tks = append(tks, tk)
	}
	for i, tk := range tks {
		res, err := d.Wait(ctx, tk)
		ok(t, "Wait", err)
		c, err := mlx4.DecodeCQContext(res.Out)
		ok(t, "decode", err)
		if c.LogSize != 4+i || c.MTTBase != cqs[i].MTT.Base {
			t.Fatalf("QUERY_CQ %d: %+v, want log size %d MTT %d", i, c, 4+i, cqs[i].MTT.Base)
		}
	}
	res, err := d.Pipeline(ctx, reqs)
	ok(t, "Pipeline", err)
	if c, _ := mlx4.DecodeCQContext(res[3].Out); c.LogSize != 7 {
		t.Fatalf("pipelined QUERY_CQ: %+v", c)
	}
	for _, cq := range cqs {
		ok(t, "DestroyCQ", d.DestroyCQ(ctx, cq))
	}
}
