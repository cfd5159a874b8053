package hca

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// vstRig has an Ethernet port 1; VF 0 is in VST (VLAN vlan, priority 5) with
// spoof check, VF 1 is VGT; both are activated as at VHCR_EN.
func vstRig(t *testing.T, vlan int) *rig {
	t.Helper()
	on := true
	r := newRig(t, 2, func(c *config.Config) {
		c.Ports[0].LinkLayer = "eth"
		c.VFs.Overrides = map[string]config.VF{"0": {VST: &config.VST{VLAN: vlan, QoS: 5}, SpoofCheck: &on}}
	})
	for vf := range 2 {
		if err := r.h.ActivateVF(vf); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// udToRTR takes a new UD QP of v on VF port 1 to RTR and returns its stored
// context (what QUERY_QP would show). The QP's source MAC index is one the
// VF registered, as mlx4_ib does for a RoCE UD QP (roce_verify_mac).
func udToRTR(t *testing.T, v *vf, edit func(b []byte)) (uint32, []byte) {
	t.Helper()
	v.setupEQ(1, 4)
	cq := v.createCQ()
	qpn, q := v.newQP(cq)
	q.st = mlx4.QP_ST_UD
	v.must(v.qpCmd(mlx4.RST2INIT_QP, qpn, &q), "RST2INIT")
	c := v.cmd(mlx4.ALLOC_RES, 0x0002c9aabb00+uint64(v.n), uint32(restrack.MAC)|1<<8, resOpReserveAndMap, nil, false)
	v.must(v.run(c), "MAC")
	q.smac = uint8(c.OutParam)
	in := q.bytes()
	binary.BigEndian.PutUint32(in[mlx4.QPMailboxContext+mlx4.QPCParam3:], mlx4.STRIP_VLAN)
	in[mlx4.QPMailboxPriPath+mlx4.PathVLANControl] = 0x7f // everything the VF might try, IF_COUNTER excluded
	if edit != nil {
		edit(in)
	}
	v.must(v.run(v.cmd(mlx4.INIT2RTR_QP, 0, qpn, 0, in, false)), "INIT2RTR")
	return qpn, v.r.h.fw.qps[qpn].Ctx[:]
}

func TestVSTAndSpoofCheckRewriteINIT2RTR(t *testing.T) {
	r := vstRig(t, 100)
	vlanIdx, macIdx := r.h.fw.vfs[0].Vport[0].VLANIdx, r.h.fw.vfs[0].Vport[0].MACIdx
	if vlanIdx < 0 || r.h.fw.ports[0].VLAN[vlanIdx].Value != 100 || macIdx < 0 || r.h.fw.ports[0].MAC[macIdx].Value != r.h.VFMAC(0, 1) {
		t.Fatalf("activation registered VLAN index %d, MAC index %d", vlanIdx, macIdx)
	}
	_, ctx := udToRTR(t, r.vf(0), func(b []byte) { b[mlx4.QPMailboxPriPath+mlx4.PathGRHMyLMC] |= 0x80 })
	want := map[string][2]int{
		"vlan_control":          {int(ctx[mlx4.QPMailboxPriPath+mlx4.PathVLANControl]), mlx4.VLAN_CTRL_ETH_TX_BLOCK_TAGGED | mlx4.VLAN_CTRL_ETH_RX_BLOCK_PRIO | mlx4.VLAN_CTRL_ETH_RX_BLOCK_UNTAG},
		"vlan_index":            {int(ctx[mlx4.QPMailboxPriPath+mlx4.PathVLANIndex]), vlanIdx},
		"fvl_rx":                {int(ctx[mlx4.QPMailboxPriPath+mlx4.PathFVLRx]), mlx4.FVL_RX_FORCE_ETH_VLAN},
		"fl":                    {int(ctx[mlx4.QPMailboxPriPath+mlx4.PathFL] & (mlx4.FL_CV | mlx4.FL_ETH_HIDE_CQE_VLAN)), mlx4.FL_CV | mlx4.FL_ETH_HIDE_CQE_VLAN},
		"feup":                  {int(ctx[mlx4.QPMailboxPriPath+mlx4.PathFEUP]), mlx4.FEUP_FORCE_ETH_UP | mlx4.FVL_FORCE_ETH_VLAN | mlx4.FSM_FORCE_ETH_SRC_MAC},
		"priority":              {int(ctx[mlx4.QPMailboxPriPath+mlx4.PathSchedQueue] >> 3 & 7), 5},
		"grh_mylmc":             {int(ctx[mlx4.QPMailboxPriPath+mlx4.PathGRHMyLMC]), 0x80 | macIdx},
		"optpar VLAN stripping": {int(binary.BigEndian.Uint32(ctx[mlx4.QPMailboxOptPar:]) >> 21 & 1), 1},
		"param3 strip VLAN":     {int(binary.BigEndian.Uint32(ctx[mlx4.QPMailboxContext+mlx4.QPCParam3:]) >> 30 & 1), 0},
	}
	for f, v := range want {
		if v[0] != v[1] {
			t.Errorf("%s = %#x, want %#x", f, v[0], v[1])
		}
	}

	// VF 1 is VGT without spoof check: its context is its own.
	_, ctx = udToRTR(t, r.vf(1), nil)
	if ctx[mlx4.QPMailboxPriPath+mlx4.PathVLANControl] != 0x7f || ctx[mlx4.QPMailboxPriPath+mlx4.PathFEUP] != 0 || binary.BigEndian.Uint32(ctx[mlx4.QPMailboxContext+mlx4.QPCParam3:]) != mlx4.STRIP_VLAN {
		t.Fatalf("VGT VF's context rewritten: vlan_control %#x feup %#x", ctx[mlx4.QPMailboxPriPath+mlx4.PathVLANControl], ctx[mlx4.QPMailboxPriPath+mlx4.PathFEUP])
	}
}

func TestVSTPriorityTaggedAndLinkDown(t *testing.T) {
	r := vstRig(t, 0)
	_, ctx := udToRTR(t, r.vf(0), nil)
	if got := ctx[mlx4.QPMailboxPriPath+mlx4.PathVLANControl]; got != mlx4.VLAN_CTRL_ETH_TX_BLOCK_TAGGED|mlx4.VLAN_CTRL_ETH_RX_BLOCK_TAGGED {
		t.Fatalf("priority-tagged VST: vlan_control %#x", got)
	}
	r = vstRig(t, 7)
	r.h.Funcs[0].LinkState = "down"
	_, ctx = udToRTR(t, r.vf(0), func(b []byte) { b[mlx4.QPMailboxPriPath+mlx4.PathVLANControl] = mlx4.CTRL_ETH_SRC_CHECK_IF_COUNTER })
	if got := ctx[mlx4.QPMailboxPriPath+mlx4.PathVLANControl]; got != mlx4.CTRL_ETH_SRC_CHECK_IF_COUNTER|0x77 {
		t.Fatalf("link forced down: vlan_control %#x, want every block bit and IF_COUNTER kept", got)
	}
}

// TestVSTSurvivesLaterTransitions: a VF cannot clear the forced bits by
// sending them cleared in RTR2RTS.
func TestVSTSurvivesLaterTransitions(t *testing.T) {
	r := vstRig(t, 100)
	v := r.vf(0)
	qpn, _ := udToRTR(t, v, nil)
	q := qpc{st: mlx4.QP_ST_UD, optpar: mlx4.QP_OPTPAR_PRIMARY_ADDR_PATH}
	in := q.bytes()
	v.must(v.run(v.cmd(mlx4.RTR2RTS_QP, 0, qpn, 0, in, false)), "RTR2RTS")
	ctx := r.h.fw.qps[qpn].Ctx
	if ctx[mlx4.QPMailboxPriPath+mlx4.PathFEUP]&(mlx4.FVL_FORCE_ETH_VLAN|mlx4.FSM_FORCE_ETH_SRC_MAC) != mlx4.FVL_FORCE_ETH_VLAN|mlx4.FSM_FORCE_ETH_SRC_MAC || ctx[mlx4.QPMailboxPriPath+mlx4.PathVLANIndex] != byte(r.h.fw.vfs[0].Vport[0].VLANIdx) {
		t.Fatalf("after RTR2RTS: feup %#x vlan_index %d", ctx[mlx4.QPMailboxPriPath+mlx4.PathFEUP], ctx[mlx4.QPMailboxPriPath+mlx4.PathVLANIndex])
	}
}

func TestVportResetAndTableFull(t *testing.T) {
	r := vstRig(t, 100)
	vlanIdx, macIdx := r.h.fw.vfs[0].Vport[0].VLANIdx, r.h.fw.vfs[0].Vport[0].MACIdx
	r.h.ResetFunction(0)
	if r.h.fw.ports[0].VLAN[vlanIdx].Refs != 0 || r.h.fw.ports[0].MAC[macIdx].Refs != 0 {
		t.Fatal("RESET left the VST VLAN or the spoof-checked MAC registered")
	}
	if r.h.fw.vfs[0].Vport[0].Active {
		t.Fatal("RESET left the vport active")
	}
	// Activating twice registers once.
	for range 2 {
		if err := r.h.ActivateVF(0); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.h.fw.ports[0].VLAN[r.h.fw.vfs[0].Vport[0].VLANIdx].Refs; n != 1 {
		t.Fatalf("VST VLAN referenced %d times", n)
	}
	// A full MAC table: the VLAN registered first is unregistered again.
	r.h.ResetFunction(0)
	tab := &r.h.fw.ports[0].MAC
	for i := range tab {
		if tab[i].Refs == 0 {
			tab[i] = TableEntry{Value: uint64(0x020000000000 + i), Refs: 1}
		}
	}
	if err := r.h.ActivateVF(0); !errors.Is(err, ErrVportResources) {
		t.Fatalf("activation with a full MAC table: %v", err)
	}
	for i := range r.h.fw.ports[0].VLAN {
		if e := r.h.fw.ports[0].VLAN[i]; e.Refs > 0 && e.Value == 100 {
			t.Fatal("failed activation left the VST VLAN registered")
		}
	}
}

// toRTR takes a new RC QP of v to RTR with counter index idx in its
// INIT2RTR context and returns the status and the stored counter index.
func toRTR(t *testing.T, v *vf, cq uint32, idx byte) (uint32, mlx4.Status, byte) {
	t.Helper()
	qpn, q := v.newQP(cq)
	v.must(v.qpCmd(mlx4.RST2INIT_QP, qpn, &q), "RST2INIT")
	in := q.bytes()
	in[qpcPriCounter] = idx
	s := v.run(v.cmd(mlx4.INIT2RTR_QP, 0, qpn, 0, in, false))
	return qpn, s, v.r.h.fw.qps[qpn].Ctx[qpcPriCounter]
}

// TestQPCounter: handle_counter. A sink counter index gets the VF's counter
// on the port (reserved once, shared by its QPs on that port); the VF's own
// counter is kept; another VF's or an unallocated one is BAD_PARAM, at
// INIT2RTR and (stricter than mlx4) at later transitions whose optpar has
// COUNTER_INDEX (without it the index is not applied); RESET frees the
// counter.
func TestQPCounter(t *testing.T) {
	r := newRig(t, 2, nil)
	sink := byte(r.h.Cfg.Resources.Counters - 1)
	a, b := r.vf(0), r.vf(1)
	a.setupEQ(1, 4)
	b.setupEQ(1, 4)
	acq, bcq := a.createCQ(), b.createCQ()

	_, s, got := toRTR(t, a, acq, sink)
	if s != mlx4.OK || got == sink {
		t.Fatalf("sink counter: %v, counter %d", s, got)
	}
	if o, err := r.h.Res.Peek(0, restrack.Counter, uint64(got)); err != nil || o == nil {
		t.Fatalf("assigned counter %d is not VF 0's: %v", got, err)
	}
	if _, s, again := toRTR(t, a, acq, sink); s != mlx4.OK || again != got {
		t.Fatalf("second QP on the port: %v, counter %d, want %d", s, again, got)
	}
	if n := r.h.Counts(0)[restrack.Counter]; n != 1 {
		t.Fatalf("VF 0 holds %d counters, want 1", n)
	}
	own := byte(b.mustAlloc(restrack.Counter, resOpReserve, 0))
	if _, s, kept := toRTR(t, b, bcq, own); s != mlx4.OK || kept != own {
		t.Fatalf("VF 1's own counter: %v, stored %d", s, kept)
	}
	for _, tc := range []struct {
		name   string
		idx    byte
		reason refusal.Reason
	}{{"another VF's counter", own, refusal.NotOwner}, {"an unallocated counter", sink - 1, refusal.NotFound}} {
		qpn, q := a.newQP(acq)
		a.must(a.qpCmd(mlx4.RST2INIT_QP, qpn, &q), "RST2INIT")
		in := q.bytes()
		in[qpcPriCounter] = tc.idx
		c := a.cmd(mlx4.INIT2RTR_QP, 0, qpn, 0, in, false)
		if s := a.run(c); s != mlx4.BAD_PARAM || c.Reason != tc.reason {
			t.Errorf("INIT2RTR with %s: %v (%v), want BAD_PARAM (%v)", tc.name, s, c.Reason, tc.reason)
		}
	}
	qpn, _, _ := toRTR(t, a, acq, sink)
	q := qpc{st: mlx4.QP_ST_RC, optpar: mlx4.QP_OPTPAR_COUNTER_INDEX}
	in := q.bytes()
	in[qpcPriCounter] = own
	if s := a.run(a.cmd(mlx4.RTR2RTS_QP, 0, qpn, 0, in, false)); s != mlx4.BAD_PARAM {
		t.Fatalf("RTR2RTS naming another VF's counter: %v", s)
	}
	// Without COUNTER_INDEX in optpar the index is not applied: the QP
	// keeps its counter whatever the context says.
	q.optpar = 0
	in = q.bytes()
	in[qpcPriCounter] = own
	kept := r.h.fw.qps[qpn].Ctx[qpcPriCounter]
	if s := a.run(a.cmd(mlx4.RTR2RTS_QP, 0, qpn, 0, in, false)); s != mlx4.OK || r.h.fw.qps[qpn].Ctx[qpcPriCounter] != kept {
		t.Fatalf("RTR2RTS with a counter index but no COUNTER_INDEX optpar: %v, counter %d, want OK and %d kept", s, r.h.fw.qps[qpn].Ctx[qpcPriCounter], kept)
	}
	r.h.ResetFunction(0)
	if len(r.h.fw.counterPort) != 1 { // VF 1's own counter
		t.Fatalf("counter ports after VF 0's reset: %v", r.h.fw.counterPort)
	}
}

// TestQPCounterNoneLeft: with no counter left for the VF, the QP keeps the
// sink and INIT2RTR succeeds (mlx4 ignores -ENOSPC and -ENOENT here).
func TestQPCounterNoneLeft(t *testing.T) {
	zero := 0
	r := newRig(t, 1, func(c *config.Config) {
		c.VFs.Overrides = map[string]config.VF{"0": {Quotas: map[string]config.Quota{"counter": {Quota: &zero, Guaranteed: &zero}}}}
	})
	sink := byte(r.h.Cfg.Resources.Counters - 1)
	a := r.vf(0)
	a.setupEQ(1, 4)
	if _, s, got := toRTR(t, a, a.createCQ(), sink); s != mlx4.OK || got != sink {
		t.Fatalf("no counter left: %v, counter %d, want the sink %d", s, got, sink)
	}
}
