package hca

import (
	"bytes"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/internal/crashpoint"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// The data path's injected faults (dpfault.go), carried out by the engine
// as the PF's hook asks: error CQEs, CQEs dropped or duplicated, a CQ
// overrun.

// faultAt installs a hook that answers f at the first completion match
// accepts, and records every completion it is asked about.
func faultAt(h *HCA, match func(Completion) bool, f CQEFault) *[]Completion {
	var asked []Completion
	fired := false
	h.SetCQEFaults(func(c Completion) CQEFault {
		asked = append(asked, c)
		if !fired && match(c) {
			fired = true
			return f
		}
		return CQEFault{}
	})
	return &asked
}

func sendOf(vf int, op uint8) func(Completion) bool {
	return func(c Completion) bool { return c.VF == vf && !c.Recv && c.Op == op && c.OK }
}

func recvOf(vf int) func(Completion) bool {
	return func(c Completion) bool { return c.VF == vf && c.Recv && c.OK }
}

// errCQE finds the error CQE of qpn in got.
func errCQE(t *testing.T, got []gotCQE, qpn uint32, send bool, syndrome uint8) mlx4.CQE {
	t.Helper()
	for _, g := range got {
		if g.e.IsError() && g.e.QPN() == qpn && g.e.IsSend == send && g.e.Syndrome() == syndrome {
			return g.e
		}
	}
	t.Fatalf("no error CQE %#x of QP %#x in %+v", syndrome, qpn, got)
	return mlx4.CQE{}
}

// TestCQEFaultErrorSend: cqe_error at an RC SEND's completion: the
// requester's CQE is an error CQE with the syndrome and vendor syndrome
// (the QPN and wqe_index kept, no byte count), the QP goes to ERR, the
// next SEND and the QP's own receive are flushed, and WQEs posted after
// that are flushed too; the message itself was delivered (the responder's
// CQE and data as without the fault) and the responder stays in RTS.
func TestCQEFaultErrorSend(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{})
	a, b, qa, qb := p.a, p.b, p.qa, p.qb
	msg := pattern(100, 9)
	a.fill(p.ma, msg)
	qb.recv(sge(p.kb, vaB, 256))
	qb.recv(sge(p.kb, vaB+512, 256))
	qa.recv(sge(p.ka, vaA+2048, 64))
	qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 100)), nil)
	qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 100)), nil)
	asked := faultAt(p.d.h, sendOf(0, mlx4.OPCODE_SEND), CQEFault{Action: CQEError, Syndrome: mlx4.CQE_SYNDROME_REMOTE_ACCESS_ERR, Vendor: 0x51})
	qa.run(16)
	got := p.d.take()
	wantCQE(t, got, rCQE(b.cq, qb.qpn, 0, mlx4.RECV_OPCODE_SEND, 100, 0),
		eCQE(a.cq, qa.qpn, 0, true, mlx4.CQE_SYNDROME_REMOTE_ACCESS_ERR),
		eCQE(a.cq, qa.qpn, 1, true, mlx4.CQE_SYNDROME_WR_FLUSH_ERR),
		eCQE(a.cq, qa.qpn, 0, false, mlx4.CQE_SYNDROME_WR_FLUSH_ERR))
	if e := errCQE(t, got, qa.qpn, true, mlx4.CQE_SYNDROME_REMOTE_ACCESS_ERR); e.VendorErr() != 0x51 || e.ByteCnt != 0 {
		t.Fatalf("error CQE %+v: vendor %#x", e, e.VendorErr())
	}
	if qa.obj().State != mlx4.QP_STATE_ERR || qb.obj().State != mlx4.QP_STATE_RTS {
		t.Fatalf("states %v, %v; want ERR, RTS", qa.obj().State, qb.obj().State)
	}
	if g := b.read(p.mb, 100); !bytes.Equal(g, msg) {
		t.Fatalf("the SEND's data: %x", g[:8])
	}
	if g := b.read(p.mb+512, 100); !bytes.Equal(g, make([]byte, 100)) || qb.obj().RQHead != 1 {
		t.Fatal("the flushed SEND was delivered")
	}
	// Asked once per CQE: the success (faulted), then the flushes and the
	// responder's, never again for the error it made.
	var ok int
	for _, c := range *asked {
		if c.OK {
			ok++
		}
	}
	if len(*asked) != 4 || ok != 2 {
		t.Fatalf("hook asked %+v", *asked)
	}
	qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 8)), nil)
	qa.run(16)
	wantCQE(t, p.d.take(), eCQE(a.cq, qa.qpn, 2, true, mlx4.CQE_SYNDROME_WR_FLUSH_ERR))
}

// TestCQEFaultErrorRecv: cqe_error at a receive completion: the
// responder's receive CQE is the error, its QP goes to ERR and its next
// receive is flushed; the requester completes and stays in RTS.
func TestCQEFaultErrorRecv(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{})
	a, b, qa, qb := p.a, p.b, p.qa, p.qb
	qb.recv(sge(p.kb, vaB, 256))
	qb.recv(sge(p.kb, vaB+512, 256))
	qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 64)), nil)
	faultAt(p.d.h, recvOf(1), CQEFault{Action: CQEError, Syndrome: mlx4.CQE_SYNDROME_LOCAL_PROT_ERR})
	qa.run(16)
	wantCQE(t, p.d.take(), eCQE(b.cq, qb.qpn, 0, false, mlx4.CQE_SYNDROME_LOCAL_PROT_ERR),
		eCQE(b.cq, qb.qpn, 1, false, mlx4.CQE_SYNDROME_WR_FLUSH_ERR),
		sCQE(a.cq, qa.qpn, 0, mlx4.OPCODE_SEND, 64))
	if qb.obj().State != mlx4.QP_STATE_ERR || qa.obj().State != mlx4.QP_STATE_RTS {
		t.Fatalf("states %v (responder), %v; want ERR, RTS", qb.obj().State, qa.obj().State)
	}
}

// TestCQEFaultErrorUD: a UD send's injected error takes the QP to SQER
// (IBA 10.8.3): its send queue flushes, its posted receive does not.
func TestCQEFaultErrorUD(t *testing.T) {
	d, a, b, qa, qb, ka, kb, _, _ := udPair(t)
	qb.recv(sge(kb, vaB, 256))
	qa.recv(sge(ka, vaA+2048, 256))
	qa.post(udSend(qb.qpn, 0x2222, false, sge(ka, vaA, 32)), nil)
	qa.post(udSend(qb.qpn, 0x2222, false, sge(ka, vaA, 32)), nil)
	faultAt(d.h, sendOf(0, mlx4.OPCODE_SEND), CQEFault{Action: CQEError, Syndrome: mlx4.CQE_SYNDROME_LOCAL_LENGTH_ERR})
	qa.run(16)
	wantCQE(t, d.take(), rCQE(b.cq, qb.qpn, 0, mlx4.RECV_OPCODE_SEND, 32+40, 0),
		eCQE(a.cq, qa.qpn, 0, true, mlx4.CQE_SYNDROME_LOCAL_LENGTH_ERR),
		eCQE(a.cq, qa.qpn, 1, true, mlx4.CQE_SYNDROME_WR_FLUSH_ERR))
	if qa.obj().State != mlx4.QP_STATE_SQER {
		t.Fatalf("UD QP in %v after a send error, want SQER", qa.obj().State)
	}
}

// TestCQEFaultEverySyndrome: each of the 13 syndromes the drivers name,
// and one they do not, lands in the CQE with its vendor syndrome.
func TestCQEFaultEverySyndrome(t *testing.T) {
	syns := []uint8{0x77}
	for _, in := range mlx4.CQESyndromes {
		syns = append(syns, in.Syndrome)
	}
	for i, syn := range syns {
		p := newRCPair(t, permAll, qpOpts{})
		p.qa.post(rdmaWrite(p.ka, p.kb, vaA, vaB, 16), nil)
		faultAt(p.d.h, sendOf(0, mlx4.OPCODE_RDMA_WRITE), CQEFault{Action: CQEError, Syndrome: syn, Vendor: uint8(i)})
		p.qa.run(16)
		got := p.d.take()
		if len(got) != 1 || got[0].e.Syndrome() != syn || got[0].e.VendorErr() != uint8(i) || !got[0].e.IsSend || got[0].e.WQEIndex != 0 {
			t.Fatalf("syndrome %#x: %+v", syn, got)
		}
	}
}

// TestCQEFaultDrop: cqe_drop: the CQE is not written (the producer index
// stays), the WQE is consumed and the QP stays in RTS; the next CQE takes
// the slot.
func TestCQEFaultDrop(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{})
	a, b, qa, qb := p.a, p.b, p.qa, p.qb
	qb.recv(sge(p.kb, vaB, 256))
	qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 64)), nil)
	faultAt(p.d.h, sendOf(0, mlx4.OPCODE_SEND), CQEFault{Action: CQEDrop})
	qa.run(16)
	wantCQE(t, p.d.take(), rCQE(b.cq, qb.qpn, 0, mlx4.RECV_OPCODE_SEND, 64, 0))
	if prod, _ := p.d.h.CQProd(a.cq); prod != 0 || qa.obj().SQHead != 1 || qa.obj().State != mlx4.QP_STATE_RTS {
		t.Fatalf("A's CQ producer %d, SQ consumer %d, state %v", prod, qa.obj().SQHead, qa.obj().State)
	}
	qa.post(rdmaWrite(p.ka, p.kb, vaA, vaB+1024, 8), nil)
	qa.run(16)
	wantCQE(t, p.d.take(), sCQE(a.cq, qa.qpn, 1, mlx4.OPCODE_RDMA_WRITE, 8))
}

// TestCQEFaultDup: cqe_dup at the CQE of producer index 127 of a
// 128-entry CQ: the copy lands at index 128, the ring's next pass, with
// that pass's owner bit (the poll takes both, as libmlx4 would).
func TestCQEFaultDup(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{})
	a, qa := p.a, p.qa
	for n := 0; n < cqEntries-1; {
		for k := 0; k < 8 && n < cqEntries-1; k++ {
			qa.post(send(mlx4.OPCODE_NOP), nil)
			n++
		}
		qa.run(16)
		p.d.take()
	}
	qa.post(rdmaWrite(p.ka, p.kb, vaA, vaB, 8), nil)
	faultAt(p.d.h, sendOf(0, mlx4.OPCODE_RDMA_WRITE), CQEFault{Action: CQEDup})
	qa.run(16)
	w := sCQE(a.cq, qa.qpn, cqEntries-1, mlx4.OPCODE_RDMA_WRITE, 8)
	wantCQE(t, p.d.take(), w, w)
	if prod, _ := p.d.h.CQProd(a.cq); prod != cqEntries+1 {
		t.Fatalf("producer %d, want %d", prod, cqEntries+1)
	}
}

// TestCQEFaultOverrun: cq_overrun at A's SEND completion: no CQE, the CQ
// error event (CQ_ERROR, syndrome overrun, A's CQN) on A's EQ, once; the
// CQ writes nothing more (the next completion is dropped), counted as an
// overrun; B (another VF) completes as usual.
func TestCQEFaultOverrun(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{})
	a, b, qa, qb := p.a, p.b, p.qa, p.qb
	qb.recv(sge(p.kb, vaB, 256))
	qb.recv(sge(p.kb, vaB+512, 256))
	qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 64)), nil)
	faultAt(p.d.h, sendOf(0, mlx4.OPCODE_SEND), CQEFault{Action: CQEOverrun})
	qa.run(16)
	wantCQE(t, p.d.take(), rCQE(b.cq, qb.qpn, 0, mlx4.RECV_OPCODE_SEND, 64, 0))
	cqErrors(t, a, a.cq, 1)
	cqErrors(t, b, b.cq, 0)
	qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 64)), nil)
	qa.run(16)
	wantCQE(t, p.d.take(), rCQE(b.cq, qb.qpn, 1, mlx4.RECV_OPCODE_SEND, 64, 0))
	cqErrors(t, a, a.cq, 1)
	if st := p.d.h.DPStats(0); st.CQOverruns.Load() != 1 || st.CQEDropped.Load() != 2 {
		t.Fatalf("overruns %d, dropped %d; want 1, 2", st.CQOverruns.Load(), st.CQEDropped.Load())
	}
	if p.d.h.DPStats(1).CQEDropped.Load() != 0 {
		t.Fatal("B's CQ dropped a CQE")
	}
}

// cqErrors checks that v's EQ holds n CQ_ERROR events, each an overrun
// of CQ cqn.
func cqErrors(t *testing.T, v *tvf, cqn uint32, n int) {
	t.Helper()
	eq := v.d.h.fw.eqs[restrack.EQID(v.n, 1)]
	got := 0
	for i := range eq.Prod {
		b := v.readEQE(v.eqPage, int(i))
		e, _ := mlx4.DecodeEQE(b[:])
		if e.Type != mlx4.EventCQError {
			continue
		}
		if e.Object != cqn || e.Status != mlx4.CQErrOverrun {
			t.Fatalf("CQ error %+v, want an overrun of CQ %#x", e, cqn)
		}
		got++
	}
	if got != n {
		t.Fatalf("VF %d: %d CQ error events, want %d", v.n, got, n)
	}
}

// TestCQEFaultOverrunRedone: with the state file's log, an injected
// overrun is an entry of the step record in its place after the
// responder's CQE; a PF killed between the two redoes the step from the
// record without the hook (a restarted PF has no rule armed) and
// carries the overrun out: the CQ error event, no CQE on A's CQ, B's CQE
// once.
func TestCQEFaultOverrunRedone(t *testing.T) {
	lp := newLogPair(t)
	a, b, qa, qb := lp.a, lp.b, lp.qa, lp.qb
	qb.recv(sge(lp.kb, vaB, 256))
	img := lp.d.h.Image()
	qa.post(send(mlx4.OPCODE_SEND, sge(lp.ka, vaA, 64)), nil)
	faultAt(lp.d.h, sendOf(0, mlx4.OPCODE_SEND), CQEFault{Action: CQEOverrun})
	if !lp.runKilled(crashpoint.DPCQE, 1) {
		t.Fatal("no kill after the first CQE")
	}
	seen := lp.d.take()
	cqErrors(t, a, a.cq, 0) // not yet: the overrun comes after the CQE the kill followed
	lp.restart(t, img)
	qa.run(16)
	wantCQE(t, append(seen, lp.d.take()...), rCQE(b.cq, qb.qpn, 0, mlx4.RECV_OPCODE_SEND, 64, 0))
	cqErrors(t, a, a.cq, 1)
	if cq := lp.d.h.fw.cqs[a.cq]; cq == nil || cq.Err != mlx4.CQErrOverrun {
		t.Fatalf("A's CQ after the redo: %+v", cq)
	}
}

// TestCQEFaultHookAllocatesNothing: with a hook installed (a rule armed
// that does not fire) a SEND and its CQEs allocate nothing; the hook is
// asked once per CQE.
func TestCQEFaultHookAllocatesNothing(t *testing.T) {
	l := sendLoop(t)
	n := 0
	l.p.d.h.SetCQEFaults(func(Completion) CQEFault { n++; return CQEFault{} })
	l.step(t)
	if n != 2 {
		t.Fatalf("hook asked %d times for a SEND's two CQEs", n)
	}
	if a := testing.AllocsPerRun(200, func() { l.step(t) }); a != 0 {
		t.Fatalf("%v allocations per WQE with the hook", a)
	}
}
