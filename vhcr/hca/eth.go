package hca

import (
	"encoding/binary"

	"github.com/vhcrd/vhcrd/vhcr/eswitch"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Raw Ethernet. On a port whose link layer is Ethernet an MLX QP
// (MLX4_QP_ST_MLX) is mlx4_en's ring: each send WQE is one frame (its
// gather list, inline headers and data segments), which the port's
// embedded switch (vhcr/eswitch) passes or drops under the vport policy
// the PF wrote into the QP's primary path (VST, spoof check) and the VF's
// link state, and sends out of the port (the Uplink). The WQE completes
// either way, as on ConnectX-3: the switch's drops are counted
// (EngineStats.EthTx), not reported to the VF.
//
// The switch steers a frame it passes by its destination MAC to the QPs
// attached to it on the port (QP_ATTACH of an Ethernet L2 GID: B0
// steering, mlx4_en's unicast and broadcast attaches): a unicast frame to
// those QPs, or out of the uplink when no VF on the port has the MAC; a
// multicast or broadcast frame to every attached QP but the sender's
// VF's, and out of the uplink. Each arrival passes the receiving QP's
// ingress (VST's VLAN enforced and stripped, a stripping QP's tag
// reported) and takes the next receive WQE: the frame is written, the
// CQE has its length, VLAN and checksum status. A send WQE that asks for
// checksum offload gets its IPv4 and TCP/UDP checksums computed. No receive WQE: dropped and counted
// (EngineStats.EthRxNoWQE), as ConnectX-3 drops it.

// Uplink takes the frames a port's switch sends out of the device: the
// capture file or TAP device cmd/vhcrd opens. Send must not keep b; it
// runs on the engine's goroutine. Flush is called when the poller goes
// idle, so that a buffered capture reaches its file.
type Uplink interface {
	Send(phys int, b []byte)
	Flush()
}

// SetUplink installs the ports' uplink (nil: frames leaving the device
// go nowhere).
func (h *HCA) SetUplink(u Uplink) { h.eth.uplink = u }

// FlushUplink flushes the uplink's buffered frames (the poller's idle
// chores).
func (h *HCA) FlushUplink() {
	if h.eth.uplink != nil && h.eth.sent {
		h.eth.sent = false
		h.eth.uplink.Flush()
	}
}

// PortEthMTU is the Ethernet MTU of the model's ports (QUERY_PORT's eth
// MTU): with an Ethernet header and one tag, the largest frame a VF sends.
const (
	PortEthMTU  = 1500
	ethMaxFrame = PortEthMTU + eswitch.HeaderLen + eswitch.TagLen
	// ethBuf holds a gathered frame: a WQE may describe more than the
	// largest frame (counted oversize, not gathered).
	ethBuf = ethMaxFrame
)

// ethState is the engine's raw Ethernet scratch.
type ethState struct {
	uplink Uplink
	sent   bool // a frame went to the uplink since its last Flush
	frame  [ethBuf]byte
	out    [ethBuf + 2*eswitch.TagLen]byte
	rx     [ethBuf + 2*eswitch.TagLen]byte
}

// ethPathOf reads the QP's switch policy from its stored context (at
// every modify: VST and spoof check rewrite the primary path at INIT2RTR).
func (h *HCA) ethPathOf(qp *qpObj) {
	w := qp.wq
	w.ethOn = w.st == mlx4.QP_ST_MLX && qp.Port >= 1 && qp.Port <= len(h.Cfg.Ports) && h.isEth(qp.Port)
	if !w.ethOn {
		return
	}
	t := &h.fw.ports[qp.Port-1]
	pri := qp.Ctx[mlx4.QPMailboxPriPath : mlx4.QPMailboxPriPath+mlx4.QPPathSize]
	w.eth = eswitch.PathOf(pri,
		func(i int) (uint16, bool) {
			if i >= len(t.VLAN) || t.VLAN[i].Refs == 0 {
				return 0, false
			}
			return uint16(t.VLAN[i].Value), true
		},
		func(i int) (uint64, bool) {
			if i >= len(t.MAC) || t.MAC[i].Refs == 0 {
				return 0, false
			}
			return t.MAC[i].Value & eswitch.Broadcast, true
		}, false)
}

// sendEth executes a raw Ethernet send WQE: the frame gathered, the
// switch's egress applied, the frame to the uplink, the WQE completed.
// Only SEND: the model advertises no LSO. A gather list the keys refuse is
// the local protection error, as for any send.
func (h *HCA) sendEth(qp *qpObj, total uint64) bool {
	w := qp.wq
	d := &h.dp.send
	e := &h.eth
	st := &h.fw.vfs[w.vf].eng
	if d.Ctrl.Opcode != mlx4.OPCODE_SEND {
		h.sqError(qp, d.Ctrl.Opcode, mlx4.CQE_SYNDROME_LOCAL_QP_OP_ERR)
		return true
	}
	if total > ethMaxFrame {
		st.EthTx.Count(eswitch.DropOversize)
		h.sqDone(qp, uint32(total))
		return true
	}
	if !h.gather(e.frame[:total], total) {
		h.sqError(qp, d.Ctrl.Opcode, mlx4.CQE_SYNDROME_LOCAL_PROT_ERR)
		return true
	}
	// Transmit checksum offload: the IPv4 header's and the TCP or UDP
	// checksum, computed as the control segment asks (mlx4_en: every
	// CHECKSUM_PARTIAL frame). A frame it cannot parse goes as written.
	if f := d.Ctrl.SrcRBFlags; f&(mlx4.WQE_CTRL_IP_CSUM|mlx4.WQE_CTRL_TCP_UDP_CSUM) != 0 {
		_ = eswitch.ChecksumOffload(e.frame[:total], f&mlx4.WQE_CTRL_IP_CSUM != 0, f&mlx4.WQE_CTRL_TCP_UDP_CSUM != 0)
	}
	p := &w.eth
	p.LinkDown = !h.VFLinkUp(w.vf, qp.Port)
	n, v := p.Egress(e.out[:], e.frame[:total], eswitch.WQEVLANOf(&d.Ctrl), ethMaxFrame)
	st.EthTx.Count(v)
	if v == eswitch.Forward && !h.ethDeliver(qp, e.out[:n]) && e.uplink != nil {
		e.uplink.Send(qp.Port, e.out[:n])
		e.sent = true
	}
	h.sqDone(qp, uint32(total))
	return true
}

// Ethernet L2 GIDs of QP_ATTACH (mlx4_unicast_attach, mlx4_multicast_attach
// with MLX4_PROT_ETH under B0 steering): the VF's port at byte 5, the
// steering type at byte 7 (MLX4_UC_STEER << 1 for unicast, 0 multicast),
// the MAC at bytes 10..15, the rest zero.
const (
	ethGIDPort  = 5
	ethGIDSteer = 7
	ethGIDMAC   = 10
)

// ethDeliver steers frame b, sent on qp's port, to the QPs attached to its
// destination MAC there (not the sender's VF's); it reports whether the
// frame stays in the device (a unicast some VF of the port has).
func (h *HCA) ethDeliver(qp *qpObj, b []byte) bool {
	dst := eswitch.MAC(b)
	group := eswitch.IsMulticast(dst)
	local := false
	for qpn, gids := range h.fw.mcg {
		dq := h.fw.qps[qpn]
		if dq == nil || dq.wq == nil || !dq.wq.ethOn || dq.wq.vf == qp.wq.vf || dq.Port != qp.Port || !canReceive(dq) {
			continue
		}
		for i := range gids {
			if h.ethGIDNames(dq, &gids[i], dst) {
				h.ethReceive(dq, b)
				local = true
				break
			}
		}
	}
	return local && !group
}

// ethGIDNames reports whether attachment g of dq is an Ethernet L2 GID of
// mac on dq's port.
func (h *HCA) ethGIDNames(dq *qpObj, g *[16]byte, mac uint64) bool {
	for i := range ethGIDPort {
		if g[i] != 0 {
			return false
		}
	}
	return h.PhysPort(dq.wq.vf, uint32(g[ethGIDPort])) == dq.Port && eswitch.MAC(g[ethGIDMAC:]) == mac
}

// ethReceive is a frame's arrival at dq: its ingress, the next receive
// WQE, the frame written, the CQE.
func (h *HCA) ethReceive(dq *qpObj, b []byte) {
	w := dq.wq
	e := &h.eth
	st := &h.fw.vfs[w.vf].eng
	p := &w.eth
	p.LinkDown = !h.VFLinkUp(w.vf, dq.Port)
	strip := binary.BigEndian.Uint32(dq.Ctx[mlx4.QPMailboxContext+mlx4.QPCParam3:])&mlx4.STRIP_VLAN == 0
	n, tag, v := p.Ingress(e.rx[:], b, strip)
	st.EthRx.Count(v)
	if v != eswitch.Forward {
		return
	}
	var s recvSlot
	ok, bad := h.recvPeek(dq, &s)
	switch {
	case !ok:
		st.EthRxNoWQE.Add(1)
		return
	case bad:
		h.recvError(dq, &s, mlx4.CQE_SYNDROME_LOCAL_QP_OP_ERR)
		return
	}
	k, syn := h.scatterList(dq, uint64(n))
	if syn == 0 && !h.stream(h.dp.dst[:k], []seg{{kind: segInline, n: uint64(n), inl: e.rx[:n]}}) {
		syn = mlx4.CQE_SYNDROME_LOCAL_PROT_ERR
	}
	if syn != 0 {
		h.recvError(dq, &s, syn)
		return
	}
	h.recvConsume(dq, &s)
	// The CQE: the frame's length, the stripped tag (vlan_my_qpn's C-VLAN
	// or S-VLAN bit, sl_vid the TCI), the checksums' status as the device
	// verified them (IPv4/IPv6, IPOK, TCP/UDP, checksum 0xffff when the
	// segment's holds: mlx4_en's CHECKSUM_UNNECESSARY).
	st16, csum := eswitch.RxChecksum(e.rx[:n])
	c := &h.dp.cqe
	*c = mlx4.CQE{VlanMyQPN: w.qpn & mlx4.CQE_QPN_MASK, ByteCnt: uint32(n), WQEIndex: s.index, Opcode: mlx4.RECV_OPCODE_SEND,
		Status: st16, Checksum: csum}
	switch {
	case tag.Present && tag.SVLAN:
		c.VlanMyQPN |= mlx4.CQE_SVLAN_PRESENT_MASK
		c.SLVID = tag.TCI
	case tag.Present:
		c.VlanMyQPN |= mlx4.CQE_VLAN_PRESENT_MASK
		c.SLVID = tag.TCI
	}
	h.cqe(dq, 0, w.rcqn, c, h.dp.send.Ctrl.SrcRBFlags&mlx4.WQE_CTRL_SOLICITED != 0)
}
