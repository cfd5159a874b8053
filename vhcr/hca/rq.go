package hca

// The receive side: receive queues, SRQs and the responder's CQEs.
//
// A QP's receive queue is a ring of rq_size WQEs of the context's stride;
// its producer is the doorbell record at db_rec_addr, BE32 head & 0xffff
// (mlx4_post_recv: *qp->db = htobe32(qp->rq.head & 0xffff)), the count of
// WQEs posted modulo 2^16; the firmware's consumer is QPState.RQHead. A
// receive WQE is a scatter list of data segments ending at the stride or at
// lkey MLX4_INVALID_LKEY (mlx4.DecodeRecvWQE). An SRQ (srqn in the QP
// context) replaces the QP's receive queue: its WQEs start with a next
// segment whose next_wqe_index links the free list libmlx4 and the kernel
// keep (mlx4_post_srq_recv takes WQE srq->head and follows its link); the
// device takes WQE SRQState.Head, and the link read from that WQE names
// the next one. Its doorbell record holds the 16-bit count of WQEs posted
// (*srq->db = htobe32(srq->counter)); SRQState.Taken counts those taken.
// A producer claiming more WQEs than the ring holds is taken as a full
// ring: each WQE is consumed once per reception, so the work stays bounded
// whatever the VF writes.
//
// A message consumes one receive WQE; its data is scattered in order over
// the entries (each checked: the responder's lkey with local write); a
// message longer than the list is a local length error at the responder.
// For UD the first 40 bytes of the scatter are the GRH's (written when
// the packet has one, left as they are when not), and byte_cnt counts
// them, as hardware does (ibv_ud_pingpong posts 40 bytes more).

import (
	"encoding/binary"

	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// canReceive: the states in which a QP's receive side processes packets.
func canReceive(qp *qpObj) bool {
	switch qp.State {
	case mlx4.QP_STATE_RTR, mlx4.QP_STATE_RTS, mlx4.QP_STATE_SQD, mlx4.QP_STATE_SQER:
		return true
	}
	return false
}

// srqWQ is an SRQ's ring, built on first use from its context.
type srqWQ struct {
	win       *dma.Window
	pageShift uint
	pages     []uint64
	shift     uint
	cnt       uint32
	dbRec     uint64
}

// recvSlot is a receive WQE found for a message, not yet consumed.
type recvSlot struct {
	srq   *srqObj
	index uint16 // the CQE's wqe_index: RQ counter, or SRQ WQE index
	next  uint16 // SRQ: the WQE's next_wqe_index
	avail uint32 // WQEs available before this one is taken
}

// dbRecord reads a doorbell record's 16-bit producer (the RQ's head or the SRQ's counter) into the HCA's scratch word, through the window.
func (h *HCA) dbRecord(win *dma.Window, addr uint64) (uint16, bool) {
	if win.CopyIn(h.dp.word[:4], addr) != nil {
		return 0, false
	}
	return uint16(binary.BigEndian.Uint32(h.dp.word[:4]) & mlx4.RQDBRecHeadMask), true
}

// recvPeek finds the receive WQE the next message to dq takes and decodes
// its scatter list into h.dp.recv. ok false: none posted (RNR for RC, a
// drop for UD). bad true: the WQE is there but malformed (too many
// entries: the responder's local QP operation error).
func (h *HCA) recvPeek(dq *qpObj, s *recvSlot) (ok, bad bool) {
	w := dq.wq
	*s = recvSlot{}
	if w.srq {
		return h.srqPeek(dq, s)
	}
	if w.rqCnt == 0 {
		return false, false
	}
	if w.rqAhead == 0 {
		// the VF's doorbell record: a cache miss when the VF has just
		// posted, so read only when the count of the last read is used up
		prod, rok := h.dbRecord(w.win, w.dbRec)
		if !rok {
			return false, false
		}
		avail := uint32(prod-uint16(dq.RQHead)) & 0xffff
		if avail == 0 {
			return false, false
		}
		w.rqAhead = min(avail, w.rqCnt)
	}
	s.avail = w.rqAhead
	s.index = uint16(dq.RQHead)
	n := 1 << w.rqShift
	buf := h.dp.rwqe[:n]
	for off := 0; off < n; off += min(n, wqChunk) {
		k := min(n-off, wqChunk)
		if w.win.CopyIn(buf[off:off+k], w.rqAddr(dq.RQHead, uint64(off))) != nil {
			return true, true
		}
	}
	return true, h.dp.recv.Decode(buf, false) != nil
}

// recvConsume takes the WQE recvPeek found.
func (h *HCA) recvConsume(dq *qpObj, s *recvSlot) {
	if s.srq == nil {
		dq.RQHead = (dq.RQHead + 1) & 0xffff
		if dq.wq.rqAhead > 0 {
			dq.wq.rqAhead--
		}
		h.dpTouchQP(dq)
		return
	}
	q := s.srq
	q.Head = s.next
	q.Taken++
	h.dpTouchSRQ(q)
	if q.Limit != 0 && s.avail-1 < uint32(q.Limit) {
		// SRQ limit reached: the event, and the limit disarms (ARM_SRQ
		// arms it again).
		q.Limit = 0
		_ = h.SRQEvent(uint32(q.tr.ID), mlx4.EventSRQLimit)
	}
}

// srqPeek is recvPeek for a QP on an SRQ.
func (h *HCA) srqPeek(dq *qpObj, s *recvSlot) (ok, bad bool) {
	q := h.fw.srqs[dq.wq.srqn]
	if q == nil || q.tr.Owner != dq.wq.vf {
		return false, false
	}
	if q.q == nil && !h.srqBuild(q, dq.wq.win) {
		return false, false
	}
	r := q.q
	prod, rok := h.dbRecord(r.win, r.dbRec)
	if !rok {
		return false, false
	}
	avail := uint32(prod-q.Taken) & 0xffff
	if avail == 0 {
		return false, false
	}
	s.srq, s.avail, s.index = q, min(avail, r.cnt), q.Head
	n := 1 << r.shift
	buf := h.dp.rwqe[:n]
	for off := 0; off < n; off += wqChunk {
		k := min(n-off, wqChunk)
		a := uint64(uint32(q.Head)&(r.cnt-1))<<r.shift + uint64(off)
		if r.win.CopyIn(buf[off:off+k], r.pages[a>>r.pageShift]+a&(1<<r.pageShift-1)) != nil {
			return true, true
		}
	}
	err := h.dp.recv.Decode(buf, true)
	s.next = h.dp.recv.NextWQEIndex
	return true, err != nil
}

// srqBuild makes the SRQ's ring from its context and MTT; a geometry that
// does not fit (an MTT entry never written, a page outside the window)
// is the SRQ's catastrophic error.
func (h *HCA) srqBuild(q *srqObj, win *dma.Window) bool {
	ctx, _ := mlx4.DecodeSRQContext(q.Ctx[:])
	r := &srqWQ{win: win, pageShift: uint(ctx.LogPageSize) + mlx4.PageShift, shift: uint(ctx.LogStride) + 4,
		cnt: 1 << ctx.LogSize, dbRec: ctx.DBRecAddr}
	fail := func() bool { _ = h.SRQEvent(uint32(q.tr.ID), mlx4.EventSRQCatasError); return false }
	if r.pageShift > 30 || r.shift < 5 {
		return fail()
	}
	mtt := h.fw.mtt[ctx.MTTBase]
	total := uint64(r.cnt) << r.shift
	npages := (total + 1<<r.pageShift - 1) >> r.pageShift
	if npages > uint64(ctx.MTTPages()) || npages > uint64(len(mtt)) {
		return fail()
	}
	r.pages = make([]uint64, npages)
	for i := range r.pages {
		e := mtt[i]
		addr := e &^ (1<<r.pageShift - 1)
		if e&mlx4.MTT_FLAG_PRESENT == 0 {
			return fail()
		}
		if _, err := win.Translate(addr, int(min(1<<r.pageShift, total)), dma.ReadWrite); err != nil {
			return fail()
		}
		r.pages[i] = addr
	}
	q.q = r
	return true
}

// scatterList checks the receive WQE's entries (h.dp.recv) for a message
// of n bytes (grh: 40 bytes more first) into h.dp.dst: the entries it
// reaches, each the responder's lkey with local write. It returns the
// entries used and the syndrome (0: fits and checks).
func (h *HCA) scatterList(dq *qpObj, n uint64) (int, uint8) {
	r := &h.dp.recv
	k := 0
	for i := 0; i < r.NSGE && n > 0; i++ {
		g := &r.SGE[i]
		l := min(uint64(g.ByteCount), n)
		d := &h.dp.dst[k]
		if h.checkKey(dq.wq, g.LKey, mlx4.PERM_LOCAL_WRITE, false, g.Addr, l, &d.m) != keyOK {
			return 0, mlx4.CQE_SYNDROME_LOCAL_PROT_ERR
		}
		d.kind, d.addr, d.n = segKey, g.Addr, l
		k++
		n -= l
	}
	if n > 0 {
		return 0, mlx4.CQE_SYNDROME_LOCAL_LENGTH_ERR
	}
	return k, 0
}

// recvCQE writes the responder's CQE for a message into dq's receive CQ
// (solicited when the sending WQE asked for the solicited event).
func (h *HCA) recvCQE(dq *qpObj, s *recvSlot, e *mlx4.CQE) {
	e.VlanMyQPN = dq.wq.qpn & mlx4.CQE_QPN_MASK
	e.WQEIndex = s.index
	h.cqe(dq, 0, dq.wq.rcqn, e, h.dp.send.Ctrl.SrcRBFlags&mlx4.WQE_CTRL_SOLICITED != 0)
}

// recvError completes the receive WQE s of dq in error (syndrome) and
// puts dq in the error state: the responder's side of a failed message.
func (h *HCA) recvError(dq *qpObj, s *recvSlot, syndrome uint8) {
	h.recvConsume(dq, s)
	e := &h.dp.cqe
	*e = mlx4.CQE{}
	e.SetError(syndrome, 0)
	h.recvCQE(dq, s, e)
	h.qpError(dq, 0)
}

// flushRQ completes every receive WQE posted to qp (not an SRQ's) with
// WR_FLUSH_ERR, at most budget; it returns how many.
func (h *HCA) flushRQ(qp *qpObj, budget int) int {
	w := qp.wq
	if w.srq || w.rqCnt == 0 || budget <= 0 {
		return 0
	}
	prod, ok := h.dbRecord(w.win, w.dbRec)
	if !ok {
		return 0
	}
	avail := min(uint32(prod-uint16(qp.RQHead))&0xffff, w.rqCnt, uint32(budget))
	w.rqAhead = 0 // the flush takes them: the count is read again after it
	for range avail {
		e := &h.dp.cqe
		*e = mlx4.CQE{}
		e.SetError(mlx4.CQE_SYNDROME_WR_FLUSH_ERR, 0)
		e.VlanMyQPN = w.qpn
		e.WQEIndex = uint16(qp.RQHead)
		h.cqe(qp, 0, w.rcqn, e, false)
		qp.RQHead = (qp.RQHead + 1) & 0xffff
		h.dpTouchQP(qp)
	}
	return int(avail)
}

// rqPending: receive WQEs posted to a QP in error wait for their flush.
func (h *HCA) rqPending(qp *qpObj) bool {
	w := qp.wq
	if w.srq || w.rqCnt == 0 {
		return false
	}
	prod, ok := h.dbRecord(w.win, w.dbRec)
	return ok && prod != uint16(qp.RQHead)
}
