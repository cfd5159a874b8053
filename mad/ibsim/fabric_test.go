package ibsim_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/ibsim"
	"github.com/vhcrd/vhcrd/mad/madtest"
)

// fabricServer: the engine's ports 1 and 2 (fresh: Down, LID 0) cabled to
// switch ports 3 and 5.
func fabricServer(t *testing.T) (*mad.Engine, *mad.Switch, *ibsim.Server) {
	t.Helper()
	cfg := madtest.Node()
	for i := range cfg.Ports {
		cfg.Ports[i].LID, cfg.Ports[i].State = 0, mad.PortDown
	}
	e, sw := engineAndSwitch(t, cfg)
	name := fmt.Sprintf("vhcrdtest%d-%d", os.Getpid(), seq.Add(1))
	s, err := ibsim.Listen(name, e, ibsim.Options{Fabric: &ibsim.Fabric{Switch: sw, Cables: map[uint8]uint8{1: 3, 2: 5}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return e, sw, s
}

// engineAndSwitch is an engine of cfg and an 8-port switch (node GUID
// 0x5000) to cable it to.
func engineAndSwitch(t *testing.T, cfg mad.NodeConfig) (*mad.Engine, *mad.Switch) {
	t.Helper()
	e, err := mad.New(cfg, mad.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sw, err := mad.NewSwitch(mad.SwitchConfig{NodeGUID: 0x5000, Description: "sw", NumPorts: 8, VendorID: 1})
	if err != nil {
		t.Fatal(err)
	}
	return e, sw
}

// drSent is a directed-route SMP as the SM sends it: hop pointer 0, the
// initial path from index 1.
func drSent(method uint8, attr uint16, hc uint8, path ...byte) *mad.MAD {
	m := madtest.DRSMP(method, attr, 0, 0, hc, path...)
	m[6] = 0
	return m
}

func simRequest(dlid uint16, dqp uint32, m *mad.MAD) []byte {
	req := make([]byte, 288)
	be.PutUint16(req[0:], dlid)
	be.PutUint32(req[8:], dqp)
	copy(req[32:], m[:])
	return req
}

func reply(t *testing.T, req []byte) mad.MAD {
	t.Helper()
	if st := be.Uint32(req[16:]); st != 0 {
		t.Fatalf("sim status %d", st)
	}
	var m mad.MAD
	copy(m[:], req[32:])
	return m
}

func TestFabricDirectedRoute(t *testing.T) {
	e, _, s := fabricServer(t)
	if pi, _ := e.PortInfo(1); pi.PortState != mad.PortInit || pi.PortPhysicalState != mad.PhysLinkUp || pi.LID != 0 {
		t.Fatalf("cabled fresh port: state %d phys %d LID %d, want Init LinkUp 0", pi.PortState, pi.PortPhysicalState, pi.LID)
	}
	// Hop 1: the switch, arriving on its port 3.
	req := simRequest(0xFFFF, 0, drSent(mad.MethodGet, mad.AttrNodeInfo, 1, 1))
	if !s.Handle(req) {
		t.Fatal("no reply")
	}
	out := reply(t, req)
	var ni mad.NodeInfo
	_ = ni.Decode(out.SMPData())
	if ni.NodeType != mad.NodeTypeSwitch || ni.LocalPortNum != 3 || !out.Direction() || out[192+1] != 3 {
		t.Fatalf("hop 1: NodeInfo %+v D %v return path % x", ni, out.Direction(), out[192:195])
	}
	// Hop 2: out of switch port 5 to the engine's port 2.
	req = simRequest(0xFFFF, 0, drSent(mad.MethodGet, mad.AttrNodeInfo, 2, 1, 5))
	s.Handle(req)
	out = reply(t, req)
	_ = ni.Decode(out.SMPData())
	if ni.NodeType != mad.NodeTypeCA || ni.LocalPortNum != 2 || out[192+2] != 2 {
		t.Fatalf("hop 2: NodeInfo %+v return path % x", ni, out[192:195])
	}
	// Discarded: an uncabled switch port, a CA asked to forward, a first
	// hop that is not the SM's port.
	for _, path := range [][]byte{{1, 4}, {1, 5, 1}, {2}} {
		req = simRequest(0xFFFF, 0, drSent(mad.MethodGet, mad.AttrNodeInfo, uint8(len(path)), path...))
		s.Handle(req)
		if st := be.Uint32(req[16:]); st != ibsim.StatusDropped {
			t.Errorf("path %v: status %d, want dropped", path, st)
		}
	}
}

func TestFabricLIDRouted(t *testing.T) {
	e, sw, s := fabricServer(t)
	// The SM gives the switch LID 7 (through its directed route).
	pi, _ := sw.PortInfo(0)
	pi.LID, pi.PortState, pi.PortPhysicalState = 7, mad.PortNoChange, mad.PhysNoChange
	data := make([]byte, 64)
	_ = pi.Encode(data)
	req := simRequest(0xFFFF, 0, drSent(mad.MethodSet, mad.AttrPortInfo, 1, 1))
	copy(req[32+64:], data)
	s.Handle(req)
	if out := reply(t, req); out.Status()&0x7FFF != 0 {
		t.Fatalf("Set status 0x%x", out.Status())
	}
	req = simRequest(7, 0, madtest.SMP(mad.MethodGet, mad.AttrSwitchInfo, 0, 0, nil))
	s.Handle(req)
	if out := reply(t, req); out.Status() != 0 || be.Uint16(req[4:]) != 7 {
		t.Fatalf("LID-routed SwitchInfo: status 0x%x from LID %d", out.Status(), be.Uint16(req[4:]))
	}
	// The engine's port 2 gets LID 9 through the switch (path 1,5).
	pi2, _ := e.PortInfo(2)
	pi2.LID, pi2.PortState, pi2.PortPhysicalState = 9, mad.PortNoChange, mad.PhysNoChange
	_ = pi2.Encode(data)
	req = simRequest(0xFFFF, 0, drSent(mad.MethodSet, mad.AttrPortInfo, 2, 1, 5))
	copy(req[32+64:], data)
	s.Handle(req)
	if out := reply(t, req); out.Status()&0x7FFF != 0 {
		t.Fatalf("Set port 2 LID: status 0x%x", out.Status())
	}
	get9 := func(dqp uint32) uint32 {
		m := madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 0, 0, nil)
		if dqp == 1 {
			m = madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 2, 0)
		}
		req := simRequest(9, dqp, m)
		s.Handle(req)
		return be.Uint32(req[16:])
	}
	if get9(0) != ibsim.StatusDropped {
		t.Fatal("LID 9 reached with an empty forwarding table")
	}
	// The SM programs the LFT: LID 9 leaves by port 5.
	var si mad.SwitchInfo
	si.LinearFDBTop, si.LifeTimeValue = 9, 18
	clear(data)
	_ = si.Encode(data)
	req = simRequest(7, 0, madtest.SMP(mad.MethodSet, mad.AttrSwitchInfo, 0, 0, data))
	s.Handle(req)
	lft := make([]byte, 64)
	for i := range lft {
		lft[i] = 0xFF
	}
	lft[9] = 5
	req = simRequest(7, 0, madtest.SMP(mad.MethodSet, mad.AttrLinearFwdTable, 0, 0, lft))
	s.Handle(req)
	if out := reply(t, req); out.Status() != 0 {
		t.Fatalf("LFT Set: status 0x%x", out.Status())
	}
	if st := get9(0); st != 0 {
		t.Fatalf("LID-routed SMP to LID 9 through the LFT: status %d", st)
	}
	// A PerfMgt Get is a data packet: not through ports in Init.
	if get9(1) != ibsim.StatusDropped {
		t.Fatal("a GMP crossed links that are not Active")
	}
}

// A MAD that expects no response gets no datagram: TrapRepress, a response.
func TestConsumedMADsGetNoReply(t *testing.T) {
	_, _, s := fabricServer(t)
	if s.Handle(simRequest(0xFFFF, 0, drSent(mad.MethodTrapRepress, mad.AttrNotice, 0))) {
		t.Error("TrapRepress (directed) answered")
	}
	if s.Handle(simRequest(0, 0, madtest.SMP(mad.MethodTrapRepress, mad.AttrNotice, 0, 0, nil))) {
		t.Error("TrapRepress (LID-routed) answered")
	}
	resp := madtest.SMP(mad.MethodGetResp, mad.AttrNodeInfo, 0, 0, nil)
	if s.Handle(simRequest(0xFFFF, 0, resp)) {
		t.Error("a response answered")
	}
	if !s.Handle(simRequest(0xFFFF, 0, drSent(mad.MethodGet, mad.AttrNodeInfo, 0))) {
		t.Error("a Get not answered")
	}
}

// FuzzFabricHandle feeds arbitrary sim_requests to a server with a fabric:
// no panic; a reply carries status 0 or 110 and the request's TID; a
// request that gets no reply is left as it was.
func FuzzFabricHandle(f *testing.F) {
	f.Add(simRequest(0xFFFF, 0, drSent(mad.MethodGet, mad.AttrNodeInfo, 1, 1)))
	f.Add(simRequest(0xFFFF, 0, drSent(mad.MethodGet, mad.AttrPortInfo, 2, 1, 5)))
	f.Add(simRequest(0xFFFF, 0, drSent(mad.MethodSet, mad.AttrLinearFwdTable, 1, 1)))
	f.Add(simRequest(7, 0, madtest.SMP(mad.MethodGet, mad.AttrSwitchInfo, 0, 0, nil)))
	f.Add(simRequest(0, 0, madtest.SMP(mad.MethodTrapRepress, mad.AttrNotice, 0, 0, nil)))
	cfg := madtest.Node()
	e, err := mad.New(cfg, mad.Options{})
	if err != nil {
		f.Fatal(err)
	}
	sw, err := mad.NewSwitch(mad.SwitchConfig{NodeGUID: 0x5000, NumPorts: 8})
	if err != nil {
		f.Fatal(err)
	}
	s, err := ibsim.Listen(fmt.Sprintf("vhcrdfuzzfab%d", os.Getpid()), e, ibsim.Options{Fabric: &ibsim.Fabric{Switch: sw, Cables: map[uint8]uint8{1: 3, 2: 5}}})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	f.Fuzz(func(t *testing.T, req []byte) {
		orig := append([]byte(nil), req...)
		if !s.Handle(req) {
			if string(req) != string(orig) {
				t.Fatal("a request without a reply was modified")
			}
			return
		}
		if st := be.Uint32(req[16:]); st != 0 && st != ibsim.StatusDropped {
			t.Fatalf("status %d", st)
		}
		if string(req[40:48]) != string(orig[40:48]) {
			t.Fatal("TID changed")
		}
	})
}

// A second CA on the switch: reached by its directed route, counted by the
// switch as a cabled port, never forwarding.
func TestFabricPeerCA(t *testing.T) {
	e, err := mad.New(madtest.Node(), mad.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pcfg := madtest.Node()
	pcfg.NodeGUID, pcfg.Ports = 0x7000, pcfg.Ports[:1]
	pcfg.Ports[0].PortGUID, pcfg.Ports[0].LID, pcfg.Ports[0].State = 0x7001, 0, mad.PortDown
	peer, err := mad.New(pcfg, mad.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sw, err := mad.NewSwitch(mad.SwitchConfig{NodeGUID: 0x5000, NumPorts: 8})
	if err != nil {
		t.Fatal(err)
	}
	fab := &ibsim.Fabric{Switch: sw, Cables: map[uint8]uint8{1: 3}, Peers: map[uint8]*mad.Engine{7: peer}}
	s, err := ibsim.Listen(fmt.Sprintf("vhcrdtest%d-%d", os.Getpid(), seq.Add(1)), e, ibsim.Options{Fabric: fab})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if pi, _ := peer.PortInfo(1); pi.PortState != mad.PortInit {
		t.Fatalf("peer port state %d, want Init", pi.PortState)
	}
	req := simRequest(0xFFFF, 0, drSent(mad.MethodGet, mad.AttrNodeInfo, 2, 1, 7))
	s.Handle(req)
	out := reply(t, req)
	var ni mad.NodeInfo
	_ = ni.Decode(out.SMPData())
	if ni.NodeType != mad.NodeTypeCA || ni.NodeGUID != 0x7000 || ni.PortGUID != 0x7001 || ni.LocalPortNum != 1 {
		t.Fatalf("peer NodeInfo %+v", ni)
	}
	req = simRequest(0xFFFF, 0, drSent(mad.MethodGet, mad.AttrNodeInfo, 3, 1, 7, 1))
	s.Handle(req)
	if st := be.Uint32(req[16:]); st != ibsim.StatusDropped {
		t.Fatalf("a peer CA forwarded: status %d", st)
	}
	bad := &ibsim.Fabric{Switch: sw, Cables: map[uint8]uint8{1: 3}, Peers: map[uint8]*mad.Engine{3: peer}}
	if _, err := ibsim.Listen(fmt.Sprintf("vhcrdtest%d-%d", os.Getpid(), seq.Add(1)), e, ibsim.Options{Fabric: bad}); err == nil {
		t.Fatal("a peer on a cabled switch port accepted")
	}
}

// A fabric with a LID starts swept: before any SM, LID-routed SMPs from
// port 1 reach the switch and port 2 (Init in madtest.Node) through the
// LFT; the switch port facing Active port 1 is Active, the one facing port
// 2 Init, so a PerfMgt Get (a data packet) does not cross it; the switch's
// SM LID is port 1's.
func TestFabricSwept(t *testing.T) {
	cfg := madtest.Node()
	cfg.Ports[0].LID, cfg.Ports[1].LID = 5, 6
	e, sw := engineAndSwitch(t, cfg)
	name := fmt.Sprintf("vhcrdtest%d-%d", os.Getpid(), seq.Add(1))
	s, err := ibsim.Listen(name, e, ibsim.Options{Fabric: &ibsim.Fabric{Switch: sw, Cables: map[uint8]uint8{1: 3, 2: 5}, LID: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	pi1, _ := e.PortInfo(1)
	p0, _ := sw.PortInfo(0)
	if sw.LID() != 1 || p0.MasterSMLID != pi1.MasterSMLID || sw.Forward(5) != 3 || sw.Forward(6) != 5 {
		t.Fatalf("switch LID %d SM LID %d, LFT 5→%d 6→%d", sw.LID(), p0.MasterSMLID, sw.Forward(5), sw.Forward(6))
	}
	for sp, want := range map[int]mad.PortState{3: mad.PortActive, 5: mad.PortInit} {
		if pi, _ := sw.PortInfo(sp); pi.PortState != want {
			t.Errorf("switch port %d: state %d, want %d", sp, pi.PortState, want)
		}
	}
	req := simRequest(1, 0, madtest.SMP(mad.MethodGet, mad.AttrNodeInfo, 0, 0, nil))
	s.Handle(req)
	var ni mad.NodeInfo
	if out := reply(t, req); ni.Decode(out.SMPData()) != nil || ni.NodeType != mad.NodeTypeSwitch {
		t.Fatalf("LID 1: NodeInfo %+v", ni)
	}
	req = simRequest(6, 0, madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 0, 0, nil))
	s.Handle(req)
	if out := reply(t, req); out.Status() != 0 || be.Uint16(req[4:]) != 6 {
		t.Fatalf("SMP to LID 6: status 0x%x from LID %d", out.Status(), be.Uint16(req[4:]))
	}
	req = simRequest(6, 1, madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 2, 0))
	s.Handle(req)
	if st := be.Uint32(req[16:]); st != ibsim.StatusDropped {
		t.Fatalf("PerfMgt Get across an Init link: status %d", st)
	}

	// A LID shared by two cabled ports is no swept subnet.
	cfg.Ports[1].LID = 5
	e2, _ := mad.New(cfg, mad.Options{})
	sw2, _ := mad.NewSwitch(mad.SwitchConfig{NodeGUID: 0x5000, Description: "sw", NumPorts: 8, VendorID: 1})
	if _, err := ibsim.Listen(name+"b", e2, ibsim.Options{Fabric: &ibsim.Fabric{Switch: sw2, Cables: map[uint8]uint8{1: 3, 2: 5}, LID: 1}}); err == nil {
		t.Fatal("two ports with LID 5 accepted")
	}
}

// A VF's directed-route SMP through the PF's tunnel (SendTunnel) arrives
// as a Linux host's SMI sends it, the source's step taken (hop pointer 1):
// it walks the same path as a client's and its response comes back at
// once, the return path filled.
func TestFabricDirectedRouteFromTheTunnel(t *testing.T) {
	_, _, s := fabricServer(t)
	m := madtest.DRSMP(mad.MethodGet, mad.AttrNodeInfo, 0, 0, 1, 1)
	m[6] = 1 // smi_handle_dr_smp_send's C14-9:1
	be.PutUint64(m[8:], 0x0200_0000_0000_0009)
	out, _, ok := s.SendTunnel(ibsim.TunnelAddr{DLID: 0xFFFF}, m)
	var ni mad.NodeInfo
	_ = ni.Decode(out.SMPData())
	if !ok || ni.NodeType != mad.NodeTypeSwitch || ni.LocalPortNum != 3 || !out.Direction() || out[192+1] != 3 || out.TID() != 0x0200_0000_0000_0009 {
		t.Fatalf("ok %v NodeInfo %+v D %v return path % x TID %#x", ok, ni, out.Direction(), out[192:195], out.TID())
	}
}

// A CM MAD is the PF's tunnel's to demultiplex (mlx4_ib's cm.c): one a VF
// sends through the tunnel to its own port's LID comes back into the
// tunnel for port 1, not to the SM client; one to the HCA's other port,
// through the switch, reaches the tunnel for port 2.
func TestFabricCMIntoTheTunnel(t *testing.T) {
	cfg := madtest.Node()
	cfg.Ports[0].LID, cfg.Ports[1].LID = 5, 6
	cfg.Ports[1].State = mad.PortActive
	e, sw := engineAndSwitch(t, cfg)
	type got struct {
		port uint8
		wc   mad.WC
		m    mad.MAD
	}
	back := make(chan got, 4)
	name := fmt.Sprintf("vhcrdtest%d-%d", os.Getpid(), seq.Add(1))
	s, err := ibsim.Listen(name, e, ibsim.Options{NodeID: "model-hca", Fabric: &ibsim.Fabric{Switch: sw, Cables: map[uint8]uint8{1: 3, 2: 5}, LID: 1},
		Tunnel: func(port uint8, wc *mad.WC, m *mad.MAD) { back <- got{port, *wc, *m} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	dialSM(t, name, true)
	var req mad.MAD
	req[0], req[1], req[2], req[3] = 1, mad.ClassCM, 2, mad.MethodSend
	be.PutUint16(req[16:], mad.AttrCMREQ)
	be.PutUint32(req[mad.CMLocalCommID:], 0x1111)
	for _, c := range []struct {
		dlid uint16
		port uint8
	}{{5, 1}, {6, 2}} {
		if _, _, ok := s.SendTunnel(ibsim.TunnelAddr{DLID: c.dlid, SQP: 1, DQP: 1}, &req); ok {
			t.Fatalf("LID %d: a CM REQ answered", c.dlid)
		}
		select {
		case g := <-back:
			if g.port != c.port || g.m != req || g.wc.SLID != 5 || g.wc.SrcQP != 1 || g.wc.QPN != 1 {
				t.Fatalf("LID %d: the tunnel got port %d, wc %+v", c.dlid, g.port, g.wc)
			}
		default:
			t.Fatalf("LID %d: the CM REQ did not reach the tunnel", c.dlid)
		}
	}
}

// The switch's PMA answers a PerfMgt Get to the switch's LID (perfquery of
// a switch port), and its counters are what crossed the switch: the MADs
// to its agents and to the HCA's other port, each response back, and a
// MAD with no route (a relay error at the port it entered by).
func TestFabricSwitchPMA(t *testing.T) {
	cfg := madtest.Node()
	cfg.Ports[0].LID, cfg.Ports[1].LID = 5, 6
	cfg.Ports[1].State = mad.PortActive
	e, sw := engineAndSwitch(t, cfg)
	s := sweptServer(t, e, sw)
	get := func(dlid uint16, sel uint8) mad.PortCounters {
		t.Helper()
		req := simRequest(dlid, 1, madtest.Perf(mad.MethodGet, mad.AttrPortCounters, sel, 0))
		if !s.Handle(req) {
			t.Fatalf("LID %d: no reply", dlid)
		}
		out := reply(t, req)
		var pc mad.PortCounters
		if out.Status() != 0 || pc.Decode(out.GSData()) != nil || pc.PortSelect != sel || be.Uint16(req[4:]) != dlid {
			t.Fatalf("LID %d: status 0x%x from LID %d, %+v", dlid, out.Status(), be.Uint16(req[4:]), pc)
		}
		return pc
	}
	// 1: the switch's PMA; it counts the request as it reads (in at 3).
	if pc := get(1, 3); pc.PortRcvPkts != 1 || pc.PortXmitPkts != 0 || pc.PortRcvData != mad.MADWords {
		t.Fatalf("switch port 3, first read: %+v", pc)
	}
	get(6, 2) // 2: the HCA's port 2, in at 3 and out at 5, and back
	if pc := get(1, 5); pc.PortXmitPkts != 1 || pc.PortRcvPkts != 1 || pc.PortXmitData != mad.MADWords {
		t.Fatalf("switch port 5: %+v", pc) // 3
	}
	req := simRequest(0x40, 1, madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0)) // no LFT entry
	s.Handle(req)
	if st := be.Uint32(req[16:]); st != ibsim.StatusDropped {
		t.Fatalf("unrouted LID: status %d", st)
	}
	if pc := get(1, 3); pc.PortRcvPkts != 5 || pc.PortXmitPkts != 3 || pc.PortRcvSwitchRelayErrors != 1 {
		t.Fatalf("switch port 3 after 5 MADs in, 3 responses out, 1 unrouted: %+v", pc)
	}
	// LID 4 routed out of port 5, whose CA port has LID 6: the switch
	// sends it (no discard of its own), the CA port drops it.
	lft := make([]byte, 64)
	for i := range lft {
		lft[i] = sw.Forward(uint16(i))
	}
	lft[4] = 5
	if out, res := sw.ProcessSMP(3, madtest.SMP(mad.MethodSet, mad.AttrLinearFwdTable, 0, 0, lft)); res&mad.Reply == 0 || out.Status() != 0 {
		t.Fatalf("LFT Set: %d %#x", res, out.Status())
	}
	req = simRequest(4, 1, madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0))
	s.Handle(req)
	if st := be.Uint32(req[16:]); st != ibsim.StatusDropped {
		t.Fatalf("LID 4: status %d", st)
	}
	if pc := get(1, 5); pc.PortXmitPkts != 2 || pc.PortXmitDiscards != 0 {
		t.Fatalf("switch port 5 after sending LID 4's MAD to a CA port of LID 6: %+v", pc)
	}
}

// A MAD the tunnel sends reaches the agent with its work completion and
// GRH: a BM Set with a wrong B_Key to the HCA's other port, through the
// switch, raises Trap 259 naming the sender's LID, QP and the GID of the
// GRH the VF gave it.
func TestFabricTunnelTrap259(t *testing.T) {
	cfg := madtest.Node()
	cfg.Ports[0].LID, cfg.Ports[1].LID = 5, 6
	cfg.Ports[1].State, cfg.Ports[1].BKey = mad.PortActive, 0x777
	sink := new(madtest.Sink)
	e, err := mad.New(cfg, mad.Options{Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	_, sw := engineAndSwitch(t, cfg)
	s := sweptServer(t, e, sw)
	g := &mad.GRH{IPVer: 6, NextHeader: 0x1B, HopLimit: 1,
		SGID: madtest.GID(mad.DefaultGIDPrefix, 0x0002c90300a0b0c1+0x100), DGID: madtest.GID(mad.DefaultGIDPrefix, 0x0002c90300a0b0c2)}
	in := madtest.BM(mad.MethodSet, mad.AttrBKeyInfo, 0, 0xBAD, make([]byte, 14))
	out, from, ok := s.SendTunnel(ibsim.TunnelAddr{DLID: 6, SLIDBits: 0, SQP: 1, DQP: 1, SL: 4, QKey: mad.QP1QKey, GRH: g}, in)
	if ok && out.Status() == 0 {
		t.Fatalf("a Set with the wrong B_Key answered from %d with status 0", from)
	}
	tr := sink.Traps()
	if len(tr) != 1 || tr[0].Number != 259 || tr[0].Class != mad.ClassBM {
		t.Fatalf("traps %+v", tr)
	}
	var n mad.Notice
	if err := n.DecodeGS(tr[0].MAD.GSData()); err != nil {
		t.Fatal(err)
	}
	var d mad.Trap259BKey
	_ = d.Decode(n.Details[:])
	want := mad.Trap259BKey{LIDAddr: 5, Method: mad.MethodSet, AttrID: mad.AttrBKeyInfo, QP: 1, BKey: 0xBAD, GIDAddr: g.SGID}
	if d != want || n.IssuerLID != 6 {
		t.Fatalf("trap 259 from LID %d: %+v\nwant %+v", n.IssuerLID, d, want)
	}
}

// sweptServer serves e with its ports 1 and 2 cabled to sw's ports 3 and 5,
// swept with the switch at LID 1.
func sweptServer(t *testing.T, e *mad.Engine, sw *mad.Switch) *ibsim.Server {
	t.Helper()
	s, err := ibsim.Listen(fmt.Sprintf("vhcrdtest%d-%d", os.Getpid(), seq.Add(1)), e,
		ibsim.Options{Fabric: &ibsim.Fabric{Switch: sw, Cables: map[uint8]uint8{1: 3, 2: 5}, LID: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
