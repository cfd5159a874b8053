package mad_test

import (
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/madtest"
)

// The observer hears what an SM's Sets changed: state, LID, SM LID, client
// reregister, P_Key entries, alias GUIDs; a Set that changes nothing and a
// Get are not reported.
func TestPortObserver(t *testing.T) {
	f := newFixture(t, func(c *mad.NodeConfig) {
		c.Ports[0].State = mad.PortInit
		c.Ports[0].GUIDs = []uint64{0x11, 0x22, 0x33}
	})
	var got []mad.PortChange
	f.e.Observe(func(c *mad.PortChange) { got = append(got, *c) })
	set := func(attr uint16, mod uint32, data []byte) {
		t.Helper()
		out, res := f.e.ProcessMAD(0, 1, madtest.SMIWC(1), nil, madtest.SMP(mad.MethodSet, attr, mod, 0, data))
		wantReply(t, res, &out, 0)
	}
	pi := f.portInfo(t, 1)
	pi.PortState, pi.PortPhysicalState = mad.PortArmed, mad.PhysNoChange
	pi.LID, pi.MasterSMLID, pi.ClientReregister = 0x21, 0x22, true
	set(mad.AttrPortInfo, 1, portInfoSetData(t, pi))
	if len(got) != 1 || got[0].Port != 1 || got[0].State != mad.PortArmed ||
		got[0].What != mad.ChangeState|mad.ChangeLID|mad.ChangeSMLID|mad.ChangeClientRereg {
		t.Fatalf("PortInfo Set: %+v", got)
	}
	got = nil
	pi.ClientReregister = false
	pi.PortState = mad.PortNoChange
	set(mad.AttrPortInfo, 1, portInfoSetData(t, pi))
	if len(got) != 0 {
		t.Fatalf("a Set that changes nothing reported %+v", got)
	}
	pk := make([]byte, 64)
	out, _ := f.e.ProcessMAD(0, 1, madtest.SMIWC(1), nil, madtest.SMP(mad.MethodGet, mad.AttrPKeyTable, 0, 0, nil))
	copy(pk, out.SMPData())
	be.PutUint16(pk[2*3:], 0x8003)
	set(mad.AttrPKeyTable, 0, pk)
	if len(got) != 1 || got[0].What != mad.ChangePKeys || !got[0].PKeyChanged(3) || got[0].PKeyChanged(0) {
		t.Fatalf("P_Key Set: %+v", got)
	}
	got = nil
	g := make([]byte, 64)
	for i, v := range []uint64{0, 0x11, 0x99, 0x33} {
		be.PutUint64(g[8*i:], v)
	}
	set(mad.AttrGUIDInfo, 0, g)
	if len(got) != 1 || got[0].What != mad.ChangeGUIDs || got[0].GUIDs != 1<<2 {
		t.Fatalf("GUIDInfo Set: %+v", got)
	}
}
