package vfdrv

import (
	"context"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

// TestVSTThroughTheChannel: a VF configured for VST and spoof check brings
// its channel up (VHCR_EN activates the vport), takes a UD QP on its
// Ethernet port to RTR, and QUERY_QP shows the context the PF enforced:
// VLAN blocks, force bits, priority and forced source MAC. A VGT VF on the
// same port keeps its own context.
func TestVSTThroughTheChannel(t *testing.T) {
	r := mastertest.New(t, 2)
	on := true
	r.Config.Ports[0].LinkLayer = "eth"
	r.Config.VFs.Overrides = map[string]config.VF{"0": {VST: &config.VST{VLAN: 100, QoS: 5}, SpoofCheck: &on}}
	r.Rebuild(t)
	r.Start(t)
	ctx := context.Background()
	query := func(vf int) []byte {
		d := newDriver(t, r, vf, Options{})
		_, err := d.CreateEQ(ctx, 1, 4)
		ok(t, "CreateEQ", err)
		cq, err := d.CreateCQ(ctx, 7, 1)
		ok(t, "CreateCQ", err)
		// A RoCE UD QP's source MAC is one the VF registered (mlx4's
		// roce_verify_mac), as mlx4_ib registers it.
		res, err := d.Do(ctx, &vfclient.Request{Op: mlx4.ALLOC_RES, InMod: 6 | 1<<8, OpMod: 1, InParam: 0x0002c9aabb00 + uint64(vf)})
		ok(t, "ALLOC_RES MAC", err)
		qp, err := d.CreateQP(ctx, QPConfig{ST: mlx4.QP_ST_UD, SendCQ: cq.CQN, RecvCQ: cq.CQN, PD: 1, QKey: 0x11111111, SMACIndex: uint8(res.OutParam)})
		ok(t, "CreateQP", err)
		ok(t, "UD to RTR", d.ModifyPath(ctx, qp, mlx4.QP_STATE_INIT, mlx4.QP_STATE_RTR))
		res, err = d.Do(ctx, &vfclient.Request{Op: mlx4.QUERY_QP, InMod: qp.QPN})
		ok(t, "QUERY_QP", err)
		if res.Status != mlx4.OK {
			t.Fatalf("QUERY_QP: %v", res.Status)
		}
		return res.Out
	}
	const vlanCtrl, sched, feup, fvlRx = 32 + 1, 64, 66, 67
	out := query(0)
	if out[vlanCtrl] != 1<<6|1<<1|1<<0 || out[feup] != 1<<6|1<<5|1<<3 || out[fvlRx] != 1 || out[sched]>>3&7 != 5 {
		t.Fatalf("VST VF: vlan_control %#x feup %#x fvl_rx %#x priority %d", out[vlanCtrl], out[feup], out[fvlRx], out[sched]>>3&7)
	}
	out = query(1)
	if out[vlanCtrl] != 0 || out[feup] != 0 || out[fvlRx] != 0 {
		t.Fatalf("VGT VF: vlan_control %#x feup %#x fvl_rx %#x", out[vlanCtrl], out[feup], out[fvlRx])
	}
}
