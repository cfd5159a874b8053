package hca

import (
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// The data-path rig: VFs with an EQ, a CQ, memory regions and QPs built
// through the executors as mlx4_ib and libmlx4 build them, WQEs posted with
// the mlx4 encoders into the VF's queue memory, and the CQEs polled from
// the CQ rings as libmlx4 polls them.

type gotCQE struct {
	cqn uint32
	e   mlx4.CQE
}

type dpRig struct {
	*rig
	vfs   []*tvf
	clock uint64 // the HCA's clock, in nanoseconds
}

func newDPRig(t testing.TB, nvf int, edit func(*config.Config)) *dpRig {
	d := &dpRig{rig: newRig(t, nvf, edit)}
	d.h.clock = func() uint64 { return d.clock } // the retries' clock (retry.go), advanced by hand
	return d
}

// take polls every VF's CQ (in VF order) and returns the CQEs found.
func (d *dpRig) take() []gotCQE {
	var got []gotCQE
	for _, v := range d.vfs {
		for {
			off := uint64(v.ci&(cqEntries-1)) * mlx4.CQESize
			var b [mlx4.CQESize]byte
			if err := v.w.CopyIn(b[:], v.cqRing+off); err != nil {
				d.t.Fatal(err)
			}
			e, _ := mlx4.DecodeCQE(b[:])
			if !mlx4.CQEOwnerSW(e.Owner, v.ci, cqEntries) {
				break
			}
			got = append(got, gotCQE{v.cq, e})
			v.ci = (v.ci + 1) & 0xffffff
		}
		var rec [4]byte
		binary.BigEndian.PutUint32(rec[:], v.ci)
		if err := v.w.CopyOut(v.cqRec+mlx4.CQDBRecSetCI, rec[:]); err != nil {
			d.t.Fatal(err)
		}
	}
	return got
}

const cqEntries = 128

// tvf is a VF of the rig with its EQ (every event mapped), a CQ and a PD.
type tvf struct {
	*vf
	d      *dpRig
	eqPage uint64
	cq     uint32
	cqRing uint64 // the CQ's ring page and doorbell record
	cqRec  uint64
	ci     uint32 // the CQ's consumer index
	pd     uint32
}

func (d *dpRig) setup(n int) *tvf {
	v := d.vf(n)
	v.page = 0x10000
	t := &tvf{vf: v, d: d, eqPage: v.page}
	v.setupEQ(1, 6)
	// The CQ as libmlx4's mlx4_create_cq makes it: zeroed ring and record.
	t.cq = v.mustAlloc(restrack.CQ, resOpReserveAndMap, 0)
	t.cqRing, t.cqRec = v.newPage(), v.newPage()
	b := make([]byte, mlx4.CQContextSize)
	mlx4.CQContext{LogSize: 7, UsrPage: 128, CompEQN: 1, DBRecAddr: t.cqRec, MTTBase: uint64(v.mtt(0, t.cqRing))}.Encode(b)
	v.must(v.run(v.cmd(mlx4.SW2HW_CQ, 0, t.cq, 0, b, false)), "SW2HW_CQ")
	t.pd = uint32(n+2)<<17 | 0x11 // PD 0x11 tagged with the slave (VF+1) + 1
	d.vfs = append(d.vfs, t)
	return t
}

// events returns the types of the EQEs written to the VF's EQ so far.
func (t *tvf) events() []uint8 {
	eq := t.d.h.fw.eqs[restrack.EQID(t.n, 1)]
	var ty []uint8
	for i := range eq.Prod {
		e := t.readEQE(t.eqPage, int(i))
		ty = append(ty, e[mlx4.EQEType])
	}
	return ty
}

// mr registers npages fresh pages of the window at virtual address va
// (translated through the MTT) with the access bits; key and IOVA base.
func (t *tvf) mr(va uint64, npages int, access uint32, pd uint32) (uint32, uint64) {
	t.d.t.Helper()
	idx := t.mustAlloc(restrack.MPT, resOpReserve, 0)
	t.mustAlloc(restrack.MPT, resOpMapICM, uint64(idx))
	pages := make([]uint64, npages)
	for i := range pages {
		pages[i] = t.newPage()
	}
	order := 0
	for 1<<order < npages {
		order++
	}
	mtt := t.mtt(order, pages...)
	b := make([]byte, mlx4.MPTEntrySize)
	mlx4.MPT{Access: access | mlx4.PERM_LOCAL_READ, Key: mlx4.KeyOf(idx), PD: pd, Start: va, Length: uint64(npages) * 4096,
		MTTBase: uint64(mtt), MTTSize: uint32(npages), EntitySize: 12}.Encode(b)
	// mlx4_mr_enable leaves mtt_sz 0 for a registered region (it is the
	// fast-register MR's): the firmware bounds the region by its length.
	binary.BigEndian.PutUint32(b[mlx4.MPTMTTSz:], 0)
	t.must(t.run(t.cmd(mlx4.SW2HW_MPT, 0, idx, 0, b, false)), "SW2HW_MPT")
	return mlx4.KeyOf(idx), pages[0]
}

// tqp is a QP of a tvf and the driver's view of its queues.
type tqp struct {
	t       *tvf
	qpn     uint32
	buf     uint64 // the QP buffer's page (IOVA)
	db      uint64 // receive doorbell record
	sqShift uint
	rqShift uint
	sqCnt   uint32
	rqCnt   uint32
	sqOff   uint64
	rqOff   uint64
	sqHead  uint32
	rqHead  uint32
	ctx     mlx4.QPContext
	p1, p2  uint32 // params1, params2
	srq     *tsrq
	rss     []byte // an RSS indirection QP's context (mlx4.RSSContextSize), laid over the primary path
}

type qpOpts struct {
	st               uint8
	sqStride, rqLogS uint8 // log strides (stride = 16 << n)
	access           uint32
	srq              *tsrq
	qkey             uint32
	rnrRetry, retry  uint8
	timeout, minRNR  uint8 // the local ACK timeout and RNR timer codes
	// exact takes the four fields above as they are for an RC QP, zeros
	// included; else a zero is what ibv_rc_pingpong sets (rcDefaults).
	exact bool
	// qpn, if set, is a special QPN of the VF's proxy range, mapped as
	// mlx4_ib maps its proxy QPs (no reservation).
	qpn  uint32
	port int
	// sqLog is the send queue's log size (0: 3, eight WQEs); the queue
	// and the receive queue share one page.
	sqLog uint8
	// rss makes the QP an RSS indirection QP (no receive queue) with this
	// RSS context.
	rss []byte
}

// rcDefaults fills an RC QP's zero retry fields with what ibv_rc_pingpong
// sets: timeout 14 (67 ms), retry_cnt 7, rnr_retry 7 (for ever),
// min_rnr_timer 12 (0.64 ms).
func (o *qpOpts) rcDefaults() {
	if o.st != mlx4.QP_ST_RC || o.exact {
		return
	}
	for _, f := range []struct {
		v   *uint8
		def uint8
	}{{&o.timeout, 14}, {&o.retry, 7}, {&o.rnrRetry, 7}, {&o.minRNR, 12}} {
		if *f.v == 0 {
			*f.v = f.def
		}
	}
}

// qp creates a QP in INIT with the libmlx4 layout and ownership init.
func (t *tvf) qp(o qpOpts) *tqp {
	t.d.t.Helper()
	if o.sqStride == 0 {
		o.sqStride = 3
	}
	if o.rqLogS == 0 {
		o.rqLogS = 2
	}
	o.rcDefaults()
	qpn := o.qpn
	if qpn == 0 {
		qpn = t.mustAlloc(restrack.QP, resOpReserve, 1)
	}
	t.mustAlloc(restrack.QP, resOpMapICM, uint64(qpn))
	if o.port == 0 {
		o.port = 1
	}
	if o.sqLog == 0 {
		o.sqLog = 3
	}
	q := &tqp{t: t, qpn: qpn, buf: t.newPage(), db: t.newPage(), sqShift: uint(o.sqStride) + 4, sqCnt: 1 << o.sqLog, srq: o.srq, rss: o.rss}
	if o.srq == nil && o.rss == nil {
		q.rqShift, q.rqCnt = uint(o.rqLogS)+4, 8
	}
	if q.rqCnt != 0 && q.rqShift > q.sqShift {
		q.rqOff, q.sqOff = 0, uint64(q.rqCnt)<<q.rqShift
	} else {
		q.sqOff, q.rqOff = 0, uint64(q.sqCnt)<<q.sqShift
	}
	mtt := t.mtt(0, q.buf)
	q.ctx = mlx4.QPContext{ST: o.st, PD: t.pd, MsgMax: 31, LogSQSize: o.sqLog, LogSQStride: o.sqStride, LogRQSize: 3, LogRQStride: o.rqLogS,
		NoRQ: o.srq != nil, UsrPage: 128, CQNSend: t.cq, CQNRecv: t.cq, MTTBase: uint64(mtt), DBRecAddr: q.db, QKey: o.qkey,
		LocalQPN: qpn, MinRNRTimer: o.minRNR, Pri: mlx4.QPPath{Port: o.port, CounterIndex: uint8(config.Default().Resources.Counters - 1), AckTimeout: o.timeout << mlx4.PathAckTOShift}}
	if o.srq != nil {
		q.ctx.UseSRQ, q.ctx.SRQN = true, o.srq.srqn
	}
	if o.rss != nil {
		q.ctx.RSS, q.ctx.NoRQ = true, true
	}
	q.p2 = o.access
	q.p1 = uint32(o.retry&7)<<mlx4.QPCParams1RetryShift | uint32(o.rnrRetry&7)<<mlx4.QPCParams1RNRRetryShift
	// libmlx4's mlx4_qp_init_sq_ownership: owner 1, full size, stamped.
	for i := range q.sqCnt {
		b := make([]byte, 1<<q.sqShift)
		binary.BigEndian.PutUint32(b, mlx4.WQEOwner)
		b[mlx4.CtrlFenceSize] = byte(1 << (q.sqShift - 4))
		for c := mlx4.WQEBasicBlock; c < len(b); c += mlx4.WQEBasicBlock {
			binary.BigEndian.PutUint32(b[c:], mlx4.WQEStamp)
		}
		q.write(q.sqOff+uint64(i)<<q.sqShift, b)
	}
	t.must(q.modify(mlx4.RST2INIT_QP, 0), "RST2INIT")
	return q
}

func (q *tqp) write(off uint64, b []byte) {
	if err := q.t.w.CopyOut(q.buf+off, b); err != nil {
		q.t.d.t.Fatal(err)
	}
}

func (q *tqp) mailbox(optpar uint32) []byte {
	b := make([]byte, mlx4.QPMailboxSize)
	mlx4.QPMailbox{OptPar: optpar, Ctx: q.ctx}.Encode(b)
	c := b[mlx4.QPMailboxContext:]
	binary.BigEndian.PutUint32(c[mlx4.QPCParams1:], q.p1)
	binary.BigEndian.PutUint32(c[mlx4.QPCParams2:], binary.BigEndian.Uint32(c[mlx4.QPCParams2:])|q.p2)
	if q.rss != nil {
		copy(c[mlx4.QPCPriPath+mlx4.RSS_OFFSET_IN_QPC_PRI_PATH:], q.rss)
	}
	return b
}

func (q *tqp) modify(op mlx4.Opcode, optpar uint32) mlx4.Status {
	return q.t.run(q.t.cmd(op, 0, q.qpn, 0, q.mailbox(optpar), false))
}

// connect takes q to RTS towards remote QPN rqpn at LID dlid.
func (q *tqp) connect(rqpn uint32, dlid uint16) {
	q.t.d.t.Helper()
	q.ctx.RemoteQPN, q.ctx.Pri.RLID = rqpn, dlid
	q.t.must(q.modify(mlx4.INIT2RTR_QP, mlx4.QP_OPTPAR_PRIMARY_ADDR_PATH), "INIT2RTR")
	q.t.must(q.modify(mlx4.RTR2RTS_QP, 0), "RTR2RTS")
}

// pair connects two RC (or UC) QPs through port 1 (LID 5).
func pair(a, b *tqp) {
	a.connect(b.qpn, 5)
	b.connect(a.qpn, 5)
}

func (q *tqp) obj() *qpObj { return q.t.d.h.fw.qps[q.qpn] }

// post writes w as the next send WQE, owner word last, as mlx4_post_send.
func (q *tqp) post(w *mlx4.SendWQE, inline []byte) {
	q.t.d.t.Helper()
	idx := q.sqHead
	w.Ctrl.Owner = idx&q.sqCnt != 0
	b := make([]byte, 1<<q.sqShift)
	n, err := mlx4.EncodeSendWQE(b, w, inline)
	if err != nil {
		q.t.d.t.Fatal(err)
	}
	off := q.sqOff + uint64(idx&(q.sqCnt-1))<<q.sqShift
	q.write(off+4, b[4:n])
	q.write(off, b[:4])
	q.sqHead++
}

// recv posts a receive WQE and rings the doorbell record.
func (q *tqp) recv(sges ...mlx4.Gather) {
	q.t.d.t.Helper()
	var r mlx4.RecvWQE
	r.NSGE = copy(r.SGE[:], sges)
	b := make([]byte, 1<<q.rqShift)
	if _, err := mlx4.EncodeRecvWQE(b, &r, false); err != nil {
		q.t.d.t.Fatal(err)
	}
	q.write(q.rqOff+uint64(q.rqHead&(q.rqCnt-1))<<q.rqShift, b)
	q.rqHead++
	var db [4]byte
	binary.BigEndian.PutUint32(db[:], q.rqHead&0xffff)
	if err := q.t.w.CopyOut(q.db, db[:]); err != nil {
		q.t.d.t.Fatal(err)
	}
}

func (q *tqp) run(budget int) int { return q.t.d.h.runSQ(q.obj(), budget) }

// elapse moves the rig's clock to the nearest retry deadline
// (HCA.NextRetry) and reports whether there was one.
func (d *dpRig) elapse() bool {
	ns, ok := d.h.NextRetry()
	if ok {
		d.clock += uint64(ns)
	}
	return ok
}

// settle runs q's send queue as the poller's scans would over time: while
// q's WQE waits for a retry with a deadline, the clock moves to the
// deadline (not past it) and the queue runs again, at most maxSettle
// times. It returns the WQEs consumed.
func (q *tqp) settle(budget int) int {
	q.t.d.t.Helper()
	n := q.run(budget)
	for range maxSettle {
		w := q.obj().wq
		if w == nil || !w.rt.wait || w.rt.forever {
			break
		}
		q.t.d.clock = max(q.t.d.clock, w.rt.deadline)
		n += q.run(budget)
	}
	return n
}

// maxSettle bounds settle's retries (rnr_retry 7 retries for ever).
const maxSettle = 64

// tsrq is an SRQ and the driver's free list (libmlx4's srq.c).
type tsrq struct {
	t       *tvf
	srqn    uint32
	buf, db uint64
	head    uint16
	counter uint16
}

func (t *tvf) srq() *tsrq {
	t.d.t.Helper()
	s := &tsrq{t: t, srqn: t.mustAlloc(restrack.SRQ, resOpReserveAndMap, 0), buf: t.newPage(), db: t.newPage()}
	base := t.mtt(0, s.buf)
	b := make([]byte, mlx4.SRQContextSize)
	mlx4.SRQContext{SRQN: s.srqn, LogSize: 3, LogStride: 2, MTTBase: uint64(base), PD: t.pd, DBRecAddr: s.db, CQN: t.cq}.Encode(b)
	t.must(t.run(t.cmd(mlx4.SW2HW_SRQ, 0, s.srqn, 0, b, false)), "SW2HW_SRQ")
	// The free list: WQE i links to i+1 (mlx4_create_srq).
	for i := range 8 {
		var r mlx4.RecvWQE
		r.NextWQEIndex = uint16((i + 1) % 8)
		w := make([]byte, 64)
		if _, err := mlx4.EncodeRecvWQE(w, &r, true); err != nil {
			t.d.t.Fatal(err)
		}
		if err := t.w.CopyOut(s.buf+uint64(i)*64, w); err != nil {
			t.d.t.Fatal(err)
		}
	}
	return s
}

// post writes a receive WQE at the free list's head (mlx4_post_srq_recv).
func (s *tsrq) post(sges ...mlx4.Gather) uint16 {
	ind := s.head
	b := make([]byte, 64)
	if err := s.t.w.CopyIn(b, s.buf+uint64(ind)*64); err != nil {
		s.t.d.t.Fatal(err)
	}
	r, _ := mlx4.DecodeRecvWQE(b, true)
	s.head = r.NextWQEIndex
	r.NSGE = copy(r.SGE[:], sges)
	if _, err := mlx4.EncodeRecvWQE(b, &r, true); err != nil {
		s.t.d.t.Fatal(err)
	}
	if err := s.t.w.CopyOut(s.buf+uint64(ind)*64, b); err != nil {
		s.t.d.t.Fatal(err)
	}
	s.counter++
	var db [4]byte
	binary.BigEndian.PutUint32(db[:], uint32(s.counter))
	if err := s.t.w.CopyOut(s.db, db[:]); err != nil {
		s.t.d.t.Fatal(err)
	}
	return ind
}

func sge(key uint32, addr uint64, n uint32) mlx4.Gather {
	return mlx4.Gather{LKey: key, Addr: addr, ByteCount: n}
}

// send builds a signalled WQE of opcode op with gather entries.
func send(op uint8, sges ...mlx4.Gather) *mlx4.SendWQE {
	w := &mlx4.SendWQE{Ctrl: mlx4.WQECtrl{Opcode: op, SrcRBFlags: mlx4.WQE_CTRL_CQ_UPDATE}}
	w.NSGE = copy(w.SGE[:], sges)
	return w
}

func (t *tvf) fill(iova uint64, b []byte) {
	if err := t.w.CopyOut(iova, b); err != nil {
		t.d.t.Fatal(err)
	}
}

func (t *tvf) read(iova uint64, n int) []byte {
	b := make([]byte, n)
	if err := t.w.CopyIn(b, iova); err != nil {
		t.d.t.Fatal(err)
	}
	return b
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}
