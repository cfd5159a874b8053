package hca

// The send engine: a QP's send queue, walked by ownership.
//
// The device learns of send WQEs by their ownership, not from the
// doorbell (which carries only the QPN): the WQE at the firmware's
// counter QPState.SQHead (the 16-bit sq_wqe_counter) is the device's when
// its owner bit (owner_opcode bit 31) equals the pass, SQHead & sq_size ≠
// 0 (the drivers write it last, after a barrier), its size (fence_size
// 5:0, 16-byte units) is not zero, and no 64-byte chunk of it after the
// first still holds the stamp 0xffffffff (the drivers stamp every WQE at
// RESET→INIT and the one sq_spare_wqes ahead after each post: a chunk not
// yet written since). A WQE that fails these is not executed and stays
// where it is: a half-written WQE is tried again at the next scan. A WQE
// larger than the stride, or one the decoder refuses (an opcode the
// transport does not have, a segment past its size), is a local QP
// operation error. Each WQE is executed at most once (SQHead moves past
// it), runSQ executes at most budget of them, and a ring that never ends
// (every slot valid on every pass) costs budget WQEs per call and no more.
//
// Completions. A WQE with CQ_UPDATE in srcrb_flags gets a CQE on the send
// CQ whose wqe_index is its counter; an unsignalled one gets none, and the
// next signalled CQE implies it completed (libmlx4's mlx4_poll_one moves
// the SQ's tail to the CQE's wqe_index; mlx4_ib's the same). Errors are
// always completed: the failing WQE's error CQE (mlx4's syndrome), then
// the QP leaves RTS — RC to ERR; UD and UC to SQER (IBA 10.8.3: their
// send errors do not touch the receive side) — and every WQE after it on
// the send queue (and for ERR every receive WQE posted) is completed with
// WR_FLUSH_ERR, now and as the VF posts more (ib_drain_qp posts after ERR
// and waits for that flush).
//
// Ordering. The engine is synchronous: a WQE is finished (its data in the
// responder's memory, an RDMA READ's or atomic's response in the local
// sink, both CQEs written) before the next WQE of any QP starts. A fenced
// WQE (fence_size bit 6) waits until the RDMA READs and atomics before it
// completed: here that always holds already, so the fence never delays.
//
// RC requester errors as hardware reports them (IBA 9.9, the NAK codes):
// a destination port not Active or no QP there that takes the packet (a
// packet lost: no ACK ever comes) is retried after the path's local ACK
// timeout, retry_count times, and then transport retry exceeded; a retry
// that finds the route back succeeds; timeout 0 waits for ever (retry.go).
// With path migration armed (pm_state ARMED and an alternate
// path: its rlid set), a lost primary path also raises PATH_MIG_FAILED:
// the model has no automatic path migration (the alternate path is
// checked at the modify commands, never used to send), and hardware that
// cannot migrate reports it so. A receive WQE missing at the responder is
// an RNR NAK: the WQE stays at SQHead and is tried again after the
// responder's RNR timer (min_rnr_timer), for ever with rnr_retry 7, else
// it fails with RNR retry exceeded at the NAK after rnr_retry retries
// (retry.go). While a WQE waits, the WQEs behind it wait too.
// The responder's errors come back as the NAK's syndrome: a bad rkey,
// access or bounds is remote access error (the responder QP takes a
// WQ_ACCESS_ERROR event and ERR); a message too long for the receive WQE
// or an RDMA READ/atomic without the QP's enable is remote invalid request
// (the responder's receive WQE fails with local length error, or the
// responder QP takes WQ_INVAL_REQ_ERROR); a receive scatter whose lkey
// fails is remote operation error (the responder's WQE fails with local
// protection error). A WQE ring page the window no longer allows (the
// device cannot read the WQE) is the QP's local work queue catastrophic
// error: the event, the QP to ERR, no CQE for that WQE.

import (
	"encoding/binary"
	"github.com/vhcrd/vhcrd/vhcr/eswitch"
	"sync/atomic"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// EngineStats are one VF's work-request engine counters (metrics read
// them at scrape time; the CQ layer's are DataPathStats).
type EngineStats struct {
	WQEs       atomic.Uint64 // send WQEs executed (errors and flushes included)
	ErrorCQEs  atomic.Uint64 // error CQEs written, flushes included
	CQEDrops   atomic.Uint64 // CQEs the CQ layer refused (overrun, no CQ)
	UDDropped  atomic.Uint64 // UD packets dropped: port down, unknown DLID or QP, no receive WQE
	UCDropped  atomic.Uint64 // UC packets a responder dropped (bad rkey, access)
	PKeyViol   atomic.Uint64 // packets dropped on their P_Key (UD, RC, UC)
	QKeyViol   atomic.Uint64 // UD packets dropped on their Q_Key
	Catas      atomic.Uint64 // local work queue catastrophic errors
	RNRRetries atomic.Uint64 // RNR NAKs retried (after the responder's RNR timer)

	TransportRetries atomic.Uint64 // RC packets sent again after the local ACK timeout (retry.go)

	TunnelOut atomic.Uint64 // MADs the VF's proxy QPs sent that the tunnel passed to the wire (tunnel.go)
	TunnelIn  atomic.Uint64 // MADs the tunnel delivered to the VF's proxy QPs

	// EthTx counts the raw Ethernet frames the VF's QPs sent, by what the
	// port's switch did with them (eth.go).
	EthTx eswitch.Counters
	// EthRx counts the frames the switch steered to the VF's QPs, by what
	// their ingress did; EthRxNoWQE those passed with no receive WQE
	// posted (dropped).
	EthRx      eswitch.Counters
	EthRxNoWQE atomic.Uint64
}

// EngineStats returns VF vf's engine counters (nil for no such VF).
func (h *HCA) EngineStats(vf int) *EngineStats {
	if vf < 0 || vf >= len(h.fw.vfs) {
		return nil
	}
	return &h.fw.vfs[vf].eng
}

// Segment kinds of a data transfer.
const (
	segKey    = iota // a checked region
	segInline        // bytes of the WQE (or the GRH) the PF holds
	segSkip          // bytes of the destination left untouched (UD without GRH)
)

type seg struct {
	kind uint8
	m    mref
	addr uint64
	n    uint64
	inl  []byte
}

// dpScratch is the engine's working memory, allocated once.
type dpScratch struct {
	wqe    [maxWQEBytes]byte
	rwqe   [maxWQEBytes]byte
	send   mlx4.SendWQE
	recv   mlx4.RecvWQE
	src    [mlx4.MaxSGE + 1]seg
	dst    [mlx4.MaxSGE + 1]seg
	cqe    mlx4.CQE
	word   [8]byte
	grh    [mad.GRHSize]byte
	atom   [8]byte
	bounce [4096]byte
	wc     mad.WC
	ghdr   mad.GRH
	srcLID uint16  // the sending port's LID, as routePort last found it
	back   pktSize // what the responder of the RC WQE sends back (sendConnected)
}

func (h *HCA) scratch() {
	if h.dp == nil {
		h.dp = new(dpScratch)
	}
}

// sqValid reads the control segment's first 8 bytes at SQHead: the WQE is
// the device's for this pass.
func (h *HCA) sqValid(qp *qpObj) (valid, ok bool) {
	w := qp.wq
	if w.win.CopyIn(h.dp.word[:8], w.sqAddr(qp.SQHead, 0)) != nil {
		return false, false
	}
	oo := binary.BigEndian.Uint32(h.dp.word[mlx4.CtrlOwnerOpcode:])
	size := h.dp.word[mlx4.CtrlFenceSize] & mlx4.WQESizeMask
	pass := qp.SQHead&w.sqCnt != 0
	return oo != mlx4.WQEStamp && (oo&mlx4.WQEOwner != 0) == pass && size != 0, true
}

// sqPending reports whether qp has a send WQE (or, in ERR, a receive WQE)
// the device would take now: one read of the next control segment.
func (h *HCA) sqPending(qp *qpObj) bool {
	if qp.wq == nil || qp.Suspended {
		return false
	}
	h.scratch()
	switch qp.State {
	case mlx4.QP_STATE_RTS:
		if qp.wq.rt.wait && h.sqWaiting(qp.wq) {
			return false // a retry's deadline to come (retry.go): no work
		}
	case mlx4.QP_STATE_SQER, mlx4.QP_STATE_ERR:
	default:
		return false
	}
	v, ok := h.sqValid(qp)
	if !ok {
		return qp.State == mlx4.QP_STATE_RTS // the catastrophic error is runSQ's to report
	}
	return v || qp.State == mlx4.QP_STATE_ERR && h.rqPending(qp)
}

// fetch results.
const (
	fetchNone  = iota // no valid WQE at SQHead
	fetchOK           // h.dp.wqe holds it
	fetchBad          // larger than the ring: local QP operation error
	fetchCatas        // its pages cannot be read
)

// fetchSQ reads the WQE at SQHead into h.dp.wqe, checking ownership and
// stamps; n is its size in bytes.
func (h *HCA) fetchSQ(qp *qpObj) (int, int) {
	w := qp.wq
	var v, ok bool
	if w.peeked && w.peekAt == qp.SQHead { // sqNext's look, this run
		h.dp.word, v, ok = w.peek, true, true
	} else {
		v, ok = h.sqValid(qp)
	}
	w.peeked = false
	if !ok {
		return fetchCatas, 0
	}
	if !v {
		return fetchNone, 0
	}
	size := h.dp.word[mlx4.CtrlFenceSize] & mlx4.WQESizeMask
	n := int(size) * mlx4.WQESegUnit
	// A WQE larger than the stride spans the strides after it (wrapping
	// at the ring's end): SQHead moves past all of them. One larger than
	// the ring is the local QP operation error.
	bbs := w.wqeBBs(size)
	w.headBBs = bbs
	if bbs > w.sqCnt {
		w.headBBs = 1
		return fetchBad, 0
	}
	chunks := (n + wqChunk - 1) / wqChunk
	for i := range chunks {
		b := h.dp.wqe[i*wqChunk : (i+1)*wqChunk]
		o := uint64(i * wqChunk)
		if w.win.CopyIn(b, w.sqAddr(qp.SQHead+uint32(o>>w.sqShift), o&(1<<w.sqShift-1))) != nil {
			return fetchCatas, 0
		}
		if i > 0 && binary.BigEndian.Uint32(b) == mlx4.WQEStamp {
			return fetchNone, 0 // not written yet
		}
	}
	// The owner word again, last: a WQE whose owner was read before the
	// rest was complete is taken only if it still says so.
	if binary.BigEndian.Uint32(h.dp.wqe[:]) != binary.BigEndian.Uint32(h.dp.word[:]) {
		return fetchNone, 0
	}
	return fetchOK, n
}

// runSQ executes up to budget send WQEs of qp in order and returns how
// many it consumed (0: nothing valid). In SQER and ERR it flushes what the
// VF posted instead.
func (h *HCA) runSQ(qp *qpObj, budget int) int {
	w := qp.wq
	if w == nil || budget <= 0 || qp.Suspended {
		return 0 // SUSPEND_QP: the QP does nothing until UNSUSPEND_QP
	}
	h.scratch()
	w.peeked = false // a look of an earlier run may be stale (a command ran since)
	switch qp.State {
	case mlx4.QP_STATE_RTS:
	case mlx4.QP_STATE_SQER, mlx4.QP_STATE_ERR:
		n := h.flush(qp, budget)
		h.dpStep()
		return n
	default:
		return 0
	}
	// One step for the run of WQEs (dplog.go): ended early when it has no
	// room for another WQE, around an atomic (the log keeps one intent),
	// by an error, and when the WQE after one with CQEs is not there yet
	// (a lone WQE's completion is not held back for the look that finds
	// the queue empty).
	done := 0
	for done < budget && qp.State == mlx4.QP_STATE_RTS {
		if !h.dpRoom() {
			h.dpStep()
		}
		h.dpWQE()
		if w.rt.wait { // a retry pending (retry.go): one load when none is
			if h.sqWaiting(w) {
				h.dpStep()
				return done
			}
			if h.retryDue(qp) {
				h.dpStep()
				done++
				continue
			}
		}
		r, n := h.fetchSQ(qp)
		switch r {
		case fetchNone:
			h.dpStep()
			return done
		case fetchCatas:
			h.fw.vfs[w.vf].eng.Catas.Add(1)
			h.qpError(qp, mlx4.EventWQCatasError)
			h.dpStep()
			return done
		case fetchBad:
			h.sqError(qp, 0, mlx4.CQE_SYNDROME_LOCAL_QP_OP_ERR)
			h.dpStep()
			done++
			continue
		}
		atomic := mlx4.IsAtomicOpcode(binary.BigEndian.Uint32(h.dp.wqe[:]) & mlx4.WQEOpcodeMask)
		if atomic {
			h.dpStep()
		}
		if !h.execWQE(qp, n) {
			h.dpStep()
			return done // RNR or lost: the WQE waits for its retry
		}
		if atomic || h.dpHeld() && qp.State == mlx4.QP_STATE_RTS && !h.sqFollows(qp, done) {
			h.dpStep() // an atomic alone; or no WQE behind this one yet: its CQEs out now
		}
		done++
	}
	h.dpStep() // the run's completions (dplog.go)
	return done
}

// sqFollows reports whether the run holds the CQEs of the WQE it just
// executed (done WQEs before it in the run) back for the WQE after it:
// whether that WQE is already the device's (sqNext). A QP whose last
// lonelyAfter looks found none (a ping-pong: every run one WQE) is not
// looked at: the look reads a line the VF writes, a cache miss before the
// CQEs go out, while the run's next fetch finds the WQE as well, after
// them. A run of two WQEs or more is a stream again and looks.
func (h *HCA) sqFollows(qp *qpObj, done int) bool {
	w := qp.wq
	if done > 0 {
		w.lonely = 0
	} else if w.lonely >= lonelyAfter {
		return false
	}
	if h.sqNext(qp) {
		return true
	}
	if w.lonely < lonelyAfter {
		w.lonely++
	}
	return false
}

// lonelyAfter is how many looks in a row find no WQE behind a run's first
// before sqFollows stops looking.
const lonelyAfter = 4

// sqNext reports whether the WQE at SQHead is already the device's (its
// owner word only): the run goes on with it, and its fetch does not read
// the word again (wq.peek).
func (h *HCA) sqNext(qp *qpObj) bool {
	v, ok := h.sqValid(qp)
	if ok && v {
		w := qp.wq
		w.peek, w.peekAt, w.peeked = h.dp.word, qp.SQHead, true
	}
	return ok && v
}

// execWQE executes the WQE in h.dp.wqe[:n]; false: it was not consumed
// (an RNR NAK or a lost packet to retry).
func (h *HCA) execWQE(qp *qpObj, n int) bool {
	w := qp.wq
	d := &h.dp.send
	if d.Decode(h.dp.wqe[:n], w.st) != nil {
		h.sqError(qp, 0, mlx4.CQE_SYNDROME_LOCAL_QP_OP_ERR)
		return true
	}
	op := d.Ctrl.Opcode
	if op == mlx4.OPCODE_NOP {
		h.sqDone(qp, 0)
		return true
	}
	// The gather list: inline data, or local keys (local read is every
	// region's).
	total, syn := h.gatherList(qp, op)
	if syn != 0 {
		h.sqError(qp, op, syn)
		return true
	}
	if w.msgMax < 32 && total > 1<<w.msgMax {
		h.sqError(qp, op, mlx4.CQE_SYNDROME_LOCAL_LENGTH_ERR)
		return true
	}
	switch w.st {
	case mlx4.QP_ST_UD:
		return h.sendUD(qp, total)
	case mlx4.QP_ST_RC, mlx4.QP_ST_UC:
		return h.sendConnected(qp, op, total)
	case mlx4.QP_ST_MLX:
		return h.sendMLX(qp, total) // tunnel.go
	}
	h.sqError(qp, op, mlx4.CQE_SYNDROME_LOCAL_QP_OP_ERR)
	return true
}

// gatherList fills h.dp.src from the WQE's gather entries. For RDMA READ
// and atomics they are the local sink (local write); otherwise the
// source. A syndrome on a bad key.
func (h *HCA) gatherList(qp *qpObj, op uint8) (uint64, uint8) {
	d := &h.dp.send
	sink := op == mlx4.OPCODE_RDMA_READ || op == mlx4.OPCODE_ATOMIC_CS || op == mlx4.OPCODE_ATOMIC_FA
	var need uint32
	if sink {
		need = mlx4.PERM_LOCAL_WRITE
	}
	var total uint64
	for i := range d.NSGE {
		g := &d.SGE[i]
		s := &h.dp.src[i]
		if g.Inline {
			if sink {
				return 0, mlx4.CQE_SYNDROME_LOCAL_QP_OP_ERR
			}
			*s = seg{kind: segInline, n: uint64(g.ByteCount), inl: h.dp.wqe[g.Off : g.Off+int(g.ByteCount)]}
		} else {
			s.kind, s.addr, s.n, s.inl = segKey, g.Addr, uint64(g.ByteCount), nil
			if h.checkKey(qp.wq, g.LKey, need, false, g.Addr, s.n, &s.m) != keyOK {
				return 0, mlx4.CQE_SYNDROME_LOCAL_PROT_ERR
			}
		}
		total += s.n
	}
	return total, 0
}

// stream copies the bytes of src into dst in order (dst holds at least as
// many); false on a page or window that refuses.
func (h *HCA) stream(dst, src []seg) bool {
	si, di := 0, 0
	var so, do uint64
	for si < len(src) && di < len(dst) {
		s, d := &src[si], &dst[di]
		if so == s.n {
			si, so = si+1, 0
			continue
		}
		if do == d.n {
			di, do = di+1, 0
			continue
		}
		k := min(s.n-so, d.n-do)
		ok := true
		switch {
		case s.kind == segSkip:
		case s.kind == segInline:
			ok = d.m.write(d.addr+do, s.inl[so:so+k])
		default:
			ok = h.copyRegions(&d.m, d.addr+do, &s.m, s.addr+so, k)
		}
		if !ok {
			return false
		}
		so, do = so+k, do+k
	}
	return true
}

// sendConnected executes an RC or UC WQE against the QP at the other end.
func (h *HCA) sendConnected(qp *qpObj, op uint8, total uint64) bool {
	w := qp.wq
	rc := w.st == mlx4.QP_ST_RC
	switch op {
	case mlx4.OPCODE_SEND, mlx4.OPCODE_SEND_IMM, mlx4.OPCODE_RDMA_WRITE, mlx4.OPCODE_RDMA_WRITE_IMM:
	case mlx4.OPCODE_RDMA_READ, mlx4.OPCODE_ATOMIC_CS, mlx4.OPCODE_ATOMIC_FA:
		if !rc {
			h.sqError(qp, op, mlx4.CQE_SYNDROME_LOCAL_QP_OP_ERR)
			return true
		}
	default: // SEND_INVAL, LOCAL_INVAL, masked atomics: not offered (QUERY_DEV_CAP)
		h.sqError(qp, op, mlx4.CQE_SYNDROME_LOCAL_QP_OP_ERR)
		return true
	}
	var dq *qpObj
	var rr routeRes
	if w.roce { // by MAC and GID through the port's switch (roce.go)
		dq, rr = h.roceRoute(qp, w.dmac, &w.rgid, txTag(w, 0, false), w.remoteQPN, w.st)
	} else {
		var port int
		if port, _, rr = h.routePort(qp.Port, w.rlid, rcRequestSize(w, op, total)); rr == routeOK {
			dq = h.routeQP(port, w.remoteQPN)
		}
	}
	if rr == routeOK && (dq == nil || dq.wq.st != w.st || dq.wq.remoteQPN != w.qpn) {
		dq, rr = nil, routeNoQP
	}
	if rr != routeOK {
		if w.pmArmed && rr != routeNoQP {
			// The primary path is lost with migration armed: hardware would
			// move to the alternate path; the model does not migrate
			// (automatic path migration is not modelled), which the QP
			// learns as hardware reports a failed migration.
			_ = h.QPEvent(w.qpn, mlx4.EventPathMigFailed)
			w.pmArmed = false
		}
		if !rc { // UC: nothing acknowledges; the message is gone
			h.sqDone(qp, uint32(total))
			return true
		}
		return h.lost(qp, op) // no ACK: the retry after the ACK timeout
	}
	dw := dq.wq
	// Every packet's P_Key is checked at the receiving port (IBA 9.6.1.1):
	// a mismatch drops it, counts it and raises trap 257 (each retry's
	// packet again); for RC no ACK comes: retried after the ACK timeout.
	if spk := h.pkey(qp.Port, w.pkeyIndex); !pkeyMatch(spk, h.pkey(dq.Port, dw.pkeyIndex)) {
		h.fw.vfs[dw.vf].eng.PKeyViol.Add(1)
		h.keyTrap(dq, w.qpn, dq.Port, h.portView(qp.Port).lid|uint16(w.pathBits), 0, w.sl, false, true, uint32(spk))
		if !rc {
			h.sqDone(qp, uint32(total))
			return true
		}
		return h.lost(qp, op)
	}
	h.dp.back = ackSize(w) // a READ response or an atomic ACK: set where they succeed
	var done bool
	switch op {
	case mlx4.OPCODE_SEND, mlx4.OPCODE_SEND_IMM:
		done = h.deliver(qp, dq, op, total, false)
	case mlx4.OPCODE_RDMA_WRITE, mlx4.OPCODE_RDMA_WRITE_IMM:
		done = h.rdmaWrite(qp, dq, op, total)
	case mlx4.OPCODE_RDMA_READ:
		done = h.rdmaRead(qp, dq, op, total)
	default: // atomics
		done = h.atomic(qp, dq, op)
	}
	if rc {
		h.countBack(dq.Port, qp.Port, h.dp.back)
	}
	return done
}

// rdmaWrite executes RDMA_WRITE or RDMA_WRITE_IMM into dq's region.
func (h *HCA) rdmaWrite(qp, dq *qpObj, op uint8, total uint64) bool {
	d := &h.dp.send
	if syn, ev := h.remoteRange(dq, dq.wq.rwe, mlx4.PERM_REMOTE_WRITE, total, mlx4.CQE_SYNDROME_REMOTE_ACCESS_ERR, mlx4.EventWQAccessError); syn != 0 {
		return h.nak(qp, dq, op, syn, ev)
	}
	if op == mlx4.OPCODE_RDMA_WRITE_IMM {
		return h.deliver(qp, dq, op, total, true)
	}
	if !h.stream(h.dp.dst[:1], h.dp.src[:d.NSGE]) {
		return h.nak(qp, dq, op, mlx4.CQE_SYNDROME_REMOTE_ACCESS_ERR, mlx4.EventWQAccessError)
	}
	h.sqDone(qp, uint32(total))
	return true
}

// remoteRange makes h.dp.dst[0] the WQE's remote range on dq, total
// bytes through its rkey with perm. A non-zero syndrome (and the event to
// the responder's VF) is the NAK: off (dq does not take the operation)
// gives offSyn and offEv, a key that fails an access error.
func (h *HCA) remoteRange(dq *qpObj, on bool, perm uint32, total uint64, offSyn, offEv uint8) (uint8, uint8) {
	d, t := &h.dp.send, &h.dp.dst[0]
	if total > 0 {
		if !on {
			return offSyn, offEv
		}
		if h.checkKey(dq.wq, d.RAddr.RKey, perm, true, d.RAddr.RAddr, total, &t.m) != keyOK {
			return mlx4.CQE_SYNDROME_REMOTE_ACCESS_ERR, mlx4.EventWQAccessError
		}
	}
	t.kind, t.addr, t.n = segKey, d.RAddr.RAddr, total
	return 0, 0
}

// rdmaRead executes RDMA_READ from dq's region into the local sink.
func (h *HCA) rdmaRead(qp, dq *qpObj, op uint8, total uint64) bool {
	d := &h.dp.send
	if syn, ev := h.remoteRange(dq, dq.wq.rre, mlx4.PERM_REMOTE_READ, total, mlx4.CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, mlx4.EventWQInvalReq); syn != 0 {
		return h.nak(qp, dq, op, syn, ev)
	}
	// The response lands in the local sink (h.dp.src, checked for
	// local write): a stream from the remote region into it.
	h.dp.back = readResponseSize(qp.wq, total)
	if !h.stream(h.dp.src[:d.NSGE], h.dp.dst[:1]) {
		h.sqError(qp, op, mlx4.CQE_SYNDROME_LOCAL_PROT_ERR)
		return true
	}
	h.sqDone(qp, uint32(total))
	return true
}

// atomic executes ATOMIC_CMP_SWP or ATOMIC_FETCH_ADD: 8 bytes at the
// remote address (8-aligned), big-endian as on the wire; the original value
// goes to the local sink (the first gather entry, 8 bytes).
func (h *HCA) atomic(qp, dq *qpObj, op uint8) bool {
	d := &h.dp.send
	dw := dq.wq
	if !dw.rae || d.RAddr.RAddr&7 != 0 {
		return h.nak(qp, dq, op, mlx4.CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, mlx4.EventWQInvalReq)
	}
	var t mref
	if h.checkKey(dw, d.RAddr.RKey, mlx4.PERM_ATOMIC, true, d.RAddr.RAddr, 8, &t) != keyOK {
		return h.nak(qp, dq, op, mlx4.CQE_SYNDROME_REMOTE_ACCESS_ERR, mlx4.EventWQAccessError)
	}
	if d.NSGE > 0 && h.dp.src[0].n < 8 {
		h.sqError(qp, op, mlx4.CQE_SYNDROME_LOCAL_LENGTH_ERR)
		return true
	}
	b := h.dp.atom[:]
	if !t.read(b, d.RAddr.RAddr) {
		return h.nak(qp, dq, op, mlx4.CQE_SYNDROME_REMOTE_ACCESS_ERR, mlx4.EventWQAccessError)
	}
	// The original value is in the log before the remote value changes
	// (a restarted PF executing this WQE again takes it from there).
	orig := h.dpAtomic(qp, binary.BigEndian.Uint64(b))
	v := orig
	if op == mlx4.OPCODE_ATOMIC_CS {
		if orig == d.Atomic.Compare {
			v = d.Atomic.SwapAdd
		}
	} else {
		v = orig + d.Atomic.SwapAdd
	}
	binary.BigEndian.PutUint64(b, v)
	if !t.write(d.RAddr.RAddr, b) {
		return h.nak(qp, dq, op, mlx4.CQE_SYNDROME_REMOTE_ACCESS_ERR, mlx4.EventWQAccessError)
	}
	h.dp.back = atomicAckSize(qp.wq)
	if d.NSGE > 0 {
		binary.BigEndian.PutUint64(b, orig)
		if s := &h.dp.src[0]; !s.m.write(s.addr, b) {
			h.sqError(qp, op, mlx4.CQE_SYNDROME_LOCAL_PROT_ERR)
			return true
		}
	}
	h.sqDone(qp, 8)
	return true
}

// deliver is a message that consumes a receive WQE at dq: SEND, SEND_IMM
// (data scattered) or RDMA_WRITE_IMM (data already checked in h.dp.dst[0];
// the WQE only completes). false: RNR, to retry.
func (h *HCA) deliver(qp, dq *qpObj, op uint8, total uint64, writeImm bool) bool {
	w := qp.wq
	d := &h.dp.send
	rc := w.st == mlx4.QP_ST_RC
	var s recvSlot
	ok, bad := h.recvPeek(dq, &s)
	if !ok {
		if !rc { // UC: no RNR NAK; the message is dropped
			h.sqDone(qp, uint32(total))
			return true
		}
		return h.rnr(qp, dq, op)
	}
	if bad {
		h.recvError(dq, &s, mlx4.CQE_SYNDROME_LOCAL_QP_OP_ERR)
		return h.nakDone(qp, op, rc, mlx4.CQE_SYNDROME_REMOTE_OP_ERR)
	}
	e := &h.dp.cqe
	if writeImm {
		if !h.stream(h.dp.dst[:1], h.dp.src[:d.NSGE]) {
			return h.nak(qp, dq, op, mlx4.CQE_SYNDROME_REMOTE_ACCESS_ERR, mlx4.EventWQAccessError)
		}
	} else {
		k, syn := h.scatterList(dq, total)
		if syn != 0 {
			h.recvError(dq, &s, syn)
			if syn == mlx4.CQE_SYNDROME_LOCAL_LENGTH_ERR {
				return h.nakDone(qp, op, rc, mlx4.CQE_SYNDROME_REMOTE_INVAL_REQ_ERR)
			}
			return h.nakDone(qp, op, rc, mlx4.CQE_SYNDROME_REMOTE_OP_ERR)
		}
		if !h.stream(h.dp.dst[:k], h.dp.src[:d.NSGE]) {
			h.recvError(dq, &s, mlx4.CQE_SYNDROME_LOCAL_PROT_ERR)
			return h.nakDone(qp, op, rc, mlx4.CQE_SYNDROME_REMOTE_OP_ERR)
		}
	}
	h.recvConsume(dq, &s)
	*e = mlx4.CQE{} // zeroed, then stored field by field (setCQE, dplog.go)
	e.ByteCnt = uint32(total)
	switch op {
	case mlx4.OPCODE_SEND:
		e.Opcode = mlx4.RECV_OPCODE_SEND
	case mlx4.OPCODE_SEND_IMM:
		e.Opcode, e.ImmedRSSInvalid = mlx4.RECV_OPCODE_SEND_IMM, d.Ctrl.Imm
	default:
		e.Opcode, e.ImmedRSSInvalid = mlx4.RECV_OPCODE_RDMA_WRITE_IMM, d.Ctrl.Imm
	}
	e.GMLPathRQPN = w.qpn & mlx4.CQE_QPN_MASK
	e.SLVID = uint16(w.sl) << mlx4.CQESLShift
	e.RLID = h.dp.srcLID | uint16(w.pathBits) // routePort's look at qp.Port for this WQE
	h.recvCQE(dq, &s, e)
	h.sqDone(qp, uint32(total))
	return true
}

// nak is a responder's error NAK: the responder QP takes event ev and ERR,
// the requester the syndrome.
// On UC nothing is acknowledged: the responder drops the packet (counted)
// and stays as it is, the requester's WQE completes.
func (h *HCA) nak(qp, dq *qpObj, op uint8, syndrome, ev uint8) bool {
	if qp.wq.st != mlx4.QP_ST_RC {
		h.fw.vfs[dq.wq.vf].eng.UCDropped.Add(1)
		h.sqDone(qp, 0)
		return true
	}
	h.qpError(dq, ev)
	h.sqError(qp, op, syndrome)
	return true
}

// nakDone is the requester's side of a NAK whose responder side is done;
// on UC nothing comes back.
func (h *HCA) nakDone(qp *qpObj, op uint8, rc bool, syndrome uint8) bool {
	if !rc {
		h.sqDone(qp, uint32(0))
		return true
	}
	h.sqError(qp, op, syndrome)
	return true
}

// sqDone completes the WQE at SQHead: a CQE if it is signalled.
func (h *HCA) sqDone(qp *qpObj, byteCnt uint32) {
	w := qp.wq
	d := &h.dp.send
	h.fw.vfs[w.vf].eng.WQEs.Add(1)
	w.rt = sqRetry{}
	idx := qp.SQHead
	w.advanceSQ(qp)
	h.dpTouchQP(qp)
	// The CQE after the WQE is consumed: an error an injected fault makes
	// of it flushes from the next WQE on, as sqError's does.
	if d.Ctrl.SrcRBFlags&mlx4.WQE_CTRL_CQ_UPDATE != 0 {
		e := &h.dp.cqe
		*e = mlx4.CQE{}
		e.VlanMyQPN, e.ByteCnt, e.WQEIndex, e.IsSend, e.Opcode = w.qpn, byteCnt, uint16(idx), true, d.Ctrl.Opcode
		h.cqe(qp, d.Ctrl.Opcode, w.scqn, e, false)
	}
}

// sqError completes the WQE at SQHead with syndrome and takes the QP out
// of RTS: ERR for RC, SQER for UD and UC; the rest is flushed.
func (h *HCA) sqError(qp *qpObj, op uint8, syndrome uint8) {
	w := qp.wq
	h.fw.vfs[w.vf].eng.WQEs.Add(1)
	w.rt = sqRetry{}
	e := &h.dp.cqe
	*e = mlx4.CQE{VlanMyQPN: w.qpn, WQEIndex: uint16(qp.SQHead), IsSend: true, Opcode: op}
	e.SetError(syndrome, 0)
	h.cqe(qp, op, w.scqn, e, false)
	w.advanceSQ(qp)
	h.dpTouchQP(qp)
	h.sqLeave(qp)
}

// sqLeave takes qp out of RTS after a send error completion: RC to ERR,
// UD and UC to SQER; the rest is flushed.
func (h *HCA) sqLeave(qp *qpObj) {
	w := qp.wq
	if w.st == mlx4.QP_ST_RC {
		h.qpError(qp, 0)
		return
	}
	from := qp.State
	qp.State = mlx4.QP_STATE_SQER
	h.dpTouchQP(qp)
	h.wqTransition(qp, from)
	h.flush(qp, int(w.sqCnt))
}

// qpError moves qp to ERR (with async event ev, 0 for none) and flushes
// its queues.
func (h *HCA) qpError(qp *qpObj, ev uint8) {
	if qp.State == mlx4.QP_STATE_ERR {
		return
	}
	if ev != 0 {
		_ = h.QPEvent(qp.wq.qpn, ev)
	}
	from := qp.State
	qp.State = mlx4.QP_STATE_ERR
	h.dpTouchQP(qp)
	h.wqTransition(qp, from)
	h.flush(qp, int(qp.wq.sqCnt+qp.wq.rqCnt))
}

// flush completes with WR_FLUSH_ERR the send WQEs valid at SQHead and, in
// ERR, the receive WQEs posted: at most budget, the count returned.
func (h *HCA) flush(qp *qpObj, budget int) int {
	w := qp.wq
	n := 0
	for n < budget {
		v, ok := h.sqValid(qp)
		if !ok || !v {
			break
		}
		e := &h.dp.cqe
		oo := binary.BigEndian.Uint32(h.dp.word[:])
		*e = mlx4.CQE{VlanMyQPN: w.qpn, WQEIndex: uint16(qp.SQHead), IsSend: true, Opcode: uint8(oo & mlx4.WQEOpcodeMask)}
		e.SetError(mlx4.CQE_SYNDROME_WR_FLUSH_ERR, 0)
		h.cqe(qp, uint8(oo&mlx4.WQEOpcodeMask), w.scqn, e, false)
		w.headBBs = w.wqeBBs(h.dp.word[mlx4.CtrlFenceSize] & mlx4.WQESizeMask)
		w.advanceSQ(qp)
		h.dpTouchQP(qp)
		n++
	}
	if qp.State == mlx4.QP_STATE_ERR {
		n += h.flushRQ(qp, budget-n)
	}
	return n
}

// cqe hands qp's CQE e to the CQ layer (cqring.go), counting errors and
// refusals; op is a send CQE's WQE opcode; solicited: a receive of a
// message with the solicited-event bit (SOLICIT in the sender's
// srcrb_flags), which fires a REQ_NOT_SOL arm. Error CQEs count as
// solicited, as on hardware. With an injected-fault hook installed the
// hook decides first (dpfault.go).
func (h *HCA) cqe(qp *qpObj, op uint8, cqn uint32, e *mlx4.CQE, solicited bool) {
	if h.cqeHook != nil && h.cqeFault(qp, op, cqn, e, solicited) {
		return
	}
	h.completion(qp.wq.vf, cqn, e, solicited)
}

// completion is cqe's write, the fault hook's too.
func (h *HCA) completion(vf int, cqn uint32, e *mlx4.CQE, solicited bool) {
	st := &h.fw.vfs[vf].eng
	if e.IsError() {
		st.ErrorCQEs.Add(1)
	}
	if h.dpHold(cqn, e, solicited) {
		return // written at the step's end (dplog.go)
	}
	var err error
	if solicited || e.IsError() {
		err = h.postSolicitedCQE(cqn, e)
	} else {
		err = h.postCQE(cqn, e)
	}
	if err != nil {
		st.CQEDrops.Add(1)
	}
}
