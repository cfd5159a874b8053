package eswitch

import (
	"sync/atomic"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Path is what the firmware applies to a QP's Ethernet frames: the vport
// fields of the QP context's primary path (struct mlx4_qp_path) as the PF
// wrote them, with the port's VLAN and MAC table entries they index
// resolved, and the VF's link forced down or not.
type Path struct {
	FL          uint8  // MLX4_FL_*: CV or SV (the forced tag's TPID), ETH_HIDE_CQE_VLAN
	VLANControl uint8  // MLX4_VLAN_CTRL_ETH_*: what the QP may send and receive
	FEUP        uint8  // MLX4_FEUP_FORCE_ETH_UP, MLX4_FSM_FORCE_ETH_SRC_MAC, MLX4_FVL_FORCE_ETH_VLAN
	FVLRx       uint8  // MLX4_FVL_RX_FORCE_ETH_VLAN
	Prio        uint8  // sched_queue 5:3: the forced 802.1p priority
	VLAN        uint16 // the VID of the port's VLAN table entry at vlan_index (FVL_FORCE_ETH_VLAN)
	SrcMAC      uint64 // the port's MAC table entry at grh_mylmc 6:0 (FSM_FORCE_ETH_SRC_MAC)
	// NoVLAN and NoMAC: the index names no entry of the port's table; the
	// QP then sends nothing the force bit would have touched.
	NoVLAN, NoMAC bool
	LinkDown      bool // the VF's link forced down (ip link set ... vf N state disable)
}

// PathOf reads Path from pri, a QP context's primary path (mlx4.QPPathSize
// bytes); vlanAt and macAt look an index up in the port's VLAN and MAC
// tables. It runs when the QP's context changes, not per frame.
func PathOf(pri []byte, vlanAt func(int) (uint16, bool), macAt func(int) (uint64, bool), linkDown bool) Path {
	p := Path{
		FL: pri[mlx4.PathFL], VLANControl: pri[mlx4.PathVLANControl], FEUP: pri[mlx4.PathFEUP], FVLRx: pri[mlx4.PathFVLRx],
		Prio: (pri[mlx4.PathSchedQueue] & mlx4.SchedQueueUPMask) >> 3, LinkDown: linkDown,
	}
	if p.FEUP&mlx4.FVL_FORCE_ETH_VLAN != 0 || p.FVLRx&mlx4.FVL_RX_FORCE_ETH_VLAN != 0 {
		v, ok := vlanAt(int(pri[mlx4.PathVLANIndex]))
		p.VLAN, p.NoVLAN = v, !ok
	}
	if p.FEUP&mlx4.FSM_FORCE_ETH_SRC_MAC != 0 {
		m, ok := macAt(int(pri[mlx4.PathGRHMyLMC] & mlx4.GRHMyLMCSMACMask))
		p.SrcMAC, p.NoMAC = m, !ok
	}
	return p
}

// Verdict is what the switch did with a frame.
type Verdict uint8

// The verdicts: Forward, or why the frame was dropped.
const (
	Forward        Verdict = iota
	DropLinkDown           // the VF's link is forced down
	DropRunt               // shorter than its Ethernet header
	DropOversize           // longer than the port's largest frame
	DropTagged             // VLAN-tagged where vlan_control blocks it (a VST VF's own tag)
	DropPrioTagged         // priority-tagged where vlan_control blocks it
	DropUntagged           // untagged where vlan_control blocks it
	DropSpoof              // spoof check: a source MAC other than the VF's
	DropVLAN               // received on another VLAN than the forced one, or a forced VLAN the table lacks
	numVerdicts
)

var verdictNames = [numVerdicts]string{"forward", "link_down", "runt", "oversize", "tagged", "prio_tagged", "untagged", "spoof", "vlan"}

// String is the verdict's metric label.
func (v Verdict) String() string {
	if v < numVerdicts {
		return verdictNames[v]
	}
	return "unknown"
}

// Verdicts lists every verdict, for metrics.
func Verdicts() []Verdict {
	v := make([]Verdict, numVerdicts)
	for i := range v {
		v[i] = Verdict(i)
	}
	return v
}

// Counters counts frames by verdict (a VF's, one direction). Any goroutine
// may read them.
type Counters [numVerdicts]atomic.Uint64

// Count counts one frame of verdict v.
func (c *Counters) Count(v Verdict) {
	if v < numVerdicts {
		c[v].Add(1)
	}
}

// Get is the count of verdict v.
func (c *Counters) Get(v Verdict) uint64 {
	if v < numVerdicts {
		return c[v].Load()
	}
	return 0
}

// WQEVLAN is the tag a send WQE asks the device to insert (the control
// segment's ins_vlan, MLX4_WQE_CTRL_INS_CVLAN or INS_SVLAN, with its
// vlan_tag: mlx4_en's transmit VLAN offload).
type WQEVLAN struct {
	Insert bool
	SVLAN  bool // INS_SVLAN: an 802.1ad tag; else 802.1Q
	TCI    uint16
}

// WQEVLANOf reads the insertion a send WQE's control segment asks for.
func WQEVLANOf(c *mlx4.WQECtrl) WQEVLAN {
	switch {
	case c.InsVLAN&mlx4.WQE_CTRL_INS_SVLAN != 0:
		return WQEVLAN{Insert: true, SVLAN: true, TCI: c.VLANTag}
	case c.InsVLAN&mlx4.WQE_CTRL_INS_CVLAN != 0:
		return WQEVLAN{Insert: true, TCI: c.VLANTag}
	}
	return WQEVLAN{}
}

// EgressRoom is the room Egress needs in out for a frame of n bytes.
func EgressRoom(n int) int { return max(n+2*TagLen, MinFrame) }

// Egress applies p to frame in, which the QP sends, and writes into out
// (EgressRoom(len(in)) bytes) the frame that leaves the VF's vport: the
// WQE's tag inserted, vlan_control's send blocks and spoof check applied
// to the frame so tagged, VST's tag (its VLAN, its priority where
// FEUP_FORCE_ETH_UP) inserted outermost, padded to MinFrame. maxFrame
// (0: no bound) bounds the frame as the VF gave it. It returns the length
// written and Forward, or 0 and why it was dropped.
func (p *Path) Egress(out, in []byte, ins WQEVLAN, maxFrame int) (int, Verdict) {
	if p.LinkDown {
		return 0, DropLinkDown
	}
	h, err := ParseHeader(in)
	if err != nil {
		return 0, DropRunt
	}
	if maxFrame > 0 && len(in) > maxFrame {
		return 0, DropOversize
	}
	tagged, vid := h.Tagged, h.VID
	if ins.Insert {
		tagged, vid = true, ins.TCI&vidMask
	}
	if v := p.blocked(tagged, vid, mlx4.VLAN_CTRL_ETH_TX_BLOCK_TAGGED, mlx4.VLAN_CTRL_ETH_TX_BLOCK_PRIO, mlx4.VLAN_CTRL_ETH_TX_BLOCK_UNTAG); v != Forward {
		return 0, v
	}
	if p.FEUP&mlx4.FSM_FORCE_ETH_SRC_MAC != 0 && (p.NoMAC || h.Src != p.SrcMAC) {
		return 0, DropSpoof
	}
	n := copy(out[:offType], in[:offType])
	if p.FEUP&mlx4.FVL_FORCE_ETH_VLAN != 0 {
		if p.NoVLAN {
			return 0, DropVLAN
		}
		tpid := uint16(TPIDCVLAN)
		if p.FL&mlx4.FL_SV != 0 {
			tpid = TPIDSVLAN
		}
		pcp := h.PCP
		if p.FEUP&mlx4.FEUP_FORCE_ETH_UP != 0 {
			pcp = p.Prio
		}
		n = putTag(out, n, tpid, TCI(pcp, false, p.VLAN))
	}
	if ins.Insert {
		tpid := uint16(TPIDCVLAN)
		if ins.SVLAN {
			tpid = TPIDSVLAN
		}
		n = putTag(out, n, tpid, ins.TCI)
	}
	n += copy(out[n:], in[offType:])
	return pad(out, n), Forward
}

// putTag writes a tag at out[n:] and returns n+TagLen.
func putTag(out []byte, n int, tpid, tci uint16) int {
	out[n], out[n+1], out[n+2], out[n+3] = byte(tpid>>8), byte(tpid), byte(tci>>8), byte(tci)
	return n + TagLen
}

// blocked applies vlan_control's blocks (the tagged, priority-tagged and
// untagged bits of one direction) to a frame.
func (p *Path) blocked(tagged bool, vid uint16, blockTagged, blockPrio, blockUntagged uint8) Verdict {
	c := p.VLANControl
	switch {
	case tagged && vid != 0 && c&blockTagged != 0:
		return DropTagged
	case tagged && vid == 0 && c&blockPrio != 0:
		return DropPrioTagged
	case !tagged && c&blockUntagged != 0:
		return DropUntagged
	}
	return Forward
}

// CQEVLAN is the tag a receive CQE reports (vlan_my_qpn's C-VLAN or
// S-VLAN present bit and sl_vid): the one the device stripped.
type CQEVLAN struct {
	Present bool
	SVLAN   bool
	TCI     uint16
}

// Ingress applies p to frame in, which the switch steered to the QP, and
// writes into out (len(in) bytes) what the QP receives: vlan_control's
// receive blocks applied, a frame of another VLAN than VST's dropped, VST's
// tag stripped (and hidden from the CQE where FL_ETH_HIDE_CQE_VLAN), or,
// for a QP that strips VLANs (the context's MLX4_STRIP_VLAN: mlx4_en's
// receive VLAN offload), its outer tag stripped and reported. It returns
// the length written, the CQE's tag and Forward, or why it was dropped.
func (p *Path) Ingress(out, in []byte, strip bool) (int, CQEVLAN, Verdict) {
	if p.LinkDown {
		return 0, CQEVLAN{}, DropLinkDown
	}
	h, err := ParseHeader(in)
	if err != nil {
		return 0, CQEVLAN{}, DropRunt
	}
	if v := p.blocked(h.Tagged, h.VID, mlx4.VLAN_CTRL_ETH_RX_BLOCK_TAGGED, mlx4.VLAN_CTRL_ETH_RX_BLOCK_PRIO, mlx4.VLAN_CTRL_ETH_RX_BLOCK_UNTAG); v != Forward {
		return 0, CQEVLAN{}, v
	}
	force := p.FVLRx&mlx4.FVL_RX_FORCE_ETH_VLAN != 0
	if force && (p.NoVLAN || h.Tagged && h.VID != p.VLAN) {
		return 0, CQEVLAN{}, DropVLAN
	}
	if !h.Tagged || !force && !strip {
		return copy(out, in), CQEVLAN{}, Forward
	}
	tag := CQEVLAN{Present: true, SVLAN: h.TPID == TPIDSVLAN, TCI: TCI(h.PCP, h.DEI, h.VID)}
	if force && p.FL&mlx4.FL_ETH_HIDE_CQE_VLAN != 0 {
		tag = CQEVLAN{}
	}
	return stripTag(out, in), tag, Forward
}
