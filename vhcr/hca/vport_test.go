package hca

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/restrack"
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
// context (what QUERY_QP would show).
func udToRTR(t *testing.T, v *vf, edit func(b []byte)) (uint32, []byte) {
	t.Helper()
	v.setupEQ(1, 4)
	cq := v.createCQ()
	qpn, q := v.newQP(cq)
	q.st = stUD
	v.must(v.qpCmd(mlx4.RST2INIT_QP, qpn, &q), "RST2INIT")
	in := q.bytes()
	binary.BigEndian.PutUint32(in[qpcParam3:], param3StripVLAN)
	in[qpcPriVLANCtrl] = 0x7f // everything the VF might try, IF_COUNTER excluded
	if edit != nil {
		edit(in)
	}
	v.must(v.run(v.cmd(mlx4.INIT2RTR_QP, 0, qpn, 0, in, false)), "INIT2RTR")
	return qpn, v.r.h.fw.qps[qpn].ctx[:]
}

func TestVSTAndSpoofCheckRewriteINIT2RTR(t *testing.T) {
	r := vstRig(t, 100)
	vlanIdx, macIdx := r.h.fw.vfs[0].vport[0].vlanIdx, r.h.fw.vfs[0].vport[0].macIdx
	if vlanIdx < 0 || r.h.fw.ports[0].vlan[vlanIdx].value != 100 || macIdx < 0 || r.h.fw.ports[0].mac[macIdx].value != r.h.VFMAC(0, 1) {
		t.Fatalf("activation registered VLAN index %d, MAC index %d", vlanIdx, macIdx)
	}
	_, ctx := udToRTR(t, r.vf(0), func(b []byte) { b[qpcGRHMyLMC] = 0x80 | 0x11 })
	want := map[string][2]int{
		"vlan_control":          {int(ctx[qpcPriVLANCtrl]), vlanTxBlockTagged | vlanRxBlockPrio | vlanRxBlockUntag},
		"vlan_index":            {int(ctx[qpcPriVLANIndex]), vlanIdx},
		"fvl_rx":                {int(ctx[qpcPriFVLRx]), fvlRxForceVLAN},
		"fl":                    {int(ctx[qpcPriFL] & (flCV | flHideCQEVLAN)), flCV | flHideCQEVLAN},
		"feup":                  {int(ctx[qpcPriFEUP]), feupForceUP | feupForceVLAN | feupForceSrcMAC},
		"priority":              {int(ctx[qpcSched] >> 3 & 7), 5},
		"grh_mylmc":             {int(ctx[qpcGRHMyLMC]), 0x80 | macIdx},
		"optpar VLAN stripping": {int(binary.BigEndian.Uint32(ctx[qpcOptpar:]) >> 21 & 1), 1},
		"param3 strip VLAN":     {int(binary.BigEndian.Uint32(ctx[qpcParam3:]) >> 30 & 1), 0},
	}
	for f, v := range want {
		if v[0] != v[1] {
			t.Errorf("%s = %#x, want %#x", f, v[0], v[1])
		}
	}

	// VF 1 is VGT without spoof check: its context is its own.
	_, ctx = udToRTR(t, r.vf(1), nil)
	if ctx[qpcPriVLANCtrl] != 0x7f || ctx[qpcPriFEUP] != 0 || binary.BigEndian.Uint32(ctx[qpcParam3:]) != param3StripVLAN {
		t.Fatalf("VGT VF's context rewritten: vlan_control %#x feup %#x", ctx[qpcPriVLANCtrl], ctx[qpcPriFEUP])
	}
}

func TestVSTPriorityTaggedAndLinkDown(t *testing.T) {
	r := vstRig(t, 0)
	_, ctx := udToRTR(t, r.vf(0), nil)
	if got := ctx[qpcPriVLANCtrl]; got != vlanTxBlockTagged|vlanRxBlockTagged {
		t.Fatalf("priority-tagged VST: vlan_control %#x", got)
	}
	r = vstRig(t, 7)
	r.h.Funcs[0].LinkState = "down"
	_, ctx = udToRTR(t, r.vf(0), func(b []byte) { b[qpcPriVLANCtrl] = ctrlIfCounter })
	if got := ctx[qpcPriVLANCtrl]; got != ctrlIfCounter|0x77 {
		t.Fatalf("link forced down: vlan_control %#x, want every block bit and IF_COUNTER kept", got)
	}
}

// TestVSTSurvivesLaterTransitions: a VF cannot clear the forced bits by
// sending them cleared in RTR2RTS.
func TestVSTSurvivesLaterTransitions(t *testing.T) {
	r := vstRig(t, 100)
	v := r.vf(0)
	qpn, _ := udToRTR(t, v, nil)
	q := qpc{st: stUD, optpar: optPriAddrPath}
	in := q.bytes()
	v.must(v.run(v.cmd(mlx4.RTR2RTS_QP, 0, qpn, 0, in, false)), "RTR2RTS")
	ctx := r.h.fw.qps[qpn].ctx
	if ctx[qpcPriFEUP]&(feupForceVLAN|feupForceSrcMAC) != feupForceVLAN|feupForceSrcMAC || ctx[qpcPriVLANIndex] != byte(r.h.fw.vfs[0].vport[0].vlanIdx) {
		t.Fatalf("after RTR2RTS: feup %#x vlan_index %d", ctx[qpcPriFEUP], ctx[qpcPriVLANIndex])
	}
}

func TestVportResetAndTableFull(t *testing.T) {
	r := vstRig(t, 100)
	vlanIdx, macIdx := r.h.fw.vfs[0].vport[0].vlanIdx, r.h.fw.vfs[0].vport[0].macIdx
	r.h.ResetFunction(0)
	if r.h.fw.ports[0].vlan[vlanIdx].refs != 0 || r.h.fw.ports[0].mac[macIdx].refs != 0 {
		t.Fatal("RESET left the VST VLAN or the spoof-checked MAC registered")
	}
	if r.h.fw.vfs[0].vport[0].active {
		t.Fatal("RESET left the vport active")
	}
	// Activating twice registers once.
	for range 2 {
		if err := r.h.ActivateVF(0); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.h.fw.ports[0].vlan[r.h.fw.vfs[0].vport[0].vlanIdx].refs; n != 1 {
		t.Fatalf("VST VLAN referenced %d times", n)
	}
	// A full MAC table: the VLAN registered first is unregistered again.
	r.h.ResetFunction(0)
	tab := &r.h.fw.ports[0].mac
	for i := range tab {
		if tab[i].refs == 0 {
			tab[i] = tableEntry{value: uint64(0x020000000000 + i), refs: 1}
		}
	}
	if err := r.h.ActivateVF(0); !errors.Is(err, ErrVportResources) {
		t.Fatalf("activation with a full MAC table: %v", err)
	}
	for i := range r.h.fw.ports[0].vlan {
		if e := r.h.fw.ports[0].vlan[i]; e.refs > 0 && e.value == 100 {
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
	return qpn, s, v.r.h.fw.qps[qpn].ctx[qpcPriCounter]
}

// TestQPCounter: handle_counter. A sink counter index gets the VF's counter
// on the port (reserved once, shared by its QPs on that port); the VF's own
// counter is kept; another VF's or an unallocated one is BAD_PARAM, at
// INIT2RTR and (stricter than mlx4) at later transitions; RESET frees the
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
		reason mlx4.Reason
	}{{"another VF's counter", own, mlx4.ReasonNotOwner}, {"an unallocated counter", sink - 1, mlx4.ReasonNotFound}} {
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
	q := qpc{st: stRC}
	in := q.bytes()
	in[qpcPriCounter] = own
	if s := a.run(a.cmd(mlx4.RTR2RTS_QP, 0, qpn, 0, in, false)); s != mlx4.BAD_PARAM {
		t.Fatalf("RTR2RTS naming another VF's counter: %v", s)
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
