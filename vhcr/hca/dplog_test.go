package hca

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/vhcr/internal/crashpoint"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/pfstate"
)

// dpKill is the panic of a simulated kill at a data-path point.
type dpKill string

// logPair is an RC pair whose HCA keeps the data path's log in region
// from before the first command (a fresh state file), with a kill point
// that can be set.
type logPair struct {
	*rcPair
	region []byte
	point  string
	nth    int
}

func newLogPair(t *testing.T) *logPair {
	d := newDPRig(t, 3, nil)
	lp := &logPair{region: make([]byte, pfstate.DPSize)}
	d.h.AttachDataPathLog(lp.region, lp.hit)
	lp.rcPair = rcPairOn(d, permAll, qpOpts{})
	return lp
}

// counter sets the fetch-add target, B's 8 bytes at vaB+64, to v.
func (lp *logPair) counter(v uint64) {
	var word [8]byte
	binary.BigEndian.PutUint64(word[:], v)
	lp.b.fill(lp.mb+64, word[:])
}

func (lp *logPair) hit(at string) {
	if at == lp.point {
		if lp.nth--; lp.nth == 0 {
			panic(dpKill(at))
		}
	}
}

// runKilled runs qa's send queue with the kill armed at the nth hit of
// point; it reports whether the kill came.
func (lp *logPair) runKilled(point string, nth int) bool { return lp.runKilledOn(lp.qa, point, nth) }

// runKilledOn is runKilled on q's send queue.
func (lp *logPair) runKilledOn(q *tqp, point string, nth int) (killed bool) {
	lp.point, lp.nth = point, nth
	defer func() {
		lp.point = ""
		if v := recover(); v != nil {
			if _, ok := v.(dpKill); !ok {
				panic(v)
			}
			killed = true
		}
	}()
	q.run(16)
	return false
}

// restart is a restarted PF: a new HCA loaded from the checkpoint img
// (taken before the traffic), the EQ positions as the state file keeps
// them, and the same log region.
func (lp *logPair) restart(t *testing.T, img *Image) {
	t.Helper()
	old := lp.d.h
	h, err := New(old.Cfg, old.NumVFs)
	if err != nil {
		t.Fatal(err)
	}
	sp := lp.d.sp
	if err := h.Load(img, func(vf int) *dma.Window { w, _ := sp.Window(vf); return w }); err != nil {
		t.Fatal(err)
	}
	for _, eq := range old.fw.eqs {
		h.SetEQProd(eq.VF, eq.EQN, eq.Prod)
	}
	h.AttachDataPathLog(lp.region, lp.hit)
	lp.d.h = h
}

func fetchAdd(ka uint32, kb uint32, sink uint64, remote uint64, add uint64) *mlx4.SendWQE {
	w := send(mlx4.OPCODE_ATOMIC_FA, sge(ka, sink, 8))
	w.HasRAddr, w.RAddr = true, mlx4.RAddrSeg{RAddr: remote, RKey: kb}
	w.HasAtomic, w.Atomic = true, mlx4.AtomicSeg{SwapAdd: add}
	return w
}

func rdmaWrite(ka, kb uint32, src, dst uint64, n uint32) *mlx4.SendWQE {
	w := send(mlx4.OPCODE_RDMA_WRITE, sge(ka, src, n))
	w.HasRAddr, w.RAddr = true, mlx4.RAddrSeg{RAddr: dst, RKey: kb}
	return w
}

// TestDataPathKillAtEachPoint: a PF killed at each point of a WQE's
// journal steps (after the atomic's intent, after the effects, after each
// CQE, in the middle of storing the positions), restarted from a
// checkpoint taken before the traffic, executes the WQE exactly once as
// the VF sees it: the data in place, an atomic applied once with the
// original returned, one receive WQE consumed, each CQE once; and the
// next WQE after the restart goes on from there.
func TestDataPathKillAtEachPoint(t *testing.T) {
	type kase struct {
		op    string
		point string
		nth   int
	}
	var cases []kase
	for _, op := range []string{"send", "write", "fadd", "unsignalled"} {
		for _, pt := range []string{crashpoint.DPIntent, crashpoint.DPEffects, crashpoint.DPCQE, crashpoint.DPCommitTorn} {
			switch {
			case pt == crashpoint.DPIntent && op != "fadd", pt == crashpoint.DPCQE && op == "unsignalled":
				continue
			}
			cases = append(cases, kase{op, pt, 1})
			if pt == crashpoint.DPCQE && op == "send" {
				cases = append(cases, kase{op, pt, 2}) // between the responder's CQE and the requester's
			}
		}
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s:%d", c.op, c.point, c.nth), func(t *testing.T) {
			lp := newLogPair(t)
			a, b, qa, qb := lp.a, lp.b, lp.qa, lp.qb
			msg := pattern(200, 3)
			a.fill(lp.ma, msg)
			lp.counter(5)
			qb.recv(sge(lp.kb, vaB+1000, 300))
			qb.recv(sge(lp.kb, vaB+1500, 300))
			img := lp.d.h.Image() // the checkpoint
			switch c.op {
			case "send":
				qa.post(send(mlx4.OPCODE_SEND, sge(lp.ka, vaA, 200)), nil)
			case "write":
				qa.post(rdmaWrite(lp.ka, lp.kb, vaA, vaB+2000, 200), nil)
			case "fadd":
				qa.post(fetchAdd(lp.ka, lp.kb, vaA+512, vaB+64, 1), nil)
			case "unsignalled":
				w := rdmaWrite(lp.ka, lp.kb, vaA, vaB+2000, 200)
				w.Ctrl.SrcRBFlags = 0
				qa.post(w, nil)
			}
			if !lp.runKilled(c.point, c.nth) {
				t.Fatalf("no kill at %s:%d", c.point, c.nth)
			}
			seen := lp.d.take() // the VF reads what was written before the kill
			lp.restart(t, img)
			qa.run(16)
			got := append(seen, lp.d.take()...)
			switch c.op {
			case "send":
				if g := b.read(lp.mb+1000, 200); !bytes.Equal(g, msg) {
					t.Fatalf("B's first receive buffer holds %x", g)
				}
				if g := b.read(lp.mb+1500, 200); !bytes.Equal(g, make([]byte, 200)) {
					t.Fatalf("B's second receive buffer was written: the message delivered twice")
				}
				wantCQE(t, got, rCQE(b.cq, qb.qpn, 0, mlx4.RECV_OPCODE_SEND, 200, 0), sCQE(a.cq, qa.qpn, 0, mlx4.OPCODE_SEND, 200))
			case "write", "unsignalled":
				if g := b.read(lp.mb+2000, 200); !bytes.Equal(g, msg) {
					t.Fatalf("RDMA_WRITE: B holds %x", g)
				}
				if c.op == "write" {
					wantCQE(t, got, sCQE(a.cq, qa.qpn, 0, mlx4.OPCODE_RDMA_WRITE, 200))
				} else {
					wantCQE(t, got)
				}
			case "fadd":
				if v := binary.BigEndian.Uint64(b.read(lp.mb+64, 8)); v != 6 {
					t.Fatalf("counter %d after one fetch-add of 1 to 5", v)
				}
				if v := binary.BigEndian.Uint64(a.read(lp.ma+512, 8)); v != 5 {
					t.Fatalf("fetch-add returned %d, want the original 5", v)
				}
				wantCQE(t, got, sCQE(a.cq, qa.qpn, 0, mlx4.OPCODE_ATOMIC_FA, 8))
			}
			if qa.obj().SQHead != 1 {
				t.Fatalf("SQ consumer %d after one WQE", qa.obj().SQHead)
			}
			// The next WQE goes on from the positions restored.
			switch c.op {
			case "send":
				qa.post(send(mlx4.OPCODE_SEND, sge(lp.ka, vaA, 100)), nil)
				qa.run(16)
				wantCQE(t, lp.d.take(), rCQE(b.cq, qb.qpn, 1, mlx4.RECV_OPCODE_SEND, 100, 0), sCQE(a.cq, qa.qpn, 1, mlx4.OPCODE_SEND, 100))
				if g := b.read(lp.mb+1500, 100); !bytes.Equal(g, msg[:100]) {
					t.Fatalf("the second SEND: %x", g)
				}
			case "fadd":
				qa.post(fetchAdd(lp.ka, lp.kb, vaA+520, vaB+64, 1), nil)
				qa.run(16)
				if v, o := binary.BigEndian.Uint64(b.read(lp.mb+64, 8)), binary.BigEndian.Uint64(a.read(lp.ma+520, 8)); v != 7 || o != 6 {
					t.Fatalf("second fetch-add: counter %d, original %d", v, o)
				}
				wantCQE(t, lp.d.take(), sCQE(a.cq, qa.qpn, 1, mlx4.OPCODE_ATOMIC_FA, 8))
			default:
				qa.post(rdmaWrite(lp.ka, lp.kb, vaA, vaB+2400, 50), nil)
				qa.run(16)
				wantCQE(t, lp.d.take(), sCQE(a.cq, qa.qpn, 1, mlx4.OPCODE_RDMA_WRITE, 50))
			}
		})
	}
}

// TestDataPathLimitSourceRewritten shows the guarantee's limit: a WQE
// interrupted before its completion is executed again from its source
// buffer as it is then. A VF that rewrites the buffer before the
// completion (the verbs contract forbids it) gets its new bytes at the
// destination — still one CQE, one WQE consumed.
func TestDataPathLimitSourceRewritten(t *testing.T) {
	lp := newLogPair(t)
	a, b, qa := lp.a, lp.b, lp.qa
	a.fill(lp.ma, pattern(64, 1))
	img := lp.d.h.Image()
	qa.post(rdmaWrite(lp.ka, lp.kb, vaA, vaB+2000, 64), nil)
	if !lp.runKilled(crashpoint.DPEffects, 1) {
		t.Fatal("no kill")
	}
	if g := b.read(lp.mb+2000, 64); !bytes.Equal(g, pattern(64, 1)) {
		t.Fatalf("before the restart B holds %x", g)
	}
	a.fill(lp.ma, pattern(64, 9)) // rewritten before its completion
	lp.restart(t, img)
	qa.run(16)
	if g := b.read(lp.mb+2000, 64); !bytes.Equal(g, pattern(64, 9)) {
		t.Fatalf("B holds %x, want the rewritten source", g)
	}
	wantCQE(t, lp.d.take(), sCQE(a.cq, qa.qpn, 0, mlx4.OPCODE_RDMA_WRITE, 64))
}

// Without the log the same kill executes the fetch-add twice: the test
// above fails on the engine without its log.
func TestDataPathWithoutLogAddsTwice(t *testing.T) {
	lp := newLogPair(t)
	lp.d.h.dl = nil
	a, b, qa := lp.a, lp.b, lp.qa
	lp.counter(5)
	img := lp.d.h.Image()
	qa.post(fetchAdd(lp.ka, lp.kb, vaA+512, vaB+64, 1), nil)
	qa.run(16) // completes; a PF without the log restarts from its checkpoint
	old := lp.d.h
	h, err := New(old.Cfg, old.NumVFs)
	if err != nil {
		t.Fatal(err)
	}
	sp := lp.d.sp
	if err := h.Load(img, func(vf int) *dma.Window { w, _ := sp.Window(vf); return w }); err != nil {
		t.Fatal(err)
	}
	lp.d.h = h
	qa.run(16)
	if v := binary.BigEndian.Uint64(b.read(lp.mb+64, 8)); v != 7 {
		t.Fatalf("counter %d: the checkpoint's SQ consumer index runs the WQE again (7)", v)
	}
	_ = a
}

// The log costs no allocation per WQE: its record, CQEs and entries are
// stores into the region.
func TestDataPathLogAllocatesNothing(t *testing.T) {
	lp := newLogPair(t)
	a, qa := lp.a, lp.qa
	a.fill(lp.ma, pattern(64, 1))
	for range 6 {
		qa.post(rdmaWrite(lp.ka, lp.kb, vaA, vaB+2000, 64), nil)
	}
	obj := qa.obj()
	allocs := testing.AllocsPerRun(4, func() {
		if lp.d.h.runSQ(obj, 1) != 1 {
			t.Fatal("no WQE run")
		}
	})
	if allocs != 0 {
		t.Fatalf("runSQ with the log: %v allocations per WQE", allocs)
	}
	if st := lp.d.h.DataPathLogStats(); st.Steps.Load() < 5 {
		t.Fatalf("%d steps recorded", st.Steps.Load())
	}
}

// TestDataPathLogUncommittedTransition: a modify-QP command the previous
// PF executed (its entry stored) and never committed is executed again by
// the restarted PF (an early command's resume): the log's entry must not
// put the QP in the state that command reached, or the command's second
// run finds the QP past its source state and fails (BAD_PARAM), as a kill
// at post-executing of an RTS2SQD showed. The data path's own moves (ERR)
// still come from the log.
func TestDataPathLogUncommittedTransition(t *testing.T) {
	lp := newLogPair(t)
	img := lp.d.h.Image()                                  // the checkpoint: qa in RTS
	lp.b.must(lp.qa.modify(mlx4.RTS2SQD_QP, 0), "RTS2SQD") // executed, never committed
	lp.restart(t, img)
	if got := lp.qa.obj().State; got != mlx4.QP_STATE_RTS {
		t.Fatalf("restarted QP in %v, want RTS (the uncommitted RTS2SQD is redone)", got)
	}
	lp.a.must(lp.qa.modify(mlx4.RTS2SQD_QP, 0), "RTS2SQD again")

	// A data-path move to ERR survives the restart.
	lp = newLogPair(t)
	img = lp.d.h.Image()
	lp.qa.post(send(mlx4.OPCODE_SEND, sge(0xdead00, vaA, 8)), nil) // forged lkey: QP to ERR
	lp.qa.run(4)
	lp.restart(t, img)
	if got := lp.qa.obj().State; got != mlx4.QP_STATE_ERR {
		t.Fatalf("restarted QP in %v, want ERR (the data path's move)", got)
	}
}

// TestDataPathKillInABatch: three WQEs of one QP run as one step (a SEND,
// an RDMA_WRITE, a SEND: five CQEs in one record). A PF killed at each
// point of that step, restarted from a checkpoint taken before the
// traffic, delivers each message once, each CQE once, and goes on from
// there (and so does one restarted after the whole step).
func TestDataPathKillInABatch(t *testing.T) {
	type kase struct {
		point string
		nth   int
	}
	cases := []kase{{crashpoint.DPEffects, 1}, {crashpoint.DPCommitTorn, 1}, {"none", 0}}
	for n := 1; n <= 5; n++ {
		cases = append(cases, kase{crashpoint.DPCQE, n})
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s:%d", c.point, c.nth), func(t *testing.T) {
			lp := newLogPair(t)
			a, b, qa, qb := lp.a, lp.b, lp.qa, lp.qb
			msg := pattern(300, 7)
			a.fill(lp.ma, msg)
			for k := range 3 {
				qb.recv(sge(lp.kb, vaB+uint64(k)*400, 300))
			}
			img := lp.d.h.Image()
			qa.post(send(mlx4.OPCODE_SEND, sge(lp.ka, vaA, 100)), nil)
			qa.post(rdmaWrite(lp.ka, lp.kb, vaA+100, vaB+2000, 100), nil)
			qa.post(send(mlx4.OPCODE_SEND, sge(lp.ka, vaA+200, 100)), nil)
			steps := lp.d.h.DataPathLogStats().Steps.Load()
			if c.point == "none" {
				if n := qa.run(16); n != 3 {
					t.Fatalf("%d WQEs run", n)
				}
			} else if !lp.runKilled(c.point, c.nth) {
				t.Fatalf("no kill at %s:%d", c.point, c.nth)
			}
			if got := lp.d.h.DataPathLogStats().Steps.Load() - steps; c.point != crashpoint.DPEffects && got != 1 {
				t.Fatalf("%d step records for one run of three WQEs", got)
			}
			seen := lp.d.take()
			lp.restart(t, img)
			qa.run(16)
			got := append(seen, lp.d.take()...)
			wantCQE(t, got,
				rCQE(b.cq, qb.qpn, 0, mlx4.RECV_OPCODE_SEND, 100, 0), sCQE(a.cq, qa.qpn, 0, mlx4.OPCODE_SEND, 100),
				sCQE(a.cq, qa.qpn, 1, mlx4.OPCODE_RDMA_WRITE, 100),
				rCQE(b.cq, qb.qpn, 1, mlx4.RECV_OPCODE_SEND, 100, 0), sCQE(a.cq, qa.qpn, 2, mlx4.OPCODE_SEND, 100))
			if g := b.read(lp.mb, 100); !bytes.Equal(g, msg[:100]) {
				t.Fatalf("first SEND: %x", g)
			}
			if g := b.read(lp.mb+2000, 100); !bytes.Equal(g, msg[100:200]) {
				t.Fatalf("RDMA_WRITE: %x", g)
			}
			if g := b.read(lp.mb+400, 100); !bytes.Equal(g, msg[200:300]) {
				t.Fatalf("second SEND: %x", g)
			}
			if g := b.read(lp.mb+800, 100); !bytes.Equal(g, make([]byte, 100)) {
				t.Fatal("the third receive buffer was written: a message delivered twice")
			}
			if qa.obj().SQHead != 3 || qb.obj().RQHead != 2 {
				t.Fatalf("SQ consumer %d, RQ consumer %d", qa.obj().SQHead, qb.obj().RQHead)
			}
			qa.post(send(mlx4.OPCODE_SEND, sge(lp.ka, vaA, 50)), nil)
			qa.run(16)
			wantCQE(t, lp.d.take(), rCQE(b.cq, qb.qpn, 2, mlx4.RECV_OPCODE_SEND, 50, 0), sCQE(a.cq, qa.qpn, 3, mlx4.OPCODE_SEND, 50))
		})
	}
}

// TestDataPathTwoAtomicsInARun: two fetch-adds posted together run as
// steps of their own (the log keeps one atomic intent): a PF killed after
// the second one's intent, restarted from a checkpoint taken before the
// traffic, has added twice and returned the originals 5 and 6, not read
// the counter again for the first.
func TestDataPathTwoAtomicsInARun(t *testing.T) {
	for _, pt := range []string{crashpoint.DPIntent, crashpoint.DPEffects, crashpoint.DPCQE} {
		for nth := 1; nth <= 2; nth++ {
			t.Run(fmt.Sprintf("%s:%d", pt, nth), func(t *testing.T) {
				lp := newLogPair(t)
				a, b, qa := lp.a, lp.b, lp.qa
				lp.counter(5)
				img := lp.d.h.Image()
				qa.post(fetchAdd(lp.ka, lp.kb, vaA+512, vaB+64, 1), nil)
				qa.post(fetchAdd(lp.ka, lp.kb, vaA+520, vaB+64, 1), nil)
				if !lp.runKilled(pt, nth) {
					t.Fatalf("no kill at %s:%d", pt, nth)
				}
				seen := lp.d.take()
				lp.restart(t, img)
				qa.run(16)
				got := append(seen, lp.d.take()...)
				if v := binary.BigEndian.Uint64(b.read(lp.mb+64, 8)); v != 7 {
					t.Fatalf("counter %d after two fetch-adds of 1 to 5", v)
				}
				o1, o2 := binary.BigEndian.Uint64(a.read(lp.ma+512, 8)), binary.BigEndian.Uint64(a.read(lp.ma+520, 8))
				if o1 != 5 || o2 != 6 {
					t.Fatalf("fetch-adds returned %d and %d, want 5 and 6", o1, o2)
				}
				wantCQE(t, got, sCQE(a.cq, qa.qpn, 0, mlx4.OPCODE_ATOMIC_FA, 8), sCQE(a.cq, qa.qpn, 1, mlx4.OPCODE_ATOMIC_FA, 8))
			})
		}
	}
}

// TestDataPathEventAfterEarlierCQEs: in one run of WQEs, an RDMA_WRITE
// that completes and one the responder refuses (a forged rkey: the
// responder's WQ_ACCESS_ERROR, the requester's REMOTE_ACCESS_ERR). The
// first one's CQE is written before the responder's event is posted, as
// on hardware, where it completed before the second was read: a PF killed
// after writing that CQE has posted no event yet. Restarted, it posts the
// event once and completes the second WQE with its error.
func TestDataPathEventAfterEarlierCQEs(t *testing.T) {
	lp := newLogPair(t)
	a, b, qa := lp.a, lp.b, lp.qa
	a.fill(lp.ma, pattern(64, 1))
	img := lp.d.h.Image()
	qa.post(rdmaWrite(lp.ka, lp.kb, vaA, vaB+2000, 64), nil)
	qa.post(rdmaWrite(lp.ka, lp.kb^0x100, vaA, vaB+2100, 64), nil)
	if !lp.runKilled(crashpoint.DPCQE, 1) {
		t.Fatal("no kill at the first CQE")
	}
	if ev := b.events(); slices.Contains(ev, mlx4.EventWQAccessError) {
		t.Fatalf("the responder's event %#x was posted before the first WQE's CQE", ev)
	}
	seen := lp.d.take()
	wantCQE(t, seen, sCQE(a.cq, qa.qpn, 0, mlx4.OPCODE_RDMA_WRITE, 64))
	lp.restart(t, img)
	qa.run(16)
	got := lp.d.take()
	if len(got) != 1 || got[0].e.Syndrome() != mlx4.CQE_SYNDROME_REMOTE_ACCESS_ERR || got[0].e.WQEIndex != 1 {
		t.Fatalf("after the restart: %+v", got)
	}
	n := 0
	for _, e := range b.events() {
		if e == mlx4.EventWQAccessError {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d WQ_ACCESS_ERROR events, want 1", n)
	}
}

// TestDataPathRecordIsThePositions: a step stores no entry; its applied
// record is the newest copy of its objects' positions until a record
// without them (the next step stores those first) or another store (a
// command: the record settled, marked flushed). A SEND on one pair, then
// an RDMA_WRITE on a second pair of the same VFs and CQs (so the second
// record names the requester's CQ and QP, not the first pair's QPs or the
// responder's CQ), with or without commands between them, killed at each
// point of the second step and restarted from a checkpoint taken before
// both: each WQE once, each CQE once and in its slot, every position
// where the VF left it.
func TestDataPathRecordIsThePositions(t *testing.T) {
	type kase struct {
		point  string
		nth    int
		settle bool
	}
	var cases []kase
	for _, settle := range []bool{false, true} {
		for _, p := range []string{crashpoint.DPEffects, crashpoint.DPCQE, crashpoint.DPCommitTorn, "none"} {
			cases = append(cases, kase{p, 1, settle})
		}
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s:%d/settle=%v", c.point, c.nth, c.settle), func(t *testing.T) {
			lp := newLogPair(t)
			a, b, qa, qb := lp.a, lp.b, lp.qa, lp.qb
			o := qpOpts{st: mlx4.QP_ST_RC, access: remoteAll}
			qc, qd := a.qp(o), b.qp(o)
			pair(qc, qd)
			msg := pattern(300, 9)
			a.fill(lp.ma, msg)
			qb.recv(sge(lp.kb, vaB, 100))
			qb.recv(sge(lp.kb, vaB+400, 100))
			img := lp.d.h.Image()
			qa.post(send(mlx4.OPCODE_SEND, sge(lp.ka, vaA, 100)), nil)
			if n := qa.run(16); n != 1 {
				t.Fatalf("first step: %d WQEs", n)
			}
			seen := lp.d.take()
			if c.settle {
				pair(a.qp(o), b.qp(o)) // INIT2RTR stores the new QPs' entries: the first record settled before it
				seq := lp.d.h.dl.seq
				if w := binary.LittleEndian.Uint32(lp.d.h.dl.recSlot(seq)[pfstate.StepCommit:]); w != pfstate.MagicFlushed^uint32(seq) {
					t.Fatalf("record %d's commit word %#x after a command: not flushed", seq, w)
				}
			}
			qc.post(rdmaWrite(lp.ka, lp.kb, vaA+100, vaB+2000, 100), nil)
			if c.point == "none" {
				if n := qc.run(16); n != 1 {
					t.Fatalf("second step: %d WQEs", n)
				}
			} else if !lp.runKilledOn(qc, c.point, c.nth) {
				t.Fatalf("no kill at %s:%d", c.point, c.nth)
			}
			seen = append(seen, lp.d.take()...)
			lp.restart(t, img)
			qa.run(16)
			qc.run(16)
			got := append(seen, lp.d.take()...)
			wantCQE(t, got, rCQE(b.cq, qb.qpn, 0, mlx4.RECV_OPCODE_SEND, 100, 0), sCQE(a.cq, qa.qpn, 0, mlx4.OPCODE_SEND, 100),
				sCQE(a.cq, qc.qpn, 0, mlx4.OPCODE_RDMA_WRITE, 100))
			if qa.obj().SQHead != 1 || qb.obj().RQHead != 1 || qc.obj().SQHead != 1 {
				t.Fatalf("SQ %d, RQ %d, second pair's SQ %d", qa.obj().SQHead, qb.obj().RQHead, qc.obj().SQHead)
			}
			if g := b.read(lp.mb+2000, 100); !bytes.Equal(g, msg[100:200]) {
				t.Fatalf("RDMA_WRITE: %x", g)
			}
			// both pairs go on from there: the next receive, the next CQ slots
			qa.post(send(mlx4.OPCODE_SEND, sge(lp.ka, vaA+200, 50)), nil)
			qc.post(rdmaWrite(lp.ka, lp.kb, vaA, vaB+2400, 50), nil)
			qa.run(16)
			qc.run(16)
			wantCQE(t, lp.d.take(), rCQE(b.cq, qb.qpn, 1, mlx4.RECV_OPCODE_SEND, 50, 0), sCQE(a.cq, qa.qpn, 1, mlx4.OPCODE_SEND, 50),
				sCQE(a.cq, qc.qpn, 1, mlx4.OPCODE_RDMA_WRITE, 50))
			if g := b.read(lp.mb+400, 50); !bytes.Equal(g, msg[200:250]) {
				t.Fatalf("the second SEND: %x", g)
			}
		})
	}
}

// TestDataPathStepStoresNoEntry: a step on the objects of the step before
// it (a ping-pong's, a stream's) writes no position entry, its record
// stands for them; a step on other objects stores the entries of the
// previous record's objects it does not name, with the state that record
// gives them.
func TestDataPathStepStoresNoEntry(t *testing.T) {
	lp := newLogPair(t)
	a, b, qa, qb := lp.a, lp.b, lp.qa, lp.qb
	o := qpOpts{st: mlx4.QP_ST_RC, access: remoteAll}
	qc, qd := a.qp(o), b.qp(o)
	pair(qc, qd)
	for range 2 {
		qb.recv(sge(lp.kb, vaB, 100))
	}
	a.fill(lp.ma, pattern(100, 4))
	qa.post(send(mlx4.OPCODE_SEND, sge(lp.ka, vaA, 100)), nil)
	qa.run(16)
	table := slices.Clone(lp.region[pfstate.DPTableOff:])
	qa.post(send(mlx4.OPCODE_SEND, sge(lp.ka, vaA, 100)), nil)
	if n := qa.run(16); n != 1 {
		t.Fatalf("second SEND: %d WQEs", n)
	}
	if !bytes.Equal(table, lp.region[pfstate.DPTableOff:]) {
		t.Fatal("a step on the objects of the one before it wrote a position entry")
	}
	// an RDMA_WRITE on the second pair names qc and A's CQ: qa, qb and B's
	// CQ are stored as the second SEND's record left them
	qc.post(rdmaWrite(lp.ka, lp.kb, vaA, vaB+2000, 100), nil)
	qc.run(16)
	if bytes.Equal(table, lp.region[pfstate.DPTableOff:]) {
		t.Fatal("the first pair's entries not stored before a record without them")
	}
	l := lp.d.h.dl
	for _, q := range []*tqp{qa, qb} {
		obj := q.obj()
		seq, _, ok := l.readEntry(obj.dps - 1)
		if !ok || l.vals[0] != uint32(obj.State) || l.vals[1] != obj.SQHead || l.vals[2] != obj.RQHead {
			t.Fatalf("QP %#x entry (seq %d, ok %v) %v, the QP %v SQ %d RQ %d", q.qpn, seq, ok, l.vals[:3], obj.State, obj.SQHead, obj.RQHead)
		}
	}
	if qa.obj().SQHead != 2 || qb.obj().RQHead != 2 {
		t.Fatalf("SQ %d, RQ %d after two SENDs", qa.obj().SQHead, qb.obj().RQHead)
	}
}

// TestSetCQECopiesEveryField: setCQE (the held CQE's field-by-field copy)
// copies each field of mlx4.CQE, those added later too: every field of the
// source set to a distinct non-zero value, the copy equals it.
func TestSetCQECopiesEveryField(t *testing.T) {
	var src, dst mlx4.CQE
	v := reflect.ValueOf(&src).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Uint8, reflect.Uint16, reflect.Uint32:
			f.SetUint(uint64(i + 1))
		case reflect.Array:
			for j := range f.Len() {
				f.Index(j).SetUint(uint64(0x40 + i + j))
			}
		default:
			t.Fatalf("mlx4.CQE.%s: kind %v, which this test does not fill", v.Type().Field(i).Name, f.Kind())
		}
	}
	setCQE(&dst, &src)
	if dst != src {
		t.Errorf("setCQE gave %+v, want %+v", dst, src)
	}
}
