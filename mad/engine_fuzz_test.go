package mad_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/madtest"
)

// FuzzProcessMAD feeds arbitrary MADs, ports, flags and work completions
// to an engine with keys set. The engine must not panic; a reply echoes the
// TID and has the response bit; trap queues stay bounded.
func FuzzProcessMAD(f *testing.F) {
	for _, m := range []*mad.MAD{
		madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 1, 0, nil),
		madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 1, 0xBAD, nil),
		madtest.DRSMP(mad.MethodGet, mad.AttrNodeInfo, 0, 0, 3, 1, 2, 3),
		madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0),
		madtest.Perf(mad.MethodSet, mad.AttrPortCountersExtended, 2, 0xFF),
		madtest.BM(mad.MethodSet, mad.AttrBKeyInfo, 0, 0xBAD, nil),
		madtest.SMP(mad.MethodTrapRepress, mad.AttrNotice, 0, 7, nil),
	} {
		f.Add(m[:], uint8(1), uint8(0), true, uint16(1), uint16(0), uint32(1), uint8(0))
		f.Add(m[:], uint8(1), uint8(3), false, uint16(0), uint16(3), uint32(0), uint8(0x80))
	}
	f.Fuzz(func(t *testing.T, b []byte, port, flags uint8, haveWC bool, slid, pkeyIdx uint16, qpn uint32, gpath uint8) {
		fx := newFixture(t, func(c *mad.NodeConfig) {
			c.Ports[0].MKey, c.Ports[0].MKeyProtect, c.Ports[0].MKeyLeasePeriod = 7, 2, 1
			c.Ports[0].BKey, c.Ports[0].BKeyProtect = 9, true
		})
		m, err := mad.DecodeMAD(b)
		if err != nil {
			if len(b) == mad.Size || !errors.Is(err, mad.ErrSize) {
				t.Fatalf("DecodeMAD: %v", err)
			}
			return
		}
		var wc *mad.WC
		if haveWC {
			wc = &mad.WC{SLID: slid, PKeyIndex: pkeyIdx, QPN: qpn, GRHPresent: gpath&0x80 != 0, DLIDPathBits: gpath & 0x7F}
		}
		for range 3 {
			out, res := fx.e.ProcessMAD(mad.Flags(flags), port, wc, nil, &m)
			if res&mad.Reply != 0 && (out.TID() != m.TID() || !out.IsResponse() && out.Method() != mad.MethodSend) {
				t.Fatalf("reply tid 0x%x method 0x%x", out.TID(), out.Method())
			}
			fx.clock.Advance(1 << 30)
			fx.e.PollTraps()
		}
		if fx.e.PendingTraps() > 2*8 {
			t.Fatal("trap queue unbounded")
		}
	})
}

// FuzzMADIFCInbox: decoding never panics, errors wrap sentinels, and a
// decoded inbox re-encodes to one that decodes the same.
func FuzzMADIFCInbox(f *testing.F) {
	in := &mad.MADIFCInbox{MAD: *madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 1, 0, nil), Port: 1, HasWC: true, HasGRH: true,
		WC: mad.WC{SLID: 3, SrcQP: 9, SL: 2, PKeyIndex: 1, QPN: 1, GRHPresent: true}, GRH: *testGRH()}
	op, mod, box := ifc(f, in)
	f.Add(op, mod, box[:mad.MADIFCInboxMax])
	f.Add(uint8(0), uint32(1), box[:256])
	f.Add(uint8(4), uint32(1), box[:280])
	f.Fuzz(func(t *testing.T, op uint8, mod uint32, box []byte) {
		var d mad.MADIFCInbox
		if err := mad.DecodeMADIFCInbox(op, mod, box, &d); err != nil {
			if !errors.Is(err, mad.ErrShort) && !errors.Is(err, mad.ErrInvalid) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		buf := make([]byte, mad.MADIFCInboxMax)
		op2, mod2, err := mad.EncodeMADIFCInbox(&d, buf)
		if err != nil {
			t.Fatal(err)
		}
		var d2 mad.MADIFCInbox
		if err := mad.DecodeMADIFCInbox(op2, mod2, buf, &d2); err != nil || d2 != d {
			t.Fatalf("re-decode %v\n%+v\n%+v", err, d2, d)
		}
	})
}

// FuzzProcessMADIFC drives the VF policy with arbitrary commands: a VF gets
// only OK, BAD_OP or BAD_PARAM, and OK only for a host-view LID-routed Get.
func FuzzProcessMADIFC(f *testing.F) {
	for _, in := range []*mad.MADIFCInbox{vfGet(mad.AttrPKeyTable, 0), vfGet(mad.AttrPortInfo, 0), vfGet(mad.AttrGUIDInfo, 3),
		{MAD: *madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 1, 0, nil), Port: 1}} {
		op, mod, box := ifc(f, in)
		f.Add(op, mod, box[:300], true)
		f.Add(op|mad.MADIFCNetworkView, mod, box[:256], false)
	}
	f.Fuzz(func(t *testing.T, op uint8, mod uint32, box []byte, asVF bool) {
		fx := newFixture(t, nil)
		var view mad.VFView
		if asVF {
			view = testVF()
		}
		var out mad.MAD
		st := fx.e.ProcessMADIFC(view, op, mod, box, &out)
		switch st {
		case mad.IFCOK, mad.IFCBadInbox, mad.IFCNoReply:
		case mad.IFCRefused:
			if !asVF {
				t.Fatalf("result %v for the PF", st)
			}
		default:
			t.Fatalf("result %v", st)
		}
		if asVF && st == mad.IFCOK {
			if op&mad.MADIFCNetworkView != 0 || box[1] != mad.ClassSubnLID || box[3] != mad.MethodGet {
				t.Fatalf("VF command op 0x%x class 0x%x method 0x%x accepted", op, box[1], box[3])
			}
		}
		if pi := fx.portInfo(t, 1); asVF && pi.LID != 5 {
			t.Fatal("a VF changed the port")
		}
	})
}

// TestWriteEngineCorpus writes the committed seed corpora of the engine
// fuzz targets when MAD_WRITE_CORPUS=1.
func TestWriteEngineCorpus(t *testing.T) {
	if os.Getenv("MAD_WRITE_CORPUS") != "1" {
		t.Skip("MAD_WRITE_CORPUS not set")
	}
	seedIn := &mad.MADIFCInbox{MAD: *madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 1, 0, nil), Port: 1, HasWC: true, HasGRH: true,
		WC: mad.WC{SLID: 3, SrcQP: 9, SL: 2, PKeyIndex: 1, QPN: 1, GRHPresent: true}, GRH: *testGRH()}
	op, mod, box := ifc(t, seedIn)
	setOp, setMod, setBox := ifc(t, &mad.MADIFCInbox{MAD: *madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 1, 0, nil), Port: 1})
	pkOp, pkMod, pkBox := ifc(t, vfGet(mad.AttrPKeyTable, 0))
	corpora := map[string][][]any{
		"FuzzProcessMAD": {
			{madtest.SMP(mad.MethodGet, mad.AttrPortInfo, 1, 0, nil)[:], uint8(1), uint8(0), true, uint16(1), uint16(0), uint32(0), uint8(0)},
			{madtest.SMP(mad.MethodSet, mad.AttrPortInfo, 1, 0xBAD, nil)[:], uint8(1), uint8(0), true, uint16(2), uint16(0), uint32(0), uint8(0)},
			{madtest.DRSMP(mad.MethodGet, mad.AttrNodeInfo, 0, 0, 3, 1, 2, 3)[:], uint8(2), uint8(0), true, uint16(0xFFFF), uint16(0), uint32(0), uint8(0)},
			{madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0)[:], uint8(1), uint8(0), true, uint16(1), uint16(3), uint32(1), uint8(0x80)},
			{madtest.BM(mad.MethodSet, mad.AttrBKeyInfo, 0, 0xBAD, nil)[:], uint8(1), uint8(0), true, uint16(1), uint16(0), uint32(1), uint8(0)},
		},
		"FuzzMADIFCInbox": {
			{op, mod, box[:mad.MADIFCInboxMax]},
			{uint8(0), uint32(1), box[:256]},
		},
		"FuzzProcessMADIFC": {
			{pkOp, pkMod, pkBox[:300], true},
			{setOp, setMod, setBox[:256], true},
			{op | mad.MADIFCNetworkView, mod, box[:mad.MADIFCInboxMax], false},
		},
	}
	for name, seeds := range corpora {
		dir := filepath.Join("testdata", "fuzz", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, vals := range seeds {
			var sb strings.Builder
			sb.WriteString("go test fuzz v1\n")
			for _, v := range vals {
				switch v := v.(type) {
				case []byte:
					fmt.Fprintf(&sb, "[]byte(%q)\n", v)
				default:
					fmt.Fprintf(&sb, "%T(%v)\n", v, v)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed%d", i)), []byte(sb.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
