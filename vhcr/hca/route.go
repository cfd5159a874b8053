package hca

// Routing on the data path: where a packet a send WQE makes goes.
//
// A packet leaves on the sending QP's port (the primary path's physical
// port; for UD the address vector's port, converted from the VF's
// numbering) and is addressed by DLID: an RC or UC QP's path rlid, a UD
// address vector's dlid. It arrives at the port of this HCA whose LID
// covers the DLID (LID with its LMC's low bits masked: a port answers to
// 2^LMC LIDs); the destination QP is the RC/UC context's remote QPN or the
// UD WQE's dqpn, and it must be on that port. Nothing moves unless both
// ports are Active (the port model's state, which OpenSM's PortInfo sets
// through the MAD engine or the configuration gives).
//
// This covers loopback within a VF (a QP to another of its own on its
// port's LID), between VFs of one vhcrd (the ports are shared), and
// between the HCA's two ports: the model's fabric is the HCA's ports and
// the switch that cables them, and the switch's forwarding table
// (mad.Switch's LFT, which OpenSM programs) is not consulted here: the
// HCA's engine does not hold the switch (cmd/vhcrd cables it to the MAD
// engine only for SMPs), so a DLID reaches a port of this HCA when it is
// that port's LID, whatever the LFT says, and no other DLID reaches
// anything (there are no other end ports in the model's fabric). A DLID
// that names no Active port here is a packet lost in the fabric: RC gets
// transport retry exceeded, UD and UC a silent drop, counted. Ethernet
// (RoCE) ports route by GID and MAC, which the model does not do: their
// packets are dropped the same way.

// portView is what routing needs of a physical port.
type portView struct {
	active bool
	eth    bool
	lid    uint16
	lmc    uint8
	prefix uint64
}

func (h *HCA) portView(phys int) portView { return h.portNow(phys) } // portview.go

// pkey is entry idx of physical port phys's P_Key table (0: none).
func (h *HCA) pkey(phys int, idx uint8) uint16 { return h.pkeyNow(phys, idx) }

// pkeyMatch is the IBA 10.9.3 P_Key check: the same partition (15 low
// bits, not the invalid 0) and at least one full member.
func pkeyMatch(a, b uint16) bool {
	return a&0x7fff != 0 && a&0x7fff == b&0x7fff && (a|b)&0x8000 != 0
}

// routeRes is what happened to a packet on its way.
type routeRes uint8

const (
	routeOK     routeRes = iota
	routeDown            // the sending port is not Active
	routeNoPort          // the DLID names no Active port of this HCA
	routeNoQP            // no QP there that takes the packet
)

// routePort finds the arrival port of a packet sent on port from to dlid,
// and the DLID's path bits there.
func (h *HCA) routePort(from int, dlid uint16) (int, uint8, routeRes) {
	src := h.portView(from)
	if !src.active || src.eth {
		return 0, 0, routeDown
	}
	for p := 1; p <= len(h.Cfg.Ports); p++ {
		v := src
		if p != from {
			v = h.portView(p)
		}
		mask := uint16(1)<<v.lmc - 1
		if v.active && !v.eth && v.lid != 0 && dlid&^mask == v.lid&^mask {
			return p, uint8(dlid & mask), routeOK
		}
	}
	return 0, 0, routeNoPort
}

// routeQP is the QP qpn on port p that can receive (RTR, RTS, SQD, SQER),
// or nil.
func (h *HCA) routeQP(p int, qpn uint32) *qpObj {
	dq := h.fw.qps[qpn&qpnMask]
	if dq == nil || dq.wq == nil || dq.Port != p || qpn > qpnMask {
		return nil
	}
	if !canReceive(dq) {
		return nil
	}
	return dq
}
