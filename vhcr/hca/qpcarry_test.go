package hca

import (
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// TestDataSparseTransitions: Linux's mlx4_ib sends every transition a
// context zeroed but for the attributes of that call. RTR2RTS's carries
// no destination QPN, path or MTU; the firmware keeps what INIT2RTR set,
// and a SEND of more than one byte still reaches the peer (a QP that took
// RTR2RTS's zeros had msg_max 0 and failed with a local length error, and
// destination QPN 0).
func TestDataSparseTransitions(t *testing.T) {
	d := newDPRig(t, 1, nil)
	a := d.setup(0)
	k, m := a.mr(vaA, 1, permAll, a.pd)
	q1 := a.qp(qpOpts{st: mlx4.QP_ST_RC, access: remoteAll})
	q2 := a.qp(qpOpts{st: mlx4.QP_ST_RC, access: remoteAll})
	for _, p := range [][2]*tqp{{q1, q2}, {q2, q1}} {
		q, peer := p[0], p[1]
		q.ctx.RemoteQPN, q.ctx.Pri.RLID = peer.qpn, 5
		a.must(q.modify(mlx4.INIT2RTR_QP, mlx4.QP_OPTPAR_PRIMARY_ADDR_PATH), "INIT2RTR")
		full := q.ctx
		// RTR2RTS as __mlx4_ib_modify_qp builds it without IB_QP_AV,
		// IB_QP_DEST_QPN or IB_QP_PATH_MTU: those fields zero.
		q.ctx.RemoteQPN, q.ctx.Pri, q.ctx.MsgMax, q.ctx.MTU = 0, mlx4.QPPath{Port: 1}, 0, 0
		a.must(q.modify(mlx4.RTR2RTS_QP, 0), "RTR2RTS")
		got, _ := mlx4.DecodeQPContext(q.obj().Ctx[mlx4.QPMailboxContext:])
		if got.RemoteQPN != full.RemoteQPN || got.Pri.RLID != full.Pri.RLID || got.MsgMax != full.MsgMax {
			t.Fatalf("QP %#x after RTR2RTS: remote QPN %#x rlid %d msg_max %d, want %#x %d %d", q.qpn,
				got.RemoteQPN, got.Pri.RLID, got.MsgMax, full.RemoteQPN, full.Pri.RLID, full.MsgMax)
		}
	}
	a.fill(m, []byte("sparse contexts"))
	q2.recv(sge(k, vaA+100, 64))
	q1.post(send(mlx4.OPCODE_SEND, sge(k, vaA, 15)), nil)
	q1.run(4)
	if got := a.read(m+100, 15); string(got) != "sparse contexts" {
		t.Fatalf("got %q", got)
	}
}

// TestDataAccessFlagsCarried: the remote access enables as rdma_cm and
// mlx4_ib set them — none at RST2INIT (cma_init_ib_qp), RRE/RWE/RAE at
// INIT2INIT with their optpar bits, rra_max at INIT2RTR with
// OPTPAR_RRA_MAX, and an RTR2RTS whose params2 has neither — stay set: the
// peer's RDMA READ of the QP's memory is answered (rping's first READ
// failed with a remote invalid request when RTR2RTS's zeros were taken).
func TestDataAccessFlagsCarried(t *testing.T) {
	d := newDPRig(t, 1, nil)
	a := d.setup(0)
	k, m := a.mr(vaA, 1, permAll, a.pd)
	reader := a.qp(qpOpts{st: mlx4.QP_ST_RC, access: remoteAll})
	target := a.qp(qpOpts{st: mlx4.QP_ST_RC}) // RST2INIT: no access
	target.p2 = remoteAll
	a.must(target.modify(mlx4.INIT2INIT_QP, mlx4.QP_OPTPAR_RRE|mlx4.QP_OPTPAR_RWE|mlx4.QP_OPTPAR_RAE), "INIT2INIT")
	target.p2 = 0 << mlx4.QPCParams2RRAMaxShift // fls(1 - 1): one read in flight
	target.ctx.RemoteQPN, target.ctx.Pri.RLID = reader.qpn, 5
	a.must(target.modify(mlx4.INIT2RTR_QP, mlx4.QP_OPTPAR_PRIMARY_ADDR_PATH|mlx4.QP_OPTPAR_RRA_MAX), "INIT2RTR")
	a.must(target.modify(mlx4.RTR2RTS_QP, 0), "RTR2RTS")
	if w := target.obj().wq; !w.rre || !w.rwe || !w.rae {
		t.Fatalf("after RTR2RTS: RRE %v RWE %v RAE %v, want the INIT2INIT's", w.rre, w.rwe, w.rae)
	}
	reader.connect(target.qpn, 5)
	a.fill(m+2048, []byte("read me through the peer"))
	w := send(mlx4.OPCODE_RDMA_READ, sge(k, vaA, 24))
	w.HasRAddr, w.RAddr = true, mlx4.RAddrSeg{RAddr: vaA + 2048, RKey: k}
	reader.post(w, nil)
	reader.run(4)
	if got := a.read(m, 24); string(got) != "read me through the peer" {
		t.Fatalf("RDMA READ got %q", got)
	}
	for _, c := range d.take() {
		if c.e.IsError() {
			t.Fatalf("error CQE %+v", c.e)
		}
	}
}
