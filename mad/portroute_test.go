package mad_test

import (
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/madtest"
)

// wantRoute checks that the published view of port p is what PortInfo and
// PKey say.
func wantRoute(t *testing.T, e *mad.Engine, p uint8) {
	t.Helper()
	r := e.Route(p)
	if r == nil {
		t.Fatalf("port %d: no route view", p)
	}
	pi, err := e.PortInfo(p)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != pi.PortState || r.LID != pi.LID || r.LMC != pi.LMC&7 || r.GIDPrefix != pi.GIDPrefix {
		t.Fatalf("port %d: view %+v, PortInfo state %d LID %#x LMC %d prefix %#x", p, *r, pi.PortState, pi.LID, pi.LMC, pi.GIDPrefix)
	}
	for i := range mad.MaxPartitionCap {
		k, _ := e.PKey(p, i)
		if r.PKeys[i] != k {
			t.Fatalf("port %d: view P_Key[%d] %#x, PKey %#x", p, i, r.PKeys[i], k)
		}
	}
}

// TestRouteFollowsChanges: the routing view a data path reads without the
// engine's lock is the port as PortInfo and the P_Key table show it, from
// the start and after every kind of change: an SM's Set of PortInfo (LID,
// LMC, state, GID prefix) and of P_KeyTable, SetPortState, Inject (also
// one that fails after it applied its first field).
func TestRouteFollowsChanges(t *testing.T) {
	f := newFixture(t, nil)
	e := f.e
	wc := madtest.SMIWC(1)
	for p := uint8(1); p <= 2; p++ {
		wantRoute(t, e, p)
	}
	if e.Route(0) != nil || e.Route(3) != nil {
		t.Fatal("a view of a port the node does not have")
	}
	old := e.Route(1)

	n := f.portInfo(t, 1)
	n.LID, n.LMC, n.GIDPrefix, n.PortState = 0x40, 2, 0xfe80000000001234, mad.PortNoChange
	out, res := e.ProcessMAD(0, 1, wc, nil, madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 1, 0, portInfoSetData(t, n)))
	wantReply(t, res, &out, 0)
	wantRoute(t, e, 1)
	if r := e.Route(1); r.LID != 0x40 || r.LMC != 2 || r.GIDPrefix != 0xfe80000000001234 {
		t.Fatalf("view after Set %+v", *r)
	}
	if old.LID == 0x40 {
		t.Fatal("a published view changed in place")
	}

	var pk mad.PKeyTable
	pk[3] = 0x8123
	b := make([]byte, 64)
	_ = pk.Encode(b)
	out, res = e.ProcessMAD(0, 1, wc, nil, madtest.SMP(mad.MethodSet, mad.AttrPKeyTable, 0, 0, b))
	wantReply(t, res, &out, 0)
	wantRoute(t, e, 1)
	if e.Route(1).PKeys[3] != 0x8123 {
		t.Fatal("P_Key Set not in the view")
	}

	if err := e.SetPortState(1, mad.PortDown); err != nil {
		t.Fatal(err)
	}
	wantRoute(t, e, 1)
	if e.Route(1).State != mad.PortDown {
		t.Fatal("SetPortState not in the view")
	}

	if _, err := e.Inject(2, mad.Injection{What: mad.ChangeLID | mad.ChangeGIDPrefix, LID: 0x77, GIDPrefix: 0xfe80000000000042}); err != nil {
		t.Fatal(err)
	}
	wantRoute(t, e, 2)
	// A failed injection whose LID it applied before the bad P_Key index.
	if _, err := e.Inject(2, mad.Injection{What: mad.ChangeLID | mad.ChangePKeys, LID: 0x78, PKeyIndex: 1 << 20}); err == nil {
		t.Fatal("an out-of-range P_Key index injected")
	}
	wantRoute(t, e, 2)
	wantRoute(t, e, 1)
}
