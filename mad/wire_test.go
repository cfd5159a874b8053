package mad

import (
	"encoding/hex"
	"errors"
	"testing"
)

func TestDecodeBadInput(t *testing.T) {
	dr := smpSeed(ClassSubnDirected)
	cases := []struct {
		name string
		err  error
		run  func() error
	}{
		{"MAD truncated", ErrSize, func() error { _, err := DecodeMAD(make([]byte, 255)); return err }},
		{"MAD oversized", ErrSize, func() error { _, err := DecodeMAD(make([]byte, 257)); return err }},
		{"header short", ErrShort, func() error { var h Header; return h.Decode(make([]byte, 23)) }},
		{"SMP truncated", ErrSize, func() error { var s SMP; return s.Decode(smpSeed(1)[:200]) }},
		{"SMP wrong class", ErrClass, func() error { var s SMP; return s.Decode(dr) }},
		{"DR wrong class", ErrClass, func() error { var s DRSMP; return s.Decode(smpSeed(1)) }},
		{"DR hop count 64", ErrHops, func() error { var s DRSMP; return s.Decode(withBytes(dr, 7, 64, 6, 0)) }},
		{"DR hop pointer > count+1", ErrHops, func() error { var s DRSMP; return s.Decode(withBytes(dr, 7, 2, 6, 4)) }},
		{"GS wrong class", ErrClass, func() error { var g GSMAD; return g.Decode(smpSeed(1)) }},
		{"NodeDescription not UTF-8", ErrInvalid, func() error {
			var d NodeDescription
			return d.Decode(append([]byte{0xff, 0xfe}, make([]byte, 62)...))
		}},
		{"NodeDescription junk after NUL", ErrInvalid, func() error {
			var d NodeDescription
			return d.Decode(append([]byte("a\x00b"), make([]byte, 61)...))
		}},
		{"NodeInfo node type 0", ErrInvalid, func() error { var n NodeInfo; return n.Decode(make([]byte, 40)) }},
		{"NodeInfo short", ErrShort, func() error { var n NodeInfo; return n.Decode(make([]byte, 39)) }},
		{"PortInfo state 5", ErrInvalid, func() error { var p PortInfo; return p.Decode(withBytes(make([]byte, 64), 32, 5)) }},
		{"PortInfo phys state 8", ErrInvalid, func() error { var p PortInfo; return p.Decode(withBytes(make([]byte, 64), 33, 0x80)) }},
		{"PortInfo short", ErrShort, func() error { var p PortInfo; return p.Decode(make([]byte, 63)) }},
		{"SMInfo state 4", ErrInvalid, func() error { var s SMInfo; return s.Decode(withBytes(make([]byte, 21), 20, 4)) }},
		{"Notice reserved type", ErrInvalid, func() error { var n Notice; return n.Decode(withBytes(make([]byte, 64), 0, 0x85)) }},
		{"Notice GS short", ErrShort, func() error { var n Notice; return n.DecodeGS(make([]byte, 64)) }},
		{"trap 256 hop count 31", ErrInvalid, func() error { var d Trap256; return d.Decode(withBytes(make([]byte, 54), 23, 31)) }},
		{"GRH IPVer 4", ErrInvalid, func() error { var g GRH; return g.Decode(withBytes(make([]byte, 40), 0, 0x40)) }},
		{"GRH short", ErrShort, func() error { var g GRH; return g.Decode(make([]byte, 39)) }},
		{"ClassPortInfo short", ErrShort, func() error { var c ClassPortInfo; return c.Decode(make([]byte, 71)) }},
		{"PortCounters short", ErrShort, func() error { var c PortCounters; return c.Decode(make([]byte, 43)) }},
		{"PortCountersExtended short", ErrShort, func() error { var c PortCountersExtended; return c.Decode(make([]byte, 71)) }},
		{"BKeyInfo short", ErrShort, func() error { var k BKeyInfo; return k.Decode(make([]byte, 13)) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.run(); !errors.Is(err, c.err) {
				t.Fatalf("err = %v, want %v", err, c.err)
			}
		})
	}
}

// TestPortInfoOffsets pins PortInfo fields to the byte/bit positions of
// ib-mad.md §2.4.
func TestPortInfoOffsets(t *testing.T) {
	p := PortInfo{
		MKey: 0x0102030405060708, GIDPrefix: 0xfe80000000000000, LID: 0x1234, MasterSMLID: 0x0001,
		CapabilityMask: 0x02510868, DiagCode: 0xABCD, MKeyLeasePeriod: 15, LocalPortNum: 1,
		LinkWidthEnabled: 3, LinkWidthSupported: 3, LinkWidthActive: 2,
		LinkSpeedSupported: 7, PortState: PortActive, PortPhysicalState: PhysLinkUp, LinkDownDefaultState: 2,
		MKeyProtectBits: 2, LMC: 3, LinkSpeedActive: 4, LinkSpeedEnabled: 7, NeighborMTU: 5, MasterSMSL: 9,
		VLCap: 4, InitType: 1, VLHighLimit: 0x11, VLArbitrationHighCap: 8, VLArbitrationLowCap: 8,
		InitTypeReply: 2, MTUCap: 5, VLStallCount: 7, HOQLife: 0x13, OperationalVLs: 4,
		PartitionEnforcementIn: true, FilterRawOutbound: true,
		MKeyViolations: 0x0102, PKeyViolations: 0x0304, QKeyViolations: 0x0506, GUIDCap: 32,
		ClientReregister: true, MulticastPKeyTrapSuppress: 2, SubnetTimeOut: 18, RespTimeValue: 0x10,
		LocalPhyErrors: 8, OverrunErrors: 9, MaxCreditHint: 0x2233, LinkRoundTripLatency: 0x445566,
		CapabilityMask2: 0x0030, LinkSpeedExtActive: 1, LinkSpeedExtSupported: 3, LinkSpeedExtEnabled: 0x13,
	}
	b := make([]byte, 64)
	if err := p.Encode(b); err != nil {
		t.Fatal(err)
	}
	want := "0102030405060708" + "fe80000000000000" + "1234" + "0001" + "02510868" + "abcd" + "000f" +
		"01" + "03" + "03" + "02" + "74" + "52" + "83" + "47" + "59" + "41" + "11" + "08" + "08" + "25" +
		"f3" + "49" + "0102" + "0304" + "0506" + "20" + "d2" + "10" + "89" + "2233" + "00" + "445566" +
		"0030" + "13" + "13"
	if got := hex.EncodeToString(b); got != want {
		t.Fatalf("PortInfo encoding\n got %s\nwant %s", got, want)
	}
}

// TestTrapDetailOffsets pins the trap data details of ib-mad.md §2.9 at
// Notice offsets.
func TestTrapDetailOffsets(t *testing.T) {
	n := Notice{IsGeneric: true, Type: NoticeSecurity, Producer: 1, TrapNum: 259, IssuerLID: 7, Count: 3}
	d := Trap259BKey{LIDAddr: 0x0011, Method: 2, AttrID: 0x0010, AttrMod: 0xA0B0C0D0, QP: 0x123456, BKey: 0x1111222233334444}
	d.GIDAddr[0], d.GIDAddr[15] = 0xfe, 0x99
	if err := d.Encode(n.Details[:]); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, NoticeGSSize)
	if err := n.EncodeGS(b); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		off  int
		want string
	}{
		{0, "82000001010300070003"},              // generic|security, CA, 259, LID 7, count 3
		{10, "0011"},                             // LIDADDR
		{12, "02"},                               // Method
		{14, "0010"},                             // AttributeID
		{16, "a0b0c0d0"},                         // AttributeModifier
		{20, "00123456"},                         // resv + QP
		{24, "1111222233334444"},                 // B_Key
		{32, "fe000000000000000000000000000099"}, // GIDADDR
	}
	for _, c := range checks {
		if got := hex.EncodeToString(b[c.off : c.off+len(c.want)/2]); got != c.want {
			t.Errorf("offset %d: got %s want %s", c.off, got, c.want)
		}
	}
	t257 := Trap257{LIDAddr1: 1, LIDAddr2: 2, Key: 0x8001, SL: 3, QP1: 0x45, QP2: 1}
	if err := t257.Encode(n.Details[:]); err != nil {
		t.Fatal(err)
	}
	_ = n.Encode(b)
	if got := hex.EncodeToString(b[12:28]); got != "00010002000080013000004500000001" {
		t.Errorf("trap 257 details: %s", got)
	}
}

// TestLinkEncodings pins PortInfo's link width and speed encodings (IBA
// 14.2.5.6) with literal values: the SMA, the switch model and PTYS
// (vhcr/hca) all use these names.
func TestLinkEncodings(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"1X", LinkWidth1X, 0x01}, {"4X", LinkWidth4X, 0x02}, {"8X", LinkWidth8X, 0x04},
		{"12X", LinkWidth12X, 0x08}, {"2X", LinkWidth2X, 0x10},
		{"SDR", LinkSpeedSDR, 1}, {"DDR", LinkSpeedDDR, 2}, {"QDR", LinkSpeedQDR, 4},
		{"FDR", LinkSpeedExtFDR, 1}, {"EDR", LinkSpeedExtEDR, 2},
		{"ext disabled", LinkSpeedExtDisabled, 0x1e}, {"ext all supported", LinkSpeedExtAllSupported, 0x1f},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
}
