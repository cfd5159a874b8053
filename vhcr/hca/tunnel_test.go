package hca

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/capture"
	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// The MAD tunnel's tests: proxy QPs made as mlx4_ib makes them on a VF
// (QUERY_FUNC_CAP's proxy QPNs, UD, the PF's reserved Q_Key), MADs posted
// as qp.c's set_tunnel_datagram_seg and build_tunnel_header post them
// (the tunnel header inline, the MAD from a registered buffer), receives
// posted with the 56-byte proxy header first as mlx4_ib_post_recv does.

type fakeWire struct{ sent []sentMAD }

type sentMAD struct {
	port uint8
	m    WireMAD
}

func (f *fakeWire) SendMAD(port uint8, m *WireMAD) bool {
	f.sent = append(f.sent, sentMAD{port, *m})
	return true
}

// tunVF is a VF with proxy QP0 and QP1 on port 1 in RTS and a buffer
// region (key k at vaA, IOVA m).
type tunVF struct {
	*tvf
	qp0, qp1 *tqp
	k        uint32
	m        uint64
}

func proxyQPN(vf, qpt, port int) uint32 {
	return BaseProxySQPN + 8*uint32(vf+1) + 2*uint32(qpt) + uint32(port) - 1
}

func tunnelQPN(vf, qpt, port int) uint32 {
	return BaseTunnelSQPN + 8*uint32(vf+1) + 2*uint32(qpt) + uint32(port) - 1
}

func (d *dpRig) tunVF(n int) *tunVF {
	d.t.Helper()
	v := &tunVF{tvf: d.setup(n)}
	v.k, v.m = v.mr(vaA, 2, permAll, v.pd)
	for qpt, q := range []**tqp{&v.qp0, &v.qp1} {
		*q = v.qp(qpOpts{st: mlx4.QP_ST_UD, qpn: proxyQPN(n, qpt, 1), rqLogS: 3, sqStride: 4})
		v.must((*q).modify(mlx4.INIT2RTR_QP, 0), "INIT2RTR")
		v.must((*q).modify(mlx4.RTR2RTS_QP, 0), "RTR2RTS")
	}
	return v
}

// madRig is a data-path rig of nvf VFs (each with SMI if smi) with a MAD
// engine attached.
func madRig(t *testing.T, nvf int, smi bool) (*dpRig, *mad.Engine) {
	d := newDPRig(t, nvf, func(c *config.Config) {
		if smi {
			c.VFs.Default.SMI = &smi
		}
	})
	return d, withEngine(t, d.h)
}

// withEngine attaches a MAD engine of h's configuration (its clock fixed)
// to h.
func withEngine(tb testing.TB, h *HCA) *mad.Engine {
	tb.Helper()
	e, err := mad.New(MADNode(h.Cfg), mad.Options{Now: func() time.Time { return time.Unix(1e9, 0) }})
	if err != nil {
		tb.Fatal(err)
	}
	if err := h.AttachMAD(e); err != nil {
		tb.Fatal(err)
	}
	return e
}

func newTunnelRig(t *testing.T, nvf int, edit func(*config.Config)) (*dpRig, *fakeWire, []*tunVF) {
	d := newDPRig(t, nvf, edit)
	w := &fakeWire{}
	d.h.SetMADWire(w)
	var vs []*tunVF
	for i := range nvf {
		vs = append(vs, d.tunVF(i))
	}
	return d, w, vs
}

// saGet is an SA Get of a PathRecord with TID tid.
func saGet(tid uint64) mad.MAD {
	var m mad.MAD
	m[0], m[1], m[2], m[3] = 1, mad.ClassSubnAdm, 2, mad.MethodGet
	binary.BigEndian.PutUint64(m[8:], tid)
	binary.BigEndian.PutUint16(m[16:], 0x0035)
	return m
}

// post sends m through proxy QP q (qpt 0 or 1) to the tunnel QP dqpn with
// the header h: the datagram segment of set_tunnel_datagram_seg, the
// header inline, the MAD from the VF's buffer.
func (v *tunVF) post(q *tqp, dqpn uint32, h mlx4.TunnelHeader, m mad.MAD) {
	v.d.t.Helper()
	v.fill(v.m, m[:])
	var hb [mlx4.TunHdrSize]byte
	if err := h.Encode(hb[:]); err != nil {
		v.d.t.Fatal(err)
	}
	w := send(mlx4.OPCODE_SEND, mlx4.Gather{Inline: true, ByteCount: mlx4.TunHdrSize}, sge(v.k, vaA, mad.Size))
	w.HasDatagram = true
	w.Datagram = mlx4.DatagramSeg{DQPN: dqpn, QKey: qkeyUseQP,
		AV: mlx4.AV{PortPD: mlx4.AVForceLoopback | 1<<24 | v.pd, SLTClassFlowLabel: h.AV.SLTClassFlowLabel & 0xf0000000}}
	q.post(w, hb[:])
	q.run(4)
}

// hdr is a tunnel header to LID dlid's QP1 with the GSI Q_Key.
func hdr(dlid uint16) mlx4.TunnelHeader {
	return mlx4.TunnelHeader{AV: mlx4.AV{PortPD: 1 << 24, DLID: dlid, SLTClassFlowLabel: 4 << 28}, RemoteQPN: 1, QKey: 0x80010000}
}

// TestTunnelEgress: a proxy QP1's SA request leaves through the wire from
// the port's QP1 as mlx4_ib_multiplex_mad and mlx4_ib_send_to_wire send it:
// the header's destination, Q_Key and SL, the physical P_Key index, the
// slave in the TID's most significant byte; the VF's send completes.
func TestTunnelEgress(t *testing.T) {
	d, w, vs := newTunnelRig(t, 2, nil)
	a := vs[1]
	h := hdr(1)
	h.AV.GSLID = 0x80 | 0x1 // a GRH: the SGID becomes the VF's
	copy(h.AV.DGID[:], bytes.Repeat([]byte{0xfe}, 16))
	a.post(a.qp1, tunnelQPN(1, 1, 1), h, saGet(0x0000_1234_0000_0042))
	if len(w.sent) != 1 {
		t.Fatalf("wire got %d MADs", len(w.sent))
	}
	s := w.sent[0]
	if s.port != 1 || s.m.SQP != 1 || s.m.DLID != 1 || s.m.DQPN != 1 || s.m.QKey != 0x80010000 || s.m.SL != 4 ||
		s.m.SLIDBits != 1 || s.m.PKeyIndex != uint16(d.h.Funcs[1].PKeyMap[1][0]) {
		t.Fatalf("wire MAD %+v", s)
	}
	if got := s.m.MAD.TID(); got != 0x0200_1234_0000_0042 {
		t.Fatalf("TID %#x, want the slave (2) in its top byte", got)
	}
	prefix, guid := binary.BigEndian.Uint64(s.m.GRH.SGID[:8]), binary.BigEndian.Uint64(s.m.GRH.SGID[8:])
	if !s.m.HasGRH || s.m.GRH.DGID != h.AV.DGID || prefix != d.h.portView(1).prefix || guid == 0 {
		t.Fatalf("GRH %+v", s.m.GRH)
	}
	c := d.take()
	if len(c) != 1 || c[0].e.IsError() || c[0].e.VlanMyQPN&mlx4.CQE_QPN_MASK != a.qp1.qpn {
		t.Fatalf("send CQEs %+v", c)
	}
	if n := d.h.TunnelStats().Out.Load(); n != 1 || d.h.EngineStats(1).TunnelOut.Load() != 1 {
		t.Fatalf("out %d", n)
	}
	// ib_mad's sends name IB_QP_SET_QKEY (0x80000000: "the QP's"): the
	// PF's QP1 sends them with its Q_Key.
	h.QKey = 0x80000000
	a.post(a.qp1, tunnelQPN(1, 1, 1), h, saGet(0x43))
	if len(w.sent) != 2 || w.sent[1].m.QKey != mad.QP1QKey {
		t.Fatalf("IB_QP_SET_QKEY: wire %+v", w.sent)
	}
}

// TestTunnelEgressRefused: what mlx4_ib_multiplex_mad and the tunnel QP
// refuse, each counted under its reason, nothing on the wire, the VF's
// send still completing (UD), and the other VF's MAD passing after them.
func TestTunnelEgressRefused(t *testing.T) {
	d, w, vs := newTunnelRig(t, 2, nil)
	a, b := vs[0], vs[1]
	perf := saGet(0)
	perf[1] = mad.ClassPerfMgt
	smp := saGet(0)
	smp[1] = mad.ClassSubnLID
	farPort := hdr(1)
	farPort.AV.PortPD = 3 << 24
	badPKey := hdr(1)
	badPKey.PKeyIndex = 100
	plain := a.qp(qpOpts{st: mlx4.QP_ST_UD, sqStride: 4, qkey: mlx4.RESERVED_QKEY_BASE + tunnelQPN(0, 1, 1) - BaseTunnelSQPN})
	a.must(plain.modify(mlx4.INIT2RTR_QP, 0), "INIT2RTR")
	a.must(plain.modify(mlx4.RTR2RTS_QP, 0), "RTR2RTS")
	cases := []struct {
		name   string
		q      *tqp
		dqpn   uint32
		h      mlx4.TunnelHeader
		m      mad.MAD
		reason TunnelDrop
	}{
		{"TID's top byte set", a.qp1, tunnelQPN(0, 1, 1), hdr(1), saGet(0x0100_0000_0000_0001), TunDropTID},
		{"PerfMgt", a.qp1, tunnelQPN(0, 1, 1), hdr(1), perf, TunDropClass},
		{"a CM RTU for no connection of the VF's", a.qp1, tunnelQPN(0, 1, 1), hdr(1), cmMAD(mad.AttrCMRTU, 5, 6), TunDropCM},
		{"SMP from a VF without SMI", a.qp0, tunnelQPN(0, 0, 1), hdr(1), smp, TunDropSMI},
		{"a port the VF has not", a.qp1, tunnelQPN(0, 1, 1), farPort, saGet(0), TunDropPort},
		{"P_Key index beyond the VF's table", a.qp1, tunnelQPN(0, 1, 1), badPKey, saGet(0), TunDropPKey},
		{"a QP that is not a proxy", plain, tunnelQPN(0, 1, 1), hdr(1), saGet(0), TunDropSrcQP},
	}
	st := d.h.TunnelStats()
	for _, c := range cases {
		before := st.Drops[c.reason].Load()
		c.q.ctx.QKey = 0
		a.post(c.q, c.dqpn, c.h, c.m)
		if st.Drops[c.reason].Load() != before+1 || len(w.sent) != 0 {
			t.Errorf("%s: %s drops %d→%d, wire %d", c.name, TunnelDropLabels[c.reason], before, st.Drops[c.reason].Load(), len(w.sent))
		}
	}
	// Another VF's tunnel QP, or the QP0 tunnel from QP1's proxy, has
	// another reserved Q_Key than the sender's QP (the PF set it; a WQE
	// cannot name a Q_Key with bit 31 set, which means "the QP's"): the
	// tunnel QP drops the datagram on its Q_Key, as does one whose WQE
	// names some other Q_Key.
	for _, dqpn := range []uint32{tunnelQPN(1, 1, 1), tunnelQPN(0, 0, 1), tunnelQPN(0, 1, 1)} {
		q0 := d.h.EngineStats(0).QKeyViol.Load()
		ws := udSend(dqpn, qkeyUseQP, false, sge(a.k, vaA, mlx4.TunnelSendPayload))
		if dqpn == tunnelQPN(0, 1, 1) {
			ws.Datagram.QKey = 0x1234
		}
		ws.Datagram.AV.PortPD |= mlx4.AVForceLoopback
		a.qp1.post(ws, nil)
		a.qp1.run(4)
		if d.h.EngineStats(0).QKeyViol.Load() != q0+1 || len(w.sent) != 0 {
			t.Errorf("to tunnel QP %#x: not refused on its Q_Key", dqpn)
		}
	}
	for _, c := range d.take() {
		if c.e.IsError() {
			t.Fatalf("a refused MAD failed its send: %+v", c.e)
		}
	}
	b.post(b.qp1, tunnelQPN(1, 1, 1), hdr(1), saGet(7))
	if len(w.sent) != 1 || w.sent[0].m.MAD.TID() != 0x0200_0000_0000_0007 {
		t.Fatalf("the other VF's MAD: %+v", w.sent)
	}
}

// proxyRecv posts a receive on q as mlx4_ib_post_recv does for a proxy QP:
// the proxy header's 56 bytes at IOVA m+off, then the MAD buffer (GRH and
// MAD) after them.
func (v *tunVF) proxyRecv(q *tqp, off uint64) {
	q.recv(sge(v.k, vaA+off, mlx4.ProxySQPHdrSize), sge(v.k, vaA+off+mlx4.ProxySQPHdrSize, mad.GRHSize+mad.Size))
}

// TestTunnelIngress: a response for slave 2 (its TID's top byte) reaches
// VF 1's proxy QP1 as mlx4_ib_send_to_slave sends it — the UD GRH area
// untouched, the receive header with the work completion, the GRH area,
// the MAD with its TID restored — with a receive CQE from the tunnel QP;
// one for no VF is dropped, and so is one for a VF whose proxy QP has no
// receive posted.
func TestTunnelIngress(t *testing.T) {
	d, _, vs := newTunnelRig(t, 2, nil)
	b := vs[1]
	b.fill(b.m+0x800, bytes.Repeat([]byte{0xee}, 40))
	b.proxyRecv(b.qp1, 0x800)
	resp := saGet(0x0200_0000_0000_0099)
	resp[3] = mad.MethodGetResp
	wc := mad.WC{SLID: 9, SrcQP: 1, SL: 3, PKeyIndex: 0, QPN: 1}
	if !d.h.ReceiveMAD(1, &wc, nil, &resp) {
		t.Fatal("queue refused")
	}
	if n := d.h.ServiceTunnel(); n == 0 {
		t.Fatal("the queued MAD was not work")
	}
	got := b.read(b.m+0x800, mlx4.ProxySQPHdrSize+mad.GRHSize+mad.Size)
	if !bytes.Equal(got[:40], bytes.Repeat([]byte{0xee}, 40)) {
		t.Fatalf("the UD GRH area was written: % x", got[:40])
	}
	r, _ := mlx4.DecodeRcvTunnelHeader(got[40:56])
	if r != (mlx4.RcvTunnelHeader{SrcQP: 1, PKeyIndex: 0, SL: 3, SLID: 9}) {
		t.Fatalf("receive header %+v", r)
	}
	var m mad.MAD
	copy(m[:], got[56+40:])
	want := resp
	want[mlx4.MADTIDSlaveByte] = 0
	if m != want {
		t.Fatalf("MAD % x", m[:24])
	}
	c := d.take()
	if len(c) != 1 || c[0].e.IsError() || c[0].e.GMLPathRQPN&mlx4.CQE_QPN_MASK != tunnelQPN(1, 1, 1) ||
		c[0].e.ByteCnt != mad.GRHSize+mlx4.RcvTunnelMADSize || c[0].e.VlanMyQPN&mlx4.CQE_QPN_MASK != b.qp1.qpn {
		t.Fatalf("receive CQEs %+v", c)
	}
	st := d.h.TunnelStats()
	if st.In.Load() != 1 {
		t.Fatalf("in %d", st.In.Load())
	}
	for _, c := range []struct {
		tid    uint64
		reason TunnelDrop
	}{{0, TunDropSlave}, {0x0900_0000_0000_0001, TunDropSlave}, {0x0100_0000_0000_0001, TunDropProxy}} {
		m := saGet(c.tid)
		m[3] = mad.MethodGetResp
		before := st.Drops[c.reason].Load()
		d.h.ReceiveMAD(1, &wc, nil, &m)
		d.h.ServiceTunnel()
		if st.Drops[c.reason].Load() != before+1 {
			t.Errorf("TID %#x: %s not counted", c.tid, TunnelDropLabels[c.reason])
		}
	}
	// A PerfMgt response is a class the PF does not pass to a VF.
	perf := saGet(0x0200_0000_0000_0001)
	perf[1], perf[3] = mad.ClassPerfMgt, mad.MethodGetResp
	before := st.Drops[TunDropClass].Load()
	b.proxyRecv(b.qp1, 0x800)
	d.h.ReceiveMAD(1, &wc, nil, &perf)
	d.h.ServiceTunnel()
	if st.Drops[TunDropClass].Load() != before+1 || b.qp1.obj().RQHead != 1 {
		t.Fatalf("PerfMgt response: class drops %d, RQ head %d", st.Drops[TunDropClass].Load(), b.qp1.obj().RQHead)
	}
}

// TestTunnelExtraClasses: a VF configured with tunnel_classes perf_mgt and
// bm sends its PerfMgt and BM requests to the wire and gets their
// responses; the other VF (Linux's PF's classes only) has both dropped
// either way, and an unsolicited PerfMgt request is no VF's even with the
// opt-in.
func TestTunnelExtraClasses(t *testing.T) {
	d, w, vs := newTunnelRig(t, 2, func(c *config.Config) {
		c.VFs.Overrides["1"] = config.VF{TunnelClasses: []string{"perf_mgt", "bm"}}
	})
	a, b := vs[0], vs[1]
	st := d.h.TunnelStats()
	for _, class := range []uint8{mad.ClassPerfMgt, mad.ClassBM} {
		m := saGet(0x0000_0000_0000_0031)
		m[1] = class
		before := st.Drops[TunDropClass].Load()
		a.post(a.qp1, tunnelQPN(0, 1, 1), hdr(1), m)
		if st.Drops[TunDropClass].Load() != before+1 || len(w.sent) != 0 {
			t.Fatalf("class %#x from VF 0: passed", class)
		}
		b.post(b.qp1, tunnelQPN(1, 1, 1), hdr(7), m)
		if len(w.sent) != 1 || w.sent[0].m.MAD.MgmtClass() != class || w.sent[0].m.MAD.TID() != 0x0200_0000_0000_0031 || w.sent[0].m.DLID != 7 {
			t.Fatalf("class %#x from VF 1: wire %+v", class, w.sent)
		}
		w.sent = w.sent[:0]
		d.take()

		wc := mad.WC{SLID: 7, SrcQP: 1, SL: 4, QPN: 1}
		resp := m
		resp[3] = mad.MethodGetResp
		resp[mlx4.MADTIDSlaveByte] = 2
		b.proxyRecv(b.qp1, 0x800)
		d.h.ReceiveMAD(1, &wc, nil, &resp)
		d.h.ServiceTunnel()
		got := b.read(b.m+0x800+mlx4.ProxySQPHdrSize+mad.GRHSize, mad.Size)
		if c := d.take(); len(c) != 1 || c[0].e.IsError() || got[1] != class || binary.BigEndian.Uint64(got[8:]) != 0x31 {
			t.Fatalf("class %#x response to VF 1: CQEs %+v, MAD % x", class, c, got[:24])
		}
		resp[mlx4.MADTIDSlaveByte] = 1 // to VF 0, which has not opted in
		before = st.Drops[TunDropClass].Load()
		a.proxyRecv(a.qp1, 0x800)
		d.h.ReceiveMAD(1, &wc, nil, &resp)
		d.h.ServiceTunnel()
		if st.Drops[TunDropClass].Load() != before+1 || len(d.take()) != 0 {
			t.Fatalf("class %#x response to VF 0: delivered", class)
		}
	}
	// A request from the fabric (a PMA Get for the port) is the PF's.
	req := saGet(0)
	req[1] = mad.ClassPerfMgt
	before := st.Drops[TunDropClass].Load()
	wc := mad.WC{SLID: 7, SrcQP: 1, QPN: 1, GRHPresent: false}
	d.h.ReceiveMAD(1, &wc, nil, &req)
	d.h.ServiceTunnel()
	if st.Drops[TunDropClass].Load() != before+1 || len(d.take()) != 0 {
		t.Fatal("an unsolicited PerfMgt request reached a VF")
	}
}

// TestTunnelQueueBound: a flood of incoming MADs beyond the queue is
// dropped and counted, and what was queued is delivered.
func TestTunnelQueueBound(t *testing.T) {
	d, _, vs := newTunnelRig(t, 1, nil)
	a := vs[0]
	for i := range 4 {
		a.proxyRecv(a.qp1, uint64(0x400*i))
	}
	wc := mad.WC{SLID: 9, SrcQP: 1, QPN: 1}
	accepted := 0
	for i := range tunQueueLen + 10 {
		m := saGet(0x0100_0000_0000_0000 | uint64(i))
		m[3] = mad.MethodGetResp
		if d.h.ReceiveMAD(1, &wc, nil, &m) {
			accepted++
		}
	}
	st := d.h.TunnelStats()
	if accepted != tunQueueLen || st.Drops[TunDropQueue].Load() != 10 {
		t.Fatalf("accepted %d, queue drops %d", accepted, st.Drops[TunDropQueue].Load())
	}
	d.h.ServiceTunnel()
	if st.In.Load() != 4 || st.Drops[TunDropProxy].Load() != tunQueueLen-4 || d.h.tunnelPending() {
		t.Fatalf("in %d, proxy drops %d", st.In.Load(), st.Drops[TunDropProxy].Load())
	}
}

// TestTunnelLocalSMP: without a wire, an SMI VF's NodeInfo Get through its
// proxy QP0 reaches its own port's SMA and the response comes back into
// its proxy QP0, TID restored, from the port's LID.
func TestTunnelLocalSMP(t *testing.T) {
	d, _ := madRig(t, 1, true)
	a := d.tunVF(0)
	a.proxyRecv(a.qp0, 0x800)
	var m mad.MAD
	m[0], m[1], m[2], m[3] = 1, mad.ClassSubnLID, 1, mad.MethodGet
	binary.BigEndian.PutUint64(m[8:], 0x42)
	binary.BigEndian.PutUint16(m[16:], mad.AttrNodeInfo)
	h := hdr(5)
	h.RemoteQPN, h.QKey = 0, 0
	a.post(a.qp0, tunnelQPN(0, 0, 1), h, m)
	d.h.ServiceTunnel()
	got := a.read(a.m+0x800, mlx4.ProxySQPHdrSize+mad.GRHSize+mad.Size)
	r, _ := mlx4.DecodeRcvTunnelHeader(got[40:56])
	var out mad.MAD
	copy(out[:], got[96:])
	if out.Method() != mad.MethodGetResp || out.TID() != 0x42 || out.AttrID() != mad.AttrNodeInfo || r.SLID != 5 || r.SrcQP != 0 {
		t.Fatalf("response %+v, MAD % x", r, out[:24])
	}
	if d.h.TunnelStats().In.Load() != 1 {
		t.Fatal("not delivered")
	}
}

// FuzzTunnel: a VF's arbitrary tunnel datagrams (header and MAD) through
// the multiplexer and arbitrary incoming MADs through the demultiplexer.
// Invariants: nothing panics; every datagram is passed to the wire or
// counted once under a reason; a request on the wire carries the slave in
// its TID's top byte and a physical P_Key index of the VF's table; every
// incoming MAD is delivered or counted once; the other VF's proxy QP gets
// nothing the demultiplexer did not address to it.
func FuzzTunnel(f *testing.F) {
	h := hdr(1)
	var hb [mlx4.TunHdrSize]byte
	_ = h.Encode(hb[:])
	sa := saGet(0x42)
	f.Add(append(hb[:], sa[:]...), sa[:], uint8(1))
	resp := saGet(0x0100_0000_0000_0042)
	resp[3] = mad.MethodGetResp
	f.Add(append(hb[:], resp[:]...), resp[:], uint8(0))
	f.Add(make([]byte, mlx4.TunnelSendPayload), make([]byte, mad.Size), uint8(2))
	req, rep := cmREQ(0x1111, 0x0002c90300a0b0c2), cmMAD(mad.AttrCMREP, 0x2222, 0x1111)
	f.Add(append(hb[:], req[:]...), rep[:], uint8(1)) // the CM's comm IDs (cm.go)
	bm, bmResp := saGet(0x43), saGet(0x0200_0000_0000_0043)
	bm[1], bmResp[1], bmResp[3] = mad.ClassBM, mad.ClassBM, mad.MethodGetResp
	f.Add(append(hb[:], bm[:]...), bmResp[:], uint8(1)) // a class VF 0 adds; the response is VF 1's, which does not
	f.Fuzz(func(t *testing.T, dg, in []byte, qpt uint8) {
		if len(dg) < mlx4.TunnelSendPayload || len(in) < mad.Size {
			return
		}
		// VF 0 also passes PerfMgt and BM (tunnel_classes), VF 1 does not.
		d, w, vs := newTunnelRig(t, 2, func(c *config.Config) {
			c.VFs.Overrides["0"] = config.VF{TunnelClasses: []string{"perf_mgt", "bm"}}
		})
		a := vs[0]
		st := d.h.TunnelStats()
		count := func() uint64 {
			n := st.Out.Load()
			for i := range st.Drops {
				n += st.Drops[i].Load()
			}
			return n
		}
		before := count()
		q := a.qp1
		if qpt&1 == 0 {
			q = a.qp0
		}
		d.h.scratch()
		d.h.tunnelMultiplex(q.qpn, 1, 1, dg[:mlx4.TunnelSendPayload])
		if got := count() - before; got != 1 {
			t.Fatalf("a datagram counted %d times", got)
		}
		for _, s := range w.sent {
			m := s.m.MAD
			switch m.Method() {
			case mad.MethodGet, mad.MethodSet, mad.MethodReport, mad.MethodSAGetTable, mad.MethodSADelete,
				mad.MethodSAGetMulti, mad.MethodSAGetTraceTbl:
				if m[mlx4.MADTIDSlaveByte] != 1 {
					t.Fatalf("TID %#x on the wire", m.TID())
				}
			}
			if !slices.Contains(d.h.Funcs[0].PKeyMap[1], int(s.m.PKeyIndex)) {
				t.Fatalf("P_Key index %d not the VF's", s.m.PKeyIndex)
			}
		}
		a.proxyRecv(a.qp1, 0x800)
		a.proxyRecv(a.qp0, 0xc00)
		vs[1].proxyRecv(vs[1].qp1, 0x800)
		var m mad.MAD
		copy(m[:], in)
		wc := mad.WC{SLID: 1, SrcQP: 1, QPN: uint32(qpt) & 1}
		counted := func() uint64 { // delivered, dropped, or an answer to the PF's own request
			n := st.In.Load() + st.PFAnswers.Load() + d.h.AliasGUIDStats().OK.Load() + d.h.AliasGUIDStats().Failed.Load()
			for i := range st.Drops {
				n += st.Drops[i].Load()
			}
			return n
		}
		before = counted()
		d.h.ReceiveMAD(1, &wc, nil, &m)
		d.h.ServiceTunnel()
		after := counted()
		if after-before != 1 {
			t.Fatalf("an incoming MAD counted %d times", after-before)
		}
		if vs[1].qp1.obj().RQHead != 0 && (!m.IsResponse() || m[mlx4.MADTIDSlaveByte] != 2) {
			t.Fatal("the other VF got a MAD not addressed to it")
		}
	})
}

// TestTunnelSMIOwner: a VF with SMI learns from QUERY_FUNC_CAP that it owns
// its QP0 (VF_ENABLE_QP0 and its proxy QP0's Q_Key), makes the proxy QP0 an
// MLX QP as mlx4_ib does (PROXY_SMI_OWNER), and posts an SMP as
// build_sriov_qp0_header builds it: the UD header to the QP0 tunnel with
// that Q_Key inline, a zero-length inline segment, the tunnel header
// inline, the MAD. It reaches its port's SMA and the response comes back
// into the MLX proxy QP0.
func TestTunnelSMIOwner(t *testing.T) {
	d, _ := madRig(t, 1, true)
	a := &tunVF{tvf: d.setup(0)}
	c := a.cmd(mlx4.QUERY_FUNC_CAP, 0, 1, 1, nil, true)
	a.must(a.run(c), "QUERY_FUNC_CAP")
	qkey := binary.BigEndian.Uint32(c.Outbox[mlx4.QUERY_FUNC_CAP_PRIV_VF_QKEY_OFFSET:])
	if c.Outbox[mlx4.QUERY_FUNC_CAP_FLAGS1_OFFSET]&mlx4.QUERY_FUNC_CAP_VF_ENABLE_QP0 == 0 || qkey != mlx4.RESERVED_QKEY_BASE+8 {
		t.Fatalf("flags1 %#x qkey %#x", c.Outbox[mlx4.QUERY_FUNC_CAP_FLAGS1_OFFSET], qkey)
	}
	a.k, a.m = a.mr(vaA, 2, permAll, a.pd)
	a.qp0 = a.qp(qpOpts{st: mlx4.QP_ST_MLX, qpn: proxyQPN(0, 0, 1), rqLogS: 3, sqStride: 4})
	a.must(a.qp0.modify(mlx4.INIT2RTR_QP, 0), "INIT2RTR")
	a.must(a.qp0.modify(mlx4.RTR2RTS_QP, 0), "RTR2RTS")
	a.proxyRecv(a.qp0, 0x800)
	var m mad.MAD
	m[0], m[1], m[2], m[3] = 1, mad.ClassSubnLID, 1, mad.MethodGet
	binary.BigEndian.PutUint64(m[8:], 0x43)
	binary.BigEndian.PutUint16(m[16:], mad.AttrNodeInfo)
	a.fill(a.m, m[:])
	// The UD header as build_sriov_qp0_header packs it.
	pkt := make([]byte, capture.MaxPacket)
	if _, err := capture.Encode(&capture.Packet{VL: 15, PKey: 0xffff, DestQP: tunnelQPN(0, 0, 1), SrcQP: a.qp0.qpn, QKey: qkey, MAD: &m}, pkt); err != nil {
		t.Fatal(err)
	}
	udh := pkt[:mad.LRHSize+mad.BTHSize+mad.DETHSize]
	h := hdr(5)
	h.RemoteQPN, h.QKey = 0, 0
	var hb [mlx4.TunHdrSize]byte
	_ = h.Encode(hb[:])
	// The MAD in two entries as ib_mad posts it (header, data), then the
	// ICRC's inline segment (set_mlx_icrc_seg).
	w := send(mlx4.OPCODE_SEND, mlx4.Gather{Inline: true, ByteCount: uint32(len(udh))}, mlx4.Gather{Inline: true},
		mlx4.Gather{Inline: true, ByteCount: mlx4.TunHdrSize}, sge(a.k, vaA, 24), sge(a.k, vaA+24, mad.Size-24),
		mlx4.Gather{Inline: true, ByteCount: mlx4.MLXICRCSize})
	w.Ctrl.SrcRBFlags |= mlx4.MLX4_WQE_MLX_VL15 | mlx4.MLXWQEForceLoopback | mlx4.MLX4_WQE_MLX_SLR
	a.qp0.post(w, append(append(append([]byte{}, udh...), hb[:]...), 0, 0, 0, 0))
	a.qp0.run(4)
	d.h.ServiceTunnel()
	got := a.read(a.m+0x800, mlx4.ProxySQPHdrSize+mad.GRHSize+mad.Size)
	var out mad.MAD
	copy(out[:], got[96:])
	if out.Method() != mad.MethodGetResp || out.TID() != 0x43 || out.AttrID() != mad.AttrNodeInfo {
		var drops [NumTunnelDrops]uint64
		for i := range drops {
			drops[i] = d.h.TunnelStats().Drops[i].Load()
		}
		t.Fatalf("response % x (tunnel drops %v)", out[:24], drops)
	}
	for _, c := range d.take() {
		if c.e.IsError() {
			t.Fatalf("error CQE %+v", c.e)
		}
	}
}

// TestAliasGUIDRegistration: a port that becomes Active with an SM sends
// the SA a GUIDInfoRecord Set of block 0 with the VFs' GUIDs at their
// slave indices (index 0, the port's own, left to the SM), as the PF's own
// MAD (TID top byte 0xff, the port next); unanswered, it is sent again at
// its deadline, which NextRetry reports; a refusal counts and keeps the
// retries; the SA's answer ends them.
func TestAliasGUIDRegistration(t *testing.T) {
	d, e := madRig(t, 2, false)
	w := &fakeWire{}
	d.h.SetMADWire(w)
	pi, _ := e.PortInfo(1)
	if pi.PortState != mad.PortActive || pi.MasterSMLID == 0 {
		t.Fatalf("port 1 %v SM LID %d: the rig's port should be Active with an SM", pi.PortState, pi.MasterSMLID)
	}
	if _, err := d.h.PortMgmtChange(&mad.PortChange{Port: 1, State: mad.PortActive, What: mad.ChangeState}); err != nil {
		t.Fatal(err)
	}
	if len(w.sent) != 1 {
		t.Fatalf("%d MADs sent", len(w.sent))
	}
	s := w.sent[0].m
	m := s.MAD
	mask := binary.BigEndian.Uint64(m[mad.SAHdrCompMask:])
	g1, _ := e.GUID(1, 1)
	g2, _ := e.GUID(1, 2)
	if s.DLID != pi.MasterSMLID || s.DQPN != 1 || s.SQP != 1 || m.MgmtClass() != mad.ClassSubnAdm || m.Method() != mad.MethodSet ||
		m.AttrID() != mad.AttrGUIDInfoRecord || m[8] != 0xff || m[9] != 1 || mask != mad.GUIDInfoRecCompLID|mad.GUIDInfoRecCompBlock|1<<5|1<<6 ||
		binary.BigEndian.Uint16(m[mad.SAData:]) != pi.LID || m[mad.SAData+2] != 0 ||
		binary.BigEndian.Uint64(m[mad.SAData+8+8:]) != g1 || binary.BigEndian.Uint64(m[mad.SAData+8+16:]) != g2 || g1 == 0 {
		t.Fatalf("GUIDInfoRecord Set: %+v mask %#x", s, mask)
	}
	ns, ok := d.h.NextRetry()
	if !ok || ns != int64(aliasFirstRetryNS) {
		t.Fatalf("next retry %d %v", ns, ok)
	}
	d.clock += aliasFirstRetryNS - 1
	d.h.ServiceTunnel()
	if len(w.sent) != 1 {
		t.Fatal("sent again before its deadline")
	}
	d.clock++
	d.h.ServiceTunnel()
	if len(w.sent) != 2 {
		t.Fatal("not sent again at its deadline")
	}
	answer := func(status uint16) {
		r := w.sent[len(w.sent)-1].m.MAD
		r[3] = mad.MethodGetResp
		r.SetStatus(status)
		d.h.ReceiveMAD(1, &mad.WC{SLID: pi.MasterSMLID, SrcQP: 1, QPN: 1}, nil, &r)
		d.h.ServiceTunnel()
	}
	answer(0x0200) // an SA status: refused
	st := d.h.AliasGUIDStats()
	if st.Failed.Load() != 1 {
		t.Fatal("a refusal not counted")
	}
	if _, ok := d.h.NextRetry(); !ok {
		t.Fatal("a refused registration is not retried")
	}
	answer(0)
	if _, ok := d.h.NextRetry(); ok || st.OK.Load() != 1 || st.Sent.Load() != 2 {
		t.Fatalf("after the SA's answer: retry pending %v, ok %d sent %d", ok, st.OK.Load(), st.Sent.Load())
	}
}

// TestTunnelSGIDIsTheVFs: a VF that names another VF's GID index in its
// tunnel header's AV still sends with its own GID (fill_in_real_sgid_index:
// the slave's index), so it cannot pass for another VF on the wire.
func TestTunnelSGIDIsTheVFs(t *testing.T) {
	d, w, vs := newTunnelRig(t, 2, nil)
	e := withEngine(t, d.h)
	a := vs[0]
	h := hdr(1)
	h.AV.GSLID, h.AV.GIDIndex = 0x80, 2 // VF 1's index
	a.post(a.qp1, tunnelQPN(0, 1, 1), h, saGet(1))
	own, _ := e.GUID(1, 1)
	other, _ := e.GUID(1, 2)
	if len(w.sent) != 1 || own == other {
		t.Fatalf("sent %d, GUIDs %#x %#x", len(w.sent), own, other)
	}
	if got := binary.BigEndian.Uint64(w.sent[0].m.GRH.SGID[8:]); got != own {
		t.Fatalf("SGID interface ID %#x, want the VF's own %#x", got, own)
	}
}

// mcJoin is a VF's MCMemberRecord Set (method) of mgid with its PortGID
// gid and join state js, TID tid, as ib_sa's multicast join sends it.
func mcJoin(method uint8, tid uint64, mgid, gid [16]byte, js uint8) mad.MAD {
	var m mad.MAD
	m[0], m[1], m[2], m[3] = 1, mad.ClassSubnAdm, 2, method
	binary.BigEndian.PutUint64(m[8:], tid)
	binary.BigEndian.PutUint16(m[16:], mad.AttrMCMemberRecord)
	binary.BigEndian.PutUint64(m[mad.SAHdrCompMask:], 1<<0|1<<1|1<<16)
	copy(m[mad.SAData+mad.MCMRMGID:], mgid[:])
	copy(m[mad.SAData+mad.MCMRPortGID:], gid[:])
	m[mad.SAData+mad.MCMRScopeJoin] = 0x20 | js
	return m
}

// TestMCGAggregation: the VFs' joins of a group are the PF's to answer, as
// mcg.c does: the first makes the PF join on the wire with its own PortGID
// for the union of the join states, a second while that is in flight
// waits for it, the SA's answer answers both (the SA's record, each VF's
// PortGID, the TID restored); a join the PF's membership covers is
// answered at once; a leave is answered at once, and the PF leaves on the
// wire only when no member needs the group; a VF's reset leaves its
// groups; past mcgMaxGroups groups a VF's join is refused, and another
// VF's is not.
func TestMCGAggregation(t *testing.T) {
	d, w, vs := newTunnelRig(t, 2, nil)
	mgid := [16]byte{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 12: 0xff, 0xff, 0xff, 0xff}
	gid := func(vf int) (g [16]byte) {
		binary.BigEndian.PutUint64(g[:], 0xfe80<<48)
		g[15] = byte(vf + 1)
		return
	}
	join := func(v *tunVF, vf int, method uint8, js uint8, tid uint64) {
		t.Helper()
		v.proxyRecv(v.qp1, 0x800)
		v.post(v.qp1, tunnelQPN(vf, 1, 1), hdr(1), mcJoin(method, tid, mgid, gid(vf), js))
		d.h.ServiceTunnel() // an answer the PF gives at once
	}
	answer := func(status uint16) {
		t.Helper()
		r := w.sent[len(w.sent)-1].m.MAD
		r[3] = mad.MethodGetResp
		r.SetStatus(status)
		binary.BigEndian.PutUint16(r[mad.SAData+mad.MCMRMLID:], 0xc001) // MLID
		d.h.ReceiveMAD(1, &mad.WC{SLID: 1, SrcQP: 1, QPN: 1}, nil, &r)
		d.h.ServiceTunnel()
	}
	got := func(v *tunVF) mad.MAD {
		t.Helper()
		var m mad.MAD
		copy(m[:], v.read(v.m+0x800+mlx4.ProxySQPHdrSize+mad.GRHSize, mad.Size))
		return m
	}
	join(vs[0], 0, mad.MethodSet, 1, 0x11)
	join(vs[1], 1, mad.MethodSet, 1, 0x22)
	if len(w.sent) != 2 || w.sent[0].m.MAD.Method() != mad.MethodSet || w.sent[1].m.MAD.Method() != mad.MethodSet {
		t.Fatalf("%d MADs on the wire, want the PF's join for each VF waiting", len(w.sent))
	}
	for range 5 { // VF 0's retries: one request waits for it, still
		join(vs[0], 0, mad.MethodSet, 1, 0x11)
	}
	if g := d.h.tun.mcg[0][mgid]; g == nil || len(g.pending) != 2 {
		t.Fatalf("waiting requests: %+v", g)
	}
	w.sent = w.sent[len(w.sent)-1:]
	pj := w.sent[0].m.MAD
	port := d.h.portView(1)
	if pj.Method() != mad.MethodSet || pj[8] != 0xff || binary.BigEndian.Uint64(pj[mad.SAData+mad.MCMRPortGID:]) != port.prefix ||
		binary.BigEndian.Uint64(pj[mad.SAData+mad.MCMRPortGID+8:]) != uint64(d.h.Cfg.Ports[0].PortGUIDValue()) || pj[mad.SAData+mad.MCMRScopeJoin]&0xf != 1 {
		t.Fatalf("the PF's join % x", pj[:64])
	}
	answer(0)
	for i, v := range vs {
		m := got(v)
		if m.Method() != mad.MethodGetResp || m.Status() != 0 || binary.BigEndian.Uint16(m[mad.SAData+mad.MCMRMLID:]) != 0xc001 ||
			[16]byte(m[mad.SAData+mad.MCMRPortGID:mad.SAData+mad.MCMRPortGID+16]) != gid(i) || m.TID() != uint64(0x11*(i+1)) {
			t.Fatalf("VF %d's answer % x", i, m[:64])
		}
	}
	join(vs[0], 0, mad.MethodSet, 1, 0x33) // covered: answered at once
	if m := got(vs[0]); len(w.sent) != 1 || m.TID() != 0x33 {
		t.Fatalf("a covered join: wire %d, TID %#x", len(w.sent), m.TID())
	}
	join(vs[0], 0, mad.MethodSADelete, 1, 0x44)
	if m := got(vs[0]); len(w.sent) != 1 || m.Method() != mad.MethodSADelete|mad.MethodResp || m.TID() != 0x44 {
		t.Fatalf("a leave another VF's membership keeps: wire %d, answer %#x TID %#x", len(w.sent), m.Method(), m.TID())
	}
	join(vs[1], 1, mad.MethodSADelete, 1, 0x55)
	if len(w.sent) != 2 || w.sent[1].m.MAD.Method() != mad.MethodSADelete || w.sent[1].m.MAD[mad.SAData+mad.MCMRScopeJoin]&0xf != 1 {
		t.Fatalf("the last leave: wire %d", len(w.sent))
	}
	// The bound: mcgMaxGroups groups, the next refused.
	v := vs[1]
	for i := range mcgMaxGroups { // pending joins: nothing to receive yet
		mgid[15] = byte(i)
		mgid[14] = byte(i >> 8)
		v.post(v.qp1, tunnelQPN(1, 1, 1), hdr(1), mcJoin(mad.MethodSet, 0x100+uint64(i), mgid, gid(1), 1))
	}
	mgid[13] = 1
	join(v, 1, mad.MethodSet, 1, 0x999)
	if m := got(v); m.Status() != mad.SAStatusNoResources || m.TID() != 0x999 {
		t.Fatalf("past the bound: status %#x TID %#x", m.Status(), m.TID())
	}
	before := len(w.sent)
	join(vs[0], 0, mad.MethodSet, 1, 0xaaa) // the other VF's join of a new group
	if m := got(vs[0]); len(w.sent) != before+1 || m.Status() == mad.SAStatusNoResources {
		t.Fatal("one VF's groups refused another VF's join")
	}
	// A reset leaves (VF 0 is a member of the last group alone).
	join(vs[0], 0, mad.MethodSet, 1, 0x66)
	answer(0)
	d.h.ResetFunction(0)
	if last := w.sent[len(w.sent)-1].m.MAD; last.Method() != mad.MethodSADelete {
		t.Fatalf("after the VF's reset: %#x", last.Method())
	}
}

// TestTunnelLocalWireGRH: without a wire, a VF's BM Get with a GRH to its
// port's LID reaches the port's BMA (tunnel_classes bm), and the answer
// comes back with a GRH, the GIDs swapped, as a Linux agent answers: the
// guest's MAD layer matches the response to its request by GID.
func TestTunnelLocalWireGRH(t *testing.T) {
	d := newDPRig(t, 2, func(c *config.Config) {
		c.VFs.Overrides["1"] = config.VF{TunnelClasses: []string{"bm"}}
	})
	e := withEngine(t, d.h)
	b := d.tunVF(1)
	b.proxyRecv(b.qp1, 0x800)
	h := hdr(5)
	h.AV.GSLID = 0x80
	copy(h.AV.DGID[:], bytes.Repeat([]byte{0xd1}, 16))
	m := saGet(0x44)
	m[1], m[2] = mad.ClassBM, 1
	binary.BigEndian.PutUint16(m[16:], mad.AttrClassPortInfo)
	b.post(b.qp1, tunnelQPN(1, 1, 1), h, m)
	d.h.ServiceTunnel()
	got := b.read(b.m+0x800, mlx4.ProxySQPHdrSize+mad.GRHSize+mad.Size)
	r, _ := mlx4.DecodeRcvTunnelHeader(got[40:56])
	var g mad.GRH
	_ = g.Decode(got[56 : 56+mad.GRHSize])
	var resp mad.MAD
	copy(resp[:], got[56+mad.GRHSize:])
	if resp.Method() != mad.MethodGetResp || resp.MgmtClass() != mad.ClassBM || resp.TID() != 0x44 {
		t.Fatalf("response % x", resp[:24])
	}
	if !r.GRH || g.SGID != h.AV.DGID || binary.BigEndian.Uint64(g.DGID[8:]) != d.h.Funcs[1].PortGUID[1] {
		t.Fatalf("receive header %+v, GRH %+v: want the GIDs of the request swapped", r, g)
	}

	// To port 2's LID: across the wire and back, each MAD once in each
	// port's PMA counters (82 words: with its GRH).
	d.take()
	c1, _ := e.PortCounters(1)
	c2, _ := e.PortCounters(2)
	b.proxyRecv(b.qp1, 0x800)
	b.post(b.qp1, tunnelQPN(1, 1, 1), func() mlx4.TunnelHeader { x := h; x.AV.DLID = 6; return x }(), m)
	d.h.ServiceTunnel()
	n1, _ := e.PortCounters(1)
	n2, _ := e.PortCounters(2)
	for _, c := range []struct {
		name string
		got  uint64
	}{{"port 1 sent", n1.PortXmitPkts - c1.PortXmitPkts}, {"port 1 received", n1.PortRcvPkts - c1.PortRcvPkts},
		{"port 2 sent", n2.PortXmitPkts - c2.PortXmitPkts}, {"port 2 received", n2.PortRcvPkts - c2.PortRcvPkts}} {
		if c.got != 1 {
			t.Errorf("%s %d MADs, want 1", c.name, c.got)
		}
	}
	if w := n1.PortXmitData - c1.PortXmitData; w != mad.MADWords+mad.GRHSize/4 {
		t.Errorf("port 1 sent %d words", w)
	}
}
