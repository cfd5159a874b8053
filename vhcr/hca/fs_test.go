package hca

import (
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

func fsRule(vport uint8, qpn uint32, id uint16, dst uint64) []byte {
	b := make([]byte, mlx4.NetTransCtrlSize+40)
	b[mlx4.NetTransCtrlPort] = vport
	binary.BigEndian.PutUint32(b[mlx4.NetTransCtrlQPN:], qpn)
	h := b[mlx4.NetTransCtrlSize:]
	binary.BigEndian.PutUint16(h[mlx4.RuleHwID:], id)
	for i := range 6 {
		h[mlx4.RuleHwEthDstMAC+i] = byte(dst >> (40 - 8*i))
	}
	return b
}

func TestFlowSteering(t *testing.T) {
	r := newRig(t, 2, nil)
	a, b := r.vf(0), r.vf(1)
	attach := func(v *vf, rule []byte) (uint64, mlx4.Status) {
		c := v.cmd(mlx4.QP_FLOW_STEERING_ATTACH, 0, uint32(len(rule)/4), 0, rule, false)
		s := v.run(c)
		return c.OutParam, s
	}
	detach := func(v *vf, id uint64) mlx4.Status {
		return v.run(v.cmd(mlx4.QP_FLOW_STEERING_DETACH, id, 0, 0, nil, false))
	}
	qpn := a.mustAlloc(restrack.QP, resOpReserve, 1)
	bqp := b.mustAlloc(restrack.QP, resOpReserve, 1)
	mac := uint64(0x0002c9123456)
	_, s := attach(a, fsRule(1, qpn, mlx4.NET_TRANS_RULE_ID_ETH, mac))
	wantS(t, "B0 steering", s, mlx4.INTERNAL_ERR)
	r.h.SetDeviceManagedSteering(true)
	_, s = attach(a, fsRule(1, qpn, mlx4.NET_TRANS_RULE_ID_ETH, mac))
	wantS(t, "MAC not the VF's", s, mlx4.BAD_PARAM)
	c := a.cmd(mlx4.ALLOC_RES, mac, uint32(restrack.MAC)|1<<8, resOpReserveAndMap, nil, false)
	a.must(a.run(c), "MAC")
	_, s = attach(b, fsRule(1, bqp, mlx4.NET_TRANS_RULE_ID_ETH, mac))
	wantS(t, "VF 1 steering VF 0's MAC", s, mlx4.BAD_PARAM)
	_, s = attach(a, fsRule(1, bqp, mlx4.NET_TRANS_RULE_ID_ETH, mac))
	wantS(t, "VF 1's QP", s, mlx4.BAD_OP)
	_, s = attach(a, fsRule(1, 0x7fff00, mlx4.NET_TRANS_RULE_ID_ETH, mac))
	wantS(t, "unknown QP", s, mlx4.INTERNAL_ERR)
	_, s = attach(a, fsRule(3, qpn, mlx4.NET_TRANS_RULE_ID_ETH, mac))
	wantS(t, "port 3", s, mlx4.BAD_PARAM)
	_, s = attach(a, fsRule(1, qpn, 0x1234, mac))
	wantS(t, "unknown header", s, mlx4.BAD_PARAM)
	id, s := attach(a, fsRule(1, qpn, mlx4.NET_TRANS_RULE_ID_ETH, mac))
	wantS(t, "own MAC and QP", s, mlx4.OK)
	id2, s := attach(a, fsRule(1, qpn, mlx4.NET_TRANS_RULE_ID_ETH, 0x01005e000001))
	wantS(t, "multicast", s, mlx4.OK)
	if id == id2 || id == 0 {
		t.Fatalf("reg ids %d %d", id, id2)
	}
	wantS(t, "FREE_RES of a steered QP", a.free(restrack.QP, resOpReserve, 1<<32|uint64(qpn)), mlx4.RESOURCE_BUSY)
	wantS(t, "VF 1 detaches VF 0's rule", detach(b, id), mlx4.BAD_OP)
	wantS(t, "unknown rule", detach(a, 999), mlx4.INTERNAL_ERR)
	a.must(detach(a, id), "detach")
	if n := r.h.Counts(0)[restrack.FSRule]; n != 1 {
		t.Fatalf("rules %d", n)
	}
	rel := r.h.ResetFunction(0)
	if rel[restrack.FSRule] != 1 || rel[restrack.QP] != 1 {
		t.Fatalf("released %v", rel)
	}
	if r.h.Counts(1)[restrack.QP] != 1 {
		t.Fatal("VF 1 touched")
	}
}
