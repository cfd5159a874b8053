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
