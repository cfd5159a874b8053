package eswitch

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

const (
	macVF    = 0x02c903a0b001
	macOther = 0x02c903a0b002
)

// frame builds an Ethernet frame from dst to src with tags (TPID, TCI
// pairs, outermost first), EtherType 0x0800 and n payload bytes.
func frame(dst, src uint64, n int, tags ...uint16) []byte {
	b := make([]byte, 12, 12+2*len(tags)+2+n)
	PutMAC(b[0:], dst)
	PutMAC(b[6:], src)
	for _, t := range tags {
		b = binary.BigEndian.AppendUint16(b, t)
	}
	b = binary.BigEndian.AppendUint16(b, 0x0800)
	for i := range n {
		b = append(b, byte(i))
	}
	return b
}

// padded is b zero-padded to MinFrame.
func padded(b []byte) []byte {
	if len(b) >= MinFrame {
		return b
	}
	return append(b, make([]byte, MinFrame-len(b))...)
}

// The paths update_vport_qp_param writes (hca.updateVportQP): VST 802.1Q
// with VLAN vlan and priority qos, VST with VLAN 0 (priority tagged),
// VST 802.1ad, spoof check alone.
func vst(vlan uint16, qos uint8) Path {
	ctrl := uint8(mlx4.VLAN_CTRL_ETH_TX_BLOCK_TAGGED | mlx4.VLAN_CTRL_ETH_RX_BLOCK_PRIO | mlx4.VLAN_CTRL_ETH_RX_BLOCK_UNTAG)
	if vlan == 0 {
		ctrl = mlx4.VLAN_CTRL_ETH_TX_BLOCK_TAGGED | mlx4.VLAN_CTRL_ETH_RX_BLOCK_TAGGED
	}
	return Path{FL: mlx4.FL_CV | mlx4.FL_ETH_HIDE_CQE_VLAN, VLANControl: ctrl, FEUP: mlx4.FEUP_FORCE_ETH_UP | mlx4.FVL_FORCE_ETH_VLAN,
		FVLRx: mlx4.FVL_RX_FORCE_ETH_VLAN, Prio: qos, VLAN: vlan}
}

func spoof() Path { return Path{FEUP: mlx4.FSM_FORCE_ETH_SRC_MAC, SrcMAC: macVF} }

func TestEgress(t *testing.T) {
	qinq := vst(100, 2)
	qinq.FL = mlx4.FL_SV | mlx4.FL_ETH_HIDE_CQE_VLAN
	qinq.VLANControl = mlx4.VLAN_CTRL_ETH_TX_BLOCK_PRIO | mlx4.VLAN_CTRL_ETH_TX_BLOCK_TAGGED | mlx4.VLAN_CTRL_ETH_RX_BLOCK_PRIO | mlx4.VLAN_CTRL_ETH_RX_BLOCK_UNTAG
	noVLAN := vst(100, 2)
	noVLAN.NoVLAN = true
	noMAC := spoof()
	noMAC.NoMAC = true
	vstSpoof := vst(100, 2)
	vstSpoof.FEUP |= mlx4.FSM_FORCE_ETH_SRC_MAC
	vstSpoof.SrcMAC = macVF
	cTag := WQEVLAN{Insert: true, TCI: 0x2007}
	for _, c := range []struct {
		name     string
		p        Path
		in       []byte
		ins      WQEVLAN
		maxFrame int
		want     []byte
		v        Verdict
	}{
		{name: "VGT: as sent", p: Path{}, in: frame(Broadcast, macVF, 100), want: frame(Broadcast, macVF, 100)},
		{name: "VGT: short frame padded to 60", p: Path{}, in: frame(macOther, macVF, 10), want: padded(frame(macOther, macVF, 10))},
		{name: "VGT: the guest's own tag", p: Path{}, in: frame(macOther, macVF, 100, TPIDCVLAN, 5), want: frame(macOther, macVF, 100, TPIDCVLAN, 5)},
		{name: "VGT: the WQE's C-VLAN inserted", p: Path{}, in: frame(macOther, macVF, 100), ins: cTag, want: frame(macOther, macVF, 100, TPIDCVLAN, 0x2007)},
		{name: "VGT: the WQE's S-VLAN inserted", p: Path{}, in: frame(macOther, macVF, 100), ins: WQEVLAN{Insert: true, SVLAN: true, TCI: 9},
			want: frame(macOther, macVF, 100, TPIDSVLAN, 9)},
		{name: "VST 100 qos 2: tagged", p: vst(100, 2), in: frame(macOther, macVF, 100), want: frame(macOther, macVF, 100, TPIDCVLAN, 2<<13|100)},
		{name: "VST 100 qos 2: a short frame tagged and padded", p: vst(100, 2), in: frame(macOther, macVF, 4),
			want: padded(frame(macOther, macVF, 4, TPIDCVLAN, 2<<13|100))},
		{name: "VST: the guest's own VLAN tag", p: vst(100, 2), in: frame(macOther, macVF, 100, TPIDCVLAN, 5), v: DropTagged},
		{name: "VST: the WQE's VLAN tag", p: vst(100, 2), in: frame(macOther, macVF, 100), ins: cTag, v: DropTagged},
		{name: "VST: a priority tag of the guest's is kept inside", p: vst(100, 2), in: frame(macOther, macVF, 100, TPIDCVLAN, 5<<13),
			want: frame(macOther, macVF, 100, TPIDCVLAN, 2<<13|100, TPIDCVLAN, 5<<13)},
		{name: "VST VLAN 0 (priority tagged)", p: vst(0, 3), in: frame(macOther, macVF, 100), want: frame(macOther, macVF, 100, TPIDCVLAN, 3<<13)},
		{name: "VST QinQ: an S-VLAN tag", p: qinq, in: frame(macOther, macVF, 100), want: frame(macOther, macVF, 100, TPIDSVLAN, 2<<13|100)},
		{name: "VST QinQ: a priority tag blocked", p: qinq, in: frame(macOther, macVF, 100, TPIDCVLAN, 1<<13), v: DropPrioTagged},
		{name: "VST: the VLAN table has no entry", p: noVLAN, in: frame(macOther, macVF, 100), v: DropVLAN},
		{name: "spoof check: the VF's MAC", p: spoof(), in: frame(macOther, macVF, 100), want: frame(macOther, macVF, 100)},
		{name: "spoof check: another source MAC", p: spoof(), in: frame(macOther, macOther, 100), v: DropSpoof},
		{name: "spoof check: the MAC table has no entry", p: noMAC, in: frame(macOther, macVF, 100), v: DropSpoof},
		{name: "VST and spoof check: another source MAC", p: vstSpoof, in: frame(macOther, macOther, 100), v: DropSpoof},
		{name: "VST and spoof check: the VF's", p: vstSpoof, in: frame(macOther, macVF, 100), want: frame(macOther, macVF, 100, TPIDCVLAN, 2<<13|100)},
		{name: "link down", p: Path{LinkDown: true}, in: frame(macOther, macVF, 100), v: DropLinkDown},
		{name: "runt", p: Path{}, in: frame(macOther, macVF, 0)[:13], v: DropRunt},
		{name: "a tag cut short", p: Path{}, in: frame(macOther, macVF, 0, TPIDCVLAN, 5)[:16], v: DropRunt},
		{name: "one byte over the port's largest frame", p: Path{}, in: frame(macOther, macVF, 1505), maxFrame: 1518, v: DropOversize},
		{name: "the port's largest frame", p: Path{}, in: frame(macOther, macVF, 1504), maxFrame: 1518, want: frame(macOther, macVF, 1504)},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := make([]byte, EgressRoom(len(c.in)))
			n, v := c.p.Egress(out, c.in, c.ins, c.maxFrame)
			if v != c.v {
				t.Fatalf("verdict %v, want %v", v, c.v)
			}
			if v != Forward {
				if n != 0 {
					t.Fatalf("a dropped frame of %d bytes", n)
				}
				return
			}
			if !bytes.Equal(out[:n], c.want) {
				t.Fatalf("sent\n% x\nwant\n% x", out[:n], c.want)
			}
		})
	}
}

func TestIngress(t *testing.T) {
	vgt := Path{}
	for _, c := range []struct {
		name  string
		p     Path
		in    []byte
		strip bool
		want  []byte
		tag   CQEVLAN
		v     Verdict
	}{
		{name: "VGT: as received", p: vgt, in: frame(macVF, macOther, 100), want: frame(macVF, macOther, 100)},
		{name: "VGT: a tag kept without stripping", p: vgt, in: frame(macVF, macOther, 100, TPIDCVLAN, 7), want: frame(macVF, macOther, 100, TPIDCVLAN, 7)},
		{name: "VGT: a C-VLAN stripped and reported", p: vgt, strip: true, in: frame(macVF, macOther, 100, TPIDCVLAN, 3<<13|7),
			want: frame(macVF, macOther, 100), tag: CQEVLAN{Present: true, TCI: 3<<13 | 7}},
		{name: "VGT: an S-VLAN stripped and reported", p: vgt, strip: true, in: frame(macVF, macOther, 100, TPIDSVLAN, 7),
			want: frame(macVF, macOther, 100), tag: CQEVLAN{Present: true, SVLAN: true, TCI: 7}},
		{name: "VGT: nothing to strip", p: vgt, strip: true, in: frame(macVF, macOther, 100), want: frame(macVF, macOther, 100)},
		{name: "VST 100: its VLAN stripped, hidden from the CQE", p: vst(100, 2), in: frame(macVF, macOther, 100, TPIDCVLAN, 100),
			want: frame(macVF, macOther, 100)},
		{name: "VST 100: another VLAN", p: vst(100, 2), in: frame(macVF, macOther, 100, TPIDCVLAN, 200), v: DropVLAN},
		{name: "VST 100: untagged", p: vst(100, 2), in: frame(macVF, macOther, 100), v: DropUntagged},
		{name: "VST 100: priority tagged", p: vst(100, 2), in: frame(macVF, macOther, 100, TPIDCVLAN, 1<<13), v: DropPrioTagged},
		{name: "VST VLAN 0: priority tagged, stripped", p: vst(0, 3), in: frame(macVF, macOther, 100, TPIDCVLAN, 5<<13), want: frame(macVF, macOther, 100)},
		{name: "VST VLAN 0: a VLAN tag", p: vst(0, 3), in: frame(macVF, macOther, 100, TPIDCVLAN, 9), v: DropTagged},
		{name: "VST VLAN 0: untagged", p: vst(0, 3), in: frame(macVF, macOther, 100), want: frame(macVF, macOther, 100)},
		{name: "link down", p: Path{LinkDown: true}, in: frame(macVF, macOther, 100), v: DropLinkDown},
		{name: "runt", p: vgt, in: frame(macVF, macOther, 0)[:10], v: DropRunt},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := make([]byte, len(c.in))
			n, tag, v := c.p.Ingress(out, c.in, c.strip)
			if v != c.v {
				t.Fatalf("verdict %v, want %v", v, c.v)
			}
			if v != Forward {
				return
			}
			if !bytes.Equal(out[:n], c.want) || tag != c.tag {
				t.Fatalf("received\n% x, tag %+v\nwant\n% x, tag %+v", out[:n], tag, c.want, c.tag)
			}
		})
	}
}

// TestPathOf reads the path the PF's VST and spoof-check rewrite leaves:
// the bits, the priority from sched_queue, the VLAN and MAC the indexes
// name; an index with no entry.
func TestPathOf(t *testing.T) {
	pri := make([]byte, mlx4.QPPathSize)
	pri[mlx4.PathFL] = mlx4.FL_CV | mlx4.FL_ETH_HIDE_CQE_VLAN
	pri[mlx4.PathVLANControl] = mlx4.VLAN_CTRL_ETH_TX_BLOCK_TAGGED | mlx4.VLAN_CTRL_ETH_RX_BLOCK_UNTAG
	pri[mlx4.PathFEUP] = mlx4.FEUP_FORCE_ETH_UP | mlx4.FVL_FORCE_ETH_VLAN | mlx4.FSM_FORCE_ETH_SRC_MAC
	pri[mlx4.PathFVLRx] = mlx4.FVL_RX_FORCE_ETH_VLAN
	pri[mlx4.PathSchedQueue] = mlx4.SchedQueuePortBit | 5<<3 | 1 // port 2, priority 5, the scheduler's low bits
	pri[mlx4.PathVLANIndex] = 3
	pri[mlx4.PathGRHMyLMC] = mlx4.GRHMyLMCGRH | 7
	vlans := map[int]uint16{3: 100}
	macs := map[int]uint64{7: macVF}
	at := func(m map[int]uint16) func(int) (uint16, bool) {
		return func(i int) (uint16, bool) { v, ok := m[i]; return v, ok }
	}
	macAt := func(i int) (uint64, bool) { v, ok := macs[i]; return v, ok }
	p := PathOf(pri, at(vlans), macAt, false)
	want := Path{FL: pri[0], VLANControl: pri[1], FEUP: pri[mlx4.PathFEUP], FVLRx: 1, Prio: 5, VLAN: 100, SrcMAC: macVF}
	if p != want {
		t.Fatalf("path %+v, want %+v", p, want)
	}
	pri[mlx4.PathVLANIndex], pri[mlx4.PathGRHMyLMC] = 4, 8
	if p := PathOf(pri, at(vlans), macAt, true); !p.NoVLAN || !p.NoMAC || !p.LinkDown {
		t.Fatalf("unresolved indexes: %+v", p)
	}
	// Without the force bits the tables are not looked at.
	clear(pri)
	if p := PathOf(pri, nil, nil, false); p != (Path{}) {
		t.Fatalf("VGT path %+v", p)
	}
}

func TestCounters(t *testing.T) {
	var c Counters
	c.Count(DropSpoof)
	c.Count(DropSpoof)
	c.Count(Forward)
	c.Count(numVerdicts) // out of range: not counted, no panic
	if c.Get(DropSpoof) != 2 || c.Get(Forward) != 1 || c.Get(DropVLAN) != 0 || c.Get(numVerdicts) != 0 {
		t.Fatalf("counters %d %d %d", c.Get(DropSpoof), c.Get(Forward), c.Get(DropVLAN))
	}
	seen := map[string]bool{}
	for _, v := range Verdicts() {
		if s := v.String(); s == "unknown" || seen[s] {
			t.Fatalf("verdict %d named %q", v, s)
		} else {
			seen[s] = true
		}
	}
}

// TestEgressAllocatesNothing: the per-frame path allocates nothing.
func TestEgressAllocatesNothing(t *testing.T) {
	p := vst(100, 2)
	in := frame(macOther, macVF, 1000)
	out := make([]byte, EgressRoom(len(in)))
	rx := make([]byte, len(out))
	if a := testing.AllocsPerRun(100, func() {
		n, _ := p.Egress(out, in, WQEVLAN{}, 1518)
		p.Ingress(rx, out[:n], false)
	}); a != 0 {
		t.Fatalf("%.1f allocations per frame", a)
	}
}
