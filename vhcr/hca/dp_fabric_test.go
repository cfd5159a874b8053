package hca

import (
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/madtest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// The data path through the switch: the HCA's port 1 (LID 5) and port 2
// (LID 6) cabled to switch ports 1 and 2 of an 8-port mad.Switch, swept as
// an SM leaves it (routes 5→1, 6→2, ports 1..3 Active; port 3 faces
// nothing of this HCA), the LFT reprogrammed by SubnSet(LinearForwardingTable)
// as OpenSM sends it.

type fabricRig struct {
	*dpRig
	sw *mad.Switch
}

func newFabricRig(t *testing.T) *fabricRig {
	t.Helper()
	d := newDPRig(t, 2, nil)
	sw, err := mad.NewSwitch(mad.SwitchConfig{NodeGUID: 0x5000, Description: "sw", NumPorts: 8})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []int{1, 2, 3} {
		if err := sw.SetLink(p, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := sw.Configure(mad.Swept{LID: 1, Routes: map[uint16]uint8{1: 0, 5: 1, 6: 2}, Active: []int{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	if err := d.h.SetFabric(sw, map[uint8]uint8{1: 1, 2: 2}); err != nil {
		t.Fatal(err)
	}
	return &fabricRig{dpRig: d, sw: sw}
}

// route sets LID lid's LFT entry to port, the rest of its block as swept.
func (f *fabricRig) route(lid uint16, port uint8) {
	f.t.Helper()
	b := make([]byte, 64)
	base := lid &^ 63
	for i := range b {
		b[i] = f.sw.Forward(base + uint16(i))
	}
	b[lid-base] = port
	out, res := f.sw.ProcessSMP(1, madtest.SMP(mad.MethodSet, mad.AttrLinearFwdTable, uint32(lid/64), 0, b))
	if res&mad.Reply == 0 || out.Status() != 0 {
		f.t.Fatalf("LFT Set: result %d status %#x", res, out.Status())
	}
}

// rcAcross is an RC pair, A on port 1 (VF 0), B on port 2 (VF 1).
func (f *fabricRig) rcAcross() (qa, qb *tqp, try func() []gotCQE) {
	a, b := f.setup(0), f.setup(1)
	ka, ma := a.mr(vaA, 1, permAll, a.pd)
	kb, mb := b.mr(vaB, 1, permAll, b.pd)
	qa = a.qp(qpOpts{st: mlx4.QP_ST_RC, access: remoteAll, retry: 7})
	qb = b.qp(qpOpts{st: mlx4.QP_ST_RC, access: remoteAll, retry: 7})
	qb.ctx.Pri.Port = 2
	qa.connect(qb.qpn, 6)
	qb.connect(qa.qpn, 5)
	a.fill(ma, []byte("across the switch"))
	try = func() []gotCQE {
		f.t.Helper()
		b.fill(mb, make([]byte, 17))
		qb.recv(sge(kb, vaB, 64))
		qa.post(send(mlx4.OPCODE_SEND, sge(ka, vaA, 17)), nil)
		qa.settle(4)
		c := f.take()
		if len(c) > 0 && c[0].e.Syndrome() == 0 && string(b.read(mb, 17)) != "across the switch" {
			f.t.Fatalf("delivered %q", b.read(mb, 17))
		}
		return c
	}
	return qa, qb, try
}

func retryExceeded(c []gotCQE) bool {
	return len(c) == 1 && c[0].e.Syndrome() == mlx4.CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR
}

// TestDataRoutesThroughLFT: an RC SEND from port 1 to LID 6 crosses the
// switch by its LFT: delivered while the LFT sends LID 6 out of switch
// port 2 (cabled to port 2); reprogrammed to port 3 (Active, facing
// nothing of this HCA) the packet is lost and the requester gets
// transport retry exceeded.
func TestDataRoutesThroughLFT(t *testing.T) {
	f := newFabricRig(t)
	qa, _, send := f.rcAcross()
	if c := send(); len(c) != 2 || c[0].e.Syndrome() != 0 || c[1].e.Syndrome() != 0 {
		t.Fatalf("through the LFT: CQEs %+v", c)
	}
	f.route(6, 3)
	if c := send(); !retryExceeded(c) {
		t.Fatalf("LFT[6] = 3: CQEs %+v", c)
	}
	if qa.obj().State != mlx4.QP_STATE_ERR {
		t.Fatalf("QP A in state %d after retry exceeded", qa.obj().State)
	}
}

// TestDataLFTLost: each way the switch loses a packet gets the requester
// transport retry exceeded: LID 6 unprogrammed (255), routed back out of
// the sender's own switch port (whose HCA port is not LID 6), routed to
// the switch's port 0, above LinearFDBTop; the egress switch port not
// Active; the ingress one not Active; the receiving HCA port not Active.
func TestDataLFTLost(t *testing.T) {
	for name, lose := range map[string]func(f *fabricRig){
		"LFT 255":            func(f *fabricRig) { f.route(6, 0xFF) },
		"LFT sender's port":  func(f *fabricRig) { f.route(6, 1) },
		"LFT port 0":         func(f *fabricRig) { f.route(6, 0) },
		"egress link down":   func(f *fabricRig) { _ = f.sw.SetLink(2, false) },
		"ingress link down":  func(f *fabricRig) { _ = f.sw.SetLink(1, false) },
		"HCA port 2 down":    func(f *fabricRig) { f.h.Cfg.Ports[1].State = "down" },
		"above LinearFDBTop": func(f *fabricRig) { f.setTop(5) },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFabricRig(t)
			_, _, send := f.rcAcross()
			lose(f)
			if c := send(); !retryExceeded(c) {
				t.Fatalf("CQEs %+v", c)
			}
		})
	}
}

// setTop sets SwitchInfo.LinearFDBTop as the SM does.
func (f *fabricRig) setTop(top uint16) {
	f.t.Helper()
	si := mad.SwitchInfo{LinearFDBTop: top, LifeTimeValue: 18}
	b := make([]byte, 64)
	_ = si.Encode(b)
	if out, res := f.sw.ProcessSMP(1, madtest.SMP(mad.MethodSet, mad.AttrSwitchInfo, 0, 0, b)); res&mad.Reply == 0 || out.Status() != 0 {
		f.t.Fatalf("SwitchInfo Set: %d %#x", res, out.Status())
	}
}

// TestDataUDThroughLFT: a UD datagram from port 1 to port 2's LID is
// delivered through the LFT; with the entry unprogrammed (255), or pointing
// at another port, it is dropped and counted (EngineStats.UDDropped), its
// send WQE completing as hardware's does; reprogramming the entry back
// reroutes the next datagram to port 2.
func TestDataUDThroughLFT(t *testing.T) {
	f := newFabricRig(t)
	a, b := f.setup(0), f.setup(1)
	ka, ma := a.mr(vaA, 1, permAll, a.pd)
	kb, _ := b.mr(vaB, 1, permAll, b.pd)
	qa, qb := a.udQP(0x1111, 1), b.udQP(0x2222, 2)
	if qb.obj().Port != 2 {
		t.Fatalf("B on port %d", qb.obj().Port)
	}
	a.fill(ma, []byte("datagram"))
	qb.recv(sge(kb, vaB, 100))
	dropped := &f.h.EngineStats(0).UDDropped
	send := func() {
		t.Helper()
		w := udSend(qb.qpn, 0x2222, false, sge(ka, vaA, 8))
		w.Datagram.AV.DLID = 6
		qa.post(w, nil)
		if n := qa.run(4); n != 1 {
			t.Fatalf("consumed %d", n)
		}
	}
	send()
	if qb.obj().RQHead != 1 || dropped.Load() != 0 {
		t.Fatalf("through the LFT: receive WQEs taken %d, dropped %d", qb.obj().RQHead, dropped.Load())
	}
	qb.recv(sge(kb, vaB, 100))
	for i, out := range []uint8{0xFF, 3} {
		f.route(6, out)
		send()
		if qb.obj().RQHead != 1 || dropped.Load() != uint64(i+1) {
			t.Fatalf("LFT[6] = %d: receive WQEs taken %d, dropped %d", out, qb.obj().RQHead, dropped.Load())
		}
	}
	f.route(6, 2)
	send()
	if qb.obj().RQHead != 2 || dropped.Load() != 2 {
		t.Fatalf("rerouted: receive WQEs taken %d, dropped %d", qb.obj().RQHead, dropped.Load())
	}
	for _, c := range f.take() {
		if c.e.Syndrome() != 0 {
			t.Fatalf("an error CQE %+v", c)
		}
	}
}

// TestDataLoopbackWithoutSwitch: a packet to the sending port's own LID
// stays in the port: two VFs' QPs on port 1 talk with the switch's port
// down and its LFT empty.
func TestDataLoopbackWithoutSwitch(t *testing.T) {
	f := newFabricRig(t)
	f.route(5, 0xFF)
	if err := f.sw.SetLink(1, false); err != nil {
		t.Fatal(err)
	}
	a, b := f.setup(0), f.setup(1)
	ka, ma := a.mr(vaA, 1, permAll, a.pd)
	kb, mb := b.mr(vaB, 1, permAll, b.pd)
	qa := a.qp(qpOpts{st: mlx4.QP_ST_RC, access: remoteAll})
	qb := b.qp(qpOpts{st: mlx4.QP_ST_RC, access: remoteAll})
	pair(qa, qb)
	a.fill(ma, []byte("in the port"))
	qb.recv(sge(kb, vaB, 64))
	qa.post(send(mlx4.OPCODE_SEND, sge(ka, vaA, 11)), nil)
	qa.run(4)
	if got := b.read(mb, 11); string(got) != "in the port" {
		t.Fatalf("got %q", got)
	}
	if c := f.take(); len(c) != 2 || c[0].e.Syndrome() != 0 || c[1].e.Syndrome() != 0 {
		t.Fatalf("CQEs %+v", c)
	}
}

// TestSetFabricRefuses: a port the HCA lacks, an Ethernet port, a switch
// port cabled twice or none, no switch.
func TestSetFabricRefuses(t *testing.T) {
	f := newFabricRig(t)
	for name, c := range map[string]map[uint8]uint8{
		"port 3":          {3: 1},
		"port 0":          {0: 1},
		"switch port 0":   {1: 0},
		"twice":           {1: 4, 2: 4},
		"switch port 255": {1: 0xFF},
	} {
		if err := f.h.SetFabric(f.sw, c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := f.h.SetFabric(nil, nil); err == nil {
		t.Error("no switch: accepted")
	}
	f.h.Cfg.Ports[1].LinkLayer = "eth"
	if err := f.h.SetFabric(f.sw, map[uint8]uint8{2: 2}); err == nil {
		t.Error("an Ethernet port cabled: accepted")
	}
}

// TestDataPathAllocsThroughSwitch: a SEND from port 1 to port 2 through
// the switch's LFT (its receive side and CQEs included) allocates nothing
// once warm, while the SM rewrites the LFT block on another goroutine
// (go test -race: the lookups are the switch's atomics).
func TestDataPathAllocsThroughSwitch(t *testing.T) {
	f := newFabricRig(t)
	p := &rcPair{d: f.dpRig, a: f.setup(0), b: f.setup(1)}
	p.ka, p.ma = p.a.mr(vaA, 2, permAll, p.a.pd)
	p.kb, p.mb = p.b.mr(vaB, 2, permAll, p.b.pd)
	p.qa = p.a.qp(qpOpts{st: mlx4.QP_ST_RC, access: remoteAll, rnrRetry: 7})
	p.qb = p.b.qp(qpOpts{st: mlx4.QP_ST_RC, access: remoteAll, rnrRetry: 7})
	p.qb.ctx.Pri.Port = 2
	p.qa.connect(p.qb.qpn, 6)
	p.qb.connect(p.qa.qpn, 5)
	l := &dpLoop{p: p, recv: true, aQP: p.qa.obj(), budget: 16}
	var r mlx4.RecvWQE
	r.NSGE = 1
	r.SGE[0] = sge(p.kb, vaB, 64)
	l.rq = make([]byte, 1<<p.qb.rqShift)
	if _, err := mlx4.EncodeRecvWQE(l.rq, &r, false); err != nil {
		t.Fatal(err)
	}
	l.reencode(t, send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 64)))
	// The SM's Sets of the block holding LID 6, as OpenSM's sweeps send
	// them, racing the data path: the route stays 6→2.
	b := make([]byte, 64)
	for i := range b {
		b[i] = f.sw.Forward(uint16(i))
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				f.sw.ProcessSMP(1, madtest.SMP(mad.MethodSet, mad.AttrLinearFwdTable, 0, 0, b))
			}
		}
	}()
	l.step(t)
	n := testing.AllocsPerRun(200, func() { l.step(t) })
	close(stop)
	<-done
	if n != 0 {
		t.Fatalf("%v allocations per WQE through the switch", n)
	}
	if got := uint32(p.qb.obj().RQHead); got != l.n&0xffff || p.qa.obj().State != mlx4.QP_STATE_RTS {
		t.Fatalf("%d SENDs, %d received, A in state %d", l.n, got, p.qa.obj().State)
	}
}

// mft sets MLID mlid's multicast forwarding entry to mask (ports 0..15),
// as OpenSM's MulticastForwardingTable Set writes a block of 32.
func (f *fabricRig) mft(mlid uint16, mask uint16) {
	f.t.Helper()
	b := make([]byte, 64)
	block := uint32(mlid-0xc000) / 32
	for i := range 32 {
		binary.BigEndian.PutUint16(b[2*i:], uint16(f.sw.MulticastPorts(0xc000+uint16(block*32)+uint16(i))))
	}
	binary.BigEndian.PutUint16(b[2*int((mlid-0xc000)%32):], mask)
	out, res := f.sw.ProcessSMP(1, madtest.SMP(mad.MethodSet, mad.AttrMulticastFwdTable, block, 0, b))
	if res&mad.Reply == 0 || out.Status() != 0 {
		f.t.Fatalf("MFT Set: result %d status %#x", res, out.Status())
	}
}

// TestDataUDMulticastThroughMFT: a multicast datagram from port 1 reaches a
// QP attached on port 2 only when the switch's MFT entry for the MLID names
// the switch port cabled to port 2; a QP attached on the sending port gets
// it inside the HCA whatever the MFT says.
func TestDataUDMulticastThroughMFT(t *testing.T) {
	f := newFabricRig(t)
	a, b := f.setup(0), f.setup(1)
	ka, _ := a.mr(vaA, 1, permAll, a.pd)
	kb, _ := b.mr(vaB, 1, permAll, b.pd)
	sender, near, far := a.udQP(0x1111, 1), a.udQP(0x1111, 1), b.udQP(0x1111, 2)
	gid := []byte("multicast group!")
	for _, q := range []*tqp{near, far} {
		q.t.must(q.t.run(q.t.cmd(mlx4.QP_ATTACH, 0, q.qpn, 1, gid, false)), "QP_ATTACH")
	}
	const mlid = 0xc005
	post := func() {
		t.Helper()
		near.recv(sge(ka, vaA+0x800, 100))
		far.recv(sge(kb, vaB+0x800, 100))
		w := udSend(multicastQPN, 0x1111, true, sge(ka, vaA, 16))
		w.Datagram.AV.DLID = mlid
		copy(w.Datagram.AV.DGID[:], gid)
		sender.post(w, nil)
		sender.run(4)
	}
	post() // an MFT nobody programmed
	if near.obj().RQHead != 1 || far.obj().RQHead != 0 {
		t.Fatalf("empty MFT: near %d far %d", near.obj().RQHead, far.obj().RQHead)
	}
	f.mft(mlid, 1<<1|1<<3) // the ingress port and port 3: not port 2's
	post()
	if near.obj().RQHead != 2 || far.obj().RQHead != 0 {
		t.Fatalf("MFT without port 2: near %d far %d", near.obj().RQHead, far.obj().RQHead)
	}
	f.mft(mlid, 1<<1|1<<2)
	post()
	if near.obj().RQHead != 3 || far.obj().RQHead != 1 {
		t.Fatalf("MFT with port 2: near %d far %d", near.obj().RQHead, far.obj().RQHead)
	}
}

// udQP is a UD QP of t with Q_Key qkey on port, in RTS.
func (t *tvf) udQP(qkey uint32, port int) *tqp {
	t.d.t.Helper()
	q := t.qp(qpOpts{st: mlx4.QP_ST_UD, qkey: qkey})
	opt := uint32(0)
	if port != 1 {
		q.ctx.Pri.Port, opt = port, mlx4.QP_OPTPAR_PRIMARY_ADDR_PATH
	}
	t.must(q.modify(mlx4.INIT2RTR_QP, opt), "INIT2RTR")
	t.must(q.modify(mlx4.RTR2RTS_QP, 0), "RTR2RTS")
	return q
}

// swCounters reads switch port p's PortCountersExtended through its PMA,
// as perfquery -x does.
func (f *fabricRig) swCounters(p uint8) mad.PortCountersExtended {
	f.t.Helper()
	out, res := f.sw.ProcessGMP(madtest.Perf(mad.MethodGet, mad.AttrPortCountersExtended, p, 0))
	var x mad.PortCountersExtended
	if res&mad.Reply == 0 || out.Status() != 0 || x.Decode(out.GSData()) != nil {
		f.t.Fatalf("switch PMA: result %d status %#x", res, out.Status())
	}
	return x
}

// clearCounters clears every port's extended counters (PortSelect 0xFF).
func (f *fabricRig) clearCounters() {
	f.t.Helper()
	if _, res := f.sw.ProcessGMP(madtest.Perf(mad.MethodSet, mad.AttrPortCountersExtended, 0xFF, 0xFF)); res&mad.Reply == 0 {
		f.t.Fatal("switch PMA: Set refused")
	}
}

// TestDataSwitchCounters: what the data path sends through the switch is
// in the switch's port counters, packet by packet in the path MTU and
// word by word as IBA 9.3 frames it (LRH, BTH, the operation's headers,
// the padded payload, ICRC): an RC RDMA WRITE and its ACK, an RDMA READ
// request and its response, an atomic and its acknowledgement, a UD
// datagram, one the LFT does not route (a relay error), a multicast one
// out of every Active port of the MFT's but the one it came in by; a
// message within a port never reaches the switch.
func TestDataSwitchCounters(t *testing.T) {
	f := newFabricRig(t)
	a, b := f.setup(0), f.setup(1)
	ka, _ := a.mr(vaA, 2, permAll, a.pd)
	kb, _ := b.mr(vaB, 2, permAll, b.pd)
	qa := a.qp(qpOpts{st: mlx4.QP_ST_RC, access: remoteAll, retry: 7})
	qb := b.qp(qpOpts{st: mlx4.QP_ST_RC, access: remoteAll, retry: 7})
	qa.ctx.MTU, qb.ctx.MTU = 3, 3 // 1024
	qb.ctx.Pri.Port = 2
	qa.connect(qb.qpn, 6)
	qb.connect(qa.qpn, 5)
	want := func(p uint8, rcvPkts, rcvWords, xmitPkts, xmitWords uint64) {
		t.Helper()
		x := f.swCounters(p)
		if x.PortRcvPkts != rcvPkts || x.PortRcvData != rcvWords || x.PortXmitPkts != xmitPkts || x.PortXmitData != xmitWords {
			t.Fatalf("switch port %d: received %d packets %d words, sent %d packets %d words; want %d %d, %d %d",
				p, x.PortRcvPkts, x.PortRcvData, x.PortXmitPkts, x.PortXmitData, rcvPkts, rcvWords, xmitPkts, xmitWords)
		}
	}
	op := func(w *mlx4.SendWQE) {
		t.Helper()
		f.clearCounters()
		qa.post(w, nil)
		qa.settle(4)
		if c := f.take(); len(c) != 1 || c[0].e.IsError() {
			t.Fatalf("opcode %#x: CQEs %+v", w.Ctrl.Opcode, c)
		}
	}
	e := withEngine(t, f.h) // the HCA ports' PMA counts the data path too
	w := send(mlx4.OPCODE_RDMA_WRITE, sge(ka, vaA, 4096))
	w.HasRAddr, w.RAddr = true, mlx4.RAddrSeg{RAddr: vaB, RKey: kb}
	op(w)
	want(1, 4, (4*24+16+4096)/4, 1, 7) // 4 packets of 1024, RETH in the first; the ACK back
	want(2, 1, 7, 4, (4*24+16+4096)/4)
	for p, x := range map[uint8][4]uint64{1: {4, 1052, 1, 7}, 2: {1, 7, 4, 1052}} {
		if c, _ := e.PortCounters(p); c.PortXmitPkts != x[0] || c.PortXmitData != x[1] || c.PortRcvPkts != x[2] || c.PortRcvData != x[3] {
			t.Fatalf("HCA port %d's PMA: %+v, want sent %d packets %d words, received %d %d", p, c, x[0], x[1], x[2], x[3])
		}
	}
	w = send(mlx4.OPCODE_RDMA_READ, sge(ka, vaA, 4000))
	w.HasRAddr, w.RAddr = true, mlx4.RAddrSeg{RAddr: vaB, RKey: kb}
	op(w)
	want(1, 1, (24+16)/4, 4, (4*24+8+4000)/4) // the request; the response with AETH first and last
	w = send(mlx4.OPCODE_ATOMIC_FA, sge(ka, vaA, 8))
	w.HasRAddr, w.RAddr, w.HasAtomic, w.Atomic = true, mlx4.RAddrSeg{RAddr: vaB, RKey: kb}, true, mlx4.AtomicSeg{SwapAdd: 1}
	op(w)
	want(2, 1, (24+4+8)/4, 1, (24+28)/4)

	// UD from VF 0's port 1 to VF 1's port 2: one packet with DETH.
	ua, ub := a.udQP(0x1111, 1), b.udQP(0x2222, 2)
	ub.recv(sge(kb, vaB, 100))
	ud := func(dlid uint16) {
		t.Helper()
		w := udSend(ub.qpn, 0x2222, false, sge(ka, vaA, 8))
		w.Datagram.AV.DLID = dlid
		ua.post(w, nil)
		ua.run(4)
		f.take()
	}
	f.clearCounters()
	ud(6)
	want(2, 0, 0, 1, (24+8+8)/4)
	f.clearCounters()
	ud(5) // the sending port's own LID: inside the HCA
	want(1, 0, 0, 0, 0)
	f.route(6, 0xFF)
	if _, res := f.sw.ProcessGMP(madtest.Perf(mad.MethodSet, mad.AttrPortCounters, 1, 0xFFFF)); res&mad.Reply == 0 {
		t.Fatal("PortCounters Set refused")
	}
	ud(6)
	out, _ := f.sw.ProcessGMP(madtest.Perf(mad.MethodGet, mad.AttrPortCounters, 1, 0))
	var pc mad.PortCounters
	if _ = pc.Decode(out.GSData()); pc.PortRcvSwitchRelayErrors != 1 || pc.PortRcvPkts != 1 {
		t.Fatalf("unrouted datagram: %+v", pc)
	}

	// Multicast with a GRH, the MFT naming ports 1 (the ingress), 2 and 3.
	const mlid = 0xc007
	f.mft(mlid, 1<<1|1<<2|1<<3)
	f.clearCounters()
	w = udSend(multicastQPN, 0x1111, true, sge(ka, vaA, 16))
	w.Datagram.AV.DLID = mlid
	ua.post(w, nil)
	ua.run(4)
	f.take()
	words := uint64(24+40+8+16) / 4
	for p, x := range map[uint8][2]uint64{1: {1, 0}, 2: {0, 1}, 3: {0, 1}} {
		c := f.swCounters(p)
		if c.PortMulticastRcvPkts != x[0] || c.PortMulticastXmitPkts != x[1] || c.PortRcvData != x[0]*words || c.PortXmitData != x[1]*words {
			t.Fatalf("multicast, switch port %d: %+v", p, c)
		}
	}
}
