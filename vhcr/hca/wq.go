package hca

// The QP's work queues as the firmware sees them.
//
// RST2INIT hands the firmware the geometry of the QP's buffer: the send
// and receive queues' log size and log stride (sq_size_stride,
// rq_size_stride: stride = 16 << log stride), the buffer's page size
// (log_page_size + 12) and the offset of the buffer in its first page
// (params2 page_offset, in 64-byte units), its pages (MTT entries from
// mtt_base), the receive doorbell record (db_rec_addr), the UAR page of
// the send doorbell (usr_page), the CQs and the SRQ. The buffer holds both
// queues, the one with the larger stride first and the send queue first
// when the strides are equal: libmlx4's mlx4_alloc_qp_buf and mlx4_ib's
// create_qp_common (qp->rq.offset / qp->sq.offset) both lay it out so
//
//	if rq.wqe_shift > sq.wqe_shift { rq.offset = 0; sq.offset = rq.wqe_cnt << rq.wqe_shift }
//	else                           { sq.offset = 0; rq.offset = sq.wqe_cnt << sq.wqe_shift }
//
// A QP without a receive queue (SRQ, RSS, XRC: the context's
// rq_size_stride is 0) has only the send queue, at offset 0. The send
// queue's size includes the driver's spare WQEs (sq_spare_wqes =
// (2048 >> wqe_shift) + 1, the prefetch headroom): the device walks all
// 2^log_sq_size slots and never needs to know which are spare.
//
// wqBuild checks, as firmware does at RST2INIT (BAD_PARAM): the stride of
// a send WQE at least 64 bytes (one basic block: mlx4 never makes it
// smaller), the page size 4 KiB..1 GiB, a buffer that fits the QP's MTT
// range (mtt_base .. + qp_get_mtt_size's pages: the wrapper only checks
// that range is the VF's; a ring claiming more pages than it covers is
// the firmware's refusal), every page an MTT entry the VF wrote that lies
// in the VF's DMA window (writable: the device writes nothing in the send
// queue but reads and writes the same pages), usr_page one of the VF's
// UARs. The pages are read once, here, as for EQs: a later WRITE_MTT does
// not move a live ring.

import (
	"encoding/binary"

	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/vhcr/eswitch"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// The VF's UARs: the pages of its BAR region (QUERY_DEV_CAP uar_size, 4 KiB
// UAR pages: QUERY_HCA), but the reserved ones QUERY_DEV_CAP reports
// (rsvd_uar: one, the page of the comm channel). mlx4 maps a VF's UAR index
// i at BAR2 page i mod (BAR2 size / page size), so no other index names a
// page of the VF's own.
const (
	modelReservedUARs = 1
	vfUARPages        = mlx4.UARSize / mlx4.PageSize
)

// sqMinStride is the smallest send WQE stride the firmware takes: one
// 64-byte basic block (mlx4_ib and libmlx4 never go below: the control
// segment and the stamping are per 64-byte chunk).
const (
	sqMinShift  = 6
	wqChunk     = 64
	maxWQEBytes = 16 << 7 // the largest stride a 3-bit log stride names
)

// wq is a QP's send and receive queue geometry, built at RST2INIT from the
// context and dropped at 2RST; the positions are in QPState (SQHead,
// RQHead), so that a checkpoint carries them.
type wq struct {
	win *dma.Window // the QP's VF's DMA window: queue pages, doorbell record
	vf  int
	qpn uint32
	st  uint8

	// ethOn: an MLX QP on an Ethernet port, whose sends are frames through
	// the port's switch under eth (eth.go).
	ethOn bool
	eth   eswitch.Path
	// roce: an RC, UC or UD QP on an Ethernet port, whose packets are
	// RoCE (v1) through the port's switch under eth, addressed by MAC
	// (the path's dmac, a UD WQE's) and GID (roce.go).
	rss     bool // an RSS indirection QP: frames go on to its rings (eth.go)
	roce    bool
	dmac    uint64   // the primary path's dmac (RC, UC)
	rgid    [16]byte // the primary path's remote GID (RC, UC)
	sgidIdx uint8    // the primary path's mgid_index 6:0: the port table's index of the QP's GID

	pageShift uint
	pages     []uint64 // IOVA of each buffer page
	sqOff     uint64   // byte offset of the send queue in the buffer (page offset included)
	sqShift   uint
	sqCnt     uint32
	rqOff     uint64
	rqShift   uint
	rqCnt     uint32 // 0: no receive queue (SRQ, RSS, XRC)
	dbRec     uint64
	usrPage   uint32
	scqn      uint32
	rcqn      uint32
	srq       bool
	srqn      uint32
	pd        uint32

	// From the context of the last transition (wqRefresh).
	remoteQPN   uint32
	qkey        uint32
	pkeyIndex   uint8 // physical P_Key index (the PF rewrote it)
	rlid        uint16
	sl          uint8
	pathBits    uint8 // my_lmc: the source path bits
	grh         bool
	msgMax      uint8
	mtu         uint64 // the path MTU in bytes (0: not set)
	retry       uint8  // params1 retry_count
	rnrRetry    uint8  // params1 rnr_retry, 7 = infinite
	ackTimeout  uint8  // the primary path's local ACK timeout code (0: infinite)
	minRNRTimer uint8  // the responder's RNR NAK timer code (rnr_nextrecvpsn)
	rre, rwe    bool   // params2: remote read / write enable
	rae         bool   // remote atomic enable
	pmArmed     bool   // path migration armed (flags pm_state ARMED)

	rt sqRetry // the WQE at SQHead's retries (retry.go; transient: a restarted PF retries afresh)
	// headBBs is the size of the WQE at SQHead in strides (basic blocks),
	// as its fetch read it: SQHead counts strides, and a WQE larger than
	// the stride spans several (mlx4_en's 64-byte TXBBs; mlx4_ib's
	// shrunk WQEs). 0 before a fetch: one.
	headBBs  uint32
	attached bool // dpAttach done
	// lonely counts the looks in a row that found no WQE behind a run's
	// first (sqFollows); rqAhead is how many receive WQEs the doorbell
	// record last read showed beyond RQHead and not yet taken (recvPeek):
	// the record is read again only when they are used up, as hardware
	// reads it when its cached count runs out. Both transient.
	lonely  uint8
	rqAhead uint32
	// peek is the first 8 bytes of the control segment at peekAt as
	// sqNext found them (peeked): the run's next fetch takes them instead
	// of reading the line again. Only within one runSQ.
	peek   [8]byte
	peekAt uint32
	peeked bool

	kc keyCache // the last key checked for this QP (keycache.go)
}

// wqBuild builds the QP's work queues at RST2INIT from the context in the
// command's inbox and the QP's MTT allocation mtt; s is BAD_PARAM (reason
// MTT or Context) where the firmware refuses the geometry.
func (h *HCA) wqBuild(c *Cmd, q *mlx4.QPContext, mtt *restrack.Object) (*wq, mlx4.Status) {
	w := &wq{win: c.Mem, vf: c.VF, qpn: c.InMod & qpnMask, st: q.ST,
		dbRec: q.DBRecAddr, usrPage: q.UsrPage, scqn: q.CQNSend, rcqn: q.CQNRecv,
		srq: q.UseSRQ, srqn: q.SRQN, pd: q.PD}
	if q.UsrPage < modelReservedUARs || q.UsrPage >= vfUARPages {
		return nil, c.Refuse(mlx4.BAD_PARAM, refusal.Context)
	}
	w.pageShift = uint(q.LogPageSize) + mlx4.PageShift
	if w.pageShift > 30 || c.Mem == nil {
		return nil, c.Refuse(mlx4.BAD_PARAM, refusal.Context)
	}
	w.sqShift = uint(q.LogSQStride) + 4
	w.sqCnt = 1 << q.LogSQSize
	if w.sqShift < sqMinShift {
		return nil, c.Refuse(mlx4.BAD_PARAM, refusal.Context)
	}
	if !q.UseSRQ && !q.RSS && q.ST != mlx4.QP_ST_XRC {
		w.rqShift = uint(q.LogRQStride) + 4
		w.rqCnt = 1 << q.LogRQSize
	}
	sqBytes := uint64(w.sqCnt) << w.sqShift
	rqBytes := uint64(w.rqCnt) << w.rqShift
	base := uint64(q.PageOffset) * 64
	if w.rqCnt != 0 && w.rqShift > w.sqShift {
		w.rqOff, w.sqOff = base, base+rqBytes
	} else {
		w.sqOff, w.rqOff = base, base+sqBytes
	}
	total := base + sqBytes + rqBytes
	psize := uint64(1) << w.pageShift
	npages := (total + psize - 1) >> w.pageShift
	// The firmware reads the pages from mtt_base, as far as the MTT
	// allocation goes. Linux's tracker (qp_get_mtt_size, q.MTTPages, which
	// the wrapper checked) rounds the ring's bytes down to pages before
	// the power of two, so a ring it accepts may end one page past its
	// allocation: mlx4_en's send queue, 64 KiB in one 64 KiB page, beside
	// the 16-byte receive queue a zero rq_size_stride still means. That
	// part has no page (pageAt): the device never reaches it unless the VF
	// posts there, and then its read fails as a catastrophic error.
	first := q.MTTBase - mtt.ID
	if first >= 1<<mtt.Order || npages > maxRingPages {
		return nil, c.Refuse(mlx4.BAD_PARAM, refusal.MTT)
	}
	npages = min(npages, 1<<mtt.Order-first)
	w.pages = make([]uint64, npages)
	for i := range w.pages {
		e := h.mttRead(mtt, first+uint64(i))
		if e&mlx4.MTT_FLAG_PRESENT == 0 {
			return nil, c.Refuse(mlx4.BAD_PARAM, refusal.MTT)
		}
		addr := e &^ (psize - 1)
		if _, err := c.Mem.Translate(addr, int(min(psize, total)), dma.ReadWrite); err != nil {
			return nil, c.Refuse(mlx4.BAD_PARAM, refusal.MTT)
		}
		w.pages[i] = addr
	}
	return w, mlx4.OK
}

// wqRefresh takes the fields a later transition may set (remote QPN,
// Q_Key, the primary path, retry counts, remote access enables) from the
// QP's context, after every transition.
func (h *HCA) wqRefresh(qp *qpObj) {
	w := qp.wq
	if w == nil {
		return
	}
	b := qp.Ctx[mlx4.QPMailboxContext:]
	ctx, _ := mlx4.DecodeQPContext(b) // a stored context is whole
	w.remoteQPN = ctx.RemoteQPN
	w.qkey = ctx.QKey
	w.pkeyIndex = ctx.Pri.PKeyIndex
	w.rlid = ctx.Pri.RLID
	w.grh = ctx.Pri.GRH
	w.pathBits = ctx.Pri.SMACIndex // grh_mylmc 6:0: my LMC path bits on IB
	w.sl = b[mlx4.QPCPriPath+mlx4.PathSchedQueue] >> mlx4.PathSchedQueueSLShift & 0xf
	w.msgMax = ctx.MsgMax
	w.mtu = mtuBytes(ctx.MTU)
	w.retry = mlx4.QPCRetryCount(b)
	w.rnrRetry = mlx4.QPCRNRRetry(b)
	w.ackTimeout = mlx4.PathAckTimeout(b[mlx4.QPCPriPath:])
	w.minRNRTimer = mlx4.QPCMinRNRTimer(b)
	p2 := binary.BigEndian.Uint32(b[mlx4.QPCParams2:])
	w.rre = p2&mlx4.QP_BIT_RRE != 0
	w.rwe = p2&mlx4.QP_BIT_RWE != 0
	w.rae = p2&mlx4.QP_BIT_RAE != 0
	fl := binary.BigEndian.Uint32(b[mlx4.QPCFlags:])
	w.pmArmed = fl>>mlx4.QPCFlagsPMStateShift&mlx4.QPCFlagsPMStateMask == mlx4.QP_PM_ARMED && ctx.Alt.RLID != 0
	pri := b[mlx4.QPCPriPath : mlx4.QPCPriPath+mlx4.QPPathSize]
	w.dmac, w.rgid, w.sgidIdx = eswitch.MAC(pri[mlx4.PathDMAC:]), ctx.Pri.RGID, pri[mlx4.PathMGIDIndex]&mlx4.MGIDIndexMask
	w.rss = ctx.RSS
	h.ethPathOf(qp)
}

// wqTransition is called after every QP state change: the scheduler's
// lists hold the QPs whose queues the device walks (RTS and SQD execute or
// drain, SQER and ERR flush what the VF posts), and a QP entering ERR
// flushes its queues.
func (h *HCA) wqTransition(qp *qpObj, from mlx4.QPState) {
	w := qp.wq
	if w == nil {
		return
	}
	h.wqRefresh(qp)
	if qp.State != mlx4.QP_STATE_RTS && qp.State != mlx4.QP_STATE_SQD {
		// Out of RTS (ERR, SQER: the flush completes the WQE that waited;
		// RST, INIT, RTR: the queue starts again) a retry ends.
		w.rt = sqRetry{}
	}
	walk := qp.State == mlx4.QP_STATE_RTS || qp.State == mlx4.QP_STATE_SQD ||
		qp.State == mlx4.QP_STATE_SQER || qp.State == mlx4.QP_STATE_ERR
	switch {
	case walk && !w.attached:
		w.attached = true
		h.dpAttach(qp)
	case !walk && w.attached:
		w.attached = false
		h.dpDetach(qp)
	}
	if qp.State == mlx4.QP_STATE_ERR && from != mlx4.QP_STATE_ERR && w.srq {
		// The QP's last WQE from its SRQ has been consumed (IBA 11.6.3.1):
		// SRQ WQEs are never flushed.
		_ = h.QPEvent(w.qpn, mlx4.EventSRQLastWQE)
	}
}

// wqDrop forgets the QP's queues (2RST, VF reset).
func (h *HCA) wqDrop(qp *qpObj) {
	if qp == nil || qp.wq == nil {
		return
	}
	if qp.wq.attached {
		h.dpDetach(qp)
	}
	qp.wq = nil
	qp.SQHead, qp.RQHead = 0, 0
}

// wqLoad rebuilds the queues of a QP a checkpoint restored: the geometry
// from the stored context and MTT, the positions from its QPState.
func (h *HCA) wqLoad(qp *qpObj, win *dma.Window) {
	if qp.State == mlx4.QP_STATE_RST || win == nil {
		return
	}
	var c Cmd
	c.VF, c.Mem, c.InMod = qp.tr.Owner, win, uint32(qp.tr.ID)
	q, _ := mlx4.DecodeQPContext(qp.Ctx[mlx4.QPMailboxContext:])
	mtt, err := h.Res.MTTRange(c.VF, q.MTTBase, q.MTTPages())
	if err != nil {
		return
	}
	w, s := h.wqBuild(&c, &q, mtt)
	if s != mlx4.OK {
		return
	}
	qp.wq = w
	h.wqTransition(qp, mlx4.QP_STATE_RST)
}

// sqAddr is the IOVA of byte off of send WQE slot idx (off < stride, a
// multiple of 64 or inside one 64-byte chunk).
func (w *wq) sqAddr(idx uint32, off uint64) uint64 {
	return w.pageAt(w.sqOff + uint64(idx&(w.sqCnt-1))<<w.sqShift + off)
}

// wqeBBs is how many strides a WQE of size 16-byte units spans (one at
// least).
func (w *wq) wqeBBs(size uint8) uint32 {
	return max(1, (uint32(size)*mlx4.WQESegUnit+1<<w.sqShift-1)>>w.sqShift)
}

// advanceSQ moves SQHead past the WQE there (headBBs strides).
func (w *wq) advanceSQ(qp *qpObj) {
	qp.SQHead = (qp.SQHead + max(1, w.headBBs)) & 0xffff
	w.headBBs = 0
}

// noPage is the IOVA of ring bytes past the pages the MTT maps: no window
// translates it.
const noPage = 1 << 63

// pageAt is the IOVA of byte a of the ring, or noPage past its pages.
func (w *wq) pageAt(a uint64) uint64 {
	if i := a >> w.pageShift; i < uint64(len(w.pages)) {
		return w.pages[i] + a&(1<<w.pageShift-1)
	}
	return noPage
}

// rqAddr is the IOVA of byte off of receive WQE slot idx.
func (w *wq) rqAddr(idx uint32, off uint64) uint64 {
	return w.pageAt(w.rqOff + uint64(idx&(w.rqCnt-1))<<w.rqShift + off)
}
