package eswitch

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// fuzzPath builds a Path from fuzzed path bytes: the VLAN table holds vlan
// at index 1 only, the MAC table mac at index 1 only.
func fuzzPath(pri []byte, vlan uint16, mac uint64, down bool) Path {
	b := make([]byte, mlx4.QPPathSize)
	copy(b, pri)
	return PathOf(b, func(i int) (uint16, bool) { return vlan & vidMask, i == 1 },
		func(i int) (uint64, bool) { return mac & Broadcast, i == 1 }, down)
}

// FuzzParseHeader: any bytes parse or are a runt; a parsed header fits
// the frame and says what its bytes say.
func FuzzParseHeader(f *testing.F) {
	f.Add(frame(Broadcast, macVF, 28))
	f.Add(frame(macOther, macVF, 0, TPIDCVLAN, 0x2064))
	f.Add(frame(macOther, macVF, 0, TPIDSVLAN, 100, TPIDCVLAN, 5)[:18])
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader(b)
		if err != nil {
			if len(b) >= HeaderLen+TagLen {
				t.Fatalf("%d bytes: %v", len(b), err)
			}
			return
		}
		if h.Len > len(b) || h.Dst != MAC(b) || h.Src != MAC(b[6:]) || h.Tagged != (h.Len == HeaderLen+TagLen) {
			t.Fatalf("header %+v of % x", h, b)
		}
	})
}

// FuzzEgress: any path and frame; a frame sent is at least MinFrame bytes,
// keeps its MACs, has the source MAC spoof check forces and, outermost,
// the VLAN VST forces; one dropped writes nothing. Under a VST path the
// receive side of the same path gives back what the VF sent, padded.
func FuzzEgress(f *testing.F) {
	v := vst(100, 2)
	pri := make([]byte, mlx4.QPPathSize)
	pri[mlx4.PathFL], pri[mlx4.PathVLANControl], pri[mlx4.PathFEUP], pri[mlx4.PathFVLRx] = v.FL, v.VLANControl, v.FEUP|mlx4.FSM_FORCE_ETH_SRC_MAC, v.FVLRx
	pri[mlx4.PathSchedQueue], pri[mlx4.PathVLANIndex], pri[mlx4.PathGRHMyLMC] = 2<<3, 1, 1
	f.Add(pri, uint16(100), uint64(macVF), frame(macOther, macVF, 50), uint16(0), uint8(0), uint16(1518), false)
	f.Add(pri, uint16(100), uint64(macVF), frame(macOther, macOther, 50), uint16(0), uint8(0), uint16(1518), false)
	f.Add([]byte{}, uint16(0), uint64(0), frame(macOther, macVF, 2, TPIDCVLAN, 5), uint16(0x2007), uint8(mlx4.WQE_CTRL_INS_CVLAN), uint16(0), false)
	f.Add([]byte{}, uint16(0), uint64(0), frame(macOther, macVF, 2), uint16(0), uint8(0), uint16(0), true)
	f.Fuzz(func(t *testing.T, pri []byte, vlan uint16, mac uint64, in []byte, tci uint16, ins uint8, maxFrame uint16, down bool) {
		p := fuzzPath(pri, vlan, mac, down)
		out := make([]byte, EgressRoom(len(in)))
		n, verdict := p.Egress(out, in, WQEVLANOf(&mlx4.WQECtrl{InsVLAN: ins, VLANTag: tci}), int(maxFrame))
		if verdict != Forward {
			if n != 0 {
				t.Fatalf("dropped (%v) with %d bytes", verdict, n)
			}
			return
		}
		h, err := ParseHeader(out[:n])
		if err != nil || n < MinFrame || h.Dst != MAC(in) || h.Src != MAC(in[6:]) {
			t.Fatalf("sent % x for % x (%v)", out[:n], in, err)
		}
		if p.FEUP&mlx4.FSM_FORCE_ETH_SRC_MAC != 0 && h.Src != p.SrcMAC {
			t.Fatalf("source %#x through spoof check of %#x", h.Src, p.SrcMAC)
		}
		if p.FEUP&mlx4.FVL_FORCE_ETH_VLAN != 0 && (!h.Tagged || h.VID != p.VLAN) {
			t.Fatalf("outer tag %+v under VST %d", h, p.VLAN)
		}
		vstOnly := p.FEUP&mlx4.FVL_FORCE_ETH_VLAN != 0 && p.FVLRx&mlx4.FVL_RX_FORCE_ETH_VLAN != 0 && p.VLAN != 0 && p.VLANControl == vst(1, 0).VLANControl &&
			p.FL&mlx4.FL_SV == 0 && ins&(mlx4.WQE_CTRL_INS_CVLAN|mlx4.WQE_CTRL_INS_SVLAN) == 0 && !down
		if vstOnly {
			rx := make([]byte, n)
			m, _, rv := p.Ingress(rx, out[:n], false)
			want := out[:0:0]
			want = append(want, in...)
			if rv != Forward || !bytes.Equal(rx[:m], padded(want)[:m]) || m != max(len(in), MinFrame-TagLen) {
				t.Fatalf("VST round trip: %v, % x for % x", rv, rx[:m], in)
			}
		}
	})
}

// FuzzIngress: any path and frame; what is received is no longer than the
// frame, untagged where VST forces the VLAN, and a tag is reported only
// when one was stripped.
func FuzzIngress(f *testing.F) {
	f.Add([]byte{mlx4.FL_CV | mlx4.FL_ETH_HIDE_CQE_VLAN, mlx4.VLAN_CTRL_ETH_RX_BLOCK_UNTAG}, uint16(100), frame(macVF, macOther, 50, TPIDCVLAN, 100), false, false)
	f.Add([]byte{}, uint16(0), frame(macVF, macOther, 50, TPIDSVLAN, 7), true, false)
	f.Add([]byte{}, uint16(0), frame(macVF, macOther, 50), true, true)
	f.Fuzz(func(t *testing.T, pri []byte, vlan uint16, in []byte, strip, down bool) {
		p := fuzzPath(pri, vlan, 0, down)
		out := make([]byte, len(in))
		n, tag, verdict := p.Ingress(out, in, strip)
		if verdict != Forward {
			return
		}
		if n > len(in) || tag.Present && n != len(in)-TagLen {
			t.Fatalf("received %d of %d bytes, tag %+v", n, len(in), tag)
		}
		if p.FVLRx&mlx4.FVL_RX_FORCE_ETH_VLAN != 0 {
			if h, err := ParseHeader(in); err == nil && h.Tagged && n != len(in)-TagLen {
				t.Fatalf("VST's tag not stripped: % x", out[:n])
			}
		}
	})
}

// FuzzAccess: any frame through an access port of any VLAN: what it gives
// its host is the frame without its tag, of that VLAN only; what it takes
// from the host comes back out as it was (In then Out is the identity on
// a frame with a header).
func FuzzAccess(f *testing.F) {
	f.Add(uint16(100), frame(macVF, macOther, 50, TPIDCVLAN, 0x4064))
	f.Add(uint16(100), frame(macVF, macOther, 50, TPIDSVLAN, 100))
	f.Add(uint16(7), frame(macVF, macOther, 2))
	f.Add(uint16(1), []byte{1, 2})
	f.Fuzz(func(t *testing.T, vid uint16, in []byte) {
		a := Access{VID: vid & vidMask}
		out := make([]byte, len(in)+TagLen)
		if n, ok := a.Out(out, in); ok {
			h, _ := ParseHeader(in)
			if n != len(in)-TagLen || h.VID != a.VID || h.TPID != TPIDCVLAN || MAC(out) != h.Dst {
				t.Fatalf("Out gave %d bytes of % x (VLAN %d)", n, in, a.VID)
			}
		}
		n := a.In(out, in)
		if len(in) < HeaderLen {
			if n != len(in) {
				t.Fatalf("In of a runt: %d bytes", n)
			}
			return
		}
		back := make([]byte, n)
		if m, ok := a.Out(back, out[:n]); !ok || !bytes.Equal(back[:m], in) {
			t.Fatalf("In then Out of % x: %v % x", in, ok, back[:m])
		}
	})
}

// FuzzRSS: any context and frame: the frame goes to the default QPN
// unhashed, or to a ring of the base (or UDP base) QPN's range.
func FuzzRSS(f *testing.F) {
	ctx := make([]byte, mlx4.RSSContextSize)
	binary.BigEndian.PutUint32(ctx, 2<<mlx4.RSSLogRingsShift|0x840)
	ctx[mlx4.RSSHashFn], ctx[mlx4.RSSFlags] = mlx4.RSS_HASH_TOP, 0x3f
	f.Add(ctx, ipv4TCP(100, "10.0.0.1", "10.0.0.2", 1, 2, 6))
	f.Add(ctx, []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, ctx, b []byte) {
		if len(ctx) < mlx4.RSSContextSize {
			return
		}
		r := RSSOf(ctx)
		qpn, h := r.Steer(b)
		in := func(base uint32) bool { return qpn >= base && qpn-base < 1<<r.LogRings }
		if h == 0 && qpn != r.DefaultQPN && !in(r.BaseQPN) && !in(r.BaseQPNUDP) || h != 0 && !in(r.BaseQPN) && !in(r.BaseQPNUDP) {
			t.Fatalf("QPN %#x hash %#x of context %+v", qpn, h, r)
		}
	})
}
