package mad_test

import (
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/madtest"
)

func newSwitch(t *testing.T) *mad.Switch {
	t.Helper()
	s, err := mad.NewSwitch(mad.SwitchConfig{NodeGUID: 0x1000, Description: "sw", NumPorts: 8})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSwitchNodeInfoAndPortStates(t *testing.T) {
	s := newSwitch(t)
	if err := s.SetLink(3, true); err != nil {
		t.Fatal(err)
	}
	out, res := s.ProcessSMP(3, madtest.SMP(mad.MethodGet, mad.AttrNodeInfo, 0, 0, nil))
	wantReply(t, res, &out, 0)
	var ni mad.NodeInfo
	if err := ni.Decode(out.SMPData()); err != nil {
		t.Fatal(err)
	}
	if ni.NodeType != mad.NodeTypeSwitch || ni.NumPorts != 8 || ni.LocalPortNum != 3 || ni.NodeGUID != 0x1000 {
		t.Fatalf("NodeInfo %+v", ni)
	}
	out, res = s.ProcessSMP(3, madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 3, 0, nil))
	wantReply(t, res, &out, 0)
	pi := decodePI(t, &out)
	if pi.PortState != mad.PortInit || pi.PortPhysicalState != mad.PhysLinkUp {
		t.Fatalf("cabled port: state %d phys %d, want Init LinkUp", pi.PortState, pi.PortPhysicalState)
	}
	if pi, _ := s.PortInfo(4); pi.PortState != mad.PortDown || pi.PortPhysicalState != mad.PhysPolling {
		t.Fatalf("uncabled port: state %d phys %d", pi.PortState, pi.PortPhysicalState)
	}
	set := func(port uint32, st mad.PortState) uint16 {
		pi, _ := s.PortInfo(int(port))
		pi.PortState, pi.PortPhysicalState = st, mad.PhysNoChange
		out, res := s.ProcessSMP(3, madtest.SMP(mad.MethodSet, mad.AttrPortInfo, port, 0, portInfoSetData(t, pi)))
		if res != mad.Success|mad.Reply {
			t.Fatalf("Set result %d", res)
		}
		return out.Status()
	}
	if st := set(3, mad.PortActive); st != mad.StatusInvalidField {
		t.Fatalf("Init->Active: status 0x%x", st)
	}
	if set(3, mad.PortArmed) != 0 || set(3, mad.PortActive) != 0 {
		t.Fatal("Init->Armed->Active refused")
	}
	if set(3, mad.PortDown) != 0 {
		t.Fatal("Set Down refused")
	}
	if pi, _ := s.PortInfo(3); pi.PortState != mad.PortInit {
		t.Fatalf("Down with the link up: state %d, want Init (retrained)", pi.PortState)
	}
	if set(4, mad.PortArmed) != mad.StatusInvalidField {
		t.Fatal("Down port armed")
	}
}

func TestSwitchInfoAndForwardingTables(t *testing.T) {
	s := newSwitch(t)
	out, res := s.ProcessSMP(1, madtest.SMP(mad.MethodGet, mad.AttrSwitchInfo, 0, 0, nil))
	wantReply(t, res, &out, 0)
	var si mad.SwitchInfo
	_ = si.Decode(out.SMPData())
	if si.LinearFDBCap != 0xC000 || si.MulticastFDBCap != 1024 {
		t.Fatalf("SwitchInfo %+v", si)
	}
	si.LinearFDBTop = 70
	data := make([]byte, 64)
	_ = si.Encode(data)
	out, res = s.ProcessSMP(1, madtest.SMP(mad.MethodSet, mad.AttrSwitchInfo, 0, 0, data))
	wantReply(t, res, &out, 0)
	lft := make([]byte, 64)
	lft[5] = 2 // LID 69 (block 1, entry 5) -> port 2
	for i := range lft {
		if i != 5 {
			lft[i] = 0xFF
		}
	}
	out, res = s.ProcessSMP(1, madtest.SMP(mad.MethodSet, mad.AttrLinearFwdTable, 1, 0, lft))
	wantReply(t, res, &out, 0)
	if p := s.Forward(69); p != 2 {
		t.Fatalf("LFT[69] = %d, want 2", p)
	}
	lft[6] = 9 // no port 9 on an 8-port switch
	out, res = s.ProcessSMP(1, madtest.SMP(mad.MethodSet, mad.AttrLinearFwdTable, 1, 0, lft))
	wantReply(t, res, &out, mad.StatusInvalidField)
	mft := make([]byte, 64)
	be.PutUint16(mft[2:], 0x0106) // MLID 0xC001: ports 1, 2, 8
	out, res = s.ProcessSMP(1, madtest.SMP(mad.MethodSet, mad.AttrMulticastFwdTable, 0, 0, mft))
	wantReply(t, res, &out, 0)
	if got := be.Uint16(out.SMPData()[2:]); got != 0x0106 {
		t.Fatalf("MFT entry 0x%x", got)
	}
	be.PutUint16(mft[2:], 0x0200) // port 9
	out, res = s.ProcessSMP(1, madtest.SMP(mad.MethodSet, mad.AttrMulticastFwdTable, 0, 0, mft))
	wantReply(t, res, &out, mad.StatusInvalidField)
	out, res = s.ProcessSMP(1, madtest.SMP(mad.MethodGet, 0x00FF, 0, 0, nil))
	wantReply(t, res, &out, mad.StatusUnsupportedAttr)
	if _, res := s.ProcessSMP(1, madtest.SMP(mad.MethodTrapRepress, mad.AttrNotice, 0, 0, nil)); res != mad.Success|mad.Consumed {
		t.Fatalf("TrapRepress: %d", res)
	}
}

func TestSwitchMKey(t *testing.T) {
	s := newSwitch(t)
	pi, _ := s.PortInfo(0)
	pi.LID, pi.MKey, pi.MKeyProtectBits, pi.PortState = 9, 0x77, 1, mad.PortNoChange
	out, res := s.ProcessSMP(1, madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 0, 0, portInfoSetData(t, pi)))
	wantReply(t, res, &out, 0)
	if _, res := s.ProcessSMP(1, madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 0, 0x1, portInfoSetData(t, pi))); res != mad.Success|mad.Consumed {
		t.Fatalf("Set with a wrong M_Key: %d", res)
	}
	out, res = s.ProcessSMP(1, madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 0, 0x1, nil))
	wantReply(t, res, &out, 0)
	if got := decodePI(t, &out); got.MKey != 0 || got.LID != 9 || got.MKeyViolations != 1 {
		t.Fatalf("protect 1 Get: key 0x%x lid %d violations %d", got.MKey, got.LID, got.MKeyViolations)
	}
}

// A ConnectX-3 answers MLNXExtendedPortInfo; a QDR port supports no FDR10.
func TestMLNXExtendedPortInfo(t *testing.T) {
	f := newFixture(t, nil)
	out, res := f.e.ProcessMAD(0, 1, madtest.SMIWC(1), nil, madtest.SMP(mad.MethodGet, mad.AttrMLNXExtPortInfo, 0, 0, nil))
	wantReply(t, res, &out, 0)
	data := make([]byte, 64)
	data[3] = 1
	out, res = f.e.ProcessMAD(0, 1, madtest.SMIWC(1), nil, madtest.SMP(mad.MethodSet, mad.AttrMLNXExtPortInfo, 0, 0, data))
	wantReply(t, res, &out, 0)
	if d := out.SMPData(); d[3] != 1 || d[7] != 0 || d[11] != 0 || d[15] != 0 {
		t.Fatalf("MEPI % x", d[:16])
	}
	out, res = f.e.ProcessMAD(0, 1, madtest.SMIWC(1), nil, madtest.SMP(mad.MethodGet, mad.AttrMLNXExtPortInfo, 2, 0, nil))
	wantReply(t, res, &out, 0)
	if out.SMPData()[3] != 0 {
		t.Fatal("port 2's MEPI shows port 1's Set")
	}
	out, res = f.e.ProcessMAD(0, 1, madtest.SMIWC(1), nil, madtest.SMP(mad.MethodGet, mad.AttrMLNXExtPortInfo, 3, 0, nil))
	wantReply(t, res, &out, mad.StatusInvalidField)
	data[11] = 1 // FDR10 enabled on a port that does not support it
	out, res = f.e.ProcessMAD(0, 1, madtest.SMIWC(1), nil, madtest.SMP(mad.MethodSet, mad.AttrMLNXExtPortInfo, 0, 0, data))
	wantReply(t, res, &out, mad.StatusInvalidField)
}

// IBA 7.2: a Set of Down on a port whose physical link is up retrains the
// link; the port comes back in Init.
func TestPortDownRetrainsToInit(t *testing.T) {
	f := newFixture(t, nil)
	pi := f.portInfo(t, 1)
	pi.PortState, pi.PortPhysicalState = mad.PortDown, mad.PhysNoChange
	out, res := f.e.ProcessMAD(0, 1, madtest.SMIWC(1), nil, madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 1, 0, portInfoSetData(t, pi)))
	wantReply(t, res, &out, 0)
	if got := f.portInfo(t, 1); got.PortState != mad.PortInit || got.PortPhysicalState != mad.PhysLinkUp {
		t.Fatalf("state %d phys %d, want Init LinkUp", got.PortState, got.PortPhysicalState)
	}
}

// Port 0 keeps a P_Key table an SM can fill (OpenSM adds every partition
// to a switch's management port); the external ports have none.
func TestSwitchPKeyTable(t *testing.T) {
	s := newSwitch(t)
	data := make([]byte, 64)
	be.PutUint16(data[0:], 0xFFFF)
	be.PutUint16(data[2:], 0x8005)
	out, res := s.ProcessSMP(1, madtest.SMP(mad.MethodSet, mad.AttrPKeyTable, 0, 0, data))
	wantReply(t, res, &out, 0)
	out, res = s.ProcessSMP(1, madtest.SMP(mad.MethodGet, mad.AttrPKeyTable, 0, 0, nil))
	wantReply(t, res, &out, 0)
	if be.Uint16(out.SMPData()[2:]) != 0x8005 {
		t.Fatalf("P_Key table % x", out.SMPData()[:8])
	}
	out, res = s.ProcessSMP(1, madtest.SMP(mad.MethodGet, mad.AttrPKeyTable, 1<<16, 0, nil))
	wantReply(t, res, &out, mad.StatusInvalidField)
}

// The switch's M_Key lease: started by a violation, not restarted by the
// next, stopped only by the right key; when it runs out protection drops.
func TestSwitchMKeyLease(t *testing.T) {
	clock := madtest.NewClock()
	s, err := mad.NewSwitch(mad.SwitchConfig{NodeGUID: 0x1000, NumPorts: 8, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	pi, _ := s.PortInfo(0)
	pi.LID, pi.MKey, pi.MKeyProtectBits, pi.MKeyLeasePeriod = 9, 0x77, 2, 10
	pi.PortState, pi.PortPhysicalState = mad.PortNoChange, mad.PhysNoChange
	out, res := s.ProcessSMP(1, madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 0, 0, portInfoSetData(t, pi)))
	wantReply(t, res, &out, 0)
	bad := func() mad.Result {
		_, res := s.ProcessSMP(1, madtest.SMP(mad.MethodGet, mad.AttrNodeInfo, 0, 0x1, nil))
		return res
	}
	if bad() != mad.Success|mad.Consumed {
		t.Fatal("protection 2 Get with a wrong key answered")
	}
	clock.Advance(6 * time.Second)
	if bad() != mad.Success|mad.Consumed {
		t.Fatal("second violation answered")
	}
	clock.Advance(4 * time.Second) // 10 s after the first violation
	if bad() != mad.Success|mad.Reply {
		t.Fatal("the lease did not run out 10 s after the first violation")
	}
	// The right key stops a running lease.
	pi, _ = s.PortInfo(0)
	pi.MKeyProtectBits, pi.PortState, pi.PortPhysicalState = 2, mad.PortNoChange, mad.PhysNoChange
	out, res = s.ProcessSMP(1, madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 0, 0x77, portInfoSetData(t, pi)))
	wantReply(t, res, &out, 0)
	bad()
	if _, res := s.ProcessSMP(1, madtest.SMP(mad.MethodGet, mad.AttrNodeInfo, 0, 0x77, nil)); res != mad.Success|mad.Reply {
		t.Fatal("right key refused")
	}
	clock.Advance(time.Hour)
	if bad() != mad.Success|mad.Consumed {
		t.Fatal("protection dropped after the SM stopped the lease")
	}
}

// Configure leaves the switch as a sweep would: port 0's LID and SM LID,
// port 0 and the listed ports Active, the routes in the LFT (LinearFDBTop
// the highest); bad sweeps are refused and change nothing.
func TestSwitchConfigure(t *testing.T) {
	s := newSwitch(t)
	for _, p := range []int{1, 2} {
		if err := s.SetLink(p, true); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []mad.Swept{
		{LID: 0},
		{LID: 0xC000},
		{LID: 1, Active: []int{3}},                    // link down
		{LID: 1, Active: []int{0}},                    // not an external port
		{LID: 1, Routes: map[uint16]uint8{5: 9}},      // no port 9
		{LID: 1, Routes: map[uint16]uint8{0xC000: 1}}, // multicast
	} {
		if err := s.Configure(bad); err == nil {
			t.Errorf("Configure(%+v) accepted", bad)
		}
	}
	if s.LID() != 0 || s.Forward(5) != 0xFF {
		t.Fatal("a refused sweep changed the switch")
	}
	if err := s.Configure(mad.Swept{LID: 1, SMLID: 5, Routes: map[uint16]uint8{1: 0, 5: 1, 6: 2}, Active: []int{1, 2}}); err != nil {
		t.Fatal(err)
	}
	p0, _ := s.PortInfo(0)
	if s.LID() != 1 || p0.MasterSMLID != 5 || p0.PortState != mad.PortActive {
		t.Fatalf("port 0: LID %d SM LID %d state %d", p0.LID, p0.MasterSMLID, p0.PortState)
	}
	for p, want := range map[int]mad.PortState{1: mad.PortActive, 2: mad.PortActive, 3: mad.PortDown} {
		if pi, _ := s.PortInfo(p); pi.PortState != want {
			t.Errorf("port %d: state %d, want %d", p, pi.PortState, want)
		}
	}
	if s.Forward(1) != 0 || s.Forward(5) != 1 || s.Forward(6) != 2 || s.Forward(7) != 0xFF {
		t.Fatalf("LFT: 1→%d 5→%d 6→%d 7→%d", s.Forward(1), s.Forward(5), s.Forward(6), s.Forward(7))
	}
	out, res := s.ProcessSMP(1, madtest.SMP(mad.MethodGet, mad.AttrSwitchInfo, 0, 0, nil))
	wantReply(t, res, &out, 0)
	var si mad.SwitchInfo
	if err := si.Decode(out.SMPData()); err != nil || si.LinearFDBTop != 6 || si.PortStateChange {
		t.Fatalf("SwitchInfo %+v %v", si, err)
	}
}
