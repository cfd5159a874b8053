package mad_test

import (
	"sync"
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/madtest"
)

// lftSet is the SubnSet(LinearForwardingTable) of one block as OpenSM sends
// it: every entry port, except those in routes.
func lftSet(t *testing.T, s *mad.Switch, block uint32, port uint8, routes map[int]uint8) {
	t.Helper()
	b := make([]byte, 64)
	for i := range b {
		b[i] = port
		if p, ok := routes[i]; ok {
			b[i] = p
		}
	}
	out, res := s.ProcessSMP(1, madtest.SMP(mad.MethodSet, mad.AttrLinearFwdTable, block, 0, b))
	wantReply(t, res, &out, 0)
}

// TestSwitchForwardingView: what the data path reads of the switch (Forward,
// PortActive) follows the SM's Sets of the LFT, SwitchInfo.LinearFDBTop and
// PortInfo.PortState, and the links; LFT Gets read back what the Sets wrote.
func TestSwitchForwardingView(t *testing.T) {
	s := newSwitch(t)
	for p := range 9 {
		if s.PortActive(p) {
			t.Fatalf("port %d Active on a fresh switch", p)
		}
	}
	lftSet(t, s, 0, 0xFF, map[int]uint8{5: 1, 6: 2, 7: 3})
	if s.Forward(6) != 0xFF {
		t.Fatal("a route above LinearFDBTop (0) forwards")
	}
	si := mad.SwitchInfo{LinearFDBTop: 6, LifeTimeValue: 18}
	data := make([]byte, 64)
	_ = si.Encode(data)
	out, res := s.ProcessSMP(1, madtest.SMP(mad.MethodSet, mad.AttrSwitchInfo, 0, 0, data))
	wantReply(t, res, &out, 0)
	if s.Forward(5) != 1 || s.Forward(6) != 2 || s.Forward(7) != 0xFF || s.Forward(4) != 0xFF || s.Forward(0xC000) != 0xFF {
		t.Fatalf("LFT 5→%d 6→%d 7→%d (above top) 4→%d", s.Forward(5), s.Forward(6), s.Forward(7), s.Forward(4))
	}
	out, res = s.ProcessSMP(1, madtest.SMP(mad.MethodGet, mad.AttrLinearFwdTable, 0, 0, nil))
	wantReply(t, res, &out, 0)
	if d := out.SMPData(); d[5] != 1 || d[6] != 2 || d[7] != 3 || d[8] != 0xFF {
		t.Fatalf("LFT block 0 reads %v", d[:9])
	}
	// The port state: Active only after the SM's Init → Armed → Active.
	if err := s.SetLink(2, true); err != nil {
		t.Fatal(err)
	}
	setState := func(st mad.PortState) {
		pi := mad.PortInfo{PortState: st, NeighborMTU: 4, LinkWidthEnabled: 0xFF, LinkSpeedEnabled: 0xF}
		b := make([]byte, 64)
		_ = pi.Encode(b)
		out, res := s.ProcessSMP(1, madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 2, 0, b))
		wantReply(t, res, &out, 0)
	}
	setState(mad.PortArmed)
	if s.PortActive(2) {
		t.Fatal("an Armed port passes data")
	}
	setState(mad.PortActive)
	if !s.PortActive(2) || s.PortActive(1) || s.PortActive(0) || s.PortActive(9) {
		t.Fatalf("Active ports 0..2,9: %v %v %v %v", s.PortActive(0), s.PortActive(1), s.PortActive(2), s.PortActive(9))
	}
	if err := s.SetLink(2, false); err != nil {
		t.Fatal(err)
	}
	if s.PortActive(2) {
		t.Fatal("a port whose link went down is Active")
	}
}

// TestSwitchForwardConcurrent: the data path's lookups run while the SM
// rewrites the table (go test -race), each seeing a whole entry, and
// allocate nothing.
func TestSwitchForwardConcurrent(t *testing.T) {
	s := newSwitch(t)
	if err := s.Configure(mad.Swept{LID: 1, Routes: map[uint16]uint8{1: 0, 5: 1, 6: 2}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 200 {
			lftSet(t, s, 0, 0xFF, map[int]uint8{1: 0, 5: 1, 6: uint8(2 + i%2)})
		}
	}()
	for range 2000 {
		if p := s.Forward(6); p != 2 && p != 3 {
			t.Errorf("LFT[6] = %d mid-rewrite, want 2 or 3", p)
			break
		}
		_ = s.PortActive(1)
	}
	wg.Wait()
	if n := testing.AllocsPerRun(100, func() { _, _ = s.Forward(5), s.PortActive(1) }); n != 0 {
		t.Fatalf("Forward: %v allocations", n)
	}
}
