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
// through the MAD engine or the configuration gives), nor through a switch
// port that is not.
//
// The path, as the fabric takes it (the switch's LinearForwardingTable,
// IBA 14.2.5.10; a port passes data packets only when Active, IBA 7.2):
//
//   - Loopback: a DLID the sending port's own LID covers stays inside the
//     port (an HCA delivers to its own LID without the switch, as hardware
//     does). This is loopback within a VF and between the VFs of one vhcrd
//     that share the port.
//   - Through the switch (SetFabric: cmd/vhcrd cables the config's
//     fabric.cables to the mad.Switch OpenSM manages, the one its ibsim
//     server serves): any other DLID leaves on the port's cable. The
//     switch port there must be Active; the switch's LFT (Forward(dlid),
//     what OpenSM's LinearForwardingTable Sets or the configuration's
//     swept subnet programmed, LinearFDBTop included) gives the egress
//     port, which must be Active and cabled to a port of this HCA whose
//     LID covers the DLID and which is Active. 255 (unprogrammed), port 0
//     (the switch's own LID), a port cabled to a peer CA (MAD-only, no
//     data path) or nothing, a down port on the way, or an egress port
//     whose HCA port does not own the DLID (the LFT pointing at the wrong
//     port): the packet is lost. Reprogramming the LFT reroutes the next
//     packet: the lookups are atomic loads of the switch's table
//     (mad.Switch's swFwd), taken on the poller while the SM's Sets run
//     on the ibsim server's goroutines, allocation- and lock-free.
//   - Without a switch (a configuration without fabric, or an HCA built
//     without SetFabric, as the package's tests and vfdrv's in-process
//     PFs are): the ports reach each other directly, a DLID arriving at
//     the other port of this HCA whose LID covers it, both Active.
//
// A lost packet is what hardware makes of it: RC sends it again after the
// local ACK timeout, retry_cnt times, and then gets transport retry
// exceeded (RETRY_EXC_ERR, retry.go; a retry that finds the route back is
// delivered), UD a silent drop counted in EngineStats.UDDropped, UC
// a silent drop (the sender's WQE completes). Ethernet (RoCE) ports route
// by MAC and GID through the port's switch instead (roce.go). Multicast goes to another port through the switch's MFT
// (ud.go, multicastReaches).

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

// covers reports whether port v answers to dlid: Active, IB, and its LID
// with the LMC's low bits masked equal to the DLID's.
func (v *portView) covers(dlid uint16) bool {
	mask := uint16(1)<<v.lmc - 1
	return v.active && !v.eth && v.lid != 0 && dlid&^mask == v.lid&^mask
}

// routePort finds the arrival port of a message of size sz sent on port
// from to dlid, and the DLID's path bits there; the sending port's LID is
// left in the engine's scratch (srcLID) for the packet's receive CQE. A
// message that leaves the port is counted in its PMA counters, and in the
// arrival port's, and in the switch's if it enters it (crossSwitch); one
// the port's own LID covers loops back inside the HCA, off the wire.
func (h *HCA) routePort(from int, dlid uint16, sz pktSize) (int, uint8, routeRes) {
	src := h.portView(from)
	if !src.active || src.eth {
		return 0, 0, routeDown
	}
	if h.dp != nil {
		h.dp.srcLID = src.lid
	}
	if src.covers(dlid) {
		return from, uint8(dlid & (uint16(1)<<src.lmc - 1)), routeOK
	}
	h.countPort(from, true, sz, false) // on the wire: the sending port's PMA counts it
	if h.fab.sw != nil {
		if p := h.crossSwitch(from, dlid, sz); p != 0 {
			if v := h.portView(p); v.covers(dlid) {
				h.countArrival(p, sz)
				return p, uint8(dlid & (uint16(1)<<v.lmc - 1)), routeOK
			}
		}
		return 0, 0, routeNoPort
	}
	for p := 1; p <= len(h.Cfg.Ports); p++ {
		if p == from {
			continue
		}
		if v := h.portView(p); v.covers(dlid) {
			h.countArrival(p, sz)
			return p, uint8(dlid & (uint16(1)<<v.lmc - 1)), routeOK
		}
	}
	return 0, 0, routeNoPort
}

// countArrival counts a message's arrival at port p, unless it is a MAD,
// which p's engine counts as it processes it.
func (h *HCA) countArrival(p int, sz pktSize) {
	if !sz.mad {
		h.countPort(p, false, sz, false)
	}
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
