package hca

import (
	"encoding/binary"
	"slices"
	"sync"
	"sync/atomic"

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
// checksum offload gets its IPv4 and TCP/UDP checksums computed. No
// receive WQE: dropped and counted (EngineStats.EthRxNoWQE), as ConnectX-3
// drops it.

// Uplink takes the frames a port's switch sends out of the device: the
// capture file or TAP device cmd/vhcrd opens. Send must not keep b; it
// runs on the engine's goroutine and must not block (a TAP's writes are
// another goroutine's). Flush is called when the poller goes idle, so that
// a buffered capture reaches its file. Frames from the host come the other
// way through HCA.ReceiveFrame.
type Uplink interface {
	Send(phys int, b []byte)
	Flush()
}

// SetUplink installs the ports' uplink (nil: frames leaving the device
// go nowhere), and the queue of frames from it (ReceiveFrame).
func (h *HCA) SetUplink(u Uplink) {
	h.eth.uplink = u
	if u != nil && h.eth.in == nil {
		h.eth.in = new(ethInbox)
	}
}

// UplinkStats counts one port's uplink. Frames out are those the switch
// sent out of the port; frames in are those the host sent into it
// (ReceiveFrame), by what became of them.
type UplinkStats struct {
	Out atomic.Uint64 // frames sent out of the port
	// OutQueueFull: frames the uplink could not take (a TAP's queue full:
	// the host's stack slower than the port), lost as on a congested link.
	OutQueueFull atomic.Uint64
	// In counts the frames from the host the switch steered to at least
	// one of the port's QPs (each QP's ingress then counts it in its VF's
	// EngineStats.EthRx).
	In atomic.Uint64
	// InNoVF: a unicast no QP of the port is attached to (dropped, as
	// the switch would flood it nowhere but back).
	InNoVF atomic.Uint64
	// InOversize: longer than the port's largest frame (PortEthMTU with
	// a header and one tag), dropped at the queue.
	InOversize atomic.Uint64
	// InRunt: shorter than an Ethernet header.
	InRunt atomic.Uint64
	// InQueueFull: the ingress queue held ethInQueue frames the poller
	// had not taken (a host flooding faster than the VFs take it).
	InQueueFull atomic.Uint64
}

// UplinkStats returns port phys's uplink counters (nil: no such port).
func (h *HCA) UplinkStats(phys int) *UplinkStats {
	if phys < 1 || phys > len(h.Cfg.Ports) {
		return nil
	}
	return &h.eth.up[phys-1]
}

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
	sent   bool           // a frame went to the uplink since its last Flush
	in     *ethInbox      // frames from the uplink (nil: no uplink)
	up     [2]UplinkStats // per physical port (the model has 1 or 2)
	// index lists the QPs attached to each (physical port, MAC)
	// (ethKey): ethDeliver's one lookup, rebuilt by ethReindex.
	index map[uint64][]uint32
	frame [ethBuf]byte
	out   [ethBuf + 2*eswitch.TagLen]byte
	rx    [ethBuf + 2*eswitch.TagLen]byte
}

// ethInQueue bounds the frames from the host waiting for the poller; the
// poller takes up to ethInBudget of them per scan, beside the send queues'
// budget, so that a host's flood is one more source in the round robin.
const (
	ethInQueue  = 256
	ethInBudget = 32
)

// ethInbox is the queue of frames from the uplink: any goroutine puts
// (ReceiveFrame), the poller takes (ServiceUplink). A put writes only the
// slot past the n counted ones; the poller reads the counted slots without
// the lock (one lock to see them, one to release them).
type ethInbox struct {
	mu      sync.Mutex
	head, n int
	work    atomic.Int32 // n, for the scan's one load
	q       [ethInQueue]ethInFrame
}

type ethInFrame struct {
	phys uint8
	n    uint16
	b    [ethMaxFrame]byte
}

// ReceiveFrame queues frame b, which the host sent into physical port
// phys's uplink (a TAP device's read), for the port's switch: the poller
// steers it to the QPs attached to its destination MAC, as a frame from
// the wire. b is copied; a frame shorter than the wire's 60 bytes is padded
// as a wire's sender pads it. It reports false for a frame it drops (no
// such Ethernet port or no uplink, a runt, too long, the queue full),
// counted in UplinkStats. Any goroutine may call it; it wakes a sleeping
// poller.
func (h *HCA) ReceiveFrame(phys int, b []byte) bool {
	q := h.eth.in
	if q == nil || phys < 1 || phys > len(h.Cfg.Ports) || !h.isEth(phys) {
		return false
	}
	st := &h.eth.up[phys-1]
	switch {
	case len(b) < eswitch.HeaderLen:
		st.InRunt.Add(1)
		return false
	case len(b) > ethMaxFrame:
		st.InOversize.Add(1)
		return false
	}
	q.mu.Lock()
	if q.n == ethInQueue {
		q.mu.Unlock()
		st.InQueueFull.Add(1)
		return false
	}
	f := &q.q[(q.head+q.n)%ethInQueue]
	f.phys, f.n = uint8(phys), uint16(max(len(b), ethMinFrame))
	clear(f.b[copy(f.b[:], b):f.n])
	q.n++
	q.work.Add(1)
	q.mu.Unlock()
	if h.tun.wake != nil {
		h.tun.wake()
	}
	return true
}

// ethMinFrame is the shortest frame on the wire without its FCS.
const ethMinFrame = 60

// ServiceUplink is the poller's uplink step, once per scan beside
// ServiceQueues: up to ethInBudget frames from the host steered to the
// VFs' QPs. It returns how many (non-zero is a busy scan); idle, it is one
// load.
func (h *HCA) ServiceUplink() int {
	q := h.eth.in
	if q == nil || q.work.Load() == 0 {
		return 0
	}
	h.scratch()
	q.mu.Lock()
	head, n := q.head, min(q.n, ethInBudget)
	q.mu.Unlock()
	for i := range n { // slots a put does not touch while they are counted
		f := &q.q[(head+i)%ethInQueue]
		phys := int(f.phys)
		if h.ethDeliver(phys, -1, f.b[:f.n], false) {
			h.eth.up[phys-1].In.Add(1)
		} else {
			h.eth.up[phys-1].InNoVF.Add(1)
		}
	}
	q.mu.Lock()
	q.head = (head + n) % ethInQueue
	q.n -= n
	q.work.Add(int32(-n))
	q.mu.Unlock()
	return n
}

// ethPathOf reads the QP's switch policy from its stored context (at
// every modify: VST and spoof check rewrite the primary path at INIT2RTR).
func (h *HCA) ethPathOf(qp *qpObj) {
	w := qp.wq
	eth := qp.Port >= 1 && qp.Port <= len(h.Cfg.Ports) && h.isEth(qp.Port)
	w.ethOn = eth && w.st == mlx4.QP_ST_MLX
	w.roce = eth && (w.st == mlx4.QP_ST_RC || w.st == mlx4.QP_ST_UC || w.st == mlx4.QP_ST_UD)
	if !w.ethOn && !w.roce {
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
	if v == eswitch.Forward && !h.ethLocal(qp.Port, w.vf, e.out[:n]) && e.uplink != nil {
		e.uplink.Send(qp.Port, e.out[:n])
		e.up[qp.Port-1].Out.Add(1)
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

// ethLocal steers frame b, which VF from sent on physical port phys, to
// the QPs attached to its destination MAC there (solicited as the send WQE
// is); it reports whether the frame stays in the device (a unicast some VF
// of the port has), else it goes out of the uplink too.
func (h *HCA) ethLocal(phys, from int, b []byte) bool {
	sol := h.dp.send.Ctrl.SrcRBFlags&mlx4.WQE_CTRL_SOLICITED != 0
	return h.ethDeliver(phys, from, b, sol) && !eswitch.IsMulticast(eswitch.MAC(b))
}

// ethDeliver steers frame b, on physical port phys from VF from (-1: from
// the uplink), to the QPs of the port attached to its destination MAC
// (never the sender VF's own), in QPN order, their CQEs solicited if sol;
// it reports whether any QP took it. One map lookup finds them
// (ethReindex): a frame costs the QPs attached to its MAC, whatever the
// other VFs attached.
func (h *HCA) ethDeliver(phys, from int, b []byte, sol bool) bool {
	took := false
	for _, qpn := range h.eth.index[ethKey(phys, eswitch.MAC(b))] {
		dq := h.fw.qps[qpn]
		if dq == nil || dq.wq == nil || !dq.wq.ethOn || dq.wq.vf == from || dq.Port != phys || !canReceive(dq) {
			continue
		}
		h.ethSteer(dq, b, sol)
		took = true
	}
	return took
}

// ethKey is the switch index's key of a MAC on a physical port.
func ethKey(phys int, mac uint64) uint64 { return uint64(phys)<<48 | mac&eswitch.Broadcast }

// ethReindex rebuilds the switch's index from the QPs' attachments
// (fw.mcg, the one place they live): each Ethernet L2 GID (ethGID) of a
// QP, on the physical port the QP's VF names in it, lists the QP. The
// command path calls it whenever an attachment changes (QP_ATTACH, the
// VF's reset, an image loaded): frames only read it.
func (h *HCA) ethReindex() {
	if h.eth.index == nil {
		h.eth.index = map[uint64][]uint32{}
	}
	clear(h.eth.index)
	for qpn, gids := range h.fw.mcg {
		qp := h.fw.qps[qpn]
		if qp == nil || qp.tr == nil {
			continue
		}
		for i := range gids {
			g := &gids[i]
			if !ethGID(g) {
				continue
			}
			if phys := h.PhysPort(qp.tr.Owner, uint32(g[ethGIDPort])); phys != 0 && h.isEth(phys) {
				k := ethKey(phys, eswitch.MAC(g[ethGIDMAC:]))
				h.eth.index[k] = append(h.eth.index[k], qpn)
			}
		}
	}
	for _, qpns := range h.eth.index {
		slices.Sort(qpns)
	}
}

// ethGID reports whether g has an Ethernet L2 GID's zero prefix.
func ethGID(g *[16]byte) bool {
	for i := range ethGIDPort {
		if g[i] != 0 {
			return false
		}
	}
	return true
}

// ethSteer hands frame b, steered to dq, to the QP that takes it: dq, or
// for an RSS indirection QP the ring its context's hash picks (a QP of the
// same VF; none that can receive: dropped and counted as having no receive
// WQE), the hash in the ring's CQE.
func (h *HCA) ethSteer(dq *qpObj, b []byte, sol bool) {
	if !dq.wq.rss {
		h.ethReceive(dq, b, sol, 0)
		return
	}
	off := mlx4.QPMailboxContext + mlx4.QPCPriPath + mlx4.RSS_OFFSET_IN_QPC_PRI_PATH
	r := eswitch.RSSOf(dq.Ctx[off : off+mlx4.RSSContextSize])
	qpn, hash := r.Steer(b)
	ring := h.fw.qps[qpn&qpnMask]
	if ring == nil || ring.wq == nil || ring.wq.vf != dq.wq.vf || !ring.wq.ethOn || ring.wq.rss || ring.Port != dq.Port || !canReceive(ring) {
		h.fw.vfs[dq.wq.vf].eng.EthRxNoWQE.Add(1)
		return
	}
	h.ethReceive(ring, b, sol, hash)
}

// ethReceive is a frame's arrival at dq: its ingress, the next receive
// WQE, the frame written, the CQE (with the RSS hash that picked dq).
func (h *HCA) ethReceive(dq *qpObj, b []byte, sol bool, hash uint32) {
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
		Status: st16, Checksum: csum, ImmedRSSInvalid: hash}
	switch {
	case tag.Present && tag.SVLAN:
		c.VlanMyQPN |= mlx4.CQE_SVLAN_PRESENT_MASK
		c.SLVID = tag.TCI
	case tag.Present:
		c.VlanMyQPN |= mlx4.CQE_VLAN_PRESENT_MASK
		c.SLVID = tag.TCI
	}
	h.cqe(dq, 0, w.rcqn, c, sol)
}
