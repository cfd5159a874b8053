package master_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/faultinj"
	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/master/trace"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
)

// The data path's fault kinds against a PF serving RC traffic between VFs
// whose drivers are vfdrv's verbs (libmlx4's rings, polled as
// mlx4_poll_one polls them): two connections, VF 0 ↔ VF 1 and VF 2 ↔ VF
// 3; the rules are VF 0's or VF 1's, the other pair's traffic the control.

// fEnd is one VF's end: its driver, an EQ (completions and the CQ error
// event), a CQ for both queues, a region and an RC QP; the async events
// its EQ delivered.
type fEnd struct {
	d      *vfdrv.Driver
	eq     *vfdrv.EQ
	cq     *vfdrv.VCQ
	mr     *vfdrv.MR
	qp     *vfdrv.VQP
	events []vfdrv.EQE
}

func newFaultEnd(t *testing.T, r *mastertest.Rig, vf int) *fEnd {
	t.Helper()
	ctx := context.Background()
	e := &fEnd{}
	d, err := vfdrv.New(r.InitVF(t, vf), vfdrv.Options{BAR: r.VFBARs[vf], OnEvent: func(q vfdrv.EQE) { e.events = append(e.events, q) }})
	if err != nil {
		t.Fatal(err)
	}
	e.d = d
	if e.eq, err = d.CreateEQ(ctx, 4, 7); err != nil {
		t.Fatal(err)
	}
	if err := d.MapEQ(ctx, e.eq, 1<<mlx4.EventCQError); err != nil {
		t.Fatal(err)
	}
	if e.cq, err = d.CreateVerbsCQ(ctx, 64, e.eq.EQN); err != nil {
		t.Fatal(err)
	}
	if e.mr, err = d.CreateMR(ctx, 2, uint32(mlx4.PERM_LOCAL_READ|mlx4.PERM_LOCAL_WRITE|mlx4.PERM_REMOTE_WRITE), 1); err != nil {
		t.Fatal(err)
	}
	cfg := vfdrv.QPConfig{ST: mlx4.QP_ST_RC, SendCQ: e.cq.CQN, RecvCQ: e.cq.CQN, PD: 1, DestLID: 5, Access: mlx4.QP_BIT_RWE}
	if e.qp, err = d.CreateVerbsQP(ctx, cfg, vfdrv.QPCaps{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}, false); err != nil {
		t.Fatal(err)
	}
	return e
}

type dpFaultRig struct {
	stepRig
	e     [4]*fEnd
	clock uint64 // the engine's clock once the poller stopped (hca.HCA.SetClock)
}

// newDPFaultRig builds the two connections with the poller running, then
// stops it: the test drives the scans.
func newDPFaultRig(t *testing.T, ring *trace.Ring) *dpFaultRig {
	x := &dpFaultRig{stepRig: newStepRigWith(t, 4, mastertest.Options{Window: 1 << 20, Trace: ring})}
	x.Start(t)
	for vf := range x.e {
		x.e[vf] = newFaultEnd(t, x.Rig, vf)
	}
	for _, p := range [][2]*fEnd{{x.e[0], x.e[1]}, {x.e[2], x.e[3]}} {
		a, b := p[0], p[1]
		a.qp.Cfg.RemoteQPN, b.qp.Cfg.RemoteQPN = b.qp.QPN, a.qp.QPN
		for _, e := range p {
			if err := e.d.ModifyPath(context.Background(), e.qp.QP, mlx4.QP_STATE_INIT, mlx4.QP_STATE_RTR, mlx4.QP_STATE_RTS); err != nil {
				t.Fatal(err)
			}
		}
	}
	x.Stop(t)
	x.HCA.SetClock(func() uint64 { return x.clock })
	return x
}

// settle moves the engine's clock to each RC retry deadline in turn
// (hca.HCA.NextRetry) and scans, until no retry with a deadline is
// pending (at most 64: rnr_retry 7 retries for ever).
func (x *dpFaultRig) settle() {
	for range 64 {
		ns, ok := x.HCA.NextRetry()
		if !ok {
			return
		}
		x.clock += uint64(ns)
		x.scan()
	}
}

// exchange is ibv_rc_pingpong's first round on each pair, and more: the
// responder (odd VF) posts receives 1000 and 1001, the requester (even
// VF) a receive 500 and SENDs 1 and 2 of 64 bytes, all signalled; the
// scans run the engine; then every end's CQ is polled (and its EQ
// pumped for async events).
func (x *dpFaultRig) exchange(t *testing.T) [4][]vfdrv.WC {
	t.Helper()
	for i := 0; i < 4; i += 2 {
		a, b := x.e[i], x.e[i+1]
		recv := func(e *fEnd, id uint64, off uint64) vfdrv.RecvWR {
			return vfdrv.RecvWR{WRID: id, SGE: []vfdrv.SGE{{Addr: e.mr.IOVA + off, Length: 256, LKey: e.mr.Key}}}
		}
		if _, err := b.qp.PostRecv([]vfdrv.RecvWR{recv(b, 1000, 0), recv(b, 1001, 256)}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.qp.PostRecv([]vfdrv.RecvWR{recv(a, 500, 4096)}); err != nil {
			t.Fatal(err)
		}
		src := []vfdrv.SGE{{Addr: a.mr.IOVA, Length: 64, LKey: a.mr.Key}}
		if _, err := a.qp.PostSend([]vfdrv.SendWR{{WRID: 1, Opcode: mlx4.OPCODE_SEND, SGE: src, Signaled: true},
			{WRID: 2, Opcode: mlx4.OPCODE_SEND, SGE: src, Signaled: true}}); err != nil {
			t.Fatal(err)
		}
	}
	for range 8 {
		x.scan()
	}
	x.settle()
	var out [4][]vfdrv.WC
	for i, e := range x.e {
		var wc [16]vfdrv.WC
		for n := e.cq.Poll(wc[:]); n > 0; n = e.cq.Poll(wc[:]) {
			out[i] = append(out[i], wc[:n]...)
		}
		e.d.PollEQ(e.eq)
	}
	return out
}

// states returns each QP's state as QUERY_QP reports it: the driver's
// command, served by the test's scans.
func (x *dpFaultRig) states(t *testing.T) [4]mlx4.QPState {
	t.Helper()
	type res struct {
		c   mlx4.QPContext
		err error
	}
	var out [4]mlx4.QPState
	for i, e := range x.e {
		ch := make(chan res, 1)
		go func() {
			c, err := e.d.QueryQP(context.Background(), e.qp.QP)
			ch <- res{c, err}
		}()
		for done := false; !done; {
			select {
			case r := <-ch:
				if r.err != nil {
					t.Fatal(r.err)
				}
				out[i], done = r.c.State, true
			default:
				x.scan()
			}
		}
	}
	return out
}

type wcWant struct {
	id     uint64
	status vfdrv.WCStatus
	send   bool
}

func wantWCs(t *testing.T, vf int, got []vfdrv.WC, want ...wcWant) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = got[i].WRID == want[i].id && got[i].Status == want[i].status && got[i].IsSend == want[i].send
	}
	if !ok {
		var b strings.Builder
		for _, w := range got {
			fmt.Fprintf(&b, " {%d %v send=%v syndrome=%#x}", w.WRID, w.Status, w.IsSend, w.Syndrome)
		}
		t.Fatalf("VF %d's completions:%s; want %+v", vf, b.String(), want)
	}
}

var (
	sendOK = func(id uint64) wcWant { return wcWant{id, vfdrv.WCSuccess, true} }
	recvOK = func(id uint64) wcWant { return wcWant{id, vfdrv.WCSuccess, false} }
)

// control: the other pair's traffic is as without any fault.
func (x *dpFaultRig) control(t *testing.T, wcs [4][]vfdrv.WC) {
	t.Helper()
	wantWCs(t, 2, wcs[2], sendOK(1), sendOK(2))
	wantWCs(t, 3, wcs[3], recvOK(1000), recvOK(1001))
	if len(x.e[2].events) != 0 || len(x.e[3].events) != 0 {
		t.Fatalf("async events on the other pair: %+v %+v", x.e[2].events, x.e[3].events)
	}
}

// TestFaultCQEError: cqe_error at VF 0's first SEND completion: the
// driver polls IBV_WC_REM_ACCESS_ERR with the syndrome and vendor
// syndrome for wr_id 1, then the flushes of SEND 2 and of its receive;
// its QP is in ERR (QUERY_QP); the message was delivered (VF 1's receive
// completes) and VF 1's QP stays in RTS; the other pair is untouched. The
// fault is counted, traced ("at=cqe SEND") and listed with its hit.
func TestFaultCQEError(t *testing.T) {
	ring, err := master.NewTrace(256)
	if err != nil {
		t.Fatal(err)
	}
	x := newDPFaultRig(t, ring)
	rd := ring.NewReader()
	rule := addFault(t, x.PF, faultinj.Spec{Kind: "cqe_error", VF: vfp(0), Op: "SEND",
		Args: map[string]string{"syndrome": "REM_ACCESS_ERR", "vendor": "0x51"}})
	wcs := x.exchange(t)
	wantWCs(t, 0, wcs[0], wcWant{1, vfdrv.WCRemAccessErr, true}, wcWant{2, vfdrv.WCWRFlushErr, true}, wcWant{500, vfdrv.WCWRFlushErr, false})
	if w := wcs[0][0]; w.Syndrome != mlx4.CQE_SYNDROME_REMOTE_ACCESS_ERR || w.VendorErr != 0x51 {
		t.Fatalf("error WC %+v", w)
	}
	wantWCs(t, 1, wcs[1], recvOK(1000))
	x.control(t, wcs)
	if st := x.states(t); st != [4]mlx4.QPState{mlx4.QP_STATE_ERR, mlx4.QP_STATE_RTS, mlx4.QP_STATE_RTS, mlx4.QP_STATE_RTS} {
		t.Fatalf("QP states %v", st)
	}
	if hits(t, x.PF, rule.ID) != 1 {
		t.Fatalf("hits %d", hits(t, x.PF, rule.ID))
	}
	var inj [faultinj.NumKinds]uint64
	if err := x.PF.FaultsInjected(&inj); err != nil || inj[faultinj.CQEError] != 1 {
		t.Fatalf("injected %v, %v", inj, err)
	}
	recs := make([]trace.Record, 256)
	n, _ := rd.Read(recs)
	var found []string
	clk := ring.Clock()
	for _, rec := range recs[:n] {
		if rec.Kind == trace.KindFault {
			e := clk.EntryOf(&rec)
			found = append(found, string(trace.AppendText(nil, &e)))
			if e.Point != "cqe" || e.Opcode != "SEND" || e.VF != 0 || e.Fault != "cqe_error" {
				t.Fatalf("fault record %+v", e)
			}
		}
	}
	if len(found) != 1 || !strings.Contains(found[0], "vf0 FAULT cqe_error rule=1 at=cqe SEND") {
		t.Fatalf("fault records %q", found)
	}
}

// TestFaultCQEErrorRecv: cqe_error at VF 1's receive completion
// (op RECV, LOC_PROT_ERR): VF 1 polls the error for wr_id 1000 and the
// flush of 1001, its QP in ERR; VF 0's SEND 1 completes (it was
// acknowledged), its SEND 2 meets a responder in ERR that takes no packet
// (transport retry exceeded), which takes VF 0's QP to ERR as a real
// broken connection does.
func TestFaultCQEErrorRecv(t *testing.T) {
	x := newDPFaultRig(t, nil)
	addFault(t, x.PF, faultinj.Spec{Kind: "cqe_error", VF: vfp(1), Op: "RECV", Args: map[string]string{"syndrome": "LOC_PROT_ERR"}})
	wcs := x.exchange(t)
	wantWCs(t, 1, wcs[1], wcWant{1000, vfdrv.WCLocProtErr, false}, wcWant{1001, vfdrv.WCWRFlushErr, false})
	wantWCs(t, 0, wcs[0], sendOK(1), wcWant{2, vfdrv.WCRetryExcErr, true}, wcWant{500, vfdrv.WCWRFlushErr, false})
	x.control(t, wcs)
	if st := x.states(t); st != [4]mlx4.QPState{mlx4.QP_STATE_ERR, mlx4.QP_STATE_ERR, mlx4.QP_STATE_RTS, mlx4.QP_STATE_RTS} {
		t.Fatalf("QP states %v", st)
	}
}

// TestFaultCQEDrop: cqe_drop at VF 0's first SEND completion: the driver
// never sees wr_id 1 (SEND 2's CQE retires it, mlx4_poll_one's tail), the
// QP stays in RTS, VF 1 receives both.
func TestFaultCQEDrop(t *testing.T) {
	x := newDPFaultRig(t, nil)
	addFault(t, x.PF, faultinj.Spec{Kind: "cqe_drop", VF: vfp(0), Op: "SEND"})
	wcs := x.exchange(t)
	wantWCs(t, 0, wcs[0], sendOK(2))
	wantWCs(t, 1, wcs[1], recvOK(1000), recvOK(1001))
	x.control(t, wcs)
	if st := x.states(t); st != [4]mlx4.QPState{mlx4.QP_STATE_RTS, mlx4.QP_STATE_RTS, mlx4.QP_STATE_RTS, mlx4.QP_STATE_RTS} {
		t.Fatalf("QP states %v", st)
	}
}

// TestFaultCQEDup: cqe_dup at VF 0's first SEND completion: the driver
// polls wr_id 1 twice (the copy's wqe_index moves the tail back), then 2.
func TestFaultCQEDup(t *testing.T) {
	x := newDPFaultRig(t, nil)
	addFault(t, x.PF, faultinj.Spec{Kind: "cqe_dup", VF: vfp(0), Op: "SEND"})
	wcs := x.exchange(t)
	wantWCs(t, 0, wcs[0], sendOK(1), sendOK(1), sendOK(2))
	wantWCs(t, 1, wcs[1], recvOK(1000), recvOK(1001))
	x.control(t, wcs)
}

// TestFaultCQOverrun: cq_overrun at VF 0's first SEND completion: VF 0's
// EQ gets the CQ error event (CQ_ERROR, syndrome overrun, its CQN) once
// and its CQ no CQE at all (the failed CQ drops SEND 2's too); VF 1
// receives both, and nothing else changes.
func TestFaultCQOverrun(t *testing.T) {
	x := newDPFaultRig(t, nil)
	addFault(t, x.PF, faultinj.Spec{Kind: "cq_overrun", VF: vfp(0)})
	wcs := x.exchange(t)
	wantWCs(t, 0, wcs[0])
	wantWCs(t, 1, wcs[1], recvOK(1000), recvOK(1001))
	x.control(t, wcs)
	ev := x.e[0].events
	if len(ev) != 1 || ev[0].Type != mlx4.EventCQError || ev[0].Object != x.e[0].cq.CQN || ev[0].Status != mlx4.CQErrOverrun {
		t.Fatalf("VF 0's async events %+v, want one CQ overrun of CQ %#x", ev, x.e[0].cq.CQN)
	}
	if len(x.e[1].events) != 0 {
		t.Fatalf("VF 1's async events %+v", x.e[1].events)
	}
}

// TestFaultCQEReplay: a cqe_drop rule with a probability drops the same
// completions of the same traffic for the same seed (the CQEs the driver
// sees are a function of the seed), others for another seed.
func TestFaultCQEReplay(t *testing.T) {
	run := func(seed uint64) []uint64 {
		x := newDPFaultRig(t, nil)
		addFault(t, x.PF, faultinj.Spec{Kind: "cqe_drop", VF: vfp(1), Op: "RECV", Prob: 0.5, Seed: seed})
		var ids []uint64
		for range 4 {
			for _, w := range x.exchange(t)[1] {
				ids = append(ids, w.WRID)
			}
		}
		return ids
	}
	a, b, c := run(11), run(11), run(12)
	if !slices.Equal(a, b) {
		t.Fatalf("seed 11: %v, then %v", a, b)
	}
	if slices.Equal(a, c) || len(a) == 0 || len(a) == 8 {
		t.Fatalf("seed 11 %v, seed 12 %v: want some dropped, differently", a, c)
	}
	t.Logf("seed 11: VF 1 polled %d of 8 receive completions (wr_ids as mlx4_poll_one gives them: %v)", len(a), a)
}
