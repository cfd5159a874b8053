package mad_test

import (
	"errors"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/madtest"
)

func testVF() *mad.StaticVF {
	return &mad.StaticVF{
		Node: 0x0002c90300ffff00,
		Ports: []mad.VFPort{{
			Phys: 1, PKeyMap: []uint16{1, 0, 63}, State: mad.PortDown, CapMask: 0x02010048, GUID: 0x0002c90300ffff01,
		}},
	}
}

func ifc(t testing.TB, in *mad.MADIFCInbox) (uint8, uint32, []byte) {
	t.Helper()
	box := make([]byte, 4096)
	op, mod, err := mad.EncodeMADIFCInbox(in, box)
	if err != nil {
		t.Fatal(err)
	}
	return op, mod, box
}

func vfGet(attr uint16, mod uint32) *mad.MADIFCInbox {
	return &mad.MADIFCInbox{MAD: *madtest.SMP(mad.MethodGet, attr, mod, 0, nil), Port: 1, Flags: mad.IgnoreAll}
}

func TestVFRefused(t *testing.T) {
	f := newFixture(t, nil)
	vf := testVF()
	cases := []struct {
		name string
		in   *mad.MADIFCInbox
	}{
		{"Set", &mad.MADIFCInbox{MAD: *madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 1, 0, nil), Port: 1}},
		{"Set of P_KeyTable", &mad.MADIFCInbox{MAD: *madtest.SMP(mad.MethodSet, mad.AttrPKeyTable, 0, 0, nil), Port: 1}},
		{"network view Get", &mad.MADIFCInbox{MAD: *madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 1, 0, nil), Port: 1, NetworkView: true}},
		{"directed route Get", &mad.MADIFCInbox{MAD: *madtest.DRSMP(mad.MethodGet, mad.AttrNodeInfo, 0, 0, 0), Port: 1}},
		{"PerfMgt Get", &mad.MADIFCInbox{MAD: *madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0), Port: 1}},
		{"BM Get", &mad.MADIFCInbox{MAD: *madtest.BM(mad.MethodGet, mad.AttrBKeyInfo, 0, 0, nil), Port: 1}},
		{"TrapRepress", &mad.MADIFCInbox{MAD: *madtest.SMP(mad.MethodTrapRepress, mad.AttrNotice, 0, 0, nil), Port: 1}},
		{"Set on a port the VF does not have", &mad.MADIFCInbox{MAD: *madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 1, 0, nil), Port: 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			op, mod, box := ifc(t, c.in)
			var out mad.MAD
			if st := f.e.ProcessMADIFC(vf, op, mod, box, &out); st != mad.IFCRefused {
				t.Fatalf("status 0x%02x, want BAD_OP 0x02", st)
			}
			if out != (mad.MAD{}) {
				t.Fatal("refused command left output")
			}
		})
	}
	if s := f.e.Snapshot(); s.VFRefused != uint64(len(cases)) || s.MADsTotal() != 0 {
		t.Fatalf("refused %d, MADs processed %d", s.VFRefused, s.MADsTotal())
	}
	if pi := f.portInfo(t, 1); pi.LID != 5 {
		t.Fatal("a refused Set changed the port")
	}
}

// TestVFPolicyBeforeInbox: mlx4_MAD_IFC_wrapper refuses a MAD the VF policy
// forbids (a PerfMgt Get, a SubnSet) before it looks at op_modifier bit 2's
// extension: BAD_OP even when the GRH that follows is malformed. A
// LID-routed Get of another base or class version is not refused; it runs
// natively (mlx4's policy is the class and the method).
func TestVFPolicyBeforeInbox(t *testing.T) {
	f := newFixture(t, nil)
	vf := testVF()
	for _, m := range []*mad.MAD{madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0), madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 1, 0, nil)} {
		box := make([]byte, 4096)
		copy(box, m[:])
		box[0x10D] = 0x80 // GRH present; its IP version (0) is invalid
		var out mad.MAD
		if st := f.e.ProcessMADIFC(vf, mad.MADIFCExtended|mad.MADIFCIgnoreMKey, 1, box, &out); st != mad.IFCRefused {
			t.Fatalf("class %#x method %#x with a malformed extension: %v, want IFCRefused (BAD_OP)", m.MgmtClass(), m.Method(), st)
		}
	}
	for _, c := range []struct {
		name string
		off  int
		want mad.IFCResult
	}{
		{"class version 2", 2, mad.IFCOK},
		{"base version 2", 0, mad.IFCNoReply}, // the SMA drops it: no response
	} {
		in := vfGet(mad.AttrPortInfo, 1)
		in.MAD[c.off] = 2
		op, mod, box := ifc(t, in)
		var out mad.MAD
		if st := f.e.ProcessMADIFC(vf, op, mod, box, &out); st != c.want {
			t.Fatalf("%s: %v, want %v", c.name, st, c.want)
		}
	}
}

func TestVFParavirtualisedGets(t *testing.T) {
	f := newFixture(t, nil)
	vf := testVF()
	var out mad.MAD
	run := func(in *mad.MADIFCInbox) {
		t.Helper()
		op, mod, box := ifc(t, in)
		if st := f.e.ProcessMADIFC(vf, op, mod, box, &out); st != mad.IFCOK {
			t.Fatalf("result %v", st)
		}
	}
	run(vfGet(mad.AttrPKeyTable, 0))
	var pk mad.PKeyTable
	_ = pk.Decode(out.SMPData())
	if out.Status() != 0 || pk[0] != 0x8001 || pk[1] != 0xFFFF || pk[2] != 0 || pk[3] != 0 {
		t.Fatalf("virtual P_KeyTable %x status 0x%x", pk[:4], out.Status())
	}
	run(vfGet(mad.AttrPKeyTable, 5))
	if out.Status() != mad.StatusInvalidField || out.AttrMod() != 5 {
		t.Fatalf("block 5: status 0x%x mod %d", out.Status(), out.AttrMod())
	}

	run(vfGet(mad.AttrPortInfo, 0))
	pi := decodePI(t, &out)
	if pi.PortState != mad.PortDown || pi.CapabilityMask != 0x02010048 || pi.LID != 5 || pi.MKey != 0 || pi.LocalPortNum != 1 {
		t.Fatalf("VF PortInfo %+v", pi)
	}

	run(vfGet(mad.AttrGUIDInfo, 0))
	var gi mad.GUIDInfo
	_ = gi.Decode(out.SMPData())
	if gi != (mad.GUIDInfo{0x0002c90300ffff01}) {
		t.Fatalf("VF GUIDInfo %x", gi)
	}

	run(vfGet(mad.AttrNodeInfo, 0))
	var ni mad.NodeInfo
	_ = ni.Decode(out.SMPData())
	if ni.NodeGUID != 0x0002c90300ffff00 || ni.PortGUID != 0x0002c90300a0b0c1 {
		t.Fatalf("VF NodeInfo %+v", ni)
	}

	run(vfGet(mad.AttrSLtoVLTable, 0)) // other LID-routed Gets run natively
	if out.Status() != 0 || out.SMPData()[0] != 0x01 {
		t.Fatalf("SLtoVL status 0x%x", out.Status())
	}
	if s := f.e.Snapshot(); s.VFParavirt != 5 {
		t.Fatalf("paravirt count %d", s.VFParavirt)
	}
}

func TestVFBadInput(t *testing.T) {
	f := newFixture(t, mkeyNode(2, 0))
	vf := testVF()
	var out mad.MAD
	op, mod, box := ifc(t, vfGet(mad.AttrPortInfo, 0))
	cases := []struct {
		name   string
		vf     mad.VFView
		op     uint8
		mod    uint32
		box    []byte
		status mad.IFCResult
	}{
		{"truncated inbox", vf, op, mod, box[:255], mad.IFCBadInbox},
		{"extended inbox without the WC", vf, op | mad.MADIFCExtended, mod, box[:270], mad.IFCBadInbox},
		{"port the VF lacks", vf, op, 2, box, mad.IFCBadInbox},
		{"port above 255", nil, op, 0x100, box, mad.IFCBadInbox},
		{"PF port 3 of 2", nil, op, 3, box, mad.IFCBadInbox},
		{"VF Get refused by M_Key level 2", vf, 0, mod, box, mad.IFCNoReply},
		{"PF Get refused by M_Key level 2", nil, 0, mod, box, mad.IFCNoReply},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if st := f.e.ProcessMADIFC(c.vf, c.op, c.mod, c.box, &out); st != c.status {
				t.Fatalf("result %v, want %v", st, c.status)
			}
		})
	}
	t.Run("GRH that does not decode", func(t *testing.T) {
		in := vfGet(mad.AttrPortInfo, 0)
		in.HasWC, in.WC.GRHPresent, in.HasGRH = true, true, true
		in.GRH = *testGRH()
		op, mod, box := ifc(t, in)
		box[0x140] = 0x40
		var dec mad.MADIFCInbox
		if err := mad.DecodeMADIFCInbox(op, mod, box, &dec); !errors.Is(err, mad.ErrInvalid) {
			t.Fatalf("decode: %v", err)
		}
		if st := f.e.ProcessMADIFC(nil, op, mod, box, &out); st != mad.IFCBadInbox {
			t.Fatalf("result %v", st)
		}
		if err := mad.DecodeMADIFCInbox(op, mod, box[:0x150], &dec); !errors.Is(err, mad.ErrShort) {
			t.Fatalf("short GRH: %v", err)
		}
	})
}

func TestPFExtendedInboxFeedsTraps(t *testing.T) {
	f := newFixture(t, nil)
	in := &mad.MADIFCInbox{
		MAD:  *madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0),
		Port: 1, HasWC: true, HasGRH: true,
		WC:  mad.WC{SLID: 0x44, SrcQP: 0x123, SL: 5, PKeyIndex: 3, QPN: 1, GRHPresent: true},
		GRH: *testGRH(),
	}
	op, mod, box := ifc(t, in)
	if mod>>16 != 0x44 || op&mad.MADIFCExtended == 0 {
		t.Fatalf("modifiers 0x%x 0x%x", op, mod)
	}
	var dec mad.MADIFCInbox
	if err := mad.DecodeMADIFCInbox(op, mod, box, &dec); err != nil || dec != *in {
		t.Fatalf("decode %v\n%+v\n%+v", err, dec, *in)
	}
	var out mad.MAD
	if st := f.e.ProcessMADIFC(nil, op, mod, box, &out); st != mad.IFCNoReply {
		t.Fatalf("result %v", st)
	}
	tr := f.sink.Traps()
	if len(tr) != 1 || tr[0].Number != 257 {
		t.Fatalf("traps %+v", tr)
	}
	var n mad.Notice
	_ = n.Decode(tr[0].MAD.SMPData())
	var d mad.Trap257
	_ = d.Decode(n.Details[:])
	if d.LIDAddr1 != 0x44 || d.QP1 != 0x123 || d.SL != 5 || d.GIDAddr1 != testGRH().SGID || d.GIDAddr2 != testGRH().DGID {
		t.Fatalf("trap 257 from the extended inbox %+v", d)
	}
	// The PF's Sets are not filtered.
	pi := f.portInfo(t, 1)
	pi.LID, pi.PortState = 0x77, mad.PortNoChange
	set := &mad.MADIFCInbox{MAD: *madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 1, 0, portInfoSetData(t, pi)), Port: 1, NetworkView: true}
	op, mod, box = ifc(t, set)
	if st := f.e.ProcessMADIFC(&mad.StaticVF{PF: true}, op, mod, box, &out); st != mad.IFCOK || out.Status() != 0 {
		t.Fatalf("PF Set status 0x%02x/0x%x", st, out.Status())
	}
	if f.portInfo(t, 1).LID != 0x77 {
		t.Fatal("PF Set not applied")
	}
}

func TestVFGetAllocatesNothing(t *testing.T) {
	f := newFixture(t, nil)
	vf := testVF()
	op, mod, box := ifc(t, vfGet(mad.AttrPortInfo, 0))
	var out mad.MAD
	if n := testing.AllocsPerRun(100, func() { f.e.ProcessMADIFC(vf, op, mod, box, &out) }); n != 0 {
		t.Fatalf("%v allocs per VF PortInfo Get", n)
	}
}

func BenchmarkVFMADIFCPortInfo(b *testing.B) {
	f := newFixture(b, nil)
	vf := testVF()
	op, mod, box := ifc(b, vfGet(mad.AttrPortInfo, 0))
	var out mad.MAD
	b.ReportAllocs()
	for b.Loop() {
		if st := f.e.ProcessMADIFC(vf, op, mod, box, &out); st != mad.IFCOK {
			b.Fatal(st)
		}
	}
}

// TestMADIFCInboxOffsets pins the extended inbox layout of
// mlx4-commchan.md §4.2.
func TestMADIFCInboxOffsets(t *testing.T) {
	box := make([]byte, 512)
	box[0], box[1], box[2], box[3] = 1, mad.ClassPerfMgt, 1, mad.MethodGet
	copy(box[0x100:], []byte{0, 0, 0, 1})             // my_qpn
	copy(box[0x108:], []byte{0xAA, 0x12, 0x34, 0x56}) // rqpn (24 bits)
	box[0x10C] = 0x70                                 // SL 7
	box[0x10D] = 0x80 | 0x05                          // GRH present, path bits 5
	copy(box[0x112:], []byte{0x00, 0x02})             // P_Key index 2
	g := testGRH()
	_ = g.Encode(box[0x140:])
	var d mad.MADIFCInbox
	if err := mad.DecodeMADIFCInbox(mad.MADIFCExtended|mad.MADIFCIgnoreBKey, 0x00210001, box, &d); err != nil {
		t.Fatal(err)
	}
	want := mad.WC{SLID: 0x21, SrcQP: 0x123456, SL: 7, PKeyIndex: 2, DLIDPathBits: 5, GRHPresent: true, QPN: 1}
	if d.WC != want || !d.HasWC || !d.HasGRH || d.GRH != *g || d.Port != 1 || d.Flags != mad.IgnoreBKey || d.NetworkView {
		t.Fatalf("%+v", d)
	}
}

// TestConcurrentUse drives one engine from several goroutines (run with
// -race): MADs on both ports, trap polling and counter snapshots.
func TestConcurrentUse(t *testing.T) {
	f := newFixture(t, mkeyNode(2, 1))
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 200 {
				switch (g + i) % 4 {
				case 0:
					f.e.ProcessMAD(0, 1, madtest.SMIWC(1), nil, madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 0, 0xBAD, nil))
				case 1:
					f.e.ProcessMAD(0, 2, madtest.GSIWC(1, 3), nil, madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 2, 0))
				case 2:
					f.clock.Advance(time.Millisecond)
					f.e.PollTraps()
				case 3:
					_ = f.e.Snapshot()
					_, _ = f.e.PortCounters(1)
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
	if s := f.e.Snapshot(); s.MADsTotal() != 400 {
		t.Fatalf("%d MADs counted", s.MADsTotal())
	}
}

// An SMI-privileged VF's MADs outside the paravirtualised Gets run natively
// (mlx4_vf_smi_enabled); the same MAD from an unprivileged VF is refused.
func TestSMIPrivilegedVF(t *testing.T) {
	e, err := mad.New(madtest.Node(), mad.Options{})
	if err != nil {
		t.Fatal(err)
	}
	inbox := make([]byte, 4096)
	get := &mad.MADIFCInbox{Port: 1}
	g := mad.GSMAD{Header: mad.Header{BaseVersion: 1, MgmtClass: mad.ClassBM, ClassVersion: 1, Method: mad.MethodGet, AttrID: mad.AttrBKeyInfo}}
	if err := g.Encode(get.MAD[:]); err != nil {
		t.Fatal(err)
	}
	opMod, inMod, _ := mad.EncodeMADIFCInbox(get, inbox)
	for _, smi := range []bool{false, true} {
		vf := &mad.StaticVF{SMI: smi, Node: 1, Ports: []mad.VFPort{{Phys: 1, PKeyMap: []uint16{0}, State: mad.PortActive, GUID: 2}}}
		var out mad.MAD
		st := e.ProcessMADIFC(vf, opMod, inMod, inbox, &out)
		want := map[bool]mad.IFCResult{false: mad.IFCRefused, true: mad.IFCOK}[smi]
		if st != want {
			t.Errorf("BM Get from a VF with SMI=%v: result %v, want %v", smi, st, want)
		}
		if smi && (out.MgmtClass() != mad.ClassBM || !out.IsResponse()) {
			t.Errorf("privileged BM Get: reply class %#x method %#x", out.MgmtClass(), out.Method())
		}
	}
}
