package hca

import (
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/madtest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// TestPortMgmtChange: an SM's Sets on physical port 1 reach the VFs as
// mlx4's PF delivers them, and QUERY_PORT shows the new state.
func TestPortMgmtChange(t *testing.T) {
	r := newRig(t, 2, nil)
	e, err := mad.New(MADNode(r.h.Cfg), mad.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.h.AttachMAD(e); err != nil {
		t.Fatal(err)
	}
	e.Observe(func(c *mad.PortChange) {
		if _, err := r.h.PortMgmtChange(c); err != nil {
			t.Errorf("PortMgmtChange: %v", err)
		}
	})
	v0, v1 := r.vf(0), r.vf(1)
	v0.setupEQ(1, 6)
	v1.setupEQ(1, 6)
	ring := uint64(0x10000) // setupEQ's first page
	set := func(attr uint16, mod uint32, data []byte) {
		t.Helper()
		out, res := e.ProcessMAD(0, 1, madtest.SMIWC(1), nil, madtest.SMP(mad.MethodSet, attr, mod, 0, data))
		if res != mad.Success|mad.Reply || out.Status() != 0 {
			t.Fatalf("Set 0x%x: result %d status 0x%x", attr, res, out.Status())
		}
	}
	setState := func(st mad.PortState, lid uint16, rereg bool) {
		t.Helper()
		pi, _ := e.PortInfo(1)
		pi.PortState, pi.PortPhysicalState, pi.LID, pi.ClientReregister = st, mad.PhysNoChange, lid, rereg
		b := make([]byte, 64)
		_ = pi.Encode(b)
		set(mad.AttrPortInfo, 1, b)
	}
	linkUp := func(v *vf) bool {
		c := v.cmd(mlx4.QUERY_PORT, 0, 1, 0, nil, true)
		wantS(t, "QUERY_PORT", v.run(c), mlx4.OK)
		return c.Outbox[0]&0x80 != 0
	}
	setState(mad.PortDown, 5, false) // the link retrains: Init, not Active
	if linkUp(v0) {
		t.Fatal("QUERY_PORT: link up after the SM took the port down")
	}
	setState(mad.PortArmed, 5, false)
	setState(mad.PortActive, 0x40, true) // Active, a new LID, client reregister
	if !linkUp(v0) {
		t.Fatal("QUERY_PORT: link down with the port Active")
	}
	pk := make([]byte, 64)
	out, _ := e.ProcessMAD(0, 1, madtest.SMIWC(1), nil, madtest.SMP(mad.MethodGet, mad.AttrPKeyTable, 0, 0, nil))
	copy(pk, out.SMPData())
	binary.BigEndian.PutUint16(pk[2:], 0x8123) // physical index 1: both VFs map it
	set(mad.AttrPKeyTable, 0, pk)
	g := make([]byte, 64)
	out, _ = e.ProcessMAD(0, 1, madtest.SMIWC(1), nil, madtest.SMP(mad.MethodGet, mad.AttrGUIDInfo, 0, 0, nil))
	copy(g, out.SMPData())
	binary.BigEndian.PutUint64(g[8*2:], 0xA11A5) // index 2: VF 1's alias GUID
	set(mad.AttrGUIDInfo, 0, g)

	type ev struct{ typ, sub, port uint8 }
	want := map[*vf][]ev{
		v0: {{mlx4.EventPortChange, 1, 1}, {mlx4.EventPortChange, 4, 1}, {mlx4.EventPortMngChg, mlx4.DEV_PMC_SUBTYPE_PORT_INFO, 1},
			{mlx4.EventPortMngChg, mlx4.DEV_PMC_SUBTYPE_PKEY_TABLE, 1}},
		v1: {{mlx4.EventPortChange, 1, 1}, {mlx4.EventPortChange, 4, 1}, {mlx4.EventPortMngChg, mlx4.DEV_PMC_SUBTYPE_PORT_INFO, 1},
			{mlx4.EventPortMngChg, mlx4.DEV_PMC_SUBTYPE_PKEY_TABLE, 1}, {mlx4.EventPortMngChg, mlx4.DEV_PMC_SUBTYPE_GUID_INFO, 1}},
	}
	for v, evs := range want {
		for i, w := range evs {
			e := v.readEQE(ring, i)
			port := e[mlx4.EQEPortMngChgPort]
			if w.typ == mlx4.EventPortChange {
				port = e[mlx4.EQEPortChangePort] >> 4
			}
			if e[mlx4.EQEType] != w.typ || e[mlx4.EQESubtype] != w.sub || port != w.port {
				t.Errorf("VF %d EQE %d: % x, want type 0x%x subtype 0x%x port %d", v.n, i, e[:16], w.typ, w.sub, w.port)
			}
			if w.sub == mlx4.DEV_PMC_SUBTYPE_PORT_INFO && w.typ == mlx4.EventPortMngChg {
				if got := binary.BigEndian.Uint32(e[mlx4.EQEPortMngChgChangedAttr:]); got != mlx4.EQ_PORT_INFO_LID_CHANGE_MASK|mlx4.EQ_PORT_INFO_CLIENT_REREG_MASK {
					t.Errorf("VF %d changed_attr %#x, want LID_CHANGE|CLIENT_REREG", v.n, got)
				}
			}
		}
		if e := v.readEQE(ring, len(evs)); e[mlx4.EQEType] != 0 {
			t.Errorf("VF %d: unexpected EQE %d: % x", v.n, len(evs), e[:16])
		}
	}
	if r.h.Funcs[1].PortGUID[1] != 0xA11A5 {
		t.Errorf("VF 1's port 1 GUID %#x after the SM set its alias GUID", r.h.Funcs[1].PortGUID[1])
	}
}
