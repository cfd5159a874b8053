package hca

// The SR-IOV MAD tunnel: what mlx4_ib's PF (drivers/infiniband/hw/mlx4/
// mad.c) does for its VFs' QP0 and QP1, which are proxy QPs.
//
// Egress. A VF's proxy QP sends a UD datagram with the force-loopback bit
// to its tunnel QP (QUERY_FUNC_CAP's qp0/qp1 tunnel QPN: BaseTunnelSQPN +
// 8*slave + 2*qpt + port-1, slave = VF+1), whose payload is a struct
// mlx4_ib_tunnel_header, inline, and the MAD (mlx4.TunnelSendPayload).
// The PF's tunnel QPs are the model's own (no QP object): the engine
// delivers the datagram to them as hardware would (the tunnel QP's
// reserved Q_Key, its 352-byte receive buffer) and runs
// mlx4_ib_multiplex_mad on it (tunnelMultiplex): the source QP must be a
// proxy QP0/QP1 of the tunnel's port and slave; a request's TID must have
// a zero most significant byte, which becomes the slave; an SMP only from
// a VF with SMI; SA and DEVICE_MGMT (GET and SET) pass, CM passes with
// the PF's comm ID for the connection (cm.go), every other class is
// dropped and counted, as the real PF drops the classes it does not
// handle, unless the VF's configuration adds PerfMgt or BM
// (config.VF.TunnelClasses, an extension: their requests pass, and their
// responses come back to the VF whose TID they carry); the AV's port goes through the VF's port
// map, its GRH's SGID index becomes the slave's, the P_Key index through
// the VF's virtual table. The MAD then leaves the port's QP0 (a proxy QP0's)
// or QP1 (mlx4_ib_send_to_wire) through the wire (SetMADWire), or, with
// none installed, reaches the HCA's own ports' agents (localWire).
//
// Ingress. A MAD that reaches a port's QP0/QP1 for the PF (a response, a
// wire's delivery) comes in through ReceiveMAD, from any goroutine, into a
// bounded queue the poller drains (a full queue drops and counts: a MAD is
// a datagram). mlx4_ib_demux_mad finds the slave: a response's TID most
// significant byte (cleared), or the GRH's DGID (the GUID index of the
// slave); SMPs only as responses to an SMI VF; SA and DEVICE_MGMT
// GET_RESP pass; a CM MAD goes to the VF its comm ID or, for a REQ, its
// remote port GID names (cm.go); the rest is dropped. A CM MAD that
// localWire brings to a port's QP1 is demultiplexed the same way. mlx4_ib_send_to_slave delivers it
// to the slave's proxy QP as a struct mlx4_rcv_tunnel_mad: the receive
// header with the work completion (source QP, GRH bit, the VF's P_Key
// index of the packet's P_Key, SL, SLID), the GRH, the MAD — after the
// UD GRH area, the proxy receive's first scatter entry — with a receive
// CQE from the tunnel QP. Each delivery is one data-path step (dplog.go).
// A kill of the PF loses what is queued: a lost datagram, which the MAD
// layer's retries cover.

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// TunnelDrop is why the tunnel dropped a MAD.
type TunnelDrop uint8

// The tunnel's drop reasons (metrics labels: TunnelDropLabels).
const (
	TunDropSrcQP    TunnelDrop = iota // the sender is not a proxy QP0/QP1 of the tunnel's port and slave
	TunDropLength                     // the datagram is not a tunnel header and a MAD
	TunDropTID                        // a request whose TID's most significant byte is not zero
	TunDropSMI                        // an SMP from or to a VF without SMI, or unsolicited to a VF
	TunDropClass                      // a management class the PF does not pass for a VF
	TunDropPort                       // the AV names a port the VF does not have
	TunDropPKey                       // the P_Key index is outside the VF's table, or the P_Key not in it
	TunDropUnrouted                   // nothing answers at the destination (port down, no agent)
	TunDropSlave                      // an incoming MAD names no VF
	TunDropProxy                      // the VF's proxy QP cannot take it (absent, not receiving, no WQE)
	TunDropQueue                      // the ingress queue or the wire's queue was full
	TunDropCM                         // a CM MAD naming a comm ID the sender does not have, or none left (cm.go)
	NumTunnelDrops
)

// TunnelDropLabels are the drop reasons' metric labels.
var TunnelDropLabels = [NumTunnelDrops]string{"src_qp", "length", "tid", "smi", "class", "port", "pkey",
	"unrouted", "slave", "proxy", "queue", "cm"}

// TunnelStats are the tunnel's counters (metrics read them at scrape
// time).
type TunnelStats struct {
	Out atomic.Uint64 // MADs VFs sent that left through the wire
	In  atomic.Uint64 // MADs delivered to VFs' proxy QPs

	PFAnswers atomic.Uint64 // the SA's answers to the PF's own multicast joins and leaves (mcg.go)
	CMIDs     atomic.Uint64 // comm IDs the PF gave the VFs' connections (cm.go)
	Drops     [NumTunnelDrops]atomic.Uint64
}

// WireMAD is a MAD on a port's QP0 or QP1: the datagram's addressing and
// the fields its receiver's work completion gets.
type WireMAD struct {
	SQP       uint32 // the PF's QP it leaves from: 0 or 1
	DLID      uint16
	DQPN      uint32
	QKey      uint32
	SL        uint8
	SLIDBits  uint8  // the AV's source path bits
	PKeyIndex uint16 // the physical P_Key index
	HasGRH    bool
	GRH       mad.GRH
	MAD       mad.MAD
}

// MADWire is the fabric beyond a port's QP0 and QP1: SendMAD takes a MAD
// the tunnel sends from port (on the poller: it must not block, and m is
// the tunnel's, to copy), or reports false for a port it does not serve,
// whose MADs then reach the HCA's own agents (localWire). A response or
// any MAD for the port's QP0/QP1 comes back through HCA.ReceiveMAD.
type MADWire interface {
	SendMAD(port uint8, m *WireMAD) bool
}

// SetMADWire installs the wire; nil: the HCA's own ports' agents only.
func (h *HCA) SetMADWire(w MADWire) { h.tun.wire = w }

// SetTunnelWake installs what ReceiveMAD and ReceiveFrame call after
// queueing, so that a sleeping poller comes to drain the queue (the PF's
// futex doorbell).
func (h *HCA) SetTunnelWake(wake func()) { h.tun.wake = wake }

// TunnelStats returns the tunnel's counters.
func (h *HCA) TunnelStats() *TunnelStats { return &h.tun.stats }

const tunQueueLen = 64

type tunItem struct {
	port   uint8
	wc     mad.WC
	hasGRH bool
	grh    mad.GRH
	m      mad.MAD
}

// tunnel is the HCA's tunnel: the ingress queue (its own lock: any
// goroutine fills it), the wire, the counters and the poller's buffers.
type tunnel struct {
	wire  MADWire
	wake  func()
	stats TunnelStats
	alias AliasGUIDStats // aliasguid.go

	aliasTID   uint64 // the PF's own SA requests' transaction IDs (pfTID, poller)
	aliasPorts [2]aliasPort
	aliasArmed bool       // a registration waits for its answer (poller)
	mcg        [2]mcgPort // the VFs' multicast groups per port (mcg.go)
	mcgOut     WireMAD    // the PF's own join as the wire gets it
	cm         cmState    // the VFs' CM comm IDs (cm.go)

	// work is what the poller has to do here: the MADs queued, and one
	// more while a registration waits for its answer (aliasguid.go). The
	// scan's idle fast path reads it alone, without the lock.
	work atomic.Int32
	mu   sync.Mutex
	q    [tunQueueLen]tunItem
	head int
	n    int // queued (under mu)

	cur tunItem                     // the item being delivered (poller)
	buf [mlx4.TunnelMADSize]byte    // egress: the datagram as the tunnel QP receives it
	mlx [512]byte                   // egress: an MLX WQE's packet, its UD header first
	rcv [mlx4.RcvTunnelMADSize]byte // ingress: the struct mlx4_rcv_tunnel_mad
	out WireMAD                     // egress: what the wire gets
}

func (t *tunnel) drop(r TunnelDrop) { t.stats.Drops[r].Add(1) }

// isTunnelQPN reports whether qpn is in the PF's tunnel QP range.
func isTunnelQPN(qpn uint32) bool {
	return qpn >= BaseTunnelSQPN && qpn < BaseTunnelSQPN+8*mlx4.MLX4_MFUNC_MAX
}

// tunnelEgress is the arrival of the UD datagram the engine is executing
// (h.dp.send, total bytes, Q_Key qkey) at the tunnel QP dqpn.
func (h *HCA) tunnelEgress(qp *qpObj, dqpn, qkey uint32, total uint64) {
	if !h.tunnelQP(qp, dqpn, qkey) {
		return
	}
	// The tunnel QP's receive buffer is a struct mlx4_tunnel_mad: the GRH
	// area, then the datagram; anything else is not a tunnel MAD.
	t := &h.tun
	if total != mlx4.TunnelSendPayload || !h.gather(t.buf[mad.GRHSize:], total) {
		t.drop(TunDropLength)
		return
	}
	h.tunnelArrive(qp, dqpn, t.buf[mad.GRHSize:])
}

// tunnelQP is the tunnel QP dqpn's check of a datagram from qp: the QP is
// there (a slave's QP0 or QP1 tunnel) and the Q_Key is its context's.
func (h *HCA) tunnelQP(qp *qpObj, dqpn, qkey uint32) bool {
	off := dqpn - BaseTunnelSQPN
	if slave := int(off / 8); off%8 >= 4 || slave < 1 || slave > h.NumVFs {
		h.fw.vfs[qp.wq.vf].eng.UDDropped.Add(1) // no QP there
		return false
	}
	if qkey != mlx4.RESERVED_QKEY_BASE+off { // the tunnel QP's context Q_Key
		h.fw.vfs[qp.wq.vf].eng.QKeyViol.Add(1)
		return false
	}
	return true
}

// tunnelArrive multiplexes datagram d (a tunnel header and a MAD) that qp
// sent to the tunnel QP dqpn.
func (h *HCA) tunnelArrive(qp *qpObj, dqpn uint32, d []byte) {
	off := dqpn - BaseTunnelSQPN
	h.tunnelMultiplex(qp.wq.qpn, int(off/8), uint8(off%2+1), d)
}

// sendMLX executes an MLX QP's WQE: the packet's UD header is the start of
// its gather list (build_sriov_qp0_header's, for a VF's proxy QP0 that
// owns its SMI), the payload the rest but the last inline segment's 4
// bytes, the ICRC's place (set_mlx_icrc_seg). With the force-loopback bit it
// arrives at the tunnel QP its BTH names (the header's Q_Key is the
// DETH's); a VF's MLX packet for the wire is dropped: the model gives VFs
// no raw QP0 beyond the tunnel.
func (h *HCA) sendMLX(qp *qpObj, total uint64) bool {
	w := qp.wq
	if w.ethOn {
		return h.sendEth(qp, total) // eth.go
	}
	d := &h.dp.send
	t := &h.tun
	if d.Ctrl.Opcode != mlx4.OPCODE_SEND || total > uint64(len(t.mlx)) {
		h.sqError(qp, d.Ctrl.Opcode, mlx4.CQE_SYNDROME_LOCAL_QP_OP_ERR)
		return true
	}
	if !h.gather(t.mlx[:total], total) {
		h.sqError(qp, d.Ctrl.Opcode, mlx4.CQE_SYNDROME_LOCAL_PROT_ERR)
		return true
	}
	uh, n, err := mad.DecodeUDHeader(t.mlx[:total])
	switch {
	case err != nil:
		h.sqError(qp, d.Ctrl.Opcode, mlx4.CQE_SYNDROME_LOCAL_QP_OP_ERR)
		return true
	case total < uint64(n)+mlx4.MLXICRCSize:
		h.sqError(qp, d.Ctrl.Opcode, mlx4.CQE_SYNDROME_LOCAL_LENGTH_ERR)
		return true
	case d.Ctrl.SrcRBFlags&mlx4.MLXWQEForceLoopback != 0 && isTunnelQPN(uh.DestQP):
		// The payload is between the headers and the ICRC's place.
		if h.tunnelQP(qp, uh.DestQP, uh.QKey) {
			if end := total - mlx4.MLXICRCSize; end-uint64(n) != mlx4.TunnelSendPayload {
				t.drop(TunDropLength)
			} else {
				h.tunnelArrive(qp, uh.DestQP, t.mlx[n:end])
			}
		}
	default:
		h.fw.vfs[w.vf].eng.UDDropped.Add(1)
	}
	h.sqDone(qp, uint32(total))
	return true
}

// gather copies the WQE's gather list (total bytes, already checked
// against the keys) into b.
func (h *HCA) gather(b []byte, total uint64) bool {
	var off uint64
	for i := range h.dp.send.NSGE {
		s := &h.dp.src[i]
		switch s.kind {
		case segInline:
			copy(b[off:off+s.n], s.inl)
		case segSkip:
		default:
			if !s.m.read(b[off:off+s.n], s.addr) {
				return false
			}
		}
		off += s.n
	}
	return off == total
}

// tunnelMultiplex is mlx4_ib_multiplex_mad for the datagram d (a tunnel
// header and a MAD) that src sent to slave's tunnel QP on port.
func (h *HCA) tunnelMultiplex(src uint32, slave int, port uint8, d []byte) {
	t := &h.tun
	if src < BaseProxySQPN || src >= BaseProxySQPN+8*mlx4.MLX4_MFUNC_MAX || src&1 != uint32(port-1) || src&4 != 0 ||
		int((src&^7-BaseProxySQPN)/8) != slave {
		t.drop(TunDropSrcQP)
		return
	}
	vf := slave - 1
	hdr, _ := mlx4.DecodeTunnelHeader(d)
	o := &t.out
	*o = WireMAD{}
	copy(o.MAD[:], d[mlx4.TunHdrSize:])
	m := &o.MAD
	if r, ok := h.multiplexClass(vf, slave, m); !ok {
		t.drop(r)
		return
	}
	if h.PhysPort(vf, hdr.AV.PortPD>>24&0xff) == 0 { // mlx4_slave_convert_port
		t.drop(TunDropPort)
		return
	}
	qp0 := src-(BaseProxySQPN+8*uint32(slave)) <= 1 // is_proxy_qp0
	pm := h.Funcs[vf].PKeyMap[int(port)]
	idx := int(hdr.PKeyIndex)
	if qp0 {
		idx = 0
	}
	if idx >= len(pm) {
		t.drop(TunDropPKey)
		return
	}
	o.PKeyIndex, o.DLID, o.DQPN, o.QKey = uint16(pm[idx]), hdr.AV.DLID, hdr.RemoteQPN&mlx4.QPNMask, hdr.QKey
	if o.QKey&qkeyUseQP != 0 {
		// ib_mad sends with IB_QP_SET_QKEY (the high bit: "the QP's"),
		// which mlx4_ib_send_to_wire hands to the PF's QP1: its Q_Key.
		o.QKey = mad.QP1QKey
	}
	o.SL, o.SLIDBits = uint8(hdr.AV.SLTClassFlowLabel>>mlx4.AVSLShift), hdr.AV.GSLID&^mlx4.AVGRH
	o.SQP = 1
	if qp0 {
		o.SQP = 0
	}
	if hdr.AV.GSLID&mlx4.AVGRH != 0 {
		o.HasGRH = true
		h.avGRH(&o.GRH, &hdr.AV, vf, int(port), mad.Size) // fill_in_real_sgid_index: the VF's own GID
	}
	h.fw.vfs[vf].eng.TunnelOut.Add(1)
	t.stats.Out.Add(1)
	if m.MgmtClass() == mad.ClassSubnAdm && h.mcgMultiplex(vf, port, o) {
		return // a join or leave the PF answers (mcg.go)
	}
	if t.wire != nil && t.wire.SendMAD(port, o) {
		return
	}
	h.localWire(port, o)
}

// multiplexClass is mlx4_ib_multiplex_mad's TID mapping and class rules
// for a MAD of slave (VF vf).
func (h *HCA) multiplexClass(vf, slave int, m *mad.MAD) (TunnelDrop, bool) {
	switch m.Method() {
	case mad.MethodSet, mad.MethodGet, mad.MethodReport, mad.MethodSAGetTable, mad.MethodSADelete,
		mad.MethodSAGetMulti, mad.MethodSAGetTraceTbl:
		if m[mlx4.MADTIDSlaveByte] != 0 {
			return TunDropTID, false
		}
		m[mlx4.MADTIDSlaveByte] = byte(slave)
	}
	switch m.MgmtClass() {
	case mad.ClassSubnLID, mad.ClassSubnDirected:
		if !h.Funcs[vf].SMI {
			return TunDropSMI, false
		}
	case mad.ClassSubnAdm:
	case mad.ClassDevMgt:
		if m.Method() != mad.MethodGet && m.Method() != mad.MethodSet {
			return TunDropClass, false
		}
	case mad.ClassCM:
		if !h.cmMultiplex(vf, m) {
			return TunDropCM, false
		}
	default:
		if !h.tunnelExtra(vf, m.MgmtClass()) {
			return TunDropClass, false
		}
	}
	return 0, true
}

// tunnelExtra reports whether VF vf's configuration passes class beyond
// Linux's PF's classes (config.VF.TunnelClasses): PerfMgt, BM.
func (h *HCA) tunnelExtra(vf int, class uint8) bool {
	fn := &h.Funcs[vf]
	return class == mad.ClassPerfMgt && fn.TunnelPerfMgt || class == mad.ClassBM && fn.TunnelBM
}

// localWire is the wire without a fabric: the MAD reaches the agents of
// the HCA's port its DLID names (a directed-route SMP: the sending port's
// own), and a reply comes back to the sender.
func (h *HCA) localWire(port uint8, o *WireMAD) {
	t := &h.tun
	if h.mad == nil || o.DQPN > 1 {
		t.drop(TunDropUnrouted)
		return
	}
	src := h.portView(int(port))
	arrive, bits := int(port), uint8(0)
	mw := pktSize{pkts: 1, words: mad.MADWords, mad: true}
	if o.HasGRH {
		mw.words += mad.GRHSize / 4
	}
	if o.MAD.MgmtClass() != mad.ClassSubnDirected || o.DLID != permissiveLID {
		var rr routeRes
		if arrive, bits, rr = h.routePort(int(port), o.DLID, mw); rr != routeOK {
			t.drop(TunDropUnrouted)
			return
		}
	}
	wc := mad.WC{SLID: src.lid | uint16(o.SLIDBits)&(1<<src.lmc-1), SrcQP: o.SQP, SL: o.SL, PKeyIndex: o.PKeyIndex,
		DLIDPathBits: bits, GRHPresent: o.HasGRH, QPN: o.DQPN, QKey: o.QKey, QKeyValid: o.DQPN == 1}
	var g *mad.GRH
	if o.HasGRH {
		g = &o.GRH
	}
	out, res := h.mad.ProcessMAD(0, uint8(arrive), &wc, g, &o.MAD)
	if res == mad.Success && o.DQPN == 1 && o.MAD.MgmtClass() == mad.ClassCM {
		// No agent of the port's takes it: the arrival port's QP1
		// receives it for the PF, which demultiplexes it to a VF
		// (cm.go), as it would a CM MAD from the fabric.
		h.queueMAD(uint8(arrive), &wc, g, &o.MAD)
		return
	}
	if res&mad.Reply == 0 {
		if res&mad.Consumed == 0 && !o.MAD.IsResponse() && o.MAD.Method() != mad.MethodTrapRepress {
			t.drop(TunDropUnrouted) // no agent here (the SA without an SM)
		}
		return
	}
	dst := h.portView(arrive)
	back := mad.WC{SLID: dst.lid | uint16(bits), SrcQP: o.DQPN, SL: o.SL, PKeyIndex: o.PKeyIndex, QPN: o.SQP}
	var bg *mad.GRH
	if g != nil { // the agent answers a request with a GRH with one
		r := g.Reply()
		bg, back.GRHPresent = &r, true
	}
	h.countBack(arrive, int(port), mw)
	h.queueMAD(port, &back, bg, &out)
}

// ReceiveMAD queues a MAD that reached port's QP wc.QPN (0 or 1) for the
// PF, with its work completion and GRH (nil: none), for the poller to
// demultiplex to a VF. Any goroutine may call it; it reports false when
// the queue is full (the MAD is dropped and counted).
func (h *HCA) ReceiveMAD(port uint8, wc *mad.WC, grh *mad.GRH, m *mad.MAD) bool {
	if !h.queueMAD(port, wc, grh, m) {
		return false
	}
	if h.tun.wake != nil {
		h.tun.wake()
	}
	return true
}

// queueMAD is ReceiveMAD without the wake: the poller's own answers
// (localWire, mcg.go) are drained by its next scan.
func (h *HCA) queueMAD(port uint8, wc *mad.WC, grh *mad.GRH, m *mad.MAD) bool {
	t := &h.tun
	t.mu.Lock()
	if t.n == tunQueueLen {
		t.mu.Unlock()
		t.drop(TunDropQueue)
		return false
	}
	it := &t.q[(t.head+t.n)%tunQueueLen]
	it.port, it.wc, it.hasGRH, it.m = port, *wc, grh != nil, *m
	if grh != nil {
		it.grh = *grh
	}
	t.n++
	t.work.Add(1)
	t.mu.Unlock()
	return true
}

// tunnelPending reports whether MADs wait in the ingress queue or a
// registration waits for its answer (aliasguid.go): one load.
func (h *HCA) tunnelPending() bool { return h.tun.work.Load() != 0 }

// ServiceTunnel is the poller's tunnel step, once per scan beside
// ServiceQueues: the MADs queued for the VFs delivered, the PF's own SA
// requests that are due sent again. It returns how many (non-zero is a busy
// scan); idle, it is one load inlined into the scan.
func (h *HCA) ServiceTunnel() int {
	if !h.tunnelPending() {
		return 0
	}
	return h.tunnelWork()
}

// tunnelWork delivers the queued MADs and sends the registrations that are
// due; it reports how many of either.
func (h *HCA) tunnelWork() int {
	n := h.tunnelDrain()
	if h.tun.aliasArmed {
		n += h.aliasRetries()
	}
	return n
}

// tunnelDrain delivers what the ingress queue holds and reports how many.
func (h *HCA) tunnelDrain() int {
	t := &h.tun
	done := 0
	for {
		t.mu.Lock()
		if t.n == 0 {
			t.mu.Unlock()
			return done
		}
		t.cur = t.q[t.head]
		t.head = (t.head + 1) % tunQueueLen
		t.n--
		t.work.Add(-1)
		t.mu.Unlock()
		h.tunnelDemux(&t.cur)
		done++
	}
}

// tunnelDemux is mlx4_ib_demux_mad for an incoming MAD.
func (h *HCA) tunnelDemux(it *tunItem) {
	t := &h.tun
	m := &it.m
	slave := 0 // the PF's own
	if m.IsResponse() {
		slave = int(m[mlx4.MADTIDSlaveByte])
		if slave != 255 {
			m[mlx4.MADTIDSlaveByte] = 0
		}
	}
	if it.wc.GRHPresent && it.hasGRH {
		slave = h.slaveOfGUID(it.port, binary.BigEndian.Uint64(it.grh.DGID[8:]))
	}
	if slave == mlx4.MADTIDDom0 {
		h.pfMAD(m) // the PF's own request's answer (aliasguid.go)
		return
	}
	switch m.MgmtClass() {
	case mad.ClassSubnLID, mad.ClassSubnDirected:
		if slave >= 1 && slave <= h.NumVFs && (!h.Funcs[slave-1].SMI || !m.IsResponse()) {
			t.drop(TunDropSMI)
			return
		}
	case mad.ClassSubnAdm:
	case mad.ClassCM:
		vf := h.cmDemux(it.port, m)
		if vf < 0 {
			t.drop(TunDropCM)
			return
		}
		slave = vf + 1
	case mad.ClassDevMgt:
		if m.Method() != mad.MethodGetResp {
			t.drop(TunDropClass)
			return
		}
	default:
		// A class a VF's configuration adds: the responses to its own
		// requests, nothing unsolicited (the port's agents are the PF's).
		if !m.IsResponse() || slave < 1 || slave > h.NumVFs || !h.tunnelExtra(slave-1, m.MgmtClass()) {
			t.drop(TunDropClass)
			return
		}
	}
	if slave < 1 || slave > h.NumVFs {
		t.drop(TunDropSlave) // the PF's own MADs, or no such VF
		return
	}
	h.sendToSlave(slave-1, it)
}

// slaveOfGUID is mlx4_ib_find_real_gid: the GUID index on port whose GUID
// is guid (the slave), or -1.
func (h *HCA) slaveOfGUID(port uint8, guid uint64) int {
	if h.mad == nil {
		return -1
	}
	for i := 0; i <= h.NumVFs; i++ {
		if g, ok := h.mad.GUID(port, i); ok && g == guid {
			return i
		}
	}
	return -1
}

// sendToSlave is mlx4_ib_send_to_slave: the MAD into VF vf's proxy QP of
// the QP it arrived on, with the receive tunnel header.
func (h *HCA) sendToSlave(vf int, it *tunItem) {
	t := &h.tun
	slave, port, qpt := uint32(vf+1), int(it.port), it.wc.QPN&1
	pm := h.Funcs[vf].PKeyMap[port]
	// The VF's index of the packet's P_Key (find_slave_port_pkey_ix); a
	// QP0 MAD gets the physical index of the VF's entry 0, as mlx4 does.
	vidx := -1
	if qpt == 0 {
		if len(pm) > 0 {
			vidx = pm[0]
		}
	} else {
		want := h.pkey(port, uint8(it.wc.PKeyIndex))
		for i, p := range pm {
			if h.pkey(port, uint8(p)) == want && want != 0 {
				vidx = i
				break
			}
		}
	}
	if vidx < 0 {
		t.drop(TunDropPKey)
		return
	}
	dqpn := BaseProxySQPN + 8*slave + 2*qpt + uint32(port) - 1
	dq := h.routeQP(port, dqpn)
	// A proxy QP is UD, or MLX for the QP0 of a VF that owns its SMI
	// (PROXY_SMI_OWNER).
	if dq == nil || dq.wq.st != mlx4.QP_ST_UD && (qpt != 0 || dq.wq.st != mlx4.QP_ST_MLX) || dq.wq.vf != vf ||
		dq.wq.qkey != mlx4.RESERVED_QKEY_BASE+dqpn-BaseProxySQPN {
		t.drop(TunDropProxy)
		return
	}
	b := t.rcv[:]
	clear(b)
	r := mlx4.RcvTunnelHeader{SrcQP: it.wc.SrcQP, GRH: it.hasGRH && it.wc.GRHPresent, PKeyIndex: uint16(vidx),
		SL: it.wc.SL, SLID: it.wc.SLID}
	_ = r.Encode(b)
	if r.GRH {
		_ = it.grh.Encode(b[mlx4.RcvTunHdrSize:])
	}
	copy(b[mlx4.RcvTunHdrSize+mad.GRHSize:], it.m[:])
	tqpn := BaseTunnelSQPN + 8*slave + 2*qpt + uint32(port) - 1
	if h.tunnelReceive(dq, tqpn, port) {
		h.fw.vfs[vf].eng.TunnelIn.Add(1)
		t.stats.In.Add(1)
	}
}

// tunnelReceive is the UD receive at proxy QP dq of t.rcv from tunnel QP
// tqpn on port (no GRH: the area is skipped), in a data-path step of its
// own.
func (h *HCA) tunnelReceive(dq *qpObj, tqpn uint32, port int) bool {
	h.scratch()
	h.dp.send = mlx4.SendWQE{} // recvCQE reads the sender's solicited bit
	h.dpWQE()
	defer h.dpStep()
	var s recvSlot
	ok, bad := h.recvPeek(dq, &s)
	if !ok {
		h.tun.drop(TunDropProxy)
		return false
	}
	if bad {
		h.recvError(dq, &s, mlx4.CQE_SYNDROME_LOCAL_QP_OP_ERR)
		return false
	}
	total := uint64(mad.GRHSize + mlx4.RcvTunnelMADSize)
	k, syn := h.scatterList(dq, total)
	if syn != 0 {
		h.recvError(dq, &s, syn)
		return false
	}
	src := h.dp.src[:2]
	src[0] = seg{kind: segSkip, n: mad.GRHSize}
	src[1] = seg{kind: segInline, n: mlx4.RcvTunnelMADSize, inl: h.tun.rcv[:]}
	if !h.stream(h.dp.dst[:k], src) {
		h.recvError(dq, &s, mlx4.CQE_SYNDROME_LOCAL_PROT_ERR)
		return false
	}
	h.recvConsume(dq, &s)
	e := &h.dp.cqe
	*e = mlx4.CQE{ByteCnt: uint32(total), Opcode: mlx4.RECV_OPCODE_SEND, GMLPathRQPN: tqpn & mlx4.CQE_QPN_MASK,
		RLID: h.portView(port).lid}
	h.recvCQE(dq, &s, e)
	return true
}
