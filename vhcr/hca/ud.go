package hca

// UD sends: one datagram per WQE, addressed by the datagram segment's
// address vector (port, DLID, GRH, SL) and its remote QPN and Q_Key.
//
// The sender's WQE always completes successfully (no acknowledgement
// exists); what becomes of the packet is the receiver's business. It is
// dropped and counted (EngineStats.UDDropped) when its port or the port the
// DLID names is not Active, the switch does not forward it there (route.go),
// no QP on that port has the dqpn or can
// receive, or that QP has no receive WQE posted. The receiver's checks, in
// IBA order: the P_Key (the sender's, its QP's pkey_index entry of the
// sending port's table, against the receiver's QP's pkey_index entry of
// the arrival port's: IBA 10.9.3, pkeyMatch) and the Q_Key (the WQE's, or
// with bit 31 set the sending QP's own from its context — IBA 10.2.5: a
// Q_Key with the high bit set means "use the QP's"; against the receiving
// QP's context Q_Key). A failure drops the packet, counts it
// (PKeyViol, QKeyViol) and raises trap 257 (Bad P_Key) or 258 (Bad Q_Key)
// from the receiving port through the MAD engine, with the work
// completion (source LID and QP, SL, P_Key index, DLID path bits, the GRH
// bit) and the GRH of that packet (mad.Engine.KeyViolation).
//
// Multicast (a DLID in 0xc000..0xfffe, dqpn 0xffffff) reaches every QP
// attached (QP_ATTACH) to the AV's DGID on an Active port the packet gets
// to, but the sender's own QP, each with the receiver checks: the sending
// port's QPs inside the HCA, another port's through the switch as its
// multicast forwarding table (what OpenSM programs for the group) sends it
// there (multicastReaches, fabric.go); without a switch, directly.

import (
	"encoding/binary"
	"slices"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/eswitch"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

const (
	multicastLIDBase = 0xc000
	permissiveLID    = 0xffff
	multicastQPN     = 0xffffff
	qkeyUseQP        = 1 << 31
	grhNextHdrIBA    = 0x1b
	udHeaderBytes    = mad.BTHSize + mad.DETHSize + mad.ICRCSize // the GRH's PayLen beside the payload
)

// sendUD executes a UD SEND or SEND_IMM (the only UD opcodes that reach
// here besides NOP and LSO, which needs Ethernet: a local QP operation
// error).
func (h *HCA) sendUD(qp *qpObj, total uint64) bool {
	w := qp.wq
	d := &h.dp.send
	op := d.Ctrl.Opcode
	if op != mlx4.OPCODE_SEND && op != mlx4.OPCODE_SEND_IMM {
		h.sqError(qp, op, mlx4.CQE_SYNDROME_LOCAL_QP_OP_ERR)
		return true
	}
	av := &d.Datagram.AV
	port := qp.Port
	if p := h.PhysPort(w.vf, av.PortPD>>24); p != 0 {
		port = p
	}
	if mtu := h.Cfg.Ports[port-1].MTU; mtu > 0 && total > uint64(mtu) {
		h.sqError(qp, op, mlx4.CQE_SYNDROME_LOCAL_LENGTH_ERR)
		return true
	}
	qkey := d.Datagram.QKey
	if qkey&qkeyUseQP != 0 {
		qkey = w.qkey
	}
	st := &h.fw.vfs[w.vf].eng
	dqpn := d.Datagram.DQPN & mlx4.QPNMask
	sz := udSize(op, total, av.GSLID&mlx4.AVGRH != 0)
	if av.DLID >= multicastLIDBase && av.DLID != permissiveLID && dqpn == multicastQPN {
		if v := h.portView(port); !v.active || v.eth {
			st.UDDropped.Add(1)
		} else {
			h.countMulticast(port, av.DLID, sz)
			h.multicast(qp, port, qkey, total)
		}
		h.sqDone(qp, uint32(total))
		return true
	}
	if av.PortPD&mlx4.AVForceLoopback != 0 && isTunnelQPN(dqpn) {
		h.tunnelEgress(qp, dqpn, qkey, total) // a proxy QP's MAD to its tunnel QP (tunnel.go)
		h.sqDone(qp, uint32(total))
		return true
	}
	if h.isEth(port) || w.roce {
		// RoCE: the QP's own Ethernet port only (its GID slice, its vport
		// policy); an AV that moves it to another port reaches nothing.
		if !w.roce || port != qp.Port {
			st.UDDropped.Add(1)
			h.sqDone(qp, uint32(total))
			return true
		}
		h.sendRoCEUD(qp, dqpn, qkey, total)
		return true
	}
	arrive, bits, rr := h.routePort(port, av.DLID, sz)
	if rr != routeOK {
		st.UDDropped.Add(1)
		h.sqDone(qp, uint32(total))
		return true
	}
	dq := h.routeQP(arrive, dqpn)
	if dq == nil || dq.wq.st != mlx4.QP_ST_UD {
		st.UDDropped.Add(1)
	} else {
		h.udReceive(qp, dq, port, arrive, bits, qkey, total)
	}
	h.sqDone(qp, uint32(total))
	return true
}

// sendRoCEUD delivers a UD datagram on qp's Ethernet port (RoCE v1): by
// the datagram segment's MAC and the AV's DGID to the QP dqpn of the VF
// that has them (roceRoute); the WQE completes either way, a datagram no
// QP takes is dropped and counted. The GRH is always there (RoCE's every
// packet has one; libmlx4 refuses an AH without it).
func (h *HCA) sendRoCEUD(qp *qpObj, dqpn, qkey uint32, total uint64) {
	d := &h.dp.send
	av := &d.Datagram.AV
	t := txTag(qp.wq, d.Datagram.VLAN, av.PortPD&mlx4.AVVLANPresent != 0)
	dq, rr := h.roceRoute(qp, eswitch.MAC(d.Datagram.MAC[:]), &av.DGID, t, dqpn, mlx4.QP_ST_UD)
	if rr != routeOK {
		h.fw.vfs[qp.wq.vf].eng.UDDropped.Add(1)
	} else {
		h.udReceive(qp, dq, qp.Port, qp.Port, 0, qkey, total)
	}
	h.sqDone(qp, uint32(total))
}

// multicast delivers the datagram to every UD QP attached to the AV's DGID
// on an Active IB port, but the sender.
func (h *HCA) multicast(qp *qpObj, port int, qkey uint32, total uint64) {
	w := qp.wq
	dgid := h.dp.send.Datagram.AV.DGID
	for qpn, gids := range h.fw.mcg {
		if qpn == w.qpn&qpnMask || !slices.Contains(gids, dgid) {
			continue
		}
		dq := h.fw.qps[qpn]
		if dq == nil || dq.wq == nil || dq.wq.st != mlx4.QP_ST_UD {
			continue
		}
		if v := h.portView(dq.Port); !v.active || v.eth || h.routeQP(dq.Port, qpn) == nil ||
			!h.multicastReaches(port, dq.Port, h.dp.send.Datagram.AV.DLID) {
			continue
		}
		h.udReceive(qp, dq, port, dq.Port, 0, qkey, total)
	}
}

// udReceive is the arrival of the datagram at dq (arrival port arrive,
// DLID path bits bits): the key checks, the receive WQE, the GRH, the
// data and the receive CQE.
func (h *HCA) udReceive(qp, dq *qpObj, port, arrive int, bits uint8, qkey uint32, total uint64) {
	w, dw := qp.wq, dq.wq
	d := &h.dp.send
	av := &d.Datagram.AV
	st := &h.fw.vfs[dw.vf].eng
	grh := av.GSLID&mlx4.AVGRH != 0 || w.roce
	src := h.portView(port)
	slid := src.lid | uint16(av.GSLID&^mlx4.AVGRH)&(1<<src.lmc-1)
	sl := uint8(av.SLTClassFlowLabel >> mlx4.AVSLShift)
	if w.roce { // no LIDs; the SL is the 802.1p priority
		slid, sl = 0, uint8(av.SLTClassFlowLabel>>mlx4.AVEthSLShift)
	}
	if grh {
		h.udGRH(qp, port, total)
	}
	if !pkeyMatch(h.pkey(port, w.pkeyIndex), h.pkey(arrive, dw.pkeyIndex)) {
		st.PKeyViol.Add(1)
		h.keyTrap(dq, w.qpn, arrive, slid, bits, sl, grh, true, uint32(h.pkey(port, w.pkeyIndex)))
		return
	}
	if qkey != dw.qkey {
		st.QKeyViol.Add(1)
		h.keyTrap(dq, w.qpn, arrive, slid, bits, sl, grh, false, qkey)
		return
	}
	var s recvSlot
	ok, bad := h.recvPeek(dq, &s)
	if !ok {
		st.UDDropped.Add(1)
		return
	}
	if bad {
		h.recvError(dq, &s, mlx4.CQE_SYNDROME_LOCAL_QP_OP_ERR)
		return
	}
	k, syn := h.scatterList(dq, total+mad.GRHSize)
	if syn != 0 {
		h.recvError(dq, &s, syn)
		return
	}
	// The GRH's 40 bytes first (written, or skipped without one), then the
	// payload.
	n := d.NSGE
	copy(h.dp.src[1:n+1], h.dp.src[:n])
	if grh {
		h.dp.src[0] = seg{kind: segInline, n: mad.GRHSize, inl: h.dp.grh[:]}
	} else {
		h.dp.src[0] = seg{kind: segSkip, n: mad.GRHSize}
	}
	ok = h.stream(h.dp.dst[:k], h.dp.src[:n+1])
	copy(h.dp.src[:n], h.dp.src[1:n+1])
	if !ok {
		h.recvError(dq, &s, mlx4.CQE_SYNDROME_LOCAL_PROT_ERR)
		return
	}
	h.recvConsume(dq, &s)
	e := &h.dp.cqe
	*e = mlx4.CQE{ByteCnt: uint32(total + mad.GRHSize), Opcode: mlx4.RECV_OPCODE_SEND}
	if d.Ctrl.Opcode == mlx4.OPCODE_SEND_IMM {
		e.Opcode, e.ImmedRSSInvalid = mlx4.RECV_OPCODE_SEND_IMM, d.Ctrl.Imm
	}
	e.GMLPathRQPN = w.qpn&mlx4.CQE_QPN_MASK | uint32(bits&mlx4.CQEMLPathMask)<<mlx4.CQEMLPathShift
	if grh {
		e.GMLPathRQPN |= mlx4.CQE_G_MASK
	}
	e.SLVID = uint16(sl) << mlx4.CQESLShift
	if w.roce {
		e.SLVID = uint16(sl) << mlx4.CQEEthSLShift
	}
	e.RLID = slid
	h.recvCQE(dq, &s, e)
}

// udGRH builds the packet's GRH into h.dp.grh (and h.dp.ghdr): the
// sender's GID (the port's GID prefix and the sending VF's GUID: its
// GUIDInfo entry on the port, VF+1, as update_gid names it for UD), the
// AV's DGID, traffic class, flow label and hop limit.
func (h *HCA) udGRH(qp *qpObj, port int, total uint64) {
	h.avGRH(&h.dp.ghdr, &h.dp.send.Datagram.AV, qp.wq.vf, port, total)
	if qp.wq.roce { // RoCE: the port table's GID at the QP's forced index
		h.dp.ghdr.SGID = h.RoCEGID(port, int(qp.wq.sgidIdx))
	}
	_ = h.dp.ghdr.Encode(h.dp.grh[:])
}

// avGRH builds into g the GRH of a packet of VF vf from port with total
// bytes of payload, addressed by av: the port's GID prefix and the VF's
// GUID (its GUIDInfo entry, VF+1, as update_gid and
// fill_in_real_sgid_index name it), the AV's DGID, traffic class, flow
// label and hop limit.
func (h *HCA) avGRH(g *mad.GRH, av *mlx4.AV, vf, port int, total uint64) {
	*g = mad.GRH{IPVer: 6, TClass: uint8(av.SLTClassFlowLabel >> 20), FlowLabel: av.SLTClassFlowLabel & 0xfffff,
		PayLen: uint16((total+3)&^3 + udHeaderBytes), NextHeader: grhNextHdrIBA, HopLimit: av.HopLimit, DGID: av.DGID}
	guid := uint64(h.Cfg.Ports[port-1].PortGUID)
	if h.mad != nil {
		if x, ok := h.mad.GUID(uint8(port), vf+1); ok && x != 0 {
			guid = x
		}
	}
	binary.BigEndian.PutUint64(g.SGID[:], h.portView(port).prefix)
	binary.BigEndian.PutUint64(g.SGID[8:], guid)
}

// keyTrap raises trap 257 or 258 for a UD packet dq's port dropped.
func (h *HCA) keyTrap(dq *qpObj, srcQP uint32, arrive int, slid uint16, bits, sl uint8, grh, pkey bool, key uint32) {
	if h.mad == nil {
		return
	}
	wc := &h.dp.wc
	*wc = mad.WC{SLID: slid, SrcQP: srcQP, SL: sl, PKeyIndex: uint16(dq.wq.pkeyIndex),
		DLIDPathBits: bits, GRHPresent: grh, QPN: dq.wq.qpn}
	num := mad.TrapBadQKey
	if pkey {
		num = mad.TrapBadPKey
	}
	var gp *mad.GRH
	if grh {
		gp = &h.dp.ghdr
	}
	h.mad.KeyViolation(uint8(arrive), num, key, wc, gp)
}
