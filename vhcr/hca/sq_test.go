package hca

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

const (
	remoteAll = mlx4.QP_BIT_RRE | mlx4.QP_BIT_RWE | mlx4.QP_BIT_RAE
	permAll   = mlx4.PERM_LOCAL_WRITE | mlx4.PERM_REMOTE_READ | mlx4.PERM_REMOTE_WRITE | mlx4.PERM_ATOMIC
)

// rcPair is two RC QPs on two VFs, each with a 2-page region at a virtual
// address of its own (translated by the MTT).
type rcPair struct {
	d      *dpRig
	a, b   *tvf
	qa, qb *tqp
	ka, kb uint32 // keys
	ma, mb uint64 // IOVA of each region's first page
}

const vaA, vaB = 0x7f0000001000, 0x5500000000

func newRCPair(t testing.TB, access uint32, o qpOpts) *rcPair {
	return rcPairOn(newDPRig(t, 3, nil), access, o)
}

// rcPairOn is newRCPair's pair on rig d (VFs 0 and 1).
func rcPairOn(d *dpRig, access uint32, o qpOpts) *rcPair {
	p := &rcPair{d: d, a: d.setup(0), b: d.setup(1)}
	p.ka, p.ma = p.a.mr(vaA, 2, access, p.a.pd)
	p.kb, p.mb = p.b.mr(vaB, 2, access, p.b.pd)
	o.st = mlx4.QP_ST_RC
	if o.access == 0 {
		o.access = remoteAll
	}
	p.qa, p.qb = p.a.qp(o), p.b.qp(o)
	pair(p.qa, p.qb)
	return p
}

// wantCQE compares CQEs CQ by CQ, in order within each CQ.
func wantCQE(t *testing.T, got []gotCQE, want ...gotCQE) {
	t.Helper()
	byCQ := func(c []gotCQE) []gotCQE {
		return slices.SortedStableFunc(slices.Values(c), func(a, b gotCQE) int { return int(a.cqn) - int(b.cqn) })
	}
	got, want = byCQ(got), byCQ(want)
	if len(got) != len(want) {
		t.Fatalf("CQEs %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.cqn != w.cqn || g.e.QPN() != w.e.VlanMyQPN || g.e.IsSend != w.e.IsSend || g.e.Opcode != w.e.Opcode ||
			g.e.WQEIndex != w.e.WQEIndex || (w.e.Opcode == mlx4.CQE_OPCODE_ERROR && g.e.Syndrome() != w.e.Syndrome()) ||
			(w.e.ByteCnt != 0 && g.e.ByteCnt != w.e.ByteCnt) || g.e.ImmedRSSInvalid != w.e.ImmedRSSInvalid {
			t.Fatalf("CQE %d: %+v on CQ %d, want %+v on CQ %d", i, g.e, g.cqn, w.e, w.cqn)
		}
	}
}

func sCQE(cqn, qpn uint32, idx uint16, op uint8, n uint32) gotCQE {
	return gotCQE{cqn, mlx4.CQE{VlanMyQPN: qpn, IsSend: true, Opcode: op, WQEIndex: idx, ByteCnt: n}}
}

func rCQE(cqn, qpn uint32, idx uint16, op uint8, n, imm uint32) gotCQE {
	return gotCQE{cqn, mlx4.CQE{VlanMyQPN: qpn, Opcode: op, WQEIndex: idx, ByteCnt: n, ImmedRSSInvalid: imm}}
}

func eCQE(cqn, qpn uint32, idx uint16, send bool, syndrome uint8) gotCQE {
	e := mlx4.CQE{VlanMyQPN: qpn, IsSend: send, WQEIndex: idx}
	e.SetError(syndrome, 0)
	return gotCQE{cqn, e}
}

// TestDataRCBetweenVFs: SEND, SEND_IMM, RDMA_WRITE, RDMA_WRITE_IMM,
// RDMA_READ and both atomics between QPs of two VFs, the data and the
// CQEs checked, both regions translated through their MTT (a message
// crossing a page boundary of each).
func TestDataRCBetweenVFs(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{})
	a, b, qa, qb := p.a, p.b, p.qa, p.qb
	msg := pattern(200, 1)
	a.fill(p.ma+4000, msg) // crosses A's first page
	// SEND into B's buffer across its page boundary.
	qb.recv(sge(p.kb, vaB+4050, 300))
	qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA+4000, 200)), nil)
	if n := qa.run(16); n != 1 {
		t.Fatalf("runSQ consumed %d", n)
	}
	if got := b.read(p.mb+4050, 200); !bytes.Equal(got, msg) {
		t.Fatalf("SEND: B holds %x", got)
	}
	wantCQE(t, p.d.take(), rCQE(b.cq, qb.qpn, 0, mlx4.RECV_OPCODE_SEND, 200, 0), sCQE(a.cq, qa.qpn, 0, mlx4.OPCODE_SEND, 200))

	// SEND_IMM with inline data.
	qb.recv(sge(p.kb, vaB, 64))
	w := send(mlx4.OPCODE_SEND_IMM)
	w.Ctrl.Imm = 0xdeadbeef
	w.AddInline(20)
	qa.post(w, []byte("inline data 20 bytes"))
	qa.run(16)
	if got := b.read(p.mb, 20); string(got) != "inline data 20 bytes" {
		t.Fatalf("SEND_IMM inline: %q", got)
	}
	wantCQE(t, p.d.take(), rCQE(b.cq, qb.qpn, 1, mlx4.RECV_OPCODE_SEND_IMM, 20, 0xdeadbeef), sCQE(a.cq, qa.qpn, 1, mlx4.OPCODE_SEND_IMM, 20))

	// RDMA_WRITE to B's region: no receive WQE, no CQE at B.
	w = send(mlx4.OPCODE_RDMA_WRITE, sge(p.ka, vaA+4000, 200))
	w.HasRAddr, w.RAddr = true, mlx4.RAddrSeg{RAddr: vaB + 4000, RKey: p.kb}
	qa.post(w, nil)
	qa.run(16)
	if got := b.read(p.mb+4000, 200); !bytes.Equal(got, msg) {
		t.Fatalf("RDMA_WRITE: B holds %x", got)
	}
	wantCQE(t, p.d.take(), sCQE(a.cq, qa.qpn, 2, mlx4.OPCODE_RDMA_WRITE, 200))

	// RDMA_WRITE_IMM consumes a receive WQE.
	qb.recv()
	w = send(mlx4.OPCODE_RDMA_WRITE_IMM, sge(p.ka, vaA+4000, 16))
	w.Ctrl.Imm = 7
	w.HasRAddr, w.RAddr = true, mlx4.RAddrSeg{RAddr: vaB + 100, RKey: p.kb}
	qa.post(w, nil)
	qa.run(16)
	wantCQE(t, p.d.take(), rCQE(b.cq, qb.qpn, 2, mlx4.RECV_OPCODE_RDMA_WRITE_IMM, 16, 7), sCQE(a.cq, qa.qpn, 3, mlx4.OPCODE_RDMA_WRITE_IMM, 16))
	if got := b.read(p.mb+100, 16); !bytes.Equal(got, msg[:16]) {
		t.Fatalf("RDMA_WRITE_IMM: %x", got)
	}

	// RDMA_READ from B into A.
	remote := pattern(100, 9)
	b.fill(p.mb+4096+10, remote)
	w = send(mlx4.OPCODE_RDMA_READ, sge(p.ka, vaA+10, 60), sge(p.ka, vaA+5000, 40))
	w.HasRAddr, w.RAddr = true, mlx4.RAddrSeg{RAddr: vaB + 4096 + 10, RKey: p.kb}
	qa.post(w, nil)
	qa.run(16)
	if got := append(a.read(p.ma+10, 60), a.read(p.ma+5000, 40)...); !bytes.Equal(got, remote) {
		t.Fatalf("RDMA_READ: %x", got)
	}
	wantCQE(t, p.d.take(), sCQE(a.cq, qa.qpn, 4, mlx4.OPCODE_RDMA_READ, 100))

	// Atomics on a big-endian word of B; the original to A.
	var word [8]byte
	binary.BigEndian.PutUint64(word[:], 40)
	b.fill(p.mb+64, word[:])
	w = send(mlx4.OPCODE_ATOMIC_FA, sge(p.ka, vaA+512, 8))
	w.HasRAddr, w.RAddr = true, mlx4.RAddrSeg{RAddr: vaB + 64, RKey: p.kb}
	w.HasAtomic, w.Atomic = true, mlx4.AtomicSeg{SwapAdd: 2}
	qa.post(w, nil)
	w = send(mlx4.OPCODE_ATOMIC_CS, sge(p.ka, vaA+520, 8))
	w.HasRAddr, w.RAddr = true, mlx4.RAddrSeg{RAddr: vaB + 64, RKey: p.kb}
	w.HasAtomic, w.Atomic = true, mlx4.AtomicSeg{Compare: 42, SwapAdd: 1000}
	qa.post(w, nil)
	if n := qa.run(16); n != 2 {
		t.Fatalf("atomics consumed %d", n)
	}
	if v := binary.BigEndian.Uint64(b.read(p.mb+64, 8)); v != 1000 {
		t.Fatalf("remote word %d, want 1000", v)
	}
	if f, c := binary.BigEndian.Uint64(a.read(p.ma+512, 8)), binary.BigEndian.Uint64(a.read(p.ma+520, 8)); f != 40 || c != 42 {
		t.Fatalf("originals %d, %d", f, c)
	}
	wantCQE(t, p.d.take(), sCQE(a.cq, qa.qpn, 5, mlx4.OPCODE_ATOMIC_FA, 8), sCQE(a.cq, qa.qpn, 6, mlx4.OPCODE_ATOMIC_CS, 8))
	if qa.obj().SQHead != 7 || qb.obj().RQHead != 3 {
		t.Fatalf("positions SQ %d RQ %d", qa.obj().SQHead, qb.obj().RQHead)
	}
}

// TestDataLayout: the queue with the larger stride comes first in the
// buffer (RQ stride 256 > SQ stride 128 here), as libmlx4 lays it out.
func TestDataLayout(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{rqLogS: 4})
	if p.qb.rqOff != 0 || p.qb.obj().wq.rqOff != 0 || p.qb.obj().wq.sqOff != 8*256 {
		t.Fatalf("offsets rq %d sq %d", p.qb.obj().wq.rqOff, p.qb.obj().wq.sqOff)
	}
	p.a.fill(p.ma, []byte("hello"))
	p.qb.recv(sge(p.kb, vaB, 64))
	p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 5)), nil)
	p.qa.run(4)
	if got := p.b.read(p.mb, 5); string(got) != "hello" {
		t.Fatalf("got %q", got)
	}
}

// TestDataUnsignalled: unsignalled WQEs advance the SQ without a CQE; the
// next signalled one's wqe_index implies them.
func TestDataUnsignalled(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{})
	for i := range 5 {
		p.qb.recv(sge(p.kb, vaB+uint64(i)*64, 64))
		w := send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 8))
		if i < 4 {
			w.Ctrl.SrcRBFlags = 0
		}
		p.qa.post(w, nil)
	}
	if n := p.qa.run(16); n != 5 {
		t.Fatalf("consumed %d", n)
	}
	var sends []gotCQE
	recvs := 0
	for _, c := range p.d.take() {
		if c.e.IsSend {
			sends = append(sends, c)
		} else {
			recvs++
		}
	}
	wantCQE(t, sends, sCQE(p.a.cq, p.qa.qpn, 4, mlx4.OPCODE_SEND, 8))
	if recvs != 5 {
		t.Fatalf("%d receive CQEs", recvs)
	}
}

// TestDataSRQ: a SEND to a QP on an SRQ takes the SRQ's WQE at its head,
// follows the link, and reports the WQE index.
func TestDataSRQ(t *testing.T) {
	d := newDPRig(t, 2, nil)
	a, b := d.setup(0), d.setup(1)
	ka, ma := a.mr(vaA, 1, permAll, a.pd)
	kb, mb := b.mr(vaB, 1, permAll, b.pd)
	s := b.srq()
	qa := a.qp(qpOpts{st: mlx4.QP_ST_RC, access: remoteAll})
	qb := b.qp(qpOpts{st: mlx4.QP_ST_RC, access: remoteAll, srq: s})
	pair(qa, qb)
	i0 := s.post(sge(kb, vaB, 16))
	i1 := s.post(sge(kb, vaB+16, 16))
	a.fill(ma, []byte("0123456789abcdefFEDCBA9876543210"))
	qa.post(send(mlx4.OPCODE_SEND, sge(ka, vaA, 16)), nil)
	qa.post(send(mlx4.OPCODE_SEND, sge(ka, vaA+16, 16)), nil)
	qa.run(8)
	if got := b.read(mb, 32); string(got) != "0123456789abcdefFEDCBA9876543210" {
		t.Fatalf("got %q", got)
	}
	wantCQE(t, d.take(), rCQE(b.cq, qb.qpn, i0, mlx4.RECV_OPCODE_SEND, 16, 0), sCQE(a.cq, qa.qpn, 0, mlx4.OPCODE_SEND, 16),
		rCQE(b.cq, qb.qpn, i1, mlx4.RECV_OPCODE_SEND, 16, 0), sCQE(a.cq, qa.qpn, 1, mlx4.OPCODE_SEND, 16))
	if q := d.h.fw.srqs[s.srqn]; q.Taken != 2 || q.Head != 2 {
		t.Fatalf("SRQ position %d/%d", q.Head, q.Taken)
	}
}

// TestDataRNR: a SEND with no receive WQE posted is retried after the
// responder's RNR timer; rnr_retry 7 forever (the WQE stays, nothing else
// happens), a smaller count ends in RNR retry exceeded.
func TestDataRNR(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{rnrRetry: 7})
	p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 8)), nil)
	for range 20 {
		if n := p.qa.settle(16); n != 0 {
			t.Fatalf("consumed %d without a receive WQE", n)
		}
	}
	if c := p.d.take(); len(c) != 0 || p.qa.obj().State != mlx4.QP_STATE_RTS {
		t.Fatalf("CQEs %v, state %v", c, p.qa.obj().State)
	}
	p.qb.recv(sge(p.kb, vaB, 64))
	p.d.elapse()
	if n := p.qa.run(16); n != 1 {
		t.Fatalf("consumed %d after the post", n)
	}

	q := newRCPair(t, permAll, qpOpts{rnrRetry: 2})
	q.qa.post(send(mlx4.OPCODE_SEND, sge(q.ka, vaA, 8)), nil)
	q.qa.post(send(mlx4.OPCODE_SEND, sge(q.ka, vaA, 8)), nil)
	q.qa.run(16)
	q.d.elapse()
	q.qa.run(16)
	if c := q.d.take(); len(c) != 0 {
		t.Fatalf("CQEs before the retries ran out: %v", c)
	}
	q.d.elapse()
	q.qa.run(16)
	wantCQE(t, q.d.take(), eCQE(q.a.cq, q.qa.qpn, 0, true, mlx4.CQE_SYNDROME_RNR_RETRY_EXC_ERR),
		eCQE(q.a.cq, q.qa.qpn, 1, true, mlx4.CQE_SYNDROME_WR_FLUSH_ERR))
	if q.qa.obj().State != mlx4.QP_STATE_ERR {
		t.Fatalf("state %v", q.qa.obj().State)
	}
}

// TestDataRQRecordCounts: the receive queue's doorbell record is what the
// VF posted. The engine reads it when the count it last read is used up
// (recvPeek), so a WQE posted after a read is found once the earlier ones
// are taken, and a WQE written into the ring without the record moved is
// not taken (the SEND waits, RNR).
func TestDataRQRecordCounts(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{rnrRetry: 7})
	recvs := func() (n int) {
		for _, c := range p.d.take() {
			if c.cqn == p.b.cq && !c.e.IsSend {
				n++
			}
		}
		return n
	}
	for range 3 {
		p.qb.recv(sge(p.kb, vaB, 64))
	}
	p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 8)), nil)
	if n := p.qa.run(16); n != 1 || recvs() != 1 {
		t.Fatalf("first SEND: consumed %d", n)
	}
	p.qb.recv(sge(p.kb, vaB, 64)) // the record now says 4
	for range 3 {
		p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 8)), nil)
	}
	if n := p.qa.run(16); n != 3 {
		t.Fatalf("three SENDs on the two counted and one posted after: consumed %d", n)
	}
	if n := recvs(); n != 3 {
		t.Fatalf("%d receive completions, want 3", n)
	}
	// a receive WQE in the ring, the record not moved: not the device's
	var r mlx4.RecvWQE
	r.NSGE = copy(r.SGE[:], []mlx4.Gather{sge(p.kb, vaB, 64)})
	b := make([]byte, 1<<p.qb.rqShift)
	if _, err := mlx4.EncodeRecvWQE(b, &r, false); err != nil {
		t.Fatal(err)
	}
	p.qb.write(p.qb.rqOff+uint64(p.qb.rqHead&(p.qb.rqCnt-1))<<p.qb.rqShift, b)
	p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 8)), nil)
	for range 3 {
		if n := p.qa.settle(16); n != 0 {
			t.Fatalf("consumed %d with the record at the last receive", n)
		}
	}
	if n := recvs(); n != 0 {
		t.Fatalf("%d receive completions from a WQE the record does not count", n)
	}
	p.qb.recv(sge(p.kb, vaB, 64)) // now counted (the same slot, written again)
	p.d.elapse()
	if n := p.qa.run(16); n != 1 || recvs() != 1 {
		t.Fatalf("after the record moved: consumed %d", n)
	}
}

// TestDataPortDown: nothing moves on a port that is not Active: RC gets
// transport retry exceeded, UD a silent drop (counted) and a good send
// completion.
func TestDataPortDown(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{})
	p.d.h.Cfg.Ports[0].State = "down"
	p.qb.recv(sge(p.kb, vaB, 64))
	p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 8)), nil)
	p.qa.settle(4)
	wantCQE(t, p.d.take(), eCQE(p.a.cq, p.qa.qpn, 0, true, mlx4.CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR))
	if p.qb.obj().RQHead != 0 {
		t.Fatal("the receive WQE was consumed")
	}
	// A DLID no port has.
	q := newRCPair(t, permAll, qpOpts{})
	q.qa.ctx.Pri.RLID = 77
	q.qa.modify(mlx4.RTS2RTS_QP, mlx4.QP_OPTPAR_PRIMARY_ADDR_PATH)
	q.qa.post(send(mlx4.OPCODE_SEND, sge(q.ka, vaA, 8)), nil)
	q.qa.settle(4)
	wantCQE(t, q.d.take(), eCQE(q.a.cq, q.qa.qpn, 0, true, mlx4.CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR))
}

// udPair is two UD QPs on two VFs.
func udPair(t testing.TB) (*dpRig, *tvf, *tvf, *tqp, *tqp, uint32, uint32, uint64, uint64) {
	d := newDPRig(t, 3, nil)
	a, b := d.setup(0), d.setup(1)
	ka, ma := a.mr(vaA, 1, permAll, a.pd)
	kb, mb := b.mr(vaB, 1, permAll, b.pd)
	qa := a.qp(qpOpts{st: mlx4.QP_ST_UD, qkey: 0x1111})
	qb := b.qp(qpOpts{st: mlx4.QP_ST_UD, qkey: 0x2222})
	for _, q := range []*tqp{qa, qb} {
		q.t.must(q.modify(mlx4.INIT2RTR_QP, 0), "INIT2RTR")
		q.t.must(q.modify(mlx4.RTR2RTS_QP, 0), "RTR2RTS")
	}
	return d, a, b, qa, qb, ka, kb, ma, mb
}

func udSend(dqpn, qkey uint32, grh bool, sges ...mlx4.Gather) *mlx4.SendWQE {
	w := send(mlx4.OPCODE_SEND, sges...)
	w.HasDatagram = true
	w.Datagram = mlx4.DatagramSeg{DQPN: dqpn, QKey: qkey, AV: mlx4.AV{PortPD: 1 << 24, DLID: 5, HopLimit: 64,
		SLTClassFlowLabel: 3<<28 | 0x12<<20 | 0xabcde}}
	if grh {
		w.Datagram.AV.GSLID = 0x80
		copy(w.Datagram.AV.DGID[:], []byte("destination gid!"))
	}
	return w
}

// TestDataUDSend: a UD SEND with a GRH lands after the 40-byte GRH in the
// receiver's buffer, its CQE with the source QPN, SLID, SL, the G bit and
// the 40 bytes counted; without a GRH the 40 bytes are left alone.
func TestDataUDSend(t *testing.T) {
	d, a, b, qa, qb, ka, kb, ma, mb := udPair(t)
	a.fill(ma, []byte("datagram payload"))
	b.fill(mb, bytes.Repeat([]byte{0xee}, 40))
	qb.recv(sge(kb, vaB, 100))
	qb.recv(sge(kb, vaB+200, 100))
	qa.post(udSend(qb.qpn, 0x2222, true, sge(ka, vaA, 16)), nil)
	qa.post(udSend(qb.qpn, 0x2222, false, sge(ka, vaA, 16)), nil)
	if n := qa.run(8); n != 2 {
		t.Fatalf("consumed %d", n)
	}
	got := b.read(mb, 56)
	if got[0]>>4 != 6 || got[6] != 0x1b || got[7] != 64 || !bytes.Equal(got[24:40], []byte("destination gid!")) ||
		binary.BigEndian.Uint32(got[0:])&0xfffff != 0xabcde || string(got[40:]) != "datagram payload" {
		t.Fatalf("receive buffer %x", got)
	}
	if got := b.read(mb+200, 56); !bytes.Equal(got[:40], make([]byte, 40)) || string(got[40:]) != "datagram payload" {
		t.Fatalf("without a GRH: %x", got)
	}
	all := d.take()
	var c []gotCQE // receives first, then sends
	for _, send := range []bool{false, true} {
		for _, g := range all {
			if g.e.IsSend == send {
				c = append(c, g)
			}
		}
	}
	if len(c) != 4 {
		t.Fatalf("CQEs %+v", c)
	}
	c[1], c[2] = c[2], c[1]
	r := c[0].e
	if c[0].cqn != b.cq || r.IsSend || r.Opcode != mlx4.RECV_OPCODE_SEND || r.ByteCnt != 56 || !r.GRH() || r.SrcQPN() != qa.qpn ||
		r.RLID != 5 || r.SLVID>>mlx4.CQESLShift != 3 || r.QPN() != qb.qpn {
		t.Fatalf("receive CQE %+v", r)
	}
	if c[2].e.GRH() || c[2].e.ByteCnt != 56 {
		t.Fatalf("receive CQE without GRH %+v", c[2].e)
	}
	wantCQE(t, []gotCQE{c[1], c[3]}, sCQE(a.cq, qa.qpn, 0, mlx4.OPCODE_SEND, 16), sCQE(a.cq, qa.qpn, 1, mlx4.OPCODE_SEND, 16))
}

// TestDataUDKeys: a UD datagram with the wrong Q_Key or P_Key is dropped
// and counted, the sender's WQE completes; a Q_Key with bit 31 set is the
// sending QP's own.
func TestDataUDKeys(t *testing.T) {
	d, a, b, qa, qb, ka, kb, _, _ := udPair(t)
	qb.recv(sge(kb, vaB, 100))
	qa.post(udSend(qb.qpn, 0x3333, false, sge(ka, vaA, 16)), nil)
	qa.post(udSend(qb.qpn, 0x80000000, false, sge(ka, vaA, 16)), nil) // uses A's 0x1111
	qa.run(8)
	st := d.h.EngineStats(1)
	if st.QKeyViol.Load() != 2 || qb.obj().RQHead != 0 {
		t.Fatalf("Q_Key violations %d, RQ %d", st.QKeyViol.Load(), qb.obj().RQHead)
	}
	wantCQE(t, d.take(), sCQE(a.cq, qa.qpn, 0, mlx4.OPCODE_SEND, 16), sCQE(a.cq, qa.qpn, 1, mlx4.OPCODE_SEND, 16))
	// The Q_Key of bit 31 is A's own: with B's Q_Key the same, it passes.
	qb.ctx.QKey = 0x1111
	b.must(qb.modify(mlx4.RTS2RTS_QP, mlx4.QP_OPTPAR_Q_KEY), "RTS2RTS")
	qa.post(udSend(qb.qpn, 0x80000000, false, sge(ka, vaA, 16)), nil)
	qa.run(8)
	if c := d.take(); len(c) != 2 || qb.obj().RQHead != 1 {
		t.Fatalf("CQEs %+v", c)
	}
	// P_Key: B's QP on its index 1 (physical 1: 0x8001) against A's
	// 0xffff: another partition.
	qb.ctx.Pri.PKeyIndex = 1
	b.must(qb.modify(mlx4.RTS2RTS_QP, mlx4.QP_OPTPAR_PKEY_INDEX), "RTS2RTS")
	qb.recv(sge(kb, vaB, 100))
	qa.post(udSend(qb.qpn, 0x1111, false, sge(ka, vaA, 16)), nil)
	qa.run(8)
	if st.PKeyViol.Load() != 1 || qb.obj().RQHead != 1 {
		t.Fatalf("P_Key violations %d, RQ %d", st.PKeyViol.Load(), qb.obj().RQHead)
	}
	// A UD packet to a QP with no receive WQE, or no QP: dropped.
	qa.post(udSend(0xabcdef, 0x1111, false, sge(ka, vaA, 16)), nil)
	qa.run(8)
	if st := d.h.EngineStats(0); st.UDDropped.Load() != 1 {
		t.Fatalf("dropped %d", st.UDDropped.Load())
	}
}

// TestDataFlushAfterError: a QP in ERR completes what the VF posts with
// WR_FLUSH_ERR (ib_drain_qp waits for it), receive WQEs too.
func TestDataFlushAfterError(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{})
	p.qa.recv(sge(p.ka, vaA, 64))
	p.qa.t.must(p.qa.modify(mlx4.TWO_ERR_QP, 0), "2ERR")
	if !p.d.h.sqPending(p.qa.obj()) {
		t.Fatal("the posted receive WQE is not pending for its flush")
	}
	p.qa.post(send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 8)), nil)
	if n := p.qa.run(16); n != 2 {
		t.Fatalf("flushed %d", n)
	}
	wantCQE(t, p.d.take(), eCQE(p.a.cq, p.qa.qpn, 0, true, mlx4.CQE_SYNDROME_WR_FLUSH_ERR),
		eCQE(p.a.cq, p.qa.qpn, 0, false, mlx4.CQE_SYNDROME_WR_FLUSH_ERR))
	if p.d.h.sqPending(p.qa.obj()) {
		t.Fatal("still pending after the flush")
	}
}

// TestDataFence: a fenced WQE after an RDMA READ sees the READ's data (the
// engine completes each WQE before the next starts).
func TestDataFence(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{})
	p.b.fill(p.mb, []byte("remote!!"))
	w := send(mlx4.OPCODE_RDMA_READ, sge(p.ka, vaA, 8))
	w.Ctrl.SrcRBFlags = 0
	w.HasRAddr, w.RAddr = true, mlx4.RAddrSeg{RAddr: vaB, RKey: p.kb}
	p.qa.post(w, nil)
	p.qb.recv(sge(p.kb, vaB+100, 64))
	f := send(mlx4.OPCODE_SEND, sge(p.ka, vaA, 8))
	f.Ctrl.Fence = true
	p.qa.post(f, nil)
	p.qa.run(8)
	if got := p.b.read(p.mb+100, 8); string(got) != "remote!!" {
		t.Fatalf("fenced SEND carried %q", got)
	}
}

func TestDataNOPAndBudget(t *testing.T) {
	p := newRCPair(t, permAll, qpOpts{})
	for range 6 {
		p.qa.post(send(mlx4.OPCODE_NOP), nil)
	}
	if n := p.qa.run(4); n != 4 {
		t.Fatalf("consumed %d with budget 4", n)
	}
	if n := p.qa.run(4); n != 2 {
		t.Fatalf("consumed %d of the rest", n)
	}
	c := p.d.take()
	if len(c) != 6 || !slices.ContainsFunc(c, func(g gotCQE) bool { return g.e.Opcode == mlx4.OPCODE_NOP && g.e.WQEIndex == 5 }) {
		t.Fatalf("CQEs %+v", c)
	}
}

// TestDataNotOffered: the opcodes QUERY_DEV_CAP does not offer — SEND_INVAL,
// LOCAL_INVAL, the masked atomics on RC, LSO on UD — complete with a local
// QP operation error, on a fresh QP each (the error takes it out of RTS).
func TestDataNotOffered(t *testing.T) {
	for _, op := range []uint8{mlx4.OPCODE_SEND_INVAL, mlx4.OPCODE_LOCAL_INVAL, mlx4.OPCODE_MASKED_ATOMIC_CS, mlx4.OPCODE_MASKED_ATOMIC_FA} {
		p := newRCPair(t, permAll, qpOpts{sqStride: 4})
		w := send(op, sge(p.ka, vaA, 8))
		switch op {
		case mlx4.OPCODE_LOCAL_INVAL:
			w.HasLocalInval, w.LocalInvalKey = true, p.kb
		case mlx4.OPCODE_MASKED_ATOMIC_CS, mlx4.OPCODE_MASKED_ATOMIC_FA:
			// A masked fetch-and-add's segment is the plain one (its mask
			// in compare: set_atomic_seg), a masked compare-and-swap's the
			// 32-byte one.
			w.HasRAddr, w.RAddr = true, mlx4.RAddrSeg{RAddr: vaB, RKey: p.kb}
			w.HasAtomic, w.Atomic.Masked = true, op == mlx4.OPCODE_MASKED_ATOMIC_CS
		}
		p.qa.post(w, nil)
		p.qa.run(4)
		c := p.d.take()
		if len(c) != 1 || c[0].e.Syndrome() != mlx4.CQE_SYNDROME_LOCAL_QP_OP_ERR {
			t.Errorf("opcode %#x: CQEs %+v", op, c)
		}
	}
	d, _, _, qa, qb, ka, _, _, _ := udPair(t)
	w := udSend(qb.qpn, 0x2222, false, sge(ka, vaA, 16))
	w.Ctrl.Opcode, w.HasLSO, w.LSO = mlx4.OPCODE_LSO, true, mlx4.LSOSeg{MSS: 64, HdrSize: 16}
	qa.post(w, make([]byte, 16))
	qa.run(4)
	if c := d.take(); len(c) != 1 || c[0].e.Syndrome() != mlx4.CQE_SYNDROME_LOCAL_QP_OP_ERR {
		t.Errorf("LSO on UD: CQEs %+v", c)
	}
}

// postSpan writes w as the WQE at stride index idx of q's ring, over as
// many strides as it needs (wrapping at the ring's end), owner word last;
// it returns the strides it took.
func (q *tqp) postSpan(idx uint32, w *mlx4.SendWQE) uint32 {
	q.t.d.t.Helper()
	w.Ctrl.Owner = idx&q.sqCnt != 0
	b := make([]byte, 1024)
	n, err := mlx4.EncodeSendWQE(b, w, nil)
	if err != nil {
		q.t.d.t.Fatal(err)
	}
	stride := 1 << q.sqShift
	bbs := uint32((n + stride - 1) / stride)
	for i := int(bbs) - 1; i >= 0; i-- {
		part := b[i*stride : min((i+1)*stride, n)]
		off := q.sqOff + uint64((idx+uint32(i))&(q.sqCnt-1))<<q.sqShift
		if i == 0 {
			q.write(off+4, part[4:])
			q.write(off, part[:4])
		} else {
			q.write(off, part)
		}
	}
	return bbs
}

// TestDataWQEOverStrides: a WQE larger than the send queue's stride spans
// the strides after it, as ConnectX-3 walks its basic blocks (mlx4_en's
// 64-byte TXBBs hold descriptors of up to 8): UD SENDs of 80 bytes on a
// 64-byte stride take two each, the last wrapping from the ring's end to
// its start; SQHead and the CQEs' wqe_index count strides.
func TestDataWQEOverStrides(t *testing.T) {
	d := newDPRig(t, 2, nil)
	a, b := d.setup(0), d.setup(1)
	ka, ma := a.mr(vaA, 1, permAll, a.pd)
	kb, mb := b.mr(vaB, 1, permAll, b.pd)
	qa := a.qp(qpOpts{st: mlx4.QP_ST_UD, qkey: 0x1111, sqStride: 2})
	qb := b.qp(qpOpts{st: mlx4.QP_ST_UD, qkey: 0x2222})
	for _, q := range []*tqp{qa, qb} {
		q.t.must(q.modify(mlx4.INIT2RTR_QP, 0), "INIT2RTR")
		q.t.must(q.modify(mlx4.RTR2RTS_QP, 0), "RTR2RTS")
	}
	// An empty SEND (64 bytes: one stride) at 0, then sends at 1, 3, 5
	// and 7: the last starts in the ring's last stride and ends in its
	// first, of the next pass.
	qb.recv(sge(kb, vaB+4*64, 64))
	if n := qa.postSpan(0, udSend(qb.qpn, 0x2222, false)); n != 1 {
		t.Fatalf("an empty UD SEND of %d strides", n)
	}
	idx := uint32(1)
	want := []uint16{0}
	for i := range 4 {
		msg := fmt.Sprintf("over two strides %d", i)
		a.fill(ma, []byte(msg))
		qb.recv(sge(kb, vaB+uint64(i)*64, 64))
		if n := qa.postSpan(idx, udSend(qb.qpn, 0x2222, false, sge(ka, vaA, uint32(len(msg))))); n != 2 {
			t.Fatalf("a UD SEND of %d strides", n)
		}
		want = append(want, uint16(idx))
		idx += 2
		if n := qa.run(8); n < 1 {
			t.Fatalf("send %d: %d WQEs ran", i, n)
		}
		if got := b.read(mb+uint64(i)*64+mad.GRHSize, len(msg)); string(got) != msg {
			t.Fatalf("receive %d: %q", i, got)
		}
	}
	if qa.obj().SQHead != idx || qb.obj().RQHead != 5 {
		t.Fatalf("SQ head %d (want %d), %d receives", qa.obj().SQHead, idx, qb.obj().RQHead)
	}
	var got []uint16
	for _, c := range d.take() {
		if c.cqn == a.cq {
			if c.e.IsError() {
				t.Fatalf("error CQE %+v", c.e)
			}
			got = append(got, c.e.WQEIndex)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("send CQEs' wqe_index %v, want %v", got, want)
	}
}
