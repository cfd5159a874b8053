package hca

import (
	"slices"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

type trapSink struct{ traps []mad.Trap }

func (s *trapSink) SendTrap(t mad.Trap) { s.traps = append(s.traps, t) }

// TestDataUDKeyTraps: with the MAD engine attached, a UD datagram dropped
// on its Q_Key raises trap 258 and one dropped on its P_Key trap 257 from
// the receiving port, the port's violation counters counting them.
func TestDataUDKeyTraps(t *testing.T) {
	d, _, b, qa, qb, ka, kb, _, _ := udPair(t)
	sink := &trapSink{}
	now := time.Unix(1e9, 0)
	e, err := mad.New(MADNode(d.h.Cfg), mad.Options{Sink: sink, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.h.AttachMAD(e); err != nil {
		t.Fatal(err)
	}
	qb.recv(sge(kb, vaB, 100))
	qa.post(udSend(qb.qpn, 0x3333, true, sge(ka, vaA, 16)), nil)
	qa.run(4)
	now = now.Add(time.Hour) // past the engine's trap pacing
	qb.ctx.Pri.PKeyIndex = 1
	b.must(qb.modify(mlx4.RTS2RTS_QP, mlx4.QP_OPTPAR_PKEY_INDEX), "RTS2RTS")
	qa.post(udSend(qb.qpn, 0x2222, false, sge(ka, vaA, 16)), nil)
	qa.run(4)
	var nums []uint16
	for _, tr := range sink.traps {
		if tr.Port != 1 {
			t.Fatalf("trap from port %d", tr.Port)
		}
		nums = append(nums, tr.Number)
	}
	if !slices.Contains(nums, mad.TrapBadQKey) || !slices.Contains(nums, mad.TrapBadPKey) {
		t.Fatalf("traps %v, want 258 and 257", nums)
	}
	s := e.Snapshot()
	if s.KeyViolations[mad.CKeyQ] != 1 || s.KeyViolations[mad.CKeyP] != 1 {
		t.Fatalf("key violations %v", s.KeyViolations)
	}
	pi, _ := e.PortInfo(1)
	if pi.QKeyViolations != 1 || pi.PKeyViolations != 1 {
		t.Fatalf("PortInfo counters Q %d P %d", pi.QKeyViolations, pi.PKeyViolations)
	}
	if qb.obj().RQHead != 0 {
		t.Fatal("a dropped datagram consumed a receive WQE")
	}
}

// TestDataBetweenPorts: an RC QP on port 1 reaches a QP on port 2 by that
// port's LID (6); with port 2 down, nothing moves.
func TestDataBetweenPorts(t *testing.T) {
	d := newDPRig(t, 2, nil)
	a, b := d.setup(0), d.setup(1)
	ka, ma := a.mr(vaA, 1, permAll, a.pd)
	kb, mb := b.mr(vaB, 1, permAll, b.pd)
	qa := a.qp(qpOpts{st: mlx4.QP_ST_RC, access: remoteAll})
	qb := b.qp(qpOpts{st: mlx4.QP_ST_RC, access: remoteAll})
	qb.ctx.Pri.Port = 2
	qa.connect(qb.qpn, 6)
	qb.connect(qa.qpn, 5)
	if qb.obj().Port != 2 {
		t.Fatalf("B on port %d", qb.obj().Port)
	}
	a.fill(ma, []byte("port to port"))
	qb.recv(sge(kb, vaB, 64))
	qa.post(send(mlx4.OPCODE_SEND, sge(ka, vaA, 12)), nil)
	qa.run(4)
	if got := b.read(mb, 12); string(got) != "port to port" {
		t.Fatalf("got %q", got)
	}
	d.take()
	d.h.Cfg.Ports[1].State = "down"
	qb.recv(sge(kb, vaB, 64))
	qa.post(send(mlx4.OPCODE_SEND, sge(ka, vaA, 12)), nil)
	qa.settle(4)
	if c := d.take(); len(c) != 1 || c[0].e.Syndrome() != mlx4.CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR {
		t.Fatalf("to a down port: %+v", c)
	}
}

// TestDataLoopbackOneVF: two QPs of one VF on its port's LID.
func TestDataLoopbackOneVF(t *testing.T) {
	d := newDPRig(t, 1, nil)
	a := d.setup(0)
	k, m := a.mr(vaA, 1, permAll, a.pd)
	q1 := a.qp(qpOpts{st: mlx4.QP_ST_RC, access: remoteAll})
	q2 := a.qp(qpOpts{st: mlx4.QP_ST_RC, access: remoteAll})
	pair(q1, q2)
	a.fill(m, []byte("loop"))
	q2.recv(sge(k, vaA+100, 8))
	q1.post(send(mlx4.OPCODE_SEND, sge(k, vaA, 4)), nil)
	q1.run(4)
	if got := a.read(m+100, 4); string(got) != "loop" {
		t.Fatalf("got %q", got)
	}
}

// TestDataPathMigFailed: an RC QP with path migration armed and an
// alternate path gets PATH_MIG_FAILED when its primary path is lost.
func TestDataPathMigFailed(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{})
	p.qa.ctx.Alt = mlx4.QPPath{Port: 1, RLID: 5}
	p.qa.ctx.Pri.RLID = 99 // no such LID: the primary path is gone
	p.a.must(p.qa.modify(mlx4.RTS2RTS_QP, mlx4.QP_OPTPAR_ALT_ADDR_PATH|mlx4.QP_OPTPAR_PRIMARY_ADDR_PATH|mlx4.QP_OPTPAR_PM_STATE), "RTS2RTS")
	p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 8)), nil)
	p.qa.settle(4)
	if !slices.Contains(p.a.events(), mlx4.EventPathMigFailed) {
		t.Fatalf("events %#x", p.a.events())
	}
	if c := p.d.take(); len(c) != 1 || c[0].e.Syndrome() != mlx4.CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR {
		t.Fatalf("CQEs %+v", c)
	}
}

// TestDataUDMulticast: a datagram to a multicast LID and QPN 0xffffff
// reaches every QP attached to the group on the port, the sender's not.
func TestDataUDMulticast(t *testing.T) {
	d, a, b, qa, qb, ka, kb, _, mb := udPair(t)
	qb.ctx.QKey = 0x1111
	b.must(qb.modify(mlx4.RTS2RTS_QP, mlx4.QP_OPTPAR_Q_KEY), "RTS2RTS")
	gid := []byte("multicast group!")
	for _, q := range []*tqp{qa, qb} {
		q.t.must(q.t.run(q.t.cmd(mlx4.QP_ATTACH, 0, q.qpn, 1, gid, false)), "QP_ATTACH")
	}
	qb.recv(sge(kb, vaB, 100))
	qa.recv(sge(ka, vaA+1000, 100))
	a.fill(0, nil)
	w := udSend(multicastQPN, 0x1111, true, sge(ka, vaA, 16))
	w.Datagram.AV.DLID = 0xc001
	copy(w.Datagram.AV.DGID[:], gid)
	qa.post(w, nil)
	qa.run(4)
	if qb.obj().RQHead != 1 || qa.obj().RQHead != 0 {
		t.Fatalf("receive WQEs taken: B %d, A (the sender) %d", qb.obj().RQHead, qa.obj().RQHead)
	}
	if got := b.read(mb+24, 16); string(got) != string(gid) {
		t.Fatalf("DGID in the GRH %q", got)
	}
	_ = d
}

// TestDataSurvivesLoad: a checkpoint carries the queues' positions; a
// loaded HCA rebuilds the work queues and goes on where it was (the next
// WQE's index, the receive queue's consumer).
func TestDataSurvivesLoad(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{})
	p.qb.recv(sge(p.kb, vaB, 64))
	p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 8)), nil)
	p.qa.run(4)
	p.d.take()
	im := p.d.h.Image()
	win := func(vf int) *dma.Window { w, _ := p.d.sp.Window(vf); return w }
	if err := p.d.h.Load(im, win); err != nil {
		t.Fatal(err)
	}
	if p.qa.obj().wq == nil || p.qa.obj().SQHead != 1 || p.qb.obj().RQHead != 1 {
		t.Fatalf("after Load: queues %v, SQ %d, RQ %d", p.qa.obj().wq != nil, p.qa.obj().SQHead, p.qb.obj().RQHead)
	}
	p.a.fill(p.ma, []byte("after the restart"))
	p.qb.recv(sge(p.kb, vaB+64, 64))
	p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 17)), nil)
	if n := p.qa.run(4); n != 1 {
		t.Fatalf("consumed %d", n)
	}
	if got := p.b.read(p.mb+64, 17); string(got) != "after the restart" {
		t.Fatalf("got %q", got)
	}
	wantCQE(t, p.d.take(), rCQE(p.b.cq, p.qb.qpn, 1, mlx4.RECV_OPCODE_SEND, 17, 0), sCQE(p.a.cq, p.qa.qpn, 1, mlx4.OPCODE_SEND, 17))
}

// TestDataSuspended: a suspended QP executes nothing until UNSUSPEND_QP.
func TestDataSuspended(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{})
	p.a.must(p.a.run(p.a.cmd(mlx4.SUSPEND_QP, 0, p.qa.qpn, 0, nil, false)), "SUSPEND_QP")
	p.qa.post(send(mlx4.OPCODE_NOP), nil)
	if p.d.h.sqPending(p.qa.obj()) || p.qa.run(4) != 0 {
		t.Fatal("a suspended QP ran")
	}
	p.a.must(p.a.run(p.a.cmd(mlx4.UNSUSPEND_QP, 0, p.qa.qpn, 0, nil, false)), "UNSUSPEND_QP")
	if p.qa.run(4) != 1 {
		t.Fatal("the QP did not resume")
	}
}

// TestDataRCPKey: an RC QP whose P_Key is not the responder's: the packet
// is dropped at the responder's port (counted: the first and each of the
// retry_cnt 7 retries), the requester's retries run out.
func TestDataRCPKey(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{})
	p.qb.ctx.Pri.PKeyIndex = 1 // 0x8001 against A's 0xffff
	p.b.must(p.qb.modify(mlx4.RTS2RTS_QP, mlx4.QP_OPTPAR_PKEY_INDEX), "RTS2RTS")
	p.qb.recv(sge(p.kb, vaB, 64))
	p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 8)), nil)
	p.qa.settle(4)
	if c := p.d.take(); len(c) != 1 || c[0].e.Syndrome() != mlx4.CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR {
		t.Fatalf("CQEs %+v", c)
	}
	if p.d.h.EngineStats(1).PKeyViol.Load() != 1+7 || p.qb.obj().RQHead != 0 || p.qb.obj().State != mlx4.QP_STATE_RTS {
		t.Fatal("the responder took the packet")
	}
}

// TestDataUCBadRKey: on UC a bad rkey is dropped by the responder, which
// stays as it is, and the requester's WQE completes (nothing acknowledges).
func TestDataUCBadRKey(t *testing.T) {
	d := newDPRig(t, 2, nil)
	a, b := d.setup(0), d.setup(1)
	ka, _ := a.mr(vaA, 1, permAll, a.pd)
	kb, mb := b.mr(vaB, 1, mlx4.PERM_LOCAL_WRITE, b.pd) // no remote write
	qa := a.qp(qpOpts{st: mlx4.QP_ST_UC, access: remoteAll})
	qb := b.qp(qpOpts{st: mlx4.QP_ST_UC, access: remoteAll})
	pair(qa, qb)
	before := b.read(mb, 64)
	w := send(mlx4.OPCODE_RDMA_WRITE, sge(ka, vaA, 64))
	w.HasRAddr, w.RAddr = true, mlx4.RAddrSeg{RAddr: vaB, RKey: kb}
	qa.post(w, nil)
	qa.run(4)
	wantCQE(t, d.take(), sCQE(a.cq, qa.qpn, 0, mlx4.OPCODE_RDMA_WRITE, 0))
	if qb.obj().State != mlx4.QP_STATE_RTS || qa.obj().State != mlx4.QP_STATE_RTS || d.h.EngineStats(1).UCDropped.Load() != 1 {
		t.Fatalf("states %v %v", qa.obj().State, qb.obj().State)
	}
	if got := b.read(mb, 64); string(got) != string(before) {
		t.Fatal("the responder's region changed")
	}
}
