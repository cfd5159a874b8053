package hca

import (
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// TestKeyCacheFollowsMPT: a key the QP's last WQEs used (its check
// cached) stops working the moment its MPT leaves hardware (HW2SW_MPT):
// the next SEND gathering through it is a local protection error, as
// without the cache. The cached hits before it move the data as the walk
// does.
func TestKeyCacheFollowsMPT(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{})
	a, b, qa, qb := p.a, p.b, p.qa, p.qb
	for i := range 3 {
		msg := pattern(64, byte(i+1))
		a.fill(p.ma, msg)
		qb.recv(sge(p.kb, vaB, 64))
		qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 64)), nil)
		if n := qa.run(4); n != 1 {
			t.Fatalf("SEND %d: %d WQEs", i, n)
		}
		if got := b.read(p.mb, 64); string(got) != string(msg) {
			t.Fatalf("SEND %d: B holds %x", i, got)
		}
		wantCQE(t, p.d.take(), rCQE(b.cq, qb.qpn, uint16(i), mlx4.RECV_OPCODE_SEND, 64, 0), sCQE(a.cq, qa.qpn, uint16(i), mlx4.OPCODE_SEND, 64))
	}
	if !qa.obj().wq.kc.ok {
		t.Fatal("the SENDs' lkey was not cached")
	}
	a.must(a.run(a.cmd(mlx4.HW2SW_MPT, 0, mlx4.HWIndexOf(p.ka), 0, nil, false)), "HW2SW_MPT")
	qb.recv(sge(p.kb, vaB, 64))
	qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 64)), nil)
	qa.run(4)
	wantCQE(t, p.d.take(), eCQE(a.cq, qa.qpn, 3, true, mlx4.CQE_SYNDROME_LOCAL_PROT_ERR))
	if qa.obj().State != mlx4.QP_STATE_ERR {
		t.Fatalf("QP in state %d after the protection error", qa.obj().State)
	}
}
