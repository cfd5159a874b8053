package hca

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hcr"
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
	v.must(v.qpCmd(hcr.RST2INIT_QP, qpn, &q), "RST2INIT")
	in := q.bytes()
	binary.BigEndian.PutUint32(in[qpcParam3:], param3StripVLAN)
	in[qpcPriVLANCtrl] = 0x7f // everything the VF might try, IF_COUNTER excluded
	if edit != nil {
		edit(in)
	}
	v.must(v.run((*HCA).INIT2RTR_QP, v.cmd(hcr.INIT2RTR_QP, 0, qpn, 0, in, false)), "INIT2RTR")
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
	v.must(v.run((*HCA).RTR2RTS_QP, v.cmd(hcr.RTR2RTS_QP, 0, qpn, 0, in, false)), "RTR2RTS")
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
