package hca

import (
	"bytes"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// e2eRig is the data-path rig with the real CQ layer (no CQE recorder),
// MSI-X delivery, EQs kept armed, and UAR words the test writes where the
// VFs' stores would land.
type e2eRig struct {
	*dpRig
	irq *vectors
	uar map[[2]uint64]uint32
}

func newE2ERig(t *testing.T) *e2eRig {
	r := &e2eRig{dpRig: &dpRig{rig: newRig(t, 2, nil)}, irq: &vectors{n: 8, raised: map[[2]int]int{}}, uar: map[[2]uint64]uint32{}}
	r.h.SetInterrupts(r.irq)
	r.h.SetDoorbellReader(func(vf, eqn int) (uint32, bool) { return mlx4.EQ_DOORBELL_ARM, true })
	r.h.SetUARReader(func(vf int, off uint64) (uint32, bool) { return r.uar[[2]uint64{uint64(vf), off}], true })
	return r
}

// doorbell is mlx4_post_send's store of qpn << 8 at the QP's UAR page
// (usr_page 128 in the rig's QPs).
func (r *e2eRig) doorbell(q *tqp) {
	r.uar[[2]uint64{uint64(q.t.n), mlx4.UARPageOffset(128, mlx4.UARSize) + mlx4.MLX4_SEND_DOORBELL}] = mlx4.SendDoorbell(q.qpn)
}

// cqAt is the driver's view of a tvf's CQ (createCQ: 128 CQEs in one
// page, its doorbell record at IOVA 0).
func (r *e2eRig) cqAt(t *tvf) *cq {
	ring := r.h.fw.cqs[t.cq].ring
	return &cq{v: &cqVF{vf: t.vf, r: &cqRig{rig: r.rig, irq: r.irq, uar: r.uar}}, n: t.cq, nent: ring.nent, pages: ring.pages, rec: ring.dbRec, usr: 128}
}

// TestDataPathEndToEnd: a SEND between RC QPs of two VFs, driven only by
// what the VFs write to memory and their UAR pages: the send doorbell
// word makes the poller's ServiceQueues run the QP; both CQEs are read
// back with the owner rule (libmlx4's poll); the receiver's CQ, armed with
// ibv_req_notify_cq, gets one completion EQE in its EQ, which raises its
// MSI-X vector; a second message without a new doorbell word (the same
// QPN stored again) is found by the hot QP or the sweep.
func TestDataPathEndToEnd(t *testing.T) {
	r := newE2ERig(t)
	a, b := r.setup(0), r.setup(1)
	ka, ma := a.mr(vaA, 1, permAll, a.pd)
	kb, mb := b.mr(vaB, 1, permAll, b.pd)
	qa, qb := a.qp(qpOpts{st: mlx4.QP_ST_RC, access: remoteAll}), b.qp(qpOpts{st: mlx4.QP_ST_RC, access: remoteAll})
	pair(qa, qb)
	if r.h.Attached() != 2 {
		t.Fatalf("%d QPs attached after RTR2RTS, want 2", r.h.Attached())
	}
	ca, cb := r.cqAt(a), r.cqAt(b)
	cb.arm(false)

	msg := pattern(256, 3)
	a.fill(ma, msg)
	qb.recv(sge(kb, vaB, 512))
	qa.post(send(mlx4.OPCODE_SEND, sge(ka, vaA, 256)), nil)
	r.doorbell(qa)
	if n := r.h.ServiceQueues(64); n != 1 {
		t.Fatalf("ServiceQueues did %d, want 1 WQE", n)
	}
	if got := b.read(mb, 256); !bytes.Equal(got, msg) {
		t.Fatal("the message did not arrive")
	}
	sa, rb := ca.poll(), cb.poll()
	if len(sa) != 1 || !sa[0].IsSend || sa[0].QPN() != qa.qpn || sa[0].Opcode != mlx4.OPCODE_SEND {
		t.Fatalf("sender's CQEs %+v", sa)
	}
	if len(rb) != 1 || rb[0].IsSend || rb[0].QPN() != qb.qpn || rb[0].ByteCnt != 256 || rb[0].Opcode != mlx4.RECV_OPCODE_SEND {
		t.Fatalf("receiver's CQEs %+v", rb)
	}
	// the receiver's completion EQE in its EQ 1 (c_eqn) and its vector
	eq := r.h.fw.eqs[restrack.EQID(1, 1)]
	var comp []uint32
	for i := range eq.Prod {
		e, _ := mlx4.DecodeEQE(func() []byte { x := b.readEQE(b.eqPage, int(i)); return x[:] }())
		if e.Type == mlx4.EventComp {
			comp = append(comp, e.Object)
		}
	}
	if len(comp) != 1 || comp[0] != b.cq {
		t.Fatalf("completion EQEs for CQs %v, want [%d]", comp, b.cq)
	}
	if r.irq.raised[[2]int{1, int(eq.intr)}] == 0 {
		t.Fatal("the receiver's EQ vector was not raised")
	}
	if r.irq.raised[[2]int{0, int(r.h.fw.eqs[restrack.EQID(0, 1)].intr)}] != 0 {
		t.Fatal("the sender's CQ was not armed, yet its vector was raised")
	}

	// The same QPN stored again changes nothing in the UAR word: the QP is
	// hot (it just worked) and runs in the next scan anyway.
	qb.recv(sge(kb, vaB, 512))
	qa.post(send(mlx4.OPCODE_SEND, sge(ka, vaA, 64)), nil)
	r.doorbell(qa)
	if n := r.h.ServiceQueues(64); n != 1 {
		t.Fatalf("second SEND: ServiceQueues did %d", n)
	}
	if got := cb.poll(); len(got) != 1 || got[0].ByteCnt != 64 {
		t.Fatalf("second SEND: receiver's CQEs %+v", got)
	}
	// Cold, with no doorbell at all: the idle checkpoint's sweep finds it.
	for range hotScans + 1 {
		r.h.ServiceQueues(64)
	}
	qb.recv(sge(kb, vaB, 512))
	qa.post(send(mlx4.OPCODE_SEND, sge(ka, vaA, 32)), nil)
	if n := r.h.SweepQueues(); n != 1 {
		t.Fatalf("the sweep found %d QPs with work, want 1", n)
	}
	if n := r.h.ServiceQueues(64); n != 1 {
		t.Fatalf("after the sweep: ServiceQueues did %d", n)
	}
	if got := cb.poll(); len(got) != 1 || got[0].ByteCnt != 32 {
		t.Fatalf("third SEND: receiver's CQEs %+v", got)
	}
	if got := ca.poll(); len(got) != 2 {
		t.Fatalf("sender's CQEs %+v, want 2", got)
	}
	// 2RST detaches the QP
	a.must(a.run(a.cmd(mlx4.TWO_RST_QP, 0, qa.qpn, 0, nil, false)), "2RST")
	if r.h.Attached() != 1 {
		t.Fatalf("%d attached after 2RST, want 1", r.h.Attached())
	}
}
