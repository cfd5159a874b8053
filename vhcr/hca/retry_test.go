package hca

import (
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// The RC retries in time (retry.go): the rig's clock (dpRig.clock) stands
// still unless a test moves it, so a deadline is met exactly when the test
// says so; the retries are counted through the engine's counters (the
// vhcrd_rnr_retries_total and vhcrd_transport_retries_total series).

// retries returns VF vf's RNR and transport retries so far.
func (d *dpRig) retries(vf int) (rnr, transport uint64) {
	st := d.h.EngineStats(vf)
	return st.RNRRetries.Load(), st.TransportRetries.Load()
}

// waitDeadline returns the deadline q's WQE waits for (the test fails if
// it waits for none).
func (q *tqp) waitDeadline() uint64 {
	q.t.d.t.Helper()
	w := q.obj().wq
	if !w.rt.wait || w.rt.forever {
		q.t.d.t.Fatalf("QP %#x waits for no deadline: %+v", q.qpn, w.rt)
	}
	return w.rt.deadline
}

// okCQE is a good completion as wantOK compares it.
type okCQE struct {
	cqn, qpn uint32
	idx      uint16
	send     bool
}

// wantOK checks that got is the good completions want, in order.
func wantOK(t *testing.T, got []gotCQE, want ...okCQE) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("CQEs %+v, want %+v", got, want)
	}
	for i, g := range got {
		w := want[i]
		if g.e.Syndrome() != 0 || g.cqn != w.cqn || g.e.VlanMyQPN&0xffffff != w.qpn || g.e.WQEIndex != w.idx || g.e.IsSend != w.send {
			t.Fatalf("CQE %d: %+v on CQ %d, want %+v", i, g.e, g.cqn, w)
		}
	}
}

// TestRetryRNRThenSuccess: a SEND meeting an RNR NAK waits the responder's
// min_rnr_timer; before the deadline nothing is retried (a receive WQE
// posted meanwhile is not taken); at it the SEND is delivered.
func TestRetryRNRThenSuccess(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{rnrRetry: 3, minRNR: 14}) // 1.28 ms
	p.a.fill(p.ma, []byte("retried"))
	p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 7)), nil)
	if n := p.qa.run(4); n != 0 {
		t.Fatalf("consumed %d without a receive WQE", n)
	}
	dl := p.qa.waitDeadline()
	if want := p.d.clock + uint64(mlx4.RNRTimer(14)); dl != want {
		t.Fatalf("deadline %d, want %d (the RNR timer 14)", dl, want)
	}
	p.qb.recv(sge(p.kb, vaB, 64))
	p.d.clock = dl - 1
	for range 10 {
		if n := p.qa.run(4); n != 0 {
			t.Fatalf("consumed %d before the deadline", n)
		}
	}
	if rnr, _ := p.d.retries(0); rnr != 1 || p.qb.obj().RQHead != 0 || p.d.h.sqPending(p.qa.obj()) {
		t.Fatalf("before the deadline: %d RNR retries, RQ head %d", rnr, p.qb.obj().RQHead)
	}
	if ns, ok := p.d.h.NextRetry(); !ok || ns != 1 {
		t.Fatalf("NextRetry = %d, %v; want 1 ns", ns, ok)
	}
	p.d.clock = dl
	if n := p.qa.run(4); n != 1 {
		t.Fatalf("consumed %d at the deadline", n)
	}
	wantOK(t, p.d.take(), okCQE{p.a.cq, p.qa.qpn, 0, true}, okCQE{p.b.cq, p.qb.qpn, 0, false})
	if got := p.b.read(p.mb, 7); string(got) != "retried" {
		t.Fatalf("delivered %q", got)
	}
	if rnr, _ := p.d.retries(0); rnr != 1 {
		t.Fatalf("%d RNR retries", rnr)
	}
	if _, ok := p.d.h.NextRetry(); ok {
		t.Fatal("a retry still pending")
	}
}

// TestRetryRNRExceeded: rnr_retry 3 is four RNR NAKs, one RNR timer apart:
// the fourth completes the WQE with RNR_RETRY_EXC_ERR and the QP goes to
// ERR, the WQE behind it flushed.
func TestRetryRNRExceeded(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{rnrRetry: 3})
	p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 8)), nil)
	p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 8)), nil)
	start := p.d.clock
	p.qa.run(4)
	for i := range 3 {
		if c := p.d.take(); len(c) != 0 {
			t.Fatalf("CQEs after %d NAKs: %v", i+1, c)
		}
		p.d.clock = p.qa.waitDeadline()
		p.qa.run(4)
	}
	wantCQE(t, p.d.take(), eCQE(p.a.cq, p.qa.qpn, 0, true, mlx4.CQE_SYNDROME_RNR_RETRY_EXC_ERR),
		eCQE(p.a.cq, p.qa.qpn, 1, true, mlx4.CQE_SYNDROME_WR_FLUSH_ERR))
	if rnr, tr := p.d.retries(0); rnr != 3 || tr != 0 {
		t.Fatalf("retries: %d RNR, %d transport; want 3, 0", rnr, tr)
	}
	if el, want := p.d.clock-start, 3*uint64(mlx4.RNRTimer(12)); el != want {
		t.Fatalf("failed after %d ns, want 3 RNR timers (%d)", el, want)
	}
	if p.qa.obj().State != mlx4.QP_STATE_ERR {
		t.Fatalf("state %v", p.qa.obj().State)
	}
}

// TestRetryRNRZero: rnr_retry 0 fails at the first RNR NAK.
func TestRetryRNRZero(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{exact: true, timeout: 14, retry: 7, minRNR: 12})
	p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 8)), nil)
	p.qa.run(4)
	wantCQE(t, p.d.take(), eCQE(p.a.cq, p.qa.qpn, 0, true, mlx4.CQE_SYNDROME_RNR_RETRY_EXC_ERR))
	if rnr, _ := p.d.retries(0); rnr != 0 {
		t.Fatalf("%d RNR retries", rnr)
	}
}

// TestRetryRNRForever: rnr_retry 7 retries for ever: a hundred RNR timers
// later the WQE still waits, the QP in RTS, nothing completed.
func TestRetryRNRForever(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{rnrRetry: 7})
	p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 8)), nil)
	p.qa.run(4)
	for range 100 {
		if !p.d.elapse() {
			t.Fatal("no retry pending")
		}
		if n := p.qa.run(4); n != 0 {
			t.Fatalf("consumed %d", n)
		}
	}
	if rnr, _ := p.d.retries(0); rnr != 101 {
		t.Fatalf("%d RNR retries, want 101", rnr)
	}
	if c := p.d.take(); len(c) != 0 || p.qa.obj().State != mlx4.QP_STATE_RTS {
		t.Fatalf("CQEs %v, state %v", c, p.qa.obj().State)
	}
}

// TestRetryLostExceeded: a packet to a port that is not Active is sent
// again retry_cnt times, one local ACK timeout apart; when the last
// retry's timeout expires the WQE completes with TRANSPORT_RETRY_EXC_ERR
// (not a moment before), the QP goes to ERR.
func TestRetryLostExceeded(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{retry: 3, timeout: 10}) // 4.19 ms
	p.d.h.Cfg.Ports[0].State = "down"
	p.qb.recv(sge(p.kb, vaB, 64))
	p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 8)), nil)
	start := p.d.clock
	p.qa.run(4)
	for i := range 3 {
		dl := p.qa.waitDeadline()
		p.d.clock = dl - 1
		p.qa.run(4)
		if _, tr := p.d.retries(0); tr != uint64(i+1) {
			t.Fatalf("%d transport retries before deadline %d, want %d", tr, i+1, i+1)
		}
		p.d.clock = dl
		p.qa.run(4)
	}
	if c := p.d.take(); len(c) != 0 {
		t.Fatalf("CQEs before the last retry's timeout: %v", c)
	}
	p.d.clock = p.qa.waitDeadline() - 1
	if p.qa.run(4); len(p.d.take()) != 0 {
		t.Fatal("failed before the last timeout")
	}
	p.d.clock++
	p.qa.run(4)
	wantCQE(t, p.d.take(), eCQE(p.a.cq, p.qa.qpn, 0, true, mlx4.CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR))
	if el, want := p.d.clock-start, 4*uint64(mlx4.LocalAckTimeout(10)); el != want {
		t.Fatalf("failed after %d ns, want 4 ACK timeouts (%d)", el, want)
	}
	if rnr, tr := p.d.retries(0); rnr != 0 || tr != 3 {
		t.Fatalf("retries: %d RNR, %d transport; want 0, 3", rnr, tr)
	}
	if p.qa.obj().State != mlx4.QP_STATE_ERR || p.qb.obj().RQHead != 0 {
		t.Fatalf("state %v, responder's RQ head %d", p.qa.obj().State, p.qb.obj().RQHead)
	}
}

// TestRetryLostRecovers: the route back (the port Active again, the LFT
// entry restored) before the last retry: the retry is delivered.
func TestRetryLostRecovers(t *testing.T) {
	t.Run("port", func(t *testing.T) {
		p := newRCPair(t, permAll, qpOpts{retry: 2})
		p.d.h.Cfg.Ports[0].State = "down"
		p.qb.recv(sge(p.kb, vaB, 64))
		p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 8)), nil)
		p.qa.run(4)
		p.d.elapse()
		p.qa.run(4) // the first retry, lost too
		p.d.h.Cfg.Ports[0].State = "active"
		p.d.elapse()
		if n := p.qa.run(4); n != 1 {
			t.Fatalf("consumed %d at the last retry", n)
		}
		wantOK(t, p.d.take(), okCQE{p.a.cq, p.qa.qpn, 0, true}, okCQE{p.b.cq, p.qb.qpn, 0, false})
		if _, tr := p.d.retries(0); tr != 2 {
			t.Fatalf("%d transport retries", tr)
		}
	})
	t.Run("LFT", func(t *testing.T) {
		f := newFabricRig(t)
		qa, qb, _ := f.rcAcross()
		f.route(6, 0xFF)
		ka, _ := qa.t.mr(vaA+0x10000, 1, permAll, qa.t.pd)
		kb, _ := qb.t.mr(vaB+0x10000, 1, permAll, qb.t.pd)
		qb.recv(sge(kb, vaB+0x10000, 64))
		qa.post(send(mlx4.OPCODE_SEND, sge(ka, vaA+0x10000, 8)), nil)
		qa.run(4)
		for range 6 {
			f.elapse()
			qa.run(4)
		}
		f.route(6, 2)
		f.elapse()
		if n := qa.run(4); n != 1 {
			t.Fatalf("consumed %d at the last retry", n)
		}
		if c := f.take(); len(c) != 2 || c[0].e.Syndrome() != 0 || c[1].e.Syndrome() != 0 {
			t.Fatalf("CQEs %+v", c)
		}
	})
}

// TestRetryTimeoutZero: ACK timeout 0 disables the timer: a lost packet's
// WQE waits however long, no deadline for the poller, until the QP is
// moved to ERR: then it is flushed.
func TestRetryTimeoutZero(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{exact: true, timeout: 0, retry: 7, rnrRetry: 7, minRNR: 12})
	p.d.h.Cfg.Ports[0].State = "down"
	p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 8)), nil)
	p.qa.run(4)
	if _, ok := p.d.h.NextRetry(); ok {
		t.Fatal("a deadline for a WQE with timeout 0")
	}
	p.d.clock += 3600e9
	if n := p.qa.run(4); n != 0 || len(p.d.take()) != 0 {
		t.Fatalf("consumed %d an hour later", n)
	}
	if _, tr := p.d.retries(0); tr != 0 || p.qa.obj().State != mlx4.QP_STATE_RTS {
		t.Fatalf("%d transport retries, state %v", tr, p.qa.obj().State)
	}
	p.qa.t.must(p.qa.modify(mlx4.TWO_ERR_QP, 0), "2ERR")
	if n := p.qa.run(4); n != 1 {
		t.Fatalf("flushed %d", n)
	}
	wantCQE(t, p.d.take(), eCQE(p.a.cq, p.qa.qpn, 0, true, mlx4.CQE_SYNDROME_WR_FLUSH_ERR))
}

// TestRetryKeepsOrder: the WQEs behind one that waits for its retry wait
// too, receive WQEs posted meanwhile untouched; at the deadline all run,
// in order.
func TestRetryKeepsOrder(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{})
	for i := range 3 {
		p.a.fill(p.ma+uint64(i)*8, []byte{'a' + byte(i), 0, 0, 0, 0, 0, 0, 0})
		w := send(mlx4.OPCODE_SEND, sge(p.ka, vaA+uint64(i)*8, 8))
		p.qa.post(w, nil)
	}
	p.qa.run(8)
	for i := range 3 {
		p.qb.recv(sge(p.kb, vaB+uint64(i)*64, 64))
	}
	if n := p.qa.run(8); n != 0 || p.qb.obj().RQHead != 0 || p.qa.obj().SQHead != 0 {
		t.Fatalf("before the deadline: consumed %d, RQ head %d", n, p.qb.obj().RQHead)
	}
	p.d.elapse()
	if n := p.qa.run(8); n != 3 {
		t.Fatalf("consumed %d at the deadline", n)
	}
	var want []okCQE
	for i := range 3 {
		want = append(want, okCQE{p.a.cq, p.qa.qpn, uint16(i), true})
		if got := p.b.read(p.mb+uint64(i)*64, 1); got[0] != 'a'+byte(i) {
			t.Fatalf("receive %d got %q", i, got)
		}
	}
	for i := range 3 {
		want = append(want, okCQE{p.b.cq, p.qb.qpn, uint16(i), false})
	}
	wantOK(t, p.d.take(), want...) // take: VF 0's CQ, then VF 1's
}

// TestRetryOthersNotDelayed: while VF 0's QP waits for its retry, the
// scans (ServiceQueues) run VF 2's queues at once; the waiting QP is not
// retried before its deadline.
func TestRetryOthersNotDelayed(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{rnrRetry: 7})
	c := p.d.setup(2)
	kc, mc := c.mr(vaA, 1, permAll, c.pd)
	q1 := c.qp(qpOpts{st: mlx4.QP_ST_RC, access: remoteAll})
	q2 := c.qp(qpOpts{st: mlx4.QP_ST_RC, access: remoteAll})
	pair(q1, q2)
	p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 8)), nil)
	p.d.h.SweepQueues()
	p.d.h.ServiceQueues(64)
	p.qa.waitDeadline()
	c.fill(mc, []byte("not delayed"))
	for i := range 4 {
		q2.recv(sge(kc, vaA+256+uint64(i)*64, 64))
		q1.post(send(mlx4.OPCODE_SEND, sge(kc, vaA, 11)), nil)
	}
	p.d.h.SweepQueues()
	if n := p.d.h.ServiceQueues(64); n != 4 {
		t.Fatalf("one scan ran %d WQEs, want VF 2's 4", n)
	}
	if got := c.read(mc+256+3*64, 11); string(got) != "not delayed" {
		t.Fatalf("VF 2 got %q", got)
	}
	if rnr, _ := p.d.retries(0); rnr != 1 || p.qa.obj().SQHead != 0 {
		t.Fatalf("VF 0: %d RNR retries, SQ head %d", rnr, p.qa.obj().SQHead)
	}
	// At the deadline the scans retry VF 0's WQE: one more RNR NAK.
	p.d.elapse()
	p.d.h.ServiceQueues(64)
	if rnr, _ := p.d.retries(0); rnr != 2 {
		t.Fatalf("VF 0 at its deadline: %d RNR retries, want 2", rnr)
	}
}

// TestRetryNoAllocs: a WQE's RNR retries (the deadline found, the WQE
// tried again, the NAK, the new deadline) allocate nothing.
func TestRetryNoAllocs(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{rnrRetry: 7})
	p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 8)), nil)
	p.d.h.SweepQueues()
	p.d.h.ServiceQueues(16)
	before, _ := p.d.retries(0)
	if a := testing.AllocsPerRun(200, func() {
		p.d.elapse()
		p.d.h.ServiceQueues(16)
	}); a != 0 {
		t.Fatalf("%v allocations per retry", a)
	}
	if rnr, _ := p.d.retries(0); rnr-before < 200 {
		t.Fatalf("%d retries in 200 rounds", rnr-before)
	}
}

// TestRetryNotRunnableNoDeadline: a QP whose SEND waits for its RNR retry
// and is then suspended (SUSPEND_QP) or moved to SQD runs nothing, so its
// deadline is no reason to wake: NextRetry reports none (the poller would
// otherwise never block again), until UNSUSPEND_QP or SQD2RTS brings the
// QP back and the retry is due at once.
func TestRetryNotRunnableNoDeadline(t *testing.T) {
	for _, c := range []struct {
		name      string
		stop, run func(p *rcPair)
	}{
		{"suspended", func(p *rcPair) {
			p.a.must(p.a.run(p.a.cmd(mlx4.SUSPEND_QP, 0, p.qa.qpn, 0, nil, false)), "SUSPEND_QP")
		}, func(p *rcPair) {
			p.a.must(p.a.run(p.a.cmd(mlx4.UNSUSPEND_QP, 0, p.qa.qpn, 0, nil, false)), "UNSUSPEND_QP")
		}},
		{"sqd", func(p *rcPair) {
			p.a.must(p.qa.modify(mlx4.RTS2SQD_QP, 0), "RTS2SQD")
		}, func(p *rcPair) {
			p.a.must(p.qa.modify(mlx4.SQD2RTS_QP, 0), "SQD2RTS")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newRCPair(t, permAll, qpOpts{rnrRetry: 3, minRNR: 14})
			p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 7)), nil)
			if n := p.qa.run(4); n != 0 {
				t.Fatalf("consumed %d without a receive WQE", n)
			}
			if _, ok := p.d.h.NextRetry(); !ok {
				t.Fatal("no retry pending after the RNR NAK")
			}
			c.stop(p)
			p.d.clock = p.qa.waitDeadline() + 1
			if ns, ok := p.d.h.NextRetry(); ok {
				t.Fatalf("NextRetry = %d ns for a QP that runs nothing", ns)
			}
			c.run(p)
			p.qb.recv(sge(p.kb, vaB, 64))
			if ns, ok := p.d.h.NextRetry(); !ok || ns != 0 {
				t.Fatalf("back in RTS: NextRetry = %d, %v; want due now", ns, ok)
			}
			if n := p.qa.run(4); n != 1 {
				t.Fatalf("consumed %d once the QP runs again", n)
			}
		})
	}
}
