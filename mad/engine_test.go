package mad_test

import (
	"encoding/binary"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/madtest"
)

var be = binary.BigEndian

type fixture struct {
	e     *mad.Engine
	clock *madtest.Clock
	sink  *madtest.Sink
}

func newFixture(t testing.TB, mutate func(*mad.NodeConfig)) *fixture {
	t.Helper()
	cfg := madtest.Node()
	if mutate != nil {
		mutate(&cfg)
	}
	f := &fixture{clock: madtest.NewClock(), sink: new(madtest.Sink)}
	e, err := mad.New(cfg, mad.Options{Now: f.clock.Now, Sink: f.sink})
	if err != nil {
		t.Fatal(err)
	}
	f.e = e
	return f
}

func (f *fixture) portInfo(t *testing.T, port uint8) mad.PortInfo {
	t.Helper()
	pi, err := f.e.PortInfo(port)
	if err != nil {
		t.Fatal(err)
	}
	return pi
}

func wantReply(t *testing.T, res mad.Result, out *mad.MAD, status uint16) {
	t.Helper()
	if res != mad.Success|mad.Reply {
		t.Fatalf("result %d, want Success|Reply", res)
	}
	if got := out.Status(); got != status {
		t.Fatalf("status 0x%04x, want 0x%04x", got, status)
	}
}

func decodePI(t *testing.T, out *mad.MAD) mad.PortInfo {
	t.Helper()
	var pi mad.PortInfo
	if err := pi.Decode(out.SMPData()); err != nil {
		t.Fatal(err)
	}
	return pi
}

func TestSubnGetAttributes(t *testing.T) {
	f := newFixture(t, nil)
	wc := madtest.SMIWC(1)

	out, res := f.e.ProcessMAD(0, 1, wc, nil, madtest.SMP(mad.MethodGet, mad.AttrNodeInfo, 0, 0, nil))
	wantReply(t, res, &out, 0)
	if out.Method() != mad.MethodGetResp || out.TID() != 0x1234 {
		t.Fatalf("header: method 0x%x tid 0x%x", out.Method(), out.TID())
	}
	var ni mad.NodeInfo
	if err := ni.Decode(out.SMPData()); err != nil {
		t.Fatal(err)
	}
	want := mad.NodeInfo{BaseVersion: 1, ClassVersion: 1, NodeType: 1, NumPorts: 2, SystemImageGUID: 0x0002c90300a0b0c0,
		NodeGUID: 0x0002c90300a0b0c0, PortGUID: 0x0002c90300a0b0c1, PartitionCap: 64, DeviceID: 0x1003,
		Revision: 0xa1, LocalPortNum: 1, VendorID: 0x0002c9}
	if ni != want {
		t.Fatalf("NodeInfo %+v\nwant %+v", ni, want)
	}

	out, res = f.e.ProcessMAD(0, 2, wc, nil, madtest.SMP(mad.MethodGet, mad.AttrNodeDescription, 0, 0, nil))
	wantReply(t, res, &out, 0)
	var nd mad.NodeDescription
	_ = nd.Decode(out.SMPData())
	if nd.String() != "vhcrd model hca" {
		t.Fatalf("NodeDescription %q", nd.String())
	}

	out, res = f.e.ProcessMAD(0, 1, wc, nil, madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 0, 0, nil))
	wantReply(t, res, &out, 0)
	pi := decodePI(t, &out)
	if pi.LID != 5 || pi.PortState != mad.PortActive || pi.MasterSMLID != 1 || pi.MasterSMSL != 3 ||
		pi.LocalPortNum != 1 || pi.GUIDCap != 3 || pi.GIDPrefix != mad.DefaultGIDPrefix ||
		pi.CapabilityMask != mad.DefaultCapabilityMask || pi.PortPhysicalState != mad.PhysLinkUp {
		t.Fatalf("PortInfo %+v", pi)
	}
	// AttrMod names another port; LocalPortNum stays the arrival port.
	out, _ = f.e.ProcessMAD(0, 1, wc, nil, madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 2, 0, nil))
	if pi := decodePI(t, &out); pi.LID != 6 || pi.PortState != mad.PortInit || pi.LocalPortNum != 1 {
		t.Fatalf("PortInfo of port 2: %+v", pi)
	}

	out, res = f.e.ProcessMAD(0, 1, wc, nil, madtest.SMP(mad.MethodGet, mad.AttrGUIDInfo, 0, 0, nil))
	wantReply(t, res, &out, 0)
	var gi mad.GUIDInfo
	_ = gi.Decode(out.SMPData())
	if gi != (mad.GUIDInfo{0x0002c90300a0b0c1, 0x0002c90300a0b1c1, 0x0002c90300a0b2c1}) {
		t.Fatalf("GUIDInfo %x", gi)
	}

	out, res = f.e.ProcessMAD(0, 1, wc, nil, madtest.SMP(mad.MethodGet, mad.AttrPKeyTable, 0, 0, nil))
	wantReply(t, res, &out, 0)
	var pk mad.PKeyTable
	_ = pk.Decode(out.SMPData())
	if pk[0] != 0xFFFF || pk[1] != 0x8001 || pk[2] != 2 || pk[3] != 0 {
		t.Fatalf("P_KeyTable %x", pk)
	}

	out, res = f.e.ProcessMAD(0, 1, wc, nil, madtest.SMP(mad.MethodGet, mad.AttrSLtoVLTable, 0, 0, nil))
	wantReply(t, res, &out, 0)
	if got := out.SMPData()[:8]; string(got) != "\x01\x23\x45\x67\x01\x23\x45\x6f" {
		t.Fatalf("SLtoVL % x", got)
	}

	out, res = f.e.ProcessMAD(0, 1, wc, nil, madtest.SMP(mad.MethodGet, mad.AttrVLArbTable, 1<<16, 0, nil))
	wantReply(t, res, &out, 0)
}

func TestSubnBadRequests(t *testing.T) {
	f := newFixture(t, nil)
	wc := madtest.SMIWC(1)
	withClassVersion := func(m *mad.MAD, v byte) *mad.MAD { m[2] = v; return m }
	withBase := func(m *mad.MAD, v byte) *mad.MAD { m[0] = v; return m }
	withClass := func(m *mad.MAD, v byte) *mad.MAD { m[1] = v; return m }
	cases := []struct {
		name   string
		port   uint8
		in     *mad.MAD
		res    mad.Result
		status uint16
		method uint8
	}{
		{"unknown attribute", 1, madtest.SMP(mad.MethodGet, 0x0077, 0, 0, nil), mad.Success | mad.Reply, mad.StatusUnsupportedAttr, mad.MethodGetResp},
		{"unknown method", 1, madtest.SMP(0x04, mad.AttrPortInfo, 0, 0, nil), mad.Success | mad.Reply, mad.StatusUnsupportedMethod, 0x84},
		{"bad class version", 1, withClassVersion(madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 0, 0, nil), 2), mad.Success | mad.Reply, mad.StatusBadVersion, mad.MethodGetResp},
		{"bad base version: dropped", 1, withBase(madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 0, 0, nil), 2), mad.Failure, 0, 0},
		{"unknown class: not ours", 1, withClass(madtest.SMP(mad.MethodGet, 1, 0, 0, nil), 0x07), mad.Success, 0, 0},
		{"SA class: not ours", 1, withClass(madtest.SMP(mad.MethodGet, 1, 0, 0, nil), mad.ClassSubnAdm), mad.Success, 0, 0},
		{"port 0", 0, madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 0, 0, nil), mad.Failure, 0, 0},
		{"port 3 of 2", 3, madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 0, 0, nil), mad.Failure, 0, 0},
		{"NodeInfo Set (read-only)", 1, madtest.SMP(mad.MethodSet, mad.AttrNodeInfo, 0, 0, nil), mad.Success | mad.Reply, mad.StatusUnsupportedAttr, mad.MethodGetResp},
		{"NodeDescription Set unsupported", 1, madtest.SMP(mad.MethodSet, mad.AttrNodeDescription, 0, 0, []byte("x")), mad.Success | mad.Reply, mad.StatusUnsupportedAttr, mad.MethodGetResp},
		{"NodeInfo modifier", 1, madtest.SMP(mad.MethodGet, mad.AttrNodeInfo, 1, 0, nil), mad.Success | mad.Reply, mad.StatusInvalidField, mad.MethodGetResp},
		{"NodeDescription modifier", 1, madtest.SMP(mad.MethodGet, mad.AttrNodeDescription, 1, 0, nil), mad.Success | mad.Reply, mad.StatusInvalidField, mad.MethodGetResp},
		{"PortInfo port 3", 1, madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 3, 0, nil), mad.Success | mad.Reply, mad.StatusInvalidField, mad.MethodGetResp},
		{"GUIDInfo block 1 of GUIDCap 3", 1, madtest.SMP(mad.MethodGet, mad.AttrGUIDInfo, 1, 0, nil), mad.Success | mad.Reply, mad.StatusInvalidField, mad.MethodGetResp},
		{"P_KeyTable block 2 of 64 entries", 1, madtest.SMP(mad.MethodGet, mad.AttrPKeyTable, 2, 0, nil), mad.Success | mad.Reply, mad.StatusInvalidField, mad.MethodGetResp},
		{"SLtoVL modifier", 1, madtest.SMP(mad.MethodGet, mad.AttrSLtoVLTable, 0x0101, 0, nil), mad.Success | mad.Reply, mad.StatusInvalidField, mad.MethodGetResp},
		{"VLArb block 0", 1, madtest.SMP(mad.MethodGet, mad.AttrVLArbTable, 0, 0, nil), mad.Success | mad.Reply, mad.StatusInvalidField, mad.MethodGetResp},
		{"VLArb block 2 beyond cap 8", 1, madtest.SMP(mad.MethodGet, mad.AttrVLArbTable, 2<<16, 0, nil), mad.Success | mad.Reply, mad.StatusInvalidField, mad.MethodGetResp},
		{"VLArb block 5", 1, madtest.SMP(mad.MethodGet, mad.AttrVLArbTable, 5<<16, 0, nil), mad.Success | mad.Reply, mad.StatusInvalidField, mad.MethodGetResp},
		{"SMInfo: left to the SM agent", 1, madtest.SMP(mad.MethodGet, mad.AttrSMInfo, 0, 0, nil), mad.Success, 0, 0},
		{"GetResp arriving: not for the SMA", 1, madtest.SMP(mad.MethodGetResp, mad.AttrPortInfo, 0, 0, nil), mad.Success, 0, 0},
		{"Trap arriving: for an SM", 1, madtest.SMP(mad.MethodTrap, mad.AttrNotice, 0, 0, nil), mad.Success, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, res := f.e.ProcessMAD(0, c.port, wc, nil, c.in)
			if res != c.res {
				t.Fatalf("result %d, want %d", res, c.res)
			}
			if res&mad.Reply != 0 && (out.Status() != c.status || out.Method() != c.method) {
				t.Fatalf("status 0x%04x method 0x%02x, want 0x%04x 0x%02x", out.Status(), out.Method(), c.status, c.method)
			}
		})
	}
	t.Run("SMP on QP1 dropped", func(t *testing.T) {
		_, res := f.e.ProcessMAD(0, 1, madtest.GSIWC(1, 0), nil, madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 0, 0, nil))
		if res != mad.Failure {
			t.Fatalf("result %d", res)
		}
	})
	t.Run("PerfMgt on QP0 dropped", func(t *testing.T) {
		_, res := f.e.ProcessMAD(0, 1, madtest.SMIWC(1), nil, madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0))
		if res != mad.Failure {
			t.Fatalf("result %d", res)
		}
	})
	t.Run("nil MAD", func(t *testing.T) {
		if _, res := f.e.ProcessMAD(0, 1, nil, nil, nil); res != mad.Failure {
			t.Fatalf("result %d", res)
		}
	})
}

// portInfoSetData encodes pi for a SubnSet. As an SM does, the physical
// state is sent as NoChange (only Polling and Disabled may be set).
func portInfoSetData(t *testing.T, pi mad.PortInfo) []byte {
	t.Helper()
	pi.PortPhysicalState = mad.PhysNoChange
	b := make([]byte, 64)
	if err := pi.Encode(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSubnSetPortInfo(t *testing.T) {
	f := newFixture(t, nil)
	wc := madtest.SMIWC(1)
	cur := f.portInfo(t, 1)

	// Writable fields change; read-only ones (CapabilityMask, GUIDCap,
	// LinkWidthSupported, VLCap, MTUCap) are ignored.
	n := cur
	n.LID, n.MasterSMLID, n.MasterSMSL, n.SubnetTimeOut = 0x20, 0x10, 7, 9
	n.CapabilityMask, n.GUIDCap, n.LinkWidthSupported, n.VLCap, n.MTUCap = 0xFFFFFFFF, 99, 0xFF, 1, 1
	n.NeighborMTU = 4
	n.PortState = mad.PortNoChange
	out, res := f.e.ProcessMAD(0, 1, wc, nil, madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 1, 0, portInfoSetData(t, n)))
	wantReply(t, res, &out, 0)
	got := decodePI(t, &out)
	if got.LID != 0x20 || got.MasterSMLID != 0x10 || got.MasterSMSL != 7 || got.SubnetTimeOut != 9 || got.NeighborMTU != 4 {
		t.Fatalf("writable fields not applied: %+v", got)
	}
	if got.CapabilityMask != cur.CapabilityMask || got.GUIDCap != cur.GUIDCap || got.LinkWidthSupported != cur.LinkWidthSupported ||
		got.VLCap != cur.VLCap || got.MTUCap != cur.MTUCap || got.PortState != mad.PortActive {
		t.Fatalf("read-only fields changed by Set: %+v", got)
	}

	bad := []struct {
		name string
		mut  func(*mad.PortInfo)
	}{
		{"LID 0", func(p *mad.PortInfo) { p.LID = 0 }},
		{"multicast LID", func(p *mad.PortInfo) { p.LID = 0xC001 }},
		{"MasterSMLID 0xFFFF", func(p *mad.PortInfo) { p.MasterSMLID = 0xFFFF }},
		{"PortState Init", func(p *mad.PortInfo) { p.PortState = mad.PortInit }},
		{"PortState Armed from Active", func(p *mad.PortInfo) { p.PortState = mad.PortArmed }},
		{"LinkDownDefaultState 15", func(p *mad.PortInfo) { p.LinkDownDefaultState = 0xF }},
		{"NeighborMTU above MTUCap", func(p *mad.PortInfo) { p.NeighborMTU = 6 }},
		{"NeighborMTU 0", func(p *mad.PortInfo) { p.NeighborMTU = 0 }},
		{"OperationalVLs above VLCap", func(p *mad.PortInfo) { p.OperationalVLs = 5 }},
		{"LinkWidthEnabled unsupported", func(p *mad.PortInfo) { p.LinkWidthEnabled = 0x8 }},
		{"LinkDownDefaultState 3", func(p *mad.PortInfo) { p.LinkDownDefaultState = 3 }},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			before := f.portInfo(t, 1)
			n := before
			n.PortState = mad.PortNoChange
			c.mut(&n)
			out, res := f.e.ProcessMAD(0, 1, wc, nil, madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 1, 0, portInfoSetData(t, n)))
			wantReply(t, res, &out, mad.StatusInvalidField)
			if after := f.portInfo(t, 1); after != before {
				t.Fatalf("rejected Set changed the port:\n%+v\n%+v", before, after)
			}
		})
	}

	t.Run("PhysState LinkUp", func(t *testing.T) {
		before := f.portInfo(t, 1)
		n := before
		n.PortState = mad.PortNoChange
		d := portInfoSetData(t, n)
		d[33] = byte(mad.PhysLinkUp)<<4 | d[33]&0xF
		out, res := f.e.ProcessMAD(0, 1, wc, nil, madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 1, 0, d))
		wantReply(t, res, &out, mad.StatusInvalidField)
		if after := f.portInfo(t, 1); after != before {
			t.Fatal("rejected Set changed the port")
		}
	})
	t.Run("Armed then Active from Init", func(t *testing.T) {
		p2 := f.portInfo(t, 2)
		for _, st := range []mad.PortState{mad.PortArmed, mad.PortActive} {
			n := p2
			n.PortState = st
			out, res := f.e.ProcessMAD(0, 2, wc, nil, madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 0, 0, portInfoSetData(t, n)))
			wantReply(t, res, &out, 0)
			if got := decodePI(t, &out).PortState; got != st {
				t.Fatalf("state %d, want %d", got, st)
			}
		}
	})
}

func TestSubnSetTables(t *testing.T) {
	f := newFixture(t, nil)
	wc := madtest.SMIWC(1)
	// GUIDInfo: entry 0 (the port GUID) is read-only.
	g := mad.GUIDInfo{1, 2, 3, 4, 5, 6, 7, 8}
	b := make([]byte, 64)
	_ = g.Encode(b)
	out, res := f.e.ProcessMAD(0, 1, wc, nil, madtest.SMP(mad.MethodSet, mad.AttrGUIDInfo, 0, 0, b))
	wantReply(t, res, &out, 0)
	var got mad.GUIDInfo
	_ = got.Decode(out.SMPData())
	if got != (mad.GUIDInfo{0x0002c90300a0b0c1, 2, 3}) {
		t.Fatalf("GUIDInfo after Set %x", got)
	}
	// P_KeyTable block 1 (entries 32..63).
	var pk mad.PKeyTable
	pk[0], pk[31] = 0x8005, 0x0006
	_ = pk.Encode(b)
	out, res = f.e.ProcessMAD(0, 1, wc, nil, madtest.SMP(mad.MethodSet, mad.AttrPKeyTable, 1, 0, b))
	wantReply(t, res, &out, 0)
	if k, _ := f.e.PKey(1, 32); k != 0x8005 {
		t.Fatalf("pkey[32] = 0x%x", k)
	}
	if k, _ := f.e.PKey(1, 63); k != 0x0006 {
		t.Fatalf("pkey[63] = 0x%x", k)
	}
	// SLtoVL and VLArbitration round-trip through Set.
	out, res = f.e.ProcessMAD(0, 1, wc, nil, madtest.SMP(mad.MethodSet, mad.AttrSLtoVLTable, 0, 0, []byte{0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10}))
	wantReply(t, res, &out, 0)
	if out.SMPData()[0] != 0xfe || out.SMPData()[7] != 0x10 {
		t.Fatalf("SLtoVL % x", out.SMPData()[:8])
	}
	vl := []byte{0xf1, 10, 0x02, 20}
	out, res = f.e.ProcessMAD(0, 1, wc, nil, madtest.SMP(mad.MethodSet, mad.AttrVLArbTable, 3<<16, 0, vl))
	wantReply(t, res, &out, 0)
	if d := out.SMPData(); d[0] != 1 || d[1] != 10 || d[2] != 2 || d[3] != 20 {
		t.Fatalf("VLArb % x", d[:4])
	}
}

func TestSetNodeDescriptionWhenSupported(t *testing.T) {
	f := newFixture(t, func(c *mad.NodeConfig) { c.Ports[0].CapabilityMask2 = mad.CapMask2SetNodeDescSuppd })
	wc := madtest.SMIWC(1)
	out, res := f.e.ProcessMAD(0, 1, wc, nil, madtest.SMP(mad.MethodSet, mad.AttrNodeDescription, 0, 0, []byte("renamed")))
	wantReply(t, res, &out, 0)
	out, res = f.e.ProcessMAD(0, 1, wc, nil, madtest.SMP(mad.MethodSet, mad.AttrNodeDescription, 0, 0, []byte("a\x00junk")))
	wantReply(t, res, &out, mad.StatusInvalidField)
	out, _ = f.e.ProcessMAD(0, 1, wc, nil, madtest.SMP(mad.MethodGet, mad.AttrNodeDescription, 0, 0, nil))
	var nd mad.NodeDescription
	_ = nd.Decode(out.SMPData())
	if nd.String() != "renamed" {
		t.Fatalf("NodeDescription %q", nd.String())
	}
}

func TestDirectedRoute(t *testing.T) {
	f := newFixture(t, nil)
	wc := &mad.WC{SLID: 0xFFFF}
	t.Run("hop count 0", func(t *testing.T) {
		in := madtest.DRSMP(mad.MethodGet, mad.AttrNodeInfo, 0, 0, 0)
		out, res := f.e.ProcessMAD(0, 1, wc, nil, in)
		wantReply(t, res, &out, mad.StatusDirection)
		// process_mad leaves the hop pointer to the SMI.
		if !out.Direction() || out.HopPointer() != 1 || out.MgmtClass() != mad.ClassSubnDirected {
			t.Fatalf("D %v hop pointer %d", out.Direction(), out.HopPointer())
		}
		if !mad.SMISend(&out) || out.HopPointer() != 0 {
			t.Fatalf("SMISend: hop pointer %d", out.HopPointer())
		}
	})
	t.Run("hop count 2 through the SMI", func(t *testing.T) {
		in := madtest.DRSMP(mad.MethodGet, mad.AttrPortInfo, 0, 0, 2, 1, 3)
		in[6] = 2 // as it comes off the wire at the end of its path
		if !mad.SMIRecv(in, 2) || in.HopPointer() != 3 || in[192+2] != 2 {
			t.Fatalf("SMIRecv: hop pointer %d return path[2] %d", in.HopPointer(), in[194])
		}
		out, res := f.e.ProcessMAD(0, 2, wc, nil, in)
		wantReply(t, res, &out, mad.StatusDirection)
		if !mad.SMISend(&out) || out.HopPointer() != 2 || out[194] != 2 || out[129] != 1 || out[130] != 3 {
			t.Fatalf("response hop pointer %d, return path[2] %d", out.HopPointer(), out[194])
		}
	})
	t.Run("error status keeps D bit", func(t *testing.T) {
		out, res := f.e.ProcessMAD(0, 1, wc, nil, madtest.DRSMP(mad.MethodGet, 0x0099, 0, 0, 0))
		wantReply(t, res, &out, mad.StatusDirection|mad.StatusUnsupportedAttr)
	})
	drops := []struct {
		name string
		mut  func(*mad.MAD)
		res  mad.Result
		smi  bool // what SMIRecv says
	}{
		{"hop count 64", func(m *mad.MAD) { m[6], m[7] = 65, 64 }, mad.Failure, false},
		{"hop pointer beyond count+1", func(m *mad.MAD) { m[6], m[7] = 5, 2 }, mad.Failure, false},
		{"intermediate hop (a CA drops it)", func(m *mad.MAD) { m[6], m[7] = 1, 2 }, mad.Failure, false},
		{"outgoing, hop pointer 0", func(m *mad.MAD) { m[6], m[7] = 0, 2 }, mad.Failure, false},
		{"not yet through the SMI", func(m *mad.MAD) { m[6], m[7] = 2, 2 }, mad.Failure, true},
		{"DrDLID not permissive", func(m *mad.MAD) { be.PutUint16(m[34:], 7) }, mad.Failure, false},
		{"returning SMP (D set)", func(m *mad.MAD) { m[4] |= 0x80 }, mad.Success, true},
	}
	for _, c := range drops {
		t.Run(c.name, func(t *testing.T) {
			in := madtest.DRSMP(mad.MethodGet, mad.AttrNodeInfo, 0, 0, 0)
			c.mut(in)
			if _, res := f.e.ProcessMAD(0, 1, wc, nil, in); res != c.res {
				t.Fatalf("result %d, want %d", res, c.res)
			}
			if ok := mad.SMIRecv(in, 1); ok != c.smi {
				t.Fatalf("SMIRecv = %v", ok)
			}
		})
	}
	t.Run("SMISend discards a bad hop pointer", func(t *testing.T) {
		m := madtest.DRSMP(mad.MethodGetResp, mad.AttrNodeInfo, 0, 0, 3)
		m[4] |= 0x80
		m[6] = 2
		if mad.SMISend(m) {
			t.Fatal("accepted")
		}
	})
}

const goodMKey = 0x1111222233334444

func mkeyNode(level uint8, lease uint16) func(*mad.NodeConfig) {
	return func(c *mad.NodeConfig) {
		c.Ports[0].MKey = goodMKey
		c.Ports[0].MKeyProtect = level
		c.Ports[0].MKeyLeasePeriod = lease
	}
}

func TestMKeyProtectLevels(t *testing.T) {
	type want struct {
		res       mad.Result
		violation bool
		mkeySeen  uint64 // PortInfo.M_Key in the reply (Get only)
	}
	methods := []uint8{mad.MethodGet, mad.MethodSet, mad.MethodTrap, mad.MethodTrapRepress}
	table := map[uint8][4]want{
		0: {{mad.Success | mad.Reply, false, goodMKey}, {mad.Success | mad.Consumed, true, 0}, {mad.Success, false, 0}, {mad.Success | mad.Consumed, true, 0}},
		1: {{mad.Success | mad.Reply, false, 0}, {mad.Success | mad.Consumed, true, 0}, {mad.Success, false, 0}, {mad.Success | mad.Consumed, true, 0}},
		2: {{mad.Success | mad.Consumed, true, 0}, {mad.Success | mad.Consumed, true, 0}, {mad.Success, false, 0}, {mad.Success | mad.Consumed, true, 0}},
		3: {{mad.Success | mad.Consumed, true, 0}, {mad.Success | mad.Consumed, true, 0}, {mad.Success, false, 0}, {mad.Success | mad.Consumed, true, 0}},
	}
	for level := uint8(0); level <= 3; level++ {
		for i, m := range methods {
			w := table[level][i]
			t.Run(mad.MethodLabels[i]+"/level"+string('0'+level), func(t *testing.T) {
				f := newFixture(t, mkeyNode(level, 0))
				data := portInfoSetData(t, f.portInfo(t, 1))
				in := madtest.SMP(m, mad.AttrPortInfo, 1, 0xBAD, data)
				if m == mad.MethodTrap || m == mad.MethodTrapRepress {
					in = madtest.SMP(m, mad.AttrNotice, 0, 0xBAD, nil)
				}
				out, res := f.e.ProcessMAD(0, 1, madtest.SMIWC(9), nil, in)
				if res != w.res {
					t.Fatalf("result %d, want %d", res, w.res)
				}
				viol := f.portInfo(t, 1).MKeyViolations
				traps := f.sink.Traps()
				if w.violation {
					if viol != 1 || len(traps) != 1 || traps[0].Number != mad.TrapBadMKey {
						t.Fatalf("violations %d, traps %+v", viol, traps)
					}
				} else if viol != 0 || len(traps) != 0 {
					t.Fatalf("unexpected violation: %d, %d traps", viol, len(traps))
				}
				if m == mad.MethodGet && res&mad.Reply != 0 {
					if got := decodePI(t, &out).MKey; got != w.mkeySeen {
						t.Fatalf("PortInfo.M_Key 0x%x, want 0x%x", got, w.mkeySeen)
					}
				}
				// The right key and the ignore flag always pass.
				in2 := madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 1, goodMKey, nil)
				if out, res := f.e.ProcessMAD(0, 1, madtest.SMIWC(9), nil, in2); res != mad.Success|mad.Reply || decodePI(t, &out).MKey != goodMKey {
					t.Fatalf("good key refused: %d", res)
				}
				in3 := madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 1, 0xBAD, nil)
				if out, res := f.e.ProcessMAD(mad.IgnoreMKey, 1, nil, nil, in3); res != mad.Success|mad.Reply || decodePI(t, &out).MKey != goodMKey {
					t.Fatalf("IgnoreMKey refused: %d", res)
				}
			})
		}
	}
}

func TestMKeyOfTheNamedPort(t *testing.T) {
	f := newFixture(t, func(c *mad.NodeConfig) { c.Ports[1].MKey = 0x55 })
	wc := madtest.SMIWC(1)
	out, res := f.e.ProcessMAD(0, 1, wc, nil, madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 2, 0, nil))
	wantReply(t, res, &out, 0)
	if pi := decodePI(t, &out); pi.MKey != 0 || pi.LID != 6 {
		t.Fatalf("port 2 read through port 1: %+v", pi)
	}
	pi := f.portInfo(t, 2)
	pi.LID, pi.PortState = 0x66, mad.PortNoChange
	out, res = f.e.ProcessMAD(0, 1, wc, nil, madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 2, 0, portInfoSetData(t, pi)))
	wantReply(t, res, &out, mad.StatusInvalidField)
	if f.portInfo(t, 2).LID != 6 {
		t.Fatal("Set through another port's M_Key applied")
	}
	out, res = f.e.ProcessMAD(0, 1, wc, nil, madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 2, 0x55, portInfoSetData(t, pi)))
	wantReply(t, res, &out, 0)
	if got := decodePI(t, &out); got.LID != 0x66 || got.MKey != 0x55 {
		t.Fatalf("Set with port 2's key: %+v", got)
	}
	out, _ = f.e.ProcessMAD(mad.IgnoreMKey, 1, nil, nil, madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 2, 0, nil))
	if decodePI(t, &out).MKey != 0x55 {
		t.Fatal("IgnoreMKey hid the M_Key")
	}
}

func TestMKeyLeaseExpiry(t *testing.T) {
	f := newFixture(t, mkeyNode(2, 10))
	get := func() mad.Result {
		_, res := f.e.ProcessMAD(0, 1, madtest.SMIWC(9), nil, madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 1, 0xBAD, nil))
		return res
	}
	if get() != mad.Success|mad.Consumed {
		t.Fatal("level 2 Get with a wrong key answered")
	}
	f.clock.Advance(9 * time.Second)
	if get() != mad.Success|mad.Consumed {
		t.Fatal("answered before the lease ran out")
	}
	f.clock.Advance(time.Second)
	if get() != mad.Success|mad.Reply {
		t.Fatal("lease expired but Get still refused")
	}
	pi := f.portInfo(t, 1)
	if pi.MKeyProtectBits != 0 || pi.MKey != goodMKey || pi.MKeyViolations != 2 {
		t.Fatalf("after expiry: protect %d key 0x%x violations %d", pi.MKeyProtectBits, pi.MKey, pi.MKeyViolations)
	}

	// A valid key stops a running lease.
	f = newFixture(t, mkeyNode(2, 10))
	get()
	f.clock.Advance(5 * time.Second)
	if _, res := f.e.ProcessMAD(0, 1, madtest.SMIWC(9), nil, madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 1, goodMKey, nil)); res != mad.Success|mad.Reply {
		t.Fatal("good key refused")
	}
	f.clock.Advance(time.Hour)
	if get() != mad.Success|mad.Consumed {
		t.Fatal("lease stopped by the SM, yet protection dropped")
	}
}

func TestMKeyViolationsSaturate(t *testing.T) {
	f := newFixture(t, mkeyNode(2, 0))
	pi := f.portInfo(t, 1)
	pi.MKeyViolations = 0xFFFE
	pi.PortState = mad.PortNoChange
	if _, res := f.e.ProcessMAD(0, 1, nil, nil, madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 1, goodMKey, portInfoSetData(t, pi))); res != mad.Success|mad.Reply {
		t.Fatal(res)
	}
	for range 3 {
		f.e.ProcessMAD(0, 1, nil, nil, madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 1, 0xBAD, nil))
	}
	if v := f.portInfo(t, 1).MKeyViolations; v != 0xFFFF {
		t.Fatalf("M_KeyViolations 0x%x, want 0xFFFF", v)
	}
	if s := f.e.Snapshot(); s.KeyViolations[mad.CKeyM] != 3 || s.TrapsSuppressed[mad.CSuppressNoWC] != 3 {
		t.Fatalf("snapshot %+v", s)
	}
}

func TestTrap256Payload(t *testing.T) {
	f := newFixture(t, mkeyNode(1, 0))
	in := madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 1, 0xBAD, nil)
	f.e.ProcessMAD(0, 1, madtest.SMIWC(0x33), nil, in)
	traps := f.sink.Traps()
	if len(traps) != 1 {
		t.Fatalf("%d traps", len(traps))
	}
	tr := traps[0]
	if tr.Class != mad.ClassSubnLID || tr.DLID != 1 || tr.SL != 3 || tr.DestQP != 0 || tr.SLID != 5 || tr.Port != 1 || tr.PKey != 0xFFFF {
		t.Fatalf("trap addressing %+v", tr)
	}
	m := &tr.MAD
	if m.BaseVersion() != 1 || m.MgmtClass() != mad.ClassSubnLID || m.ClassVersion() != 1 || m.Method() != mad.MethodTrap ||
		m.AttrID() != mad.AttrNotice || m.AttrMod() != 0 || m.MKey() != 0 {
		t.Fatalf("trap header % x", m[:32])
	}
	var n mad.Notice
	if err := n.Decode(m.SMPData()); err != nil {
		t.Fatal(err)
	}
	if !n.IsGeneric || n.Type != mad.NoticeSecurity || n.Producer != 1 || n.TrapNum != 256 || n.IssuerLID != 5 {
		t.Fatalf("notice %+v", n)
	}
	var d mad.Trap256
	if err := d.Decode(n.Details[:]); err != nil {
		t.Fatal(err)
	}
	want := mad.Trap256{LIDAddr: 0x33, Method: mad.MethodSet, AttrID: mad.AttrPortInfo, AttrMod: 1, MKey: 0xBAD}
	if d != want {
		t.Fatalf("trap 256 details %+v\nwant %+v", d, want)
	}

	t.Run("directed route, truncated path", func(t *testing.T) {
		f := newFixture(t, mkeyNode(2, 0))
		path := make([]byte, 40)
		for i := range path {
			path[i] = byte(i + 1)
		}
		in := madtest.DRSMP(mad.MethodGet, mad.AttrNodeInfo, 0, 0xBAD, 40, path...)
		in[6] = 41
		be.PutUint16(in[32:], 0xFFFF)
		for i := range 40 {
			in[192+i] = byte(0x80 + i)
		}
		if _, res := f.e.ProcessMAD(0, 1, &mad.WC{SLID: 0xFFFF}, nil, in); res != mad.Success|mad.Consumed {
			t.Fatalf("result %d", res)
		}
		tr := f.sink.Traps()
		if len(tr) != 1 {
			t.Fatalf("%d traps", len(tr))
		}
		var n mad.Notice
		_ = n.Decode(tr[0].MAD.SMPData())
		var d mad.Trap256
		if err := d.Decode(n.Details[:]); err != nil {
			t.Fatal(err)
		}
		if !d.DRNotice || !d.DRPathTruncated || d.DRHopCount != 30 || d.DRSLID != 0xFFFF || d.LIDAddr != 0xFFFF ||
			d.DRReturnPath[0] != 0x80 || d.DRReturnPath[29] != 0x80+29 || d.Method != mad.MethodGet || d.AttrID != mad.AttrNodeInfo {
			t.Fatalf("DR trap 256 %+v", d)
		}
	})
}

func TestTrapPacingRepeatRepress(t *testing.T) {
	f := newFixture(t, func(c *mad.NodeConfig) {
		mkeyNode(2, 0)(c)
		c.Ports[0].SubnetTimeOut = 10 // 4.096 µs × 1024 ≈ 4.19 ms
	})
	bad := func() {
		f.e.ProcessMAD(0, 1, madtest.SMIWC(9), nil, madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 1, 0xBAD, nil))
	}
	iv := time.Duration(4096) << 10
	bad()
	bad() // same instant: rate-limited
	if n := len(f.sink.Traps()); n != 1 {
		t.Fatalf("%d traps, want 1", n)
	}
	if s := f.e.Snapshot(); s.TrapsSuppressed[mad.CSuppressRateLimited] != 1 {
		t.Fatalf("rate-limited count %d", s.TrapsSuppressed[mad.CSuppressRateLimited])
	}
	if f.e.PollTraps() != 0 {
		t.Fatal("resent before the interval")
	}
	f.clock.Advance(iv)
	if f.e.PollTraps() != 1 {
		t.Fatal("not resent after the interval")
	}
	tr := f.sink.Traps()
	if len(tr) != 1 || tr[0].Repeat != 1 {
		t.Fatalf("resend %+v", tr)
	}
	tid := tr[0].MAD.TID()
	// A TrapRepress with the wrong M_Key is itself a violation and does not
	// repress; with the right key it does, and gets no reply.
	rep := madtest.SMP(mad.MethodTrapRepress, mad.AttrNotice, 0, goodMKey, tr[0].MAD.SMPData())
	be.PutUint64(rep[8:], tid)
	if _, res := f.e.ProcessMAD(0, 1, madtest.SMIWC(1), nil, rep); res != mad.Success|mad.Consumed {
		t.Fatalf("TrapRepress result %d", res)
	}
	f.clock.Advance(iv)
	if f.e.PollTraps() != 0 || f.e.PendingTraps() != 0 {
		t.Fatal("repressed trap resent")
	}
	if s := f.e.Snapshot(); s.TrapsRepressed != 1 || s.TrapsSent[mad.CTrap256] != 1 || s.TrapRepeats[mad.CTrap256] != 1 {
		t.Fatalf("snapshot %+v", s)
	}

	// Unrepressed: resent DefaultMaxTrapRepeats times, then dropped.
	bad()
	f.sink.Traps()
	for range 10 {
		f.clock.Advance(iv)
		f.e.PollTraps()
	}
	if n := len(f.sink.Traps()); n != mad.DefaultMaxTrapRepeats {
		t.Fatalf("%d resends, want %d", n, mad.DefaultMaxTrapRepeats)
	}
	if s := f.e.Snapshot(); s.TrapsExpired != 1 || f.e.PendingTraps() != 0 {
		t.Fatalf("expired %d pending %d", s.TrapsExpired, f.e.PendingTraps())
	}
}

func TestTrapQueueBounded(t *testing.T) {
	f := newFixture(t, mkeyNode(2, 0))
	for range 20 {
		f.clock.Advance(time.Millisecond)
		f.e.ProcessMAD(0, 1, madtest.SMIWC(9), nil, madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 1, 0xBAD, nil))
	}
	s := f.e.Snapshot()
	if f.e.PendingTraps() > 8 || s.TrapsSuppressed[mad.CSuppressQueueFull] == 0 {
		t.Fatalf("pending %d, queue-full %d", f.e.PendingTraps(), s.TrapsSuppressed[mad.CSuppressQueueFull])
	}
}

func TestTrapsNeedActivePortAndSM(t *testing.T) {
	f := newFixture(t, func(c *mad.NodeConfig) {
		c.Ports[1].MKey, c.Ports[1].MKeyProtect = 5, 2 // port 2 is Init
		mkeyNode(2, 0)(c)
		c.Ports[0].MasterSMLID = 0
	})
	f.e.ProcessMAD(0, 2, madtest.SMIWC(9), nil, madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 0, 0xBAD, nil))
	f.e.ProcessMAD(0, 1, madtest.SMIWC(9), nil, madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 0, 0xBAD, nil))
	s := f.e.Snapshot()
	if len(f.sink.Traps()) != 0 || s.TrapsSuppressed[mad.CSuppressPortNotActive] != 1 || s.TrapsSuppressed[mad.CSuppressNoDestination] != 1 {
		t.Fatalf("suppressed %v", s.TrapsSuppressed)
	}
}

func testGRH() *mad.GRH {
	return &mad.GRH{IPVer: 6, NextHeader: 0x1B, HopLimit: 64,
		SGID: madtest.GID(0xfe80000000000000, 0x0002c90300000007), DGID: madtest.GID(0xfe80000000000000, 0x0002c90300a0b0c1)}
}

func TestGSIPKeyViolation(t *testing.T) {
	f := newFixture(t, func(c *mad.NodeConfig) { c.Ports[0].LMC = 2 })
	wc := madtest.GSIWC(0x21, 3) // entry 3 is 0: invalid
	wc.DLIDPathBits = 3
	wc.GRHPresent = true
	_, res := f.e.ProcessMAD(0, 1, wc, testGRH(), madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0))
	if res != mad.Success|mad.Consumed {
		t.Fatalf("result %d", res)
	}
	if v := f.portInfo(t, 1).PKeyViolations; v != 1 {
		t.Fatalf("P_KeyViolations %d", v)
	}
	tr := f.sink.Traps()
	if len(tr) != 1 || tr[0].Number != 257 || tr[0].DLID != 1 || tr[0].DestQP != 0 {
		t.Fatalf("traps %+v", tr)
	}
	var n mad.Notice
	_ = n.Decode(tr[0].MAD.SMPData())
	var d mad.Trap257
	_ = d.Decode(n.Details[:])
	want := mad.Trap257{LIDAddr1: 0x21, LIDAddr2: 5 | 3, Key: 0, SL: 3, QP1: 0x45, QP2: 1,
		GIDAddr1: testGRH().SGID, GIDAddr2: testGRH().DGID}
	if n.TrapNum != 257 || d != want {
		t.Fatalf("trap 257 %+v\nwant %+v", d, want)
	}

	t.Run("index beyond the table", func(t *testing.T) {
		_, res := f.e.ProcessMAD(0, 1, madtest.GSIWC(0x21, 1000), nil, madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0))
		if res != mad.Success|mad.Consumed || len(f.sink.Traps()) != 0 { // rate-limited: same instant
			t.Fatalf("result %d", res)
		}
	})
	t.Run("missing GRH for the GIDs", func(t *testing.T) {
		f.clock.Advance(time.Second)
		wc := madtest.GSIWC(0x21, 3)
		wc.GRHPresent = true
		_, res := f.e.ProcessMAD(0, 1, wc, nil, madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0))
		if res != mad.Success|mad.Consumed || len(f.sink.Traps()) != 0 {
			t.Fatalf("result %d", res)
		}
		if s := f.e.Snapshot(); s.TrapsSuppressed[mad.CSuppressNoGRH] != 1 || s.KeyViolations[mad.CKeyP] != 3 {
			t.Fatalf("snapshot %+v", s)
		}
	})
	t.Run("limited member key is valid", func(t *testing.T) {
		out, res := f.e.ProcessMAD(0, 1, madtest.GSIWC(0x21, 2), nil, madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0))
		wantReply(t, res, &out, 0)
	})
}

func TestGSIPKeyViolationsSaturate(t *testing.T) {
	f := newFixture(t, nil)
	pi := f.portInfo(t, 1)
	pi.PKeyViolations, pi.QKeyViolations, pi.PortState = 0xFFFF, 0xFFFE, mad.PortNoChange
	f.e.ProcessMAD(0, 1, nil, nil, madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 1, 0, portInfoSetData(t, pi)))
	f.e.ProcessMAD(0, 1, madtest.GSIWC(1, 9), nil, madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0))
	wc := madtest.GSIWC(1, 0)
	wc.QKey, wc.QKeyValid = 1, true
	f.e.ProcessMAD(0, 1, wc, nil, madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0))
	f.e.ProcessMAD(0, 1, wc, nil, madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0))
	if pi := f.portInfo(t, 1); pi.PKeyViolations != 0xFFFF || pi.QKeyViolations != 0xFFFF {
		t.Fatalf("P 0x%x Q 0x%x", pi.PKeyViolations, pi.QKeyViolations)
	}
}

func TestGSIQKeyViolation(t *testing.T) {
	f := newFixture(t, nil)
	wc := madtest.GSIWC(0x21, 0)
	wc.QKey, wc.QKeyValid = 0x12345678, true
	_, res := f.e.ProcessMAD(0, 1, wc, nil, madtest.Perf(mad.MethodGet, mad.AttrClassPortInfo, 1, 0))
	if res != mad.Success|mad.Consumed {
		t.Fatalf("result %d", res)
	}
	tr := f.sink.Traps()
	if len(tr) != 1 || tr[0].Number != 258 {
		t.Fatalf("traps %+v", tr)
	}
	var n mad.Notice
	_ = n.Decode(tr[0].MAD.SMPData())
	var d mad.Trap257
	_ = d.Decode(n.Details[:])
	if d.Key != 0x12345678 || d.LIDAddr1 != 0x21 || d.LIDAddr2 != 5 || d.QP1 != 0x45 || d.SL != 3 {
		t.Fatalf("trap 258 %+v", d)
	}
	if pi := f.portInfo(t, 1); pi.QKeyViolations != 1 {
		t.Fatalf("Q_KeyViolations %d", pi.QKeyViolations)
	}
	wc.QKey = mad.QP1QKey
	out, res := f.e.ProcessMAD(0, 1, wc, nil, madtest.Perf(mad.MethodGet, mad.AttrClassPortInfo, 1, 0))
	wantReply(t, res, &out, 0)
}

func TestPMA(t *testing.T) {
	f := newFixture(t, nil)
	wc := madtest.GSIWC(1, 0)
	out, res := f.e.ProcessMAD(0, 1, wc, nil, madtest.Perf(mad.MethodGet, mad.AttrClassPortInfo, 0, 0))
	wantReply(t, res, &out, 0)
	var cpi mad.ClassPortInfo
	_ = cpi.Decode(out.GSData())
	if cpi.CapabilityMask != 0x1200 || cpi.BaseVersion != 1 || cpi.ClassVersion != 1 {
		t.Fatalf("ClassPortInfo %+v", cpi)
	}
	// Two SMPs and two PMA MADs so far on port 1 (this one included).
	f.e.ProcessMAD(0, 1, madtest.SMIWC(1), nil, madtest.SMP(mad.MethodGet, mad.AttrNodeInfo, 0, 0, nil))
	out, res = f.e.ProcessMAD(0, 1, wc, nil, madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0))
	wantReply(t, res, &out, 0)
	var pc mad.PortCounters
	_ = pc.Decode(out.GSData())
	if pc.PortSelect != 1 || pc.PortRcvPkts != 3 || pc.PortXmitPkts != 2 || pc.PortRcvData != 3*72 {
		t.Fatalf("PortCounters %+v", pc)
	}
	out, res = f.e.ProcessMAD(0, 1, wc, nil, madtest.Perf(mad.MethodGet, mad.AttrPortCountersExtended, 1, 0))
	wantReply(t, res, &out, 0)
	var x mad.PortCountersExtended
	_ = x.Decode(out.GSData())
	if x.PortRcvPkts != 4 || x.PortXmitPkts != 3 || x.PortUnicastRcvPkts != 4 {
		t.Fatalf("PortCountersExtended %+v", x)
	}
	// Set clears the selected counters.
	out, res = f.e.ProcessMAD(0, 1, wc, nil, madtest.Perf(mad.MethodSet, mad.AttrPortCounters, 1, 0xFFFF))
	wantReply(t, res, &out, 0)
	_ = pc.Decode(out.GSData())
	if pc.PortRcvPkts != 0 || pc.PortXmitPkts != 0 || pc.PortRcvData != 0 {
		t.Fatalf("after clear %+v", pc)
	}
	out, _ = f.e.ProcessMAD(0, 1, wc, nil, madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0))
	_ = pc.Decode(out.GSData())
	if pc.PortRcvPkts != 1 || pc.PortXmitPkts != 1 {
		t.Fatalf("after clear and one Get %+v", pc)
	}
	// Port 2's counters are separate.
	out, _ = f.e.ProcessMAD(0, 1, wc, nil, madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 2, 0))
	_ = pc.Decode(out.GSData())
	if pc.PortSelect != 2 || pc.PortRcvPkts != 0 {
		t.Fatalf("port 2 %+v", pc)
	}
	if x, ok := f.e.PortCounters(1); !ok || x.PortRcvPkts != 2 || x.PortXmitPkts != 3 { // since the clear: 2 Gets in; the Set's reply and 2 out
		t.Fatalf("PortCounters(1) %+v", x)
	}
	if _, ok := f.e.PortCounters(3); ok {
		t.Fatal("PortCounters(3) of 2 ports")
	}
	bad := []struct {
		name   string
		in     *mad.MAD
		status uint16
	}{
		{"PortSelect 0", madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 0, 0), mad.StatusInvalidField},
		{"AllPortSelect unsupported", madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 0xFF, 0), mad.StatusInvalidField},
		{"unknown attribute", madtest.Perf(mad.MethodGet, 0x0099, 1, 0), mad.StatusUnsupportedAttr},
		{"unknown method", madtest.Perf(0x04, mad.AttrPortCounters, 1, 0), mad.StatusUnsupportedMethod},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			out, res := f.e.ProcessMAD(0, 1, wc, nil, c.in)
			wantReply(t, res, &out, c.status)
		})
	}
	t.Run("class version 2", func(t *testing.T) {
		in := madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0)
		in[2] = 2
		out, res := f.e.ProcessMAD(0, 1, wc, nil, in)
		wantReply(t, res, &out, mad.StatusBadVersion)
	})
}

func bkeyNode(key uint64, protect bool, lease uint16) func(*mad.NodeConfig) {
	return func(c *mad.NodeConfig) {
		c.Ports[0].BKey, c.Ports[0].BKeyProtect, c.Ports[0].BKeyLeasePeriod = key, protect, lease
	}
}

func bkeyInfo(t *testing.T, out *mad.MAD) mad.BKeyInfo {
	t.Helper()
	var k mad.BKeyInfo
	if err := k.Decode(out.GSData()); err != nil {
		t.Fatal(err)
	}
	return k
}

func TestBMABKey(t *testing.T) {
	const key = 0xB0B0B0B0
	wc := madtest.GSIWC(0x21, 0)
	t.Run("Get, wrong key, no protect bit: answered with the key", func(t *testing.T) {
		f := newFixture(t, bkeyNode(key, false, 0))
		out, res := f.e.ProcessMAD(0, 1, wc, nil, madtest.BM(mad.MethodGet, mad.AttrBKeyInfo, 0, 0xBAD, nil))
		wantReply(t, res, &out, 0)
		if k := bkeyInfo(t, &out); k.BKey != key || k.BKeyViolations != 0 {
			t.Fatalf("%+v", k)
		}
	})
	t.Run("Get, wrong key, protect bit: answered with the key zeroed", func(t *testing.T) {
		f := newFixture(t, bkeyNode(key, true, 0))
		out, res := f.e.ProcessMAD(0, 1, wc, nil, madtest.BM(mad.MethodGet, mad.AttrBKeyInfo, 0, 0xBAD, nil))
		wantReply(t, res, &out, 0)
		if k := bkeyInfo(t, &out); k.BKey != 0 || !k.BKeyProtectBit {
			t.Fatalf("%+v", k)
		}
		out, _ = f.e.ProcessMAD(0, 1, wc, nil, madtest.BM(mad.MethodGet, mad.AttrBKeyInfo, 0, key, nil))
		if k := bkeyInfo(t, &out); k.BKey != key {
			t.Fatalf("right key: %+v", k)
		}
		out, _ = f.e.ProcessMAD(mad.IgnoreBKey, 1, nil, nil, madtest.BM(mad.MethodGet, mad.AttrBKeyInfo, 0, 0xBAD, nil))
		if k := bkeyInfo(t, &out); k.BKey != key {
			t.Fatalf("IgnoreBKey: %+v", k)
		}
	})
	for _, protect := range []bool{false, true} {
		name := "Set, wrong key, no protect bit: violation and trap 259"
		if protect {
			name = "Set, wrong key, protect bit: violation and trap 259"
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, bkeyNode(key, protect, 0))
			wc := madtest.GSIWC(0x21, 0)
			wc.GRHPresent = true
			in := madtest.BM(mad.MethodSet, mad.AttrBKeyInfo, 0xA5, 0xBAD, make([]byte, 14))
			_, res := f.e.ProcessMAD(0, 1, wc, testGRH(), in)
			if res != mad.Success|mad.Consumed {
				t.Fatalf("result %d", res)
			}
			tr := f.sink.Traps()
			if len(tr) != 1 {
				t.Fatalf("%d traps", len(tr))
			}
			checkTrap259(t, tr[0], mad.Trap259BKey{LIDAddr: 0x21, Method: mad.MethodSet, AttrID: mad.AttrBKeyInfo,
				AttrMod: 0xA5, QP: 0x45, BKey: 0xBAD, GIDAddr: testGRH().SGID})
			out, _ := f.e.ProcessMAD(0, 1, wc, testGRH(), madtest.BM(mad.MethodGet, mad.AttrBKeyInfo, 0, key, nil))
			if k := bkeyInfo(t, &out); k.BKey != key || k.BKeyViolations != 1 {
				t.Fatalf("after violation %+v", k)
			}
		})
	}
	t.Run("Set with the right key", func(t *testing.T) {
		f := newFixture(t, bkeyNode(key, false, 0))
		d := make([]byte, 14)
		_ = (&mad.BKeyInfo{BKey: 0x77, BKeyProtectBit: true, BKeyLeasePeriod: 3, BKeyViolations: 9}).Encode(d)
		out, res := f.e.ProcessMAD(0, 1, wc, nil, madtest.BM(mad.MethodSet, mad.AttrBKeyInfo, 0, key, d))
		wantReply(t, res, &out, 0)
		if k := bkeyInfo(t, &out); k != (mad.BKeyInfo{BKey: 0x77, BKeyProtectBit: true, BKeyLeasePeriod: 3}) {
			t.Fatalf("%+v (violations are read-only)", k)
		}
	})
	t.Run("lease expiry clears the protect bit", func(t *testing.T) {
		f := newFixture(t, bkeyNode(key, true, 10))
		f.e.ProcessMAD(0, 1, wc, nil, madtest.BM(mad.MethodSet, mad.AttrBKeyInfo, 0, 0xBAD, nil))
		f.clock.Advance(10 * time.Second)
		out, _ := f.e.ProcessMAD(0, 1, wc, nil, madtest.BM(mad.MethodGet, mad.AttrBKeyInfo, 0, 0xBAD, nil))
		if k := bkeyInfo(t, &out); k.BKeyProtectBit || k.BKey != key {
			t.Fatalf("after expiry %+v", k)
		}
	})
	t.Run("violations saturate", func(t *testing.T) {
		f := newFixture(t, bkeyNode(key, false, 0))
		for range 0x10005 {
			f.e.ProcessMAD(0, 1, nil, nil, madtest.BM(mad.MethodSet, mad.AttrBKeyInfo, 0, 0xBAD, nil))
		}
		out, _ := f.e.ProcessMAD(0, 1, wc, nil, madtest.BM(mad.MethodGet, mad.AttrBKeyInfo, 0, key, nil))
		if k := bkeyInfo(t, &out); k.BKeyViolations != 0xFFFF {
			t.Fatalf("%+v", k)
		}
	})
	t.Run("missing GRH for GIDADDR", func(t *testing.T) {
		f := newFixture(t, bkeyNode(key, false, 0))
		wc := madtest.GSIWC(0x21, 0)
		wc.GRHPresent = true
		f.e.ProcessMAD(0, 1, wc, nil, madtest.BM(mad.MethodSet, mad.AttrBKeyInfo, 0, 0xBAD, nil))
		if len(f.sink.Traps()) != 0 || f.e.Snapshot().TrapsSuppressed[mad.CSuppressNoGRH] != 1 {
			t.Fatal("trap sent without the GID it needs")
		}
	})
	t.Run("no GRH on the wire: GIDADDR zero", func(t *testing.T) {
		f := newFixture(t, bkeyNode(key, false, 0))
		f.e.ProcessMAD(0, 1, madtest.GSIWC(0x21, 0), nil, madtest.BM(mad.MethodSet, mad.AttrBKeyInfo, 0, 0xBAD, nil))
		tr := f.sink.Traps()
		if len(tr) != 1 {
			t.Fatalf("%d traps", len(tr))
		}
		checkTrap259(t, tr[0], mad.Trap259BKey{LIDAddr: 0x21, Method: mad.MethodSet, AttrID: mad.AttrBKeyInfo, QP: 0x45, BKey: 0xBAD})
	})
	t.Run("TrapRepress stops trap 259", func(t *testing.T) {
		f := newFixture(t, bkeyNode(key, false, 0))
		f.e.ProcessMAD(0, 1, madtest.GSIWC(0x21, 0), nil, madtest.BM(mad.MethodSet, mad.AttrBKeyInfo, 0, 0xBAD, nil))
		tr := f.sink.Traps()
		rep := madtest.BM(mad.MethodTrapRepress, mad.AttrNotice, 0, key, tr[0].MAD.GSData())
		be.PutUint64(rep[8:], tr[0].MAD.TID())
		if _, res := f.e.ProcessMAD(0, 1, madtest.GSIWC(1, 0), nil, rep); res != mad.Success|mad.Consumed || f.e.PendingTraps() != 0 {
			t.Fatalf("result %d pending %d", res, f.e.PendingTraps())
		}
	})
	t.Run("BM requests", func(t *testing.T) {
		f := newFixture(t, nil)
		out, res := f.e.ProcessMAD(0, 1, wc, nil, madtest.BM(mad.MethodGet, mad.AttrClassPortInfo, 0, 0, nil))
		wantReply(t, res, &out, 0)
		out, res = f.e.ProcessMAD(0, 1, wc, nil, madtest.BM(mad.MethodGet, 0x0021, 0, 0, nil))
		wantReply(t, res, &out, mad.StatusUnsupportedAttr)
		out, res = f.e.ProcessMAD(0, 1, wc, nil, madtest.BM(mad.MethodSend, 0x0021, 0, 0, nil))
		wantReply(t, res, &out, mad.StatusUnsupportedAttr)
		if out.Method() != mad.MethodSend || out.AttrMod()&1 != 1 {
			t.Fatalf("Send response method 0x%x mod %d", out.Method(), out.AttrMod())
		}
		// ClassPortInfo Set: TrapLID without TrapQP is invalid.
		d := make([]byte, 72)
		_ = (&mad.ClassPortInfo{TrapLID: 9}).Encode(d)
		out, res = f.e.ProcessMAD(0, 1, wc, nil, madtest.BM(mad.MethodSet, mad.AttrClassPortInfo, 0, 0, d))
		wantReply(t, res, &out, mad.StatusInvalidField)
		_ = (&mad.ClassPortInfo{TrapLID: 9, TrapQP: 1, TrapQKey: mad.QP1QKey, TrapSL: 2}).Encode(d)
		out, res = f.e.ProcessMAD(0, 1, wc, nil, madtest.BM(mad.MethodSet, mad.AttrClassPortInfo, 0, 0, d))
		wantReply(t, res, &out, 0)
		var cpi mad.ClassPortInfo
		_ = cpi.Decode(out.GSData())
		if cpi.TrapLID != 9 || cpi.TrapSL != 2 || cpi.BaseVersion != 1 {
			t.Fatalf("%+v", cpi)
		}
	})
}

func checkTrap259(t *testing.T, tr mad.Trap, want mad.Trap259BKey) {
	t.Helper()
	if tr.Class != mad.ClassBM || tr.Number != 259 || tr.DLID != 1 || tr.DestQP != 1 || tr.QKey != mad.QP1QKey || tr.SrcQP != 1 {
		t.Fatalf("trap addressing %+v", tr)
	}
	m := &tr.MAD
	if m.MgmtClass() != mad.ClassBM || m.Method() != mad.MethodTrap || m.AttrID() != mad.AttrNotice {
		t.Fatalf("header % x", m[:24])
	}
	var n mad.Notice
	if err := n.DecodeGS(m.GSData()); err != nil {
		t.Fatal(err)
	}
	if !n.IsGeneric || n.Type != mad.NoticeSecurity || n.TrapNum != 259 || n.IssuerLID != 5 ||
		n.IssuerGID != madtest.GID(mad.DefaultGIDPrefix, 0x0002c90300a0b0c1) {
		t.Fatalf("notice %+v", n)
	}
	var d mad.Trap259BKey
	_ = d.Decode(n.Details[:])
	if d != want {
		t.Fatalf("trap 259 %+v\nwant %+v", d, want)
	}
}

func TestCountersSnapshot(t *testing.T) {
	f := newFixture(t, nil)
	f.e.ProcessMAD(0, 1, nil, nil, madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 0, 0, nil))
	f.e.ProcessMAD(0, 1, nil, nil, madtest.Perf(mad.MethodSet, mad.AttrPortCounters, 1, 0))
	f.e.ProcessMAD(0, 9, nil, nil, madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 0, 0, nil))
	s := f.e.Snapshot()
	if s.MADs[mad.CClassSubnLID][mad.CMethodGet][mad.CResultReply] != 1 ||
		s.MADs[mad.CClassPerfMgt][mad.CMethodSet][mad.CResultReply] != 1 ||
		s.MADs[mad.CClassSubnLID][mad.CMethodGet][mad.CResultFailure] != 1 || s.MADsTotal() != 3 {
		t.Fatalf("snapshot %+v", s.MADs)
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		field string
		mut   func(*mad.NodeConfig)
	}{
		{"NodeGUID", func(c *mad.NodeConfig) { c.NodeGUID = 0 }},
		{"Description", func(c *mad.NodeConfig) { c.Description = strings.Repeat("x", 65) }},
		{"VendorID", func(c *mad.NodeConfig) { c.VendorID = 1 << 24 }},
		{"PartitionCap", func(c *mad.NodeConfig) { c.PartitionCap = 257 }},
		{"Ports", func(c *mad.NodeConfig) { c.Ports = nil }},
		{"LID", func(c *mad.NodeConfig) { c.Ports[0].LID = 0xC000 }},
		{"PortGUID", func(c *mad.NodeConfig) { c.Ports[1].PortGUID = 0 }},
		{"State", func(c *mad.NodeConfig) { c.Ports[0].State = 0 }},
		{"MKeyProtect", func(c *mad.NodeConfig) { c.Ports[0].MKeyProtect = 4 }},
		{"PKeys", func(c *mad.NodeConfig) { c.PartitionCap = 2 }},
		{"SubnetTimeOut", func(c *mad.NodeConfig) { c.Ports[0].SubnetTimeOut = 32 }},
		{"BMTrap.QP", func(c *mad.NodeConfig) { c.Ports[0].BMTrap.QP = 0 }},
		{"SL2VL[3]", func(c *mad.NodeConfig) { c.Ports[0].SL2VL[3] = 16 }},
		{"Link.VLArbLowCap", func(c *mad.NodeConfig) { c.Ports[0].Link.VLArbLowCap = 65 }},
	}
	for _, c := range cases {
		t.Run(c.field, func(t *testing.T) {
			cfg := madtest.Node()
			c.mut(&cfg)
			err := cfg.Validate()
			if !errors.Is(err, mad.ErrConfig) || !strings.Contains(err.Error(), c.field) {
				t.Fatalf("Validate() = %v, want ErrConfig naming %s", err, c.field)
			}
			if _, err := mad.New(cfg, mad.Options{}); err == nil {
				t.Fatal("New accepted an invalid config")
			}
		})
	}
	good := madtest.Node()
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestGetPathAllocatesNothing(t *testing.T) {
	f := newFixture(t, nil)
	in := madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 1, 0, nil)
	wc := madtest.SMIWC(1)
	if n := testing.AllocsPerRun(100, func() { f.e.ProcessMAD(0, 1, wc, nil, in) }); n != 0 {
		t.Fatalf("%v allocs per SubnGet(PortInfo)", n)
	}
}

// IBA 13.4.8.2: a Trap's Notice has Toggle and Count 0, however many traps
// the port has sent.
func TestTrapNoticeToggleCountZero(t *testing.T) {
	f := newFixture(t, mkeyNode(1, 0))
	for i := range 4 {
		in := madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 1, 0xBAD, nil)
		be.PutUint64(in[8:], uint64(i+100)) // a fresh TID per violation
		f.e.ProcessMAD(0, 1, madtest.SMIWC(0x33), nil, in)
		f.clock.Advance(time.Minute) // past the pacing interval
	}
	traps := f.sink.Traps()
	if len(traps) < 4 {
		t.Fatalf("%d traps, want 4", len(traps))
	}
	for i, tr := range traps {
		var n mad.Notice
		if err := n.Decode(tr.MAD.SMPData()); err != nil {
			t.Fatal(err)
		}
		if n.Toggle || n.Count != 0 {
			t.Fatalf("trap %d: Toggle %v Count %d, want false 0", i, n.Toggle, n.Count)
		}
	}
}

// The lease rules: a local query with the ignore flags neither stops nor
// restarts a running lease; a second violation does not restart it; only
// an SMP carrying the right M_Key stops it.
func TestMKeyLeaseRules(t *testing.T) {
	f := newFixture(t, mkeyNode(2, 10))
	bad := func() mad.Result {
		_, res := f.e.ProcessMAD(0, 1, madtest.SMIWC(9), nil, madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 1, 0xBAD, nil))
		return res
	}
	local := func() {
		if _, res := f.e.ProcessMAD(mad.IgnoreAll, 1, nil, nil, madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 1, 0, nil)); res != mad.Success|mad.Reply {
			t.Fatalf("local Get: %d", res)
		}
	}
	if bad() != mad.Success|mad.Consumed { // the lease starts: deadline t0+10s
		t.Fatal("level 2 Get with a wrong key answered")
	}
	f.clock.Advance(4 * time.Second)
	local() // must not stop the lease
	// A second violation must not restart it.
	if bad() != mad.Success|mad.Consumed {
		t.Fatal("second violation answered")
	}
	f.clock.Advance(5 * time.Second)
	local()
	if f.portInfo(t, 1).MKeyProtectBits != 2 {
		t.Fatal("protection dropped before the lease ran out")
	}
	f.clock.Advance(time.Second) // t0+10s: the first violation's lease ends
	if bad() != mad.Success|mad.Reply {
		t.Fatal("the lease was restarted by a second violation or stopped by a local query")
	}
	if pi := f.portInfo(t, 1); pi.MKeyProtectBits != 0 {
		t.Fatalf("protect bits %d after expiry", pi.MKeyProtectBits)
	}
}

// A key violation's log line names what its trap names: the sender's LID,
// QP and GID; a second within the second is not logged.
func TestKeyViolationLogged(t *testing.T) {
	var b strings.Builder
	cfg := madtest.Node()
	bkeyNode(0x777, false, 0)(&cfg)
	e, err := mad.New(cfg, mad.Options{Logger: slog.New(slog.NewTextHandler(&b, nil))})
	if err != nil {
		t.Fatal(err)
	}
	wc := madtest.GSIWC(0x21, 0)
	wc.GRHPresent = true
	for range 2 {
		e.ProcessMAD(0, 1, wc, testGRH(), madtest.BM(mad.MethodSet, mad.AttrBKeyInfo, 0, 0xBAD, make([]byte, 14)))
	}
	line := b.String()
	for _, want := range []string{`msg="mad: key violation" key=b_key port=1 slid=33 src_qp=69 sgid=fe80::2:c903:0:7 class=5 method=2 attr=16`} {
		if !strings.Contains(line, want) {
			t.Fatalf("log %q lacks %q", line, want)
		}
	}
	if n := strings.Count(line, "key violation"); n != 1 {
		t.Fatalf("%d lines for two violations in the same second", n)
	}
}
