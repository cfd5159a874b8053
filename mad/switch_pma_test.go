package mad_test

import (
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/madtest"
)

func switchPerf(t *testing.T, s *mad.Switch, method uint8, attr uint16, sel uint8, cs uint16, status uint16) *mad.MAD {
	t.Helper()
	out, res := s.ProcessGMP(madtest.Perf(method, attr, sel, cs))
	wantReply(t, res, &out, status)
	if out.Method() != mad.MethodGetResp || out.TID() != 0x9abc {
		t.Fatalf("response method 0x%x TID %x", out.Method(), out.TID())
	}
	return &out
}

// switchGet reads attribute attr of port sel into v.
func switchGet(t *testing.T, s *mad.Switch, attr uint16, sel uint8, v interface{ Decode([]byte) error }) {
	t.Helper()
	out := switchPerf(t, s, mad.MethodGet, attr, sel, 0, 0)
	if err := v.Decode(out.GSData()); err != nil {
		t.Fatal(err)
	}
}

func switchPC(t *testing.T, s *mad.Switch, sel uint8) (pc mad.PortCounters) {
	t.Helper()
	switchGet(t, s, mad.AttrPortCounters, sel, &pc)
	return pc
}

func switchPCX(t *testing.T, s *mad.Switch, sel uint8) (x mad.PortCountersExtended) {
	t.Helper()
	switchGet(t, s, mad.AttrPortCountersExtended, sel, &x)
	return x
}

// The switch's PMA advertises what perfquery needs to read a port and all
// of them (AllPortSelect, the extended counters).
func TestSwitchPMAClassPortInfo(t *testing.T) {
	s := newSwitch(t)
	out := switchPerf(t, s, mad.MethodGet, mad.AttrClassPortInfo, 0, 0, 0)
	var c mad.ClassPortInfo
	if err := c.Decode(out.GSData()); err != nil {
		t.Fatal(err)
	}
	want := mad.PMACapAllPortSelect | mad.PMACapExtWidth
	if c.CapabilityMask != want || c.BaseVersion != 1 || c.ClassVersion != 1 {
		t.Fatalf("ClassPortInfo %+v, want CapabilityMask 0x%x", c, want)
	}
}

// What Count and CountDrop record is what the PMA reports, per port and
// summed over all ports (0xFF); a Set clears only what CounterSelect names.
func TestSwitchPMACounters(t *testing.T) {
	s := newSwitch(t)
	s.Count(1, 3, 4, 100, false) // 4 packets in at 1, out at 3
	s.Count(3, 1, 1, 72, false)
	s.Count(2, 5, 2, 30, true)
	s.Count(4, 0, 1, 72, false)   // to the switch's own agents: port 4 receives only
	s.Count(9, 200, 1, 72, false) // no such ports: nothing
	s.CountDrop(6, 0xFF, 72)      // no route: a relay error at 6
	s.CountDrop(7, 8, 72)         // port 8 not Active: a discard there
	pc := switchPC(t, s, 1)
	if pc.PortSelect != 1 || pc.PortXmitPkts != 1 || pc.PortXmitData != 72 || pc.PortRcvPkts != 4 || pc.PortRcvData != 100 {
		t.Fatalf("port 1 %+v", pc)
	}
	if pc := switchPC(t, s, 3); pc.PortXmitPkts != 4 || pc.PortRcvPkts != 1 {
		t.Fatalf("port 3 %+v", pc)
	}
	if pc := switchPC(t, s, 6); pc.PortRcvSwitchRelayErrors != 1 || pc.PortRcvPkts != 1 || pc.PortXmitDiscards != 0 {
		t.Fatalf("port 6 %+v", pc)
	}
	if pc := switchPC(t, s, 8); pc.PortXmitDiscards != 1 || pc.PortXmitPkts != 0 {
		t.Fatalf("port 8 %+v", pc)
	}
	if pc := switchPC(t, s, 7); pc.PortRcvSwitchRelayErrors != 0 || pc.PortRcvPkts != 1 {
		t.Fatalf("port 7 %+v", pc)
	}
	x := switchPCX(t, s, 5)
	if x.PortXmitPkts != 2 || x.PortMulticastXmitPkts != 2 || x.PortUnicastXmitPkts != 0 {
		t.Fatalf("port 5 extended %+v", x)
	}
	all := switchPCX(t, s, 0xFF)
	if all.PortSelect != 0xFF || all.PortRcvPkts != 4+1+2+1+1+1 || all.PortXmitPkts != 4+1+2 ||
		all.PortRcvData != 100+72+30+72*3 || all.PortMulticastRcvPkts != 2 || all.PortUnicastRcvPkts != 8 {
		t.Fatalf("all ports %+v", all)
	}

	// PortCounters Set: PortXmitPkts (bit 14) only, on port 1.
	switchPerf(t, s, mad.MethodSet, mad.AttrPortCounters, 1, 1<<14, 0)
	if pc := switchPC(t, s, 1); pc.PortXmitPkts != 0 || pc.PortXmitData != 72 || pc.PortRcvPkts != 4 {
		t.Fatalf("port 1 after clearing PortXmitPkts %+v", pc)
	}
	// PortCountersExtended Set on all ports: the receive data (bit 1).
	switchPerf(t, s, mad.MethodSet, mad.AttrPortCountersExtended, 0xFF, 1<<1, 0)
	if x := switchPCX(t, s, 0xFF); x.PortRcvData != 0 || x.PortRcvPkts == 0 {
		t.Fatalf("after clearing PortRcvData everywhere %+v", x)
	}
	switchPerf(t, s, mad.MethodSet, mad.AttrPortCounters, 6, 1<<5, 0)
	if pc := switchPC(t, s, 6); pc.PortRcvSwitchRelayErrors != 0 {
		t.Fatalf("relay errors not cleared %+v", pc)
	}
}

// The 32-bit PortCounters saturate; the extended ones keep counting.
func TestSwitchPMASaturates(t *testing.T) {
	s := newSwitch(t)
	s.Count(2, 3, 1<<33, 1<<34, false)
	if pc := switchPC(t, s, 2); pc.PortRcvPkts != 0xFFFFFFFF || pc.PortRcvData != 0xFFFFFFFF {
		t.Fatalf("PortCounters %+v", pc)
	}
	if x := switchPCX(t, s, 3); x.PortXmitPkts != 1<<33 || x.PortXmitData != 1<<34 {
		t.Fatalf("extended %+v", x)
	}
}

// What the PMA refuses: port 0 and ports beyond the switch (no counters),
// an unknown attribute, and other classes (no agent: dropped).
func TestSwitchPMARefusals(t *testing.T) {
	s := newSwitch(t)
	switchPerf(t, s, mad.MethodGet, mad.AttrPortCounters, 0, 0, mad.StatusInvalidField)
	switchPerf(t, s, mad.MethodGet, mad.AttrPortCountersExtended, 9, 0, mad.StatusInvalidField)
	switchPerf(t, s, mad.MethodGet, 0x0099, 1, 0, mad.StatusUnsupportedAttr)
	if _, res := s.ProcessGMP(madtest.BM(mad.MethodGet, mad.AttrBKeyInfo, 0, 0, nil)); res != mad.Failure {
		t.Fatalf("BM MAD at the switch: result %d, want Failure", res)
	}
	resp := madtest.Perf(mad.MethodGetResp, mad.AttrPortCounters, 1, 0)
	if _, res := s.ProcessGMP(resp); res&mad.Reply != 0 {
		t.Fatal("a response answered")
	}
}

func TestPacketWords(t *testing.T) {
	for _, c := range []struct {
		n, mtu, once, each uint64
		pkts, words        uint64
	}{
		{0, 2048, mad.AETHSize, 0, 1, 7},                             // an ACK: LRH+BTH+AETH+ICRC = 28 bytes
		{256, 0, mad.DETHSize, 0, 1, 72},                             // a MAD on QP1: 288 bytes
		{256, 0, mad.DETHSize, mad.GRHSize, 1, 82},                   // with a GRH
		{1, 2048, 0, 0, 1, 7},                                        // one byte padded to 4
		{65536, 2048, mad.RETHSize, 0, 32, (32*24 + 16 + 65536) / 4}, // a 64 KiB RDMA WRITE
		{4097, 4096, mad.ImmDtSize, 0, 2, (2*24 + 4 + 4100) / 4},
	} {
		p, w := mad.PacketWords(c.n, c.mtu, c.once, c.each)
		if p != c.pkts || w != c.words {
			t.Errorf("PacketWords(%d, %d, %d, %d) = %d, %d; want %d, %d", c.n, c.mtu, c.once, c.each, p, w, c.pkts, c.words)
		}
	}
	if mad.MADWords != 72 {
		t.Fatalf("MADWords %d", mad.MADWords)
	}
}

// CountData adds the data path's packets to an HCA port's PMA counters,
// beside its MADs; a Set clears them with the MADs' counts.
func TestEngineCountData(t *testing.T) {
	e, err := mad.New(madtest.Node(), mad.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.CountData(1, true, 3, 300, false)
	e.CountData(1, false, 2, 20, true)
	e.CountData(9, true, 1, 1, false) // no such port
	if c, _ := e.PortCounters(1); c.PortXmitPkts != 3 || c.PortXmitData != 300 || c.PortRcvPkts != 2 || c.PortMulticastRcvPkts != 2 || c.PortUnicastXmitPkts != 3 {
		t.Fatalf("port 1 %+v", c)
	}
	out, _ := e.ProcessMAD(0, 1, nil, nil, madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0))
	var pc mad.PortCounters
	if _ = pc.Decode(out.GSData()); pc.PortXmitPkts != 3 || pc.PortRcvData != 20 {
		t.Fatalf("PortCounters %+v", pc)
	}
	e.ProcessMAD(0, 1, nil, nil, madtest.Perf(mad.MethodSet, mad.AttrPortCountersExtended, 1, 0xFF))
	if c, _ := e.PortCounters(1); c.PortXmitPkts != 0 || c.PortRcvData != 0 || c.PortMulticastRcvPkts != 0 {
		t.Fatalf("after the Set %+v", c)
	}
	if c, _ := e.PortCounters(2); c.PortXmitPkts != 0 {
		t.Fatalf("port 2 %+v", c)
	}
}
