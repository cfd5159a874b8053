package hca

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// cqRig is a rig with interrupts, EQ doorbells that arm (a VF that keeps
// its EQs armed, as mlx4_eq_int does) and UAR words the test writes as the
// VF's stores would land in its BAR.
type cqRig struct {
	*rig
	irq *vectors
	uar map[[2]uint64]uint32 // (vf, offset) → word
}

func newCQRig(t *testing.T) *cqRig {
	r := &cqRig{rig: newRig(t, 2, nil), irq: &vectors{n: 8, raised: map[[2]int]int{}}, uar: map[[2]uint64]uint32{}}
	r.h.SetInterrupts(r.irq)
	r.h.SetDoorbellReader(func(vf, eqn int) (uint32, bool) { return mlx4.EQ_DOORBELL_ARM, true })
	r.h.SetUARReader(func(vf int, off uint64) (uint32, bool) { return r.uar[[2]uint64{uint64(vf), off}], true })
	return r
}

// cqVF is one VF of a cqRig: an async EQ 0 (vector 0, every event type
// mapped to it) and a completion EQ 1 (vector 1, nothing mapped), as
// mlx4_core creates them.
type cqVF struct {
	*vf
	r              *cqRig
	asyncP, compP  uint64 // ring pages of EQ 0 and EQ 1
	asyncN, compN  int    // EQEs read so far
	asyncEQ, compQ int
}

func (r *cqRig) vfCQ(n int) *cqVF {
	r.t.Helper()
	v := &cqVF{vf: r.vf(n), r: r, asyncEQ: 0, compQ: 1}
	mk := func(eqn int, intr uint8) uint64 {
		p := v.newPage()
		b := make([]byte, mlx4.EQContextSize)
		mlx4.EQContext{LogSize: 7, MTTBase: uint64(v.mtt(0, p|1)), Intr: intr, State: mlx4.EQ_STATE_ARMED}.Encode(b)
		v.must(v.run(v.cmd(mlx4.SW2HW_EQ, 0, uint32(eqn), 0, b, false)), "SW2HW_EQ")
		return p
	}
	v.asyncP = mk(0, 0)
	v.compP = mk(1, 1)
	v.must(v.run(v.cmd(mlx4.MAP_EQ, ^uint64(0), 0, 0, nil, false)), "MAP_EQ")
	v.eq = 0
	return v
}

// cq is a CQ of the VF: its ring's pages, its doorbell record and UAR index.
type cq struct {
	v      *cqVF
	n      uint32
	nent   uint32
	pages  []uint64
	rec    uint64
	usr    uint32
	ci, sn uint32 // the consumer's cons_index and arm_sn, as libmlx4 keeps them
}

// newCQ creates a CQ of 2^logSize CQEs over zeroed pages, with completion
// EQ 1, a doorbell record at a page of its own and UAR index usr, as
// mlx4_ib_create_cq / libmlx4's mlx4_create_cq do (buffer and record
// zeroed).
func (v *cqVF) newCQ(logSize int, usr uint32) *cq {
	v.r.t.Helper()
	c, s := v.tryCQ(logSize, usr, nil)
	v.must(s, "SW2HW_CQ")
	return c
}

func (v *cqVF) tryCQ(logSize int, usr uint32, edit func(ctx *mlx4.CQContext, ents []uint64)) (*cq, mlx4.Status) {
	v.r.t.Helper()
	c := &cq{v: v, nent: 1 << logSize, usr: usr}
	c.n = v.mustAlloc(restrack.CQ, resOpReserveAndMap, 0)
	npages := max(1, int(c.nent)*mlx4.CQESize/0x1000)
	ents := make([]uint64, npages)
	for i := range ents {
		p := v.newPage()
		c.pages = append(c.pages, p)
		ents[i] = p | 1
	}
	c.rec = v.newPage()
	order := 0
	for 1<<order < npages {
		order++
	}
	ctx := mlx4.CQContext{LogSize: logSize, UsrPage: usr, CompEQN: 1, DBRecAddr: c.rec}
	if edit != nil {
		edit(&ctx, ents)
	}
	written := ents // WRITE_MTT sets the present bit: a zero entry stops the write
	for i, e := range ents {
		if e == 0 {
			written = ents[:i]
			break
		}
	}
	base := v.mtt(order, written...)
	ctx.MTTBase = uint64(base)
	b := make([]byte, mlx4.CQContextSize)
	ctx.Encode(b)
	return c, v.run(v.cmd(mlx4.SW2HW_CQ, 0, c.n, 0, b, false))
}

// cqe reads CQE number n's slot.
func (c *cq) slot(n uint32) mlx4.CQE {
	c.v.r.t.Helper()
	off := uint64(n&(c.nent-1)) * mlx4.CQESize
	var b [mlx4.CQESize]byte
	if err := c.v.w.CopyIn(b[:], c.pages[off/0x1000]+off%0x1000); err != nil {
		c.v.r.t.Fatal(err)
	}
	e, _ := mlx4.DecodeCQE(b[:])
	return e
}

// poll is libmlx4's mlx4_poll_one loop: it takes CQEs while software owns
// the one at the consumer index and updates set_ci (mlx4_cq_set_ci). It
// returns the CQEs taken.
func (c *cq) poll() []mlx4.CQE {
	var got []mlx4.CQE
	for {
		e := c.slot(c.ci)
		if !mlx4.CQEOwnerSW(e.Owner, c.ci, c.nent) {
			break
		}
		got = append(got, e)
		c.ci = (c.ci + 1) & 0xffffff
	}
	c.setCI()
	return got
}

func (c *cq) setCI() {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], c.ci&0xffffff)
	if err := c.v.w.CopyOut(c.rec+mlx4.CQDBRecSetCI, b[:]); err != nil {
		c.v.r.t.Fatal(err)
	}
}

// arm is ibv_req_notify_cq (libmlx4 mlx4_arm_cq): arm_db in the record,
// then the 64-bit UAR store at MLX4_CQ_DOORBELL of the CQ's page.
func (c *cq) arm(solicited bool) {
	c.armRecord(solicited)
	c.armUAR(solicited)
}

func armCmd(solicited bool) uint32 {
	if solicited {
		return mlx4.MLX4_CQ_DB_REQ_NOT_SOL
	}
	return mlx4.MLX4_CQ_DB_REQ_NOT
}

// armRecord is arm's first half: the record's arm_db word.
func (c *cq) armRecord(solicited bool) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], mlx4.CQArmDB(uint8(c.sn), armCmd(solicited), c.ci))
	if err := c.v.w.CopyOut(c.rec+mlx4.CQDBRecArmDB, b[:]); err != nil {
		c.v.r.t.Fatal(err)
	}
}

// armUAR is arm's second half: the UAR doorbell store.
func (c *cq) armUAR(solicited bool) {
	db := mlx4.CQDoorbell(uint8(c.sn), armCmd(solicited), c.n, c.ci)
	page := mlx4.UARPageOffset(c.usr, mlx4.UARSize)
	c.v.r.uar[[2]uint64{uint64(c.v.n), page + mlx4.MLX4_CQ_DOORBELL}] = uint32(db >> 32)
	c.v.r.uar[[2]uint64{uint64(c.v.n), page + mlx4.MLX4_CQ_DOORBELL + 4}] = uint32(db)
}

// event is ibv_get_cq_event + ibv_ack_cq_events: the completion EQE read
// from EQ 1 (as mlx4_eq_int does, then mlx4_cq_completion), and libmlx4's
// mlx4_cq_event: arm_sn++.
func (c *cq) event() {
	c.sn++
}

// eqes returns the EQEs written to EQ eqn of the VF since the last call.
func (v *cqVF) eqes(eqn int) []mlx4.EQE {
	p, n := v.asyncP, &v.asyncN
	if eqn == 1 {
		p, n = v.compP, &v.compN
	}
	var out []mlx4.EQE
	for ; *n < 128; *n++ {
		b := v.readEQE(p, *n)
		e, _ := mlx4.DecodeEQE(b[:])
		if !e.Owner == (*n&128 != 0) { // still hardware's (first pass: owner set)
			break
		}
		out = append(out, e)
	}
	return out
}

// wantComp checks the completion EQEs since the last call: one per CQ named.
func (v *cqVF) wantComp(what string, cqns ...uint32) {
	v.r.t.Helper()
	got := v.eqes(1)
	if len(got) != len(cqns) {
		v.r.t.Fatalf("%s: %d completion EQEs, want %d", what, len(got), len(cqns))
	}
	for i, e := range got {
		if e.Type != mlx4.EventComp || e.Object != cqns[i] || e.SlaveID != byte(v.n+1) {
			v.r.t.Fatalf("%s: EQE %d type %#x CQN %#x slave %d, want COMP %#x", what, i, e.Type, e.Object, e.SlaveID, cqns[i])
		}
	}
}

func cqeOfSend(qpn uint32, wqe uint16) *mlx4.CQE {
	return &mlx4.CQE{VlanMyQPN: qpn, WQEIndex: wqe, IsSend: true, Opcode: 0x0a, ByteCnt: 64}
}

// TestCQHandOver: SW2HW_CQ over a zeroed buffer (as mlx4_ib and libmlx4
// allocate it) leaves no CQE software-owned by get_sw_cqe's rule, over
// every page of the ring; the first CQE written is.
func TestCQHandOver(t *testing.T) {
	r := newCQRig(t)
	v := r.vfCQ(0)
	c := v.newCQ(9, 128) // 512 CQEs: 4 pages
	if len(c.pages) != 4 {
		t.Fatalf("%d pages", len(c.pages))
	}
	for n := range c.nent {
		if e := c.slot(n); mlx4.CQEOwnerSW(e.Owner, n, c.nent) {
			t.Fatalf("CQE %d software-owned after SW2HW_CQ", n)
		}
	}
	if got := c.poll(); len(got) != 0 {
		t.Fatalf("polled %d CQEs from a new CQ", len(got))
	}
	if err := r.h.postCQE(c.n, cqeOfSend(0x48, 7)); err != nil {
		t.Fatal(err)
	}
	got := c.poll()
	if len(got) != 1 || got[0].QPN() != 0x48 || got[0].WQEIndex != 7 || !got[0].IsSend || got[0].Opcode != 0x0a {
		t.Fatalf("polled %+v", got)
	}
}

// TestPostCQEOwnerPasses: over three passes of the ring, with the consumer
// keeping up, every CQE is software-owned exactly when written, with the
// owner bit of its pass; QUERY_CQ reports the producer index.
func TestPostCQEOwnerPasses(t *testing.T) {
	r := newCQRig(t)
	v := r.vfCQ(1)
	c := v.newCQ(3, 130) // 8 CQEs
	for i := range 3*c.nent + 1 {
		if err := r.h.postCQE(c.n, cqeOfSend(0x50, uint16(i))); err != nil {
			t.Fatalf("CQE %d: %v", i, err)
		}
		e := c.slot(i)
		if e.Owner != mlx4.CQEOwner(i, c.nent) {
			t.Fatalf("CQE %d: owner %v", i, e.Owner)
		}
		got := c.poll()
		if len(got) != 1 || got[0].WQEIndex != uint16(i) {
			t.Fatalf("CQE %d: polled %+v", i, got)
		}
	}
	q := v.cmd(mlx4.QUERY_CQ, 0, c.n, 0, nil, true)
	v.must(v.run(q), "QUERY_CQ")
	if p := binary.BigEndian.Uint32(q.Outbox[mlx4.CQCProducerIndex:]); p != 3*c.nent+1 {
		t.Fatalf("QUERY_CQ producer index %d", p)
	}
	if st := r.h.DPStats(1); st.CQEs.Load() != uint64(3*c.nent+1) || st.CQEDropped.Load() != 0 {
		t.Fatalf("counters %d written %d dropped", st.CQEs.Load(), st.CQEDropped.Load())
	}
}

// TestCQOverrun: a consumer that never advances set_ci gets nent CQEs; the
// next is dropped and the CQ fails: one CQ_ERROR event with the overrun
// syndrome in the VF's async EQ, counted; later CQEs are dropped without
// another event. The other VF's CQ is untouched.
func TestCQOverrun(t *testing.T) {
	r := newCQRig(t)
	v, w := r.vfCQ(0), r.vfCQ(1)
	c, other := v.newCQ(3, 128), w.newCQ(3, 128)
	for i := range c.nent {
		if err := r.h.postCQE(c.n, cqeOfSend(1, uint16(i))); err != nil {
			t.Fatalf("CQE %d: %v", i, err)
		}
	}
	if err := r.h.postCQE(c.n, cqeOfSend(1, 99)); !errors.Is(err, ErrCQOverrun) {
		t.Fatalf("CQE nent+1: %v, want ErrCQOverrun", err)
	}
	if e := c.slot(0); e.WQEIndex != 0 {
		t.Fatalf("the overrun overwrote CQE 0: %+v", e)
	}
	ev := v.eqes(0)
	if len(ev) != 1 || ev[0].Type != mlx4.EventCQError || ev[0].Object != c.n || ev[0].Status != mlx4.CQErrOverrun {
		t.Fatalf("async EQEs %+v, want one CQ_ERROR overrun for CQ %#x", ev, c.n)
	}
	c.poll() // too late: the CQ has failed
	if err := r.h.postCQE(c.n, cqeOfSend(1, 100)); !errors.Is(err, ErrCQFailed) {
		t.Fatalf("after the overrun: %v, want ErrCQFailed", err)
	}
	if ev := v.eqes(0); len(ev) != 0 {
		t.Fatalf("a second CQ error event: %+v", ev)
	}
	st := r.h.DPStats(0)
	if st.CQOverruns.Load() != 1 || st.CQEDropped.Load() != 2 {
		t.Fatalf("overruns %d dropped %d, want 1 2", st.CQOverruns.Load(), st.CQEDropped.Load())
	}
	if err := r.h.postCQE(other.n, cqeOfSend(2, 0)); err != nil || len(other.poll()) != 1 {
		t.Fatalf("the other VF's CQ: %v", err)
	}
	if r.h.DPStats(1).CQEDropped.Load() != 0 || len(w.eqes(0)) != 0 {
		t.Fatal("the other VF was affected")
	}
}

// TestCQConsumerIndexReadWhenFull: set_ci is read before a CQE only when
// the ring is full by the consumer index last read (after each CQE it is
// read for arms, and that read is the one the ring's fullness counts on).
// A VF that empties a full ring after that read gets the next CQE, not an
// overrun: the record is read again before it.
func TestCQConsumerIndexReadWhenFull(t *testing.T) {
	r := newCQRig(t)
	v := r.vfCQ(0)
	c := v.newCQ(3, 128)
	for i := range c.nent {
		if err := r.h.postCQE(c.n, cqeOfSend(1, uint16(i))); err != nil {
			t.Fatalf("CQE %d: %v", i, err)
		}
	}
	if got := c.poll(); len(got) != int(c.nent) { // set_ci = nent
		t.Fatalf("polled %d CQEs, want %d", len(got), c.nent)
	}
	if err := r.h.postCQE(c.n, cqeOfSend(1, 99)); err != nil {
		t.Fatalf("a CQE into the ring the VF emptied: %v", err)
	}
	if e := c.slot(c.nent); !mlx4.CQEOwnerSW(e.Owner, c.nent, c.nent) || e.WQEIndex != 99 {
		t.Fatalf("CQE %d: %+v", c.nent, e)
	}
	if st := r.h.DPStats(0); st.CQOverruns.Load() != 0 || st.CQEDropped.Load() != 0 || len(v.eqes(0)) != 0 {
		t.Fatalf("overruns %d dropped %d: the record was not read again", st.CQOverruns.Load(), st.CQEDropped.Load())
	}
}

// TestCQRingChecks: the ring's geometry against its context and MTT, as
// the firmware checks it after the wrapper: log size above log_max_cq_sz,
// a page offset, an MTT entry never written or outside the window, and a
// ring claiming more pages than its MTT allocation holds.
func TestCQRingChecks(t *testing.T) {
	r := newCQRig(t)
	v := r.vfCQ(0)
	for _, c := range []struct {
		name   string
		log    int
		edit   func(*mlx4.CQContext, []uint64)
		status mlx4.Status
		reason refusal.Reason
	}{
		{"entry never written", 8, func(_ *mlx4.CQContext, e []uint64) { e[1] = 0 }, mlx4.BAD_PARAM, refusal.MTT},
		{"page outside the window", 8, func(_ *mlx4.CQContext, e []uint64) { e[1] = testWindow | 1 }, mlx4.BAD_PARAM, refusal.MTT},
		{"page size 2 GiB", 3, func(x *mlx4.CQContext, _ []uint64) { x.LogPageSize = 19 }, mlx4.BAD_PARAM, refusal.Context},
		{"log size 23", 23, nil, mlx4.BAD_PARAM, refusal.Context},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.log == 23 {
				// no pages for 2^23 CQEs: a one-entry MTT names the range
				cqn := v.mustAlloc(restrack.CQ, resOpReserveAndMap, 0)
				b := make([]byte, mlx4.CQContextSize)
				mlx4.CQContext{LogSize: 23, CompEQN: 1, MTTBase: uint64(v.mtt(0, v.newPage()|1))}.Encode(b)
				cmd := v.cmd(mlx4.SW2HW_CQ, 0, cqn, 0, b, false)
				// the wrapper's MTT range check comes first (BAD_OP)
				if s := v.run(cmd); s == mlx4.OK {
					t.Fatal("a CQ of 2^23 CQEs was accepted")
				}
				return
			}
			_, s := v.tryCQ(c.log, 128, c.edit)
			if s != c.status {
				t.Fatalf("status %v, want %v", s, c.status)
			}
		})
	}
	// A context whose ring needs two pages over a one-entry MTT: the
	// wrapper's check_mtt_range refuses it (BAD_OP, reason MTT).
	cqn := v.mustAlloc(restrack.CQ, resOpReserveAndMap, 0)
	b := make([]byte, mlx4.CQContextSize)
	mlx4.CQContext{LogSize: 8, CompEQN: 1, MTTBase: uint64(v.mtt(0, v.newPage()|1))}.Encode(b)
	cmd := v.cmd(mlx4.SW2HW_CQ, 0, cqn, 0, b, false)
	if s := v.run(cmd); s != mlx4.BAD_OP || cmd.Reason != refusal.MTT {
		t.Fatalf("ring larger than its MTT: %v %v, want BAD_OP MTT", s, cmd.Reason)
	}
	// The ring's geometry itself (the firmware's check, for a ring whose
	// bytes exceed what the MTT range of its context covers).
	var ctx mlx4.CQContext
	ctx.LogSize = 8
	o := &restrack.Object{Order: 0}
	if _, why, err := buildCQRing(v.w, 0, 1, ctx, b, o, []uint64{0x10000 | 1}); err == nil || why != refusal.MTT {
		t.Fatalf("buildCQRing of 2 pages over 1 entry: %v %v", why, err)
	}
}

// TestCQArmPingpong is ibv_rc_pingpong -e's sequence on one CQ, as libmlx4
// drives it: ibv_req_notify_cq before the first work; a CQE fires one
// completion EQE into the CQ's EQ (c_eqn 1, not the async EQ) and raises
// that EQ's vector; more CQEs fire nothing (once per arm);
// ibv_get_cq_event + ibv_ack_cq_events (arm_sn++), then ibv_req_notify_cq
// before polling, with ci behind the producer: fires at once (ConnectX's
// rule, which mlx4_ib_arm_cq relies on), seen by the poller's scan through
// the UAR word; after polling, an arm with nothing pending fires at the
// next CQE only.
func TestCQArmPingpong(t *testing.T) {
	r := newCQRig(t)
	v := r.vfCQ(0)
	c := v.newCQ(4, 129)
	post := func(i int) {
		t.Helper()
		if err := r.h.postCQE(c.n, cqeOfSend(0x60, uint16(i))); err != nil {
			t.Fatal(err)
		}
	}
	post(0) // before any arm: no event
	v.wantComp("unarmed CQE")
	if got := c.poll(); len(got) != 1 {
		t.Fatalf("polled %d", len(got))
	}
	c.arm(false)
	v.wantComp("arm with nothing pending")
	r.h.ServiceQueues(64)
	r.h.CheckArms()
	v.wantComp("arm with nothing pending, after a scan")
	post(1)
	v.wantComp("armed CQE", c.n)
	if r.irq.raised[[2]int{0, 1}] != 1 {
		t.Fatalf("vector 1 raised %d times", r.irq.raised[[2]int{0, 1}])
	}
	post(2)
	post(3)
	v.wantComp("after the event, disarmed")
	c.event()
	c.arm(false) // before polling: ci 1, producer 4
	if n := r.h.ServiceQueues(64); n == 0 {
		t.Fatal("ServiceQueues did no work for an arm owed")
	}
	v.wantComp("re-arm with CQEs pending", c.n)
	if got := c.poll(); len(got) != 3 {
		t.Fatalf("polled %d, want 3", len(got))
	}
	c.event()
	c.arm(false)
	r.h.ServiceQueues(64)
	r.h.CheckArms()
	v.wantComp("arm after polling")
	post(4)
	v.wantComp("next CQE", c.n)
	// the same arm word read again is no new arm
	post(5)
	r.h.CheckArms()
	v.wantComp("the old arm word again")
	if st := r.h.DPStats(0); st.CompEvents.Load() != 3 || st.CQArms.Load() != 3 {
		t.Fatalf("events %d arms %d, want 3 3", st.CompEvents.Load(), st.CQArms.Load())
	}
}

// TestCQWatchedArmThroughUAR: a CQ disarmed with CQEs pending is watched,
// and its record is then not read after each CQE (a polling VF's line,
// stored at every poll): an arm_db word written into the record alone is
// not taken by the next CQE; the arm's UAR store that follows it, as
// mlx4_arm_cq makes it, is found by the next scan, which takes the arm and
// fires the event the CQEs beyond its ci owe, once; a record-only arm is
// also found at CheckArms (the poller's check before a sleep).
func TestCQWatchedArmThroughUAR(t *testing.T) {
	r := newCQRig(t)
	v := r.vfCQ(0)
	c := v.newCQ(4, 129)
	post := func(i int) {
		t.Helper()
		if err := r.h.postCQE(c.n, cqeOfSend(0x60, uint16(i))); err != nil {
			t.Fatal(err)
		}
	}
	post(0)
	if !r.h.fw.cqs[c.n].ring.watched {
		t.Fatal("a disarmed CQ with a CQE pending is not watched")
	}
	c.armRecord(false) // ci 0: CQE 0 is owed
	post(1)
	v.wantComp("a record-only arm, after the next CQE")
	c.armUAR(false)
	r.h.ServiceQueues(64)
	v.wantComp("the arm's UAR store, after a scan", c.n)
	post(2)
	v.wantComp("after the event, disarmed")
	c.event()
	c.armRecord(false)
	post(3)
	v.wantComp("the next record-only arm, after a CQE")
	r.h.CheckArms()
	v.wantComp("the record-only arm at CheckArms", c.n)
}

// TestCQArmSolicited: REQ_NOT_SOL fires for a solicited or an error CQE,
// not for a plain one; an arm that finds a solicited CQE pending fires at
// once, one that finds only plain ones does not.
func TestCQArmSolicited(t *testing.T) {
	r := newCQRig(t)
	v := r.vfCQ(1)
	c := v.newCQ(4, 129)
	c.arm(true)
	if err := r.h.postCQE(c.n, cqeOfSend(0x61, 0)); err != nil {
		t.Fatal(err)
	}
	v.wantComp("plain CQE under REQ_NOT_SOL")
	if err := r.h.postSolicitedCQE(c.n, cqeOfSend(0x61, 1)); err != nil {
		t.Fatal(err)
	}
	v.wantComp("solicited CQE", c.n)
	c.event()
	c.arm(true) // ci 0: the solicited CQE 1 is pending
	r.h.CheckArms()
	v.wantComp("re-arm with a solicited CQE pending", c.n)
	c.poll()
	c.event()
	if err := r.h.postCQE(c.n, cqeOfSend(0x61, 2)); err != nil {
		t.Fatal(err)
	}
	c.arm(true) // ci 2: only a plain CQE pending
	r.h.CheckArms()
	v.wantComp("re-arm with a plain CQE pending")
	e := cqeOfSend(0x61, 3)
	e.SetError(mlx4.CQE_SYNDROME_WR_FLUSH_ERR, 0)
	if err := r.h.postCQE(c.n, e); err != nil {
		t.Fatal(err)
	}
	v.wantComp("error CQE", c.n)
}

// TestCQResize is RESIZE_CQ as mlx4_ib_resize_cq (kernel CQ) and libmlx4's
// mlx4_resize_cq drive it: MODIFY_CQ op_modifier 0 with the new size and
// MTT; the old ring gets the resize CQE at the producer index, so that
// the driver's copy loop (old CQE i to new slot i+1, up to the resize
// CQE, then ++cons_index) ends; the new ring is handed over and the next
// CQE lands in it at the producer index with the owner bit of its pass.
func TestCQResize(t *testing.T) {
	r := newCQRig(t)
	v := r.vfCQ(0)
	c := v.newCQ(3, 129) // 8 CQEs
	for i := range 5 {
		if err := r.h.postCQE(c.n, cqeOfSend(0x62, uint16(i))); err != nil {
			t.Fatal(err)
		}
	}
	c.ci = 2 // the consumer has taken two
	c.setCI()
	// the new buffer: 32 CQEs in one zeroed page
	np := v.newPage()
	nmtt := v.mtt(0, np|1)
	b := make([]byte, mlx4.CQContextSize)
	mlx4.CQContext{LogSize: 5, MTTBase: uint64(nmtt)}.Encode(b) // mlx4_cq_resize's context
	v.must(v.run(v.cmd(mlx4.MODIFY_CQ, 0, c.n, 0, b, false)), "RESIZE_CQ")
	rz := c.slot(5)
	if rz.Opcode != mlx4.CQE_OPCODE_RESIZE || !mlx4.CQEOwnerSW(rz.Owner, 5, c.nent) {
		t.Fatalf("old ring slot 5: %+v, want the resize CQE, software's", rz)
	}
	// the copy loop of mlx4_cq_resize_copy_cqes
	nc := &cq{v: v, n: c.n, nent: 32, pages: []uint64{np}, rec: c.rec, usr: c.usr}
	copied := 0
	for i := c.ci; c.slot(i).Opcode != mlx4.CQE_OPCODE_RESIZE; i++ {
		if copied++; copied > int(c.nent) {
			t.Fatal("the copy loop found no resize CQE")
		}
		e := c.slot(i)
		e.Owner = mlx4.CQEOwner(i+1, nc.nent)
		enc := mlx4.EncodeCQE(e)
		off := uint64((i+1)&(nc.nent-1)) * mlx4.CQESize
		if err := v.w.CopyOut(np+off, enc[:]); err != nil {
			t.Fatal(err)
		}
	}
	if copied != 3 {
		t.Fatalf("copied %d CQEs, want 3", copied)
	}
	nc.ci = c.ci + 1
	for n := nc.ci + 3; n < nc.ci+nc.nent; n++ {
		if e := nc.slot(n); mlx4.CQEOwnerSW(e.Owner, n, nc.nent) {
			t.Fatalf("new ring CQE %d software-owned before it was written", n)
		}
	}
	if err := r.h.postCQE(c.n, cqeOfSend(0x62, 5)); err != nil {
		t.Fatal(err)
	}
	got := nc.poll()
	if len(got) != 4 || got[0].WQEIndex != 2 || got[3].WQEIndex != 5 {
		t.Fatalf("polled from the new ring: %+v", got)
	}
	if p, _ := r.h.CQProd(c.n); p != 7 {
		t.Fatalf("producer index %d, want 7 (5 CQEs, the resize CQE, 1)", p)
	}
	q := v.cmd(mlx4.QUERY_CQ, 0, c.n, 0, nil, true)
	v.must(v.run(q), "QUERY_CQ")
	ctx, _ := mlx4.DecodeCQContext(q.Outbox[:])
	if ctx.LogSize != 5 || ctx.UsrPage != 129 {
		t.Fatalf("QUERY_CQ after resize: log size %d usr_page %d, want 5 129", ctx.LogSize, ctx.UsrPage)
	}
	// a resize whose new ring does not fit its MTT pages is refused, the
	// CQ unchanged
	bad := v.mtt(0) // entries never written
	mlx4.CQContext{LogSize: 5, MTTBase: uint64(bad)}.Encode(b)
	cmd := v.cmd(mlx4.MODIFY_CQ, 0, c.n, 0, b, false)
	if s := v.run(cmd); s != mlx4.BAD_PARAM || cmd.Reason != refusal.MTT {
		t.Fatalf("resize into unwritten MTT: %v %v", s, cmd.Reason)
	}
	if p, _ := r.h.CQProd(c.n); p != 7 {
		t.Fatalf("a refused resize moved the producer index to %d", p)
	}
}

// TestCQRecordOutsideWindow: a CQ whose doorbell record lies outside the
// VF's window (the firmware does not check db_rec_addr at SW2HW_CQ) fails
// at the first CQE it would write: dropped, a CQ_ERROR with the access
// violation syndrome to the VF, counted; nothing is written.
func TestCQRecordOutsideWindow(t *testing.T) {
	r := newCQRig(t)
	v := r.vfCQ(0)
	c, s := v.tryCQ(3, 129, func(x *mlx4.CQContext, _ []uint64) { x.DBRecAddr = testWindow - 4 })
	v.must(s, "SW2HW_CQ")
	if err := r.h.postCQE(c.n, cqeOfSend(1, 0)); !errors.Is(err, ErrCQFailed) {
		t.Fatalf("postCQE: %v, want ErrCQFailed", err)
	}
	if e := c.slot(0); mlx4.CQEOwnerSW(e.Owner, 0, c.nent) {
		t.Fatal("a CQE was written")
	}
	ev := v.eqes(0)
	if len(ev) != 1 || ev[0].Type != mlx4.EventCQError || ev[0].Status != mlx4.CQErrAccessViolation || ev[0].Object != c.n {
		t.Fatalf("async EQEs %+v", ev)
	}
	if r.h.DPStats(0).CQAccess.Load() != 1 {
		t.Fatal("not counted")
	}
}

// TestCQArmFlood: a VF that writes a new arm word before every scan with a
// CQE pending gets at most one completion EQE per scan (its own EQ fills
// and overruns, counted as the EQ's), and the other VF's armed CQ gets its
// one event.
func TestCQArmFlood(t *testing.T) {
	r := newCQRig(t)
	v, w := r.vfCQ(0), r.vfCQ(1)
	c, d := v.newCQ(3, 129), w.newCQ(3, 129)
	if err := r.h.postCQE(c.n, cqeOfSend(1, 0)); err != nil {
		t.Fatal(err)
	}
	const scans = 300
	for i := range scans {
		c.sn = uint32(i)
		c.arm(i%2 == 0)
		r.h.ServiceQueues(64)
	}
	if got := r.h.DPStats(0).CompEvents.Load(); got > scans || got == 0 {
		t.Fatalf("%d completion events in %d scans", got, scans)
	}
	if r.h.Stats(0).Overruns.Load() == 0 {
		t.Fatal("the flooded EQ never overran")
	}
	d.arm(false)
	if err := r.h.postCQE(d.n, cqeOfSend(2, 0)); err != nil {
		t.Fatal(err)
	}
	w.wantComp("the other VF's CQE", d.n)
	if r.h.Stats(1).Overruns.Load() != 0 {
		t.Fatal("the other VF's EQ overran")
	}
}

// TestCQDestroyedLeavesTheWatch: HW2SW_CQ and the VF's reset take a
// watched CQ off the watch list; a later scan reads nothing of it.
func TestCQDestroyedLeavesTheWatch(t *testing.T) {
	r := newCQRig(t)
	v := r.vfCQ(0)
	c, d := v.newCQ(3, 129), v.newCQ(3, 129)
	for _, x := range []*cq{c, d} {
		if err := r.h.postCQE(x.n, cqeOfSend(1, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.h.sched.cqWatch) != 2 {
		t.Fatalf("%d CQs watched, want 2", len(r.h.sched.cqWatch))
	}
	v.must(v.run(v.cmd(mlx4.HW2SW_CQ, 0, c.n, 0, nil, false)), "HW2SW_CQ")
	if len(r.h.sched.cqWatch) != 1 {
		t.Fatalf("%d CQs watched after HW2SW_CQ, want 1", len(r.h.sched.cqWatch))
	}
	if err := r.h.postCQE(c.n, cqeOfSend(1, 1)); !errors.Is(err, ErrNoCQ) {
		t.Fatalf("postCQE to a destroyed CQ: %v", err)
	}
	r.h.ResetFunction(0)
	if len(r.h.sched.cqWatch) != 0 || r.h.ServiceQueues(64) != 0 {
		t.Fatal("a reset VF's CQ is still watched")
	}
}

// exerciseCQ gives CQ cqn's persistent state non-zero values (the image
// round trip's "every field" check): CQEs written past a consumer index,
// an arm for solicited completions taken, a solicited CQE, a failure.
func exerciseCQ(t *testing.T, h *HCA, cqn uint32) {
	t.Helper()
	c := h.fw.cqs[cqn]
	if c == nil || c.ring == nil {
		t.Fatalf("CQ %#x has no ring", cqn)
	}
	var rec [mlx4.CQDBRecSize]byte
	binary.BigEndian.PutUint32(rec[mlx4.CQDBRecArmDB:], mlx4.CQArmDB(1, mlx4.MLX4_CQ_DB_REQ_NOT_SOL, 1))
	for i := range 3 {
		binary.BigEndian.PutUint32(rec[mlx4.CQDBRecSetCI:], uint32(i/2)) // one consumed before the third
		if err := c.ring.win.CopyOut(c.ring.dbRec, rec[:]); err != nil {
			t.Fatal(err)
		}
		if err := h.postCQE(cqn, cqeOfSend(1, uint16(i))); err != nil {
			t.Fatal(err)
		}
		h.checkCQArms() // the poller's look at its watched CQs' records (a scan's hint, an idle checkpoint)
	}
	c.SolProd, c.Sol, c.Err = 2, true, mlx4.CQErrOverrun
}

// TestCQPositions: the position hook sees a CQ's producer index at
// creation, after every CQE (the resize CQE too) and its end at HW2SW_CQ;
// nothing while replaying quietly.
func TestCQPositions(t *testing.T) {
	r := newCQRig(t)
	type pos struct {
		vf        int
		cqn, prod uint32
		live      bool
	}
	var got []pos
	r.h.SetCQPositions(func(vf int, cqn, prod uint32, live bool) { got = append(got, pos{vf, cqn, prod, live}) })
	v := r.vfCQ(1)
	c := v.newCQ(3, 128)
	for i := range 2 {
		if err := r.h.postCQE(c.n, cqeOfSend(1, uint16(i))); err != nil {
			t.Fatal(err)
		}
	}
	r.h.SetQuiet(true)
	if err := r.h.postCQE(c.n, cqeOfSend(1, 2)); err != nil {
		t.Fatal(err)
	}
	r.h.SetQuiet(false)
	v.must(v.run(v.cmd(mlx4.HW2SW_CQ, 0, c.n, 0, nil, false)), "HW2SW_CQ")
	want := []pos{{1, c.n, 0, true}, {1, c.n, 1, true}, {1, c.n, 2, true}, {1, c.n, 2, false}}
	if len(got) != len(want) {
		t.Fatalf("positions %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("positions %+v, want %+v", got, want)
		}
	}
}
