package hca

// Exactly once on the data path across a kill of the PF at any instruction.
//
// What a VF can see of a work request: the memory it writes (RDMA WRITE,
// a SEND's scatter, a READ's or an atomic's sink, an atomic's remote
// value), the receive WQE it consumes, its CQEs and the completion EQEs
// they fire. The engine is synchronous and runs on the poller's goroutine,
// so one step is in flight at a time. The log (the state file's data-path
// region, pfstate's datapath.go; installed by the PF with
// AttachDataPathLog) keeps:
//
//   - the positions: per QP, SRQ and CQ an entry of two copies (the newer
//     valid one counts) with its runtime state — QP state, SQ and RQ
//     consumer indices; SRQ head, taken, limit; CQ producer and consumer
//     indices, arm, error. A command that creates, moves or arms an object
//     stores its entry as it does so (as the EQ positions are stored on
//     every EQE).
//   - the step records, in two slots: while a step runs, its CQEs are
//     held back; at its end the record gets the CQEs, the CQs' state
//     before them (with their EQ's producer index) and the QPs' and SRQs'
//     positions after, commit word last; then the CQEs are written (firing
//     completion EQEs), every object's state after the step written into
//     the record, and the record marked applied. The record applied last
//     is the newest copy of its objects' positions (dirty): the next step
//     stores the entries of the objects it does not name before its own
//     record goes into the other slot, and any other store of an entry
//     (a command, an arm, a destroy) stores them all and marks the record
//     flushed first (dpSettle). A run on the objects of the last one, a
//     ping-pong's or a stream's, stores no entry. Positions are therefore
//     never behind what the VF saw.
//
// A step is a run of WQEs of one QP (runSQ), so that a stream of small
// WQEs pays for one record and one CQE write pass per run: up to the
// record's room (dpRoom), one WQE's effects never split between two
// records, an atomic alone in its step (the log keeps one intent), and
// the step ended before an async event a later WQE raises, so that the
// event follows the CQEs of the WQEs before it as on hardware. (Where the WQE raising it has already touched the step, the
// step cannot end there and the event precedes the step's CQEs: the one
// order the model changes.) The CQEs of a run are written when the run
// ends: at once when the next WQE is not there yet (runSQ), else a
// budget's worth of WQEs (dpQuantum) at most after the first.
//   - the atomic intent: the original value an ATOMIC read, stored before
//     the remote value is written.
//
// A restarted PF applies the entries over the checkpoint and the journal
// (AttachDataPathLog), then the newest whole record (recoverSteps): an
// applied one's after-state; a committed and not applied one is redone
// over the state the applied record before it gives: the CQs' state
// before restored, the same CQEs written into the same slots, a
// completion EQE posted only where the EQ's producer index shows it was
// not, the positions after set. Then it stores the entries. A kill before
// a step's record leaves the positions where they were before the WQE:
// the WQE is executed again, writing the same bytes into the same places
// — the VF has seen no CQE of it, so no receive WQE, buffer or ring slot
// has been reused — and an atomic whose intent is there writes
// f(original) and returns the recorded original instead of reading the
// remote value again. A CQE rewritten into its slot cannot be read twice:
// the slot holds either the CQE of the previous pass (owner bit the other
// way: not the VF's) or this same CQE; the slot's next CQE is written only
// after the CQ's producer index passed it, which happens after the record
// is applied.

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/vhcrd/vhcrd/vhcr/internal/crashpoint"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/pfstate"
)

// DataPathLogStats are the data-path log's counters.
type DataPathLogStats struct {
	Steps    atomic.Uint64 // step records committed
	Redone   atomic.Uint64 // steps redone by a restarted PF
	Atomics  atomic.Uint64 // atomic intents written
	Replayed atomic.Uint64 // atomics executed again with their recorded original
	NoSlot   atomic.Uint64 // objects without a position entry (the table full)
	Applied  atomic.Uint64 // entries applied at a restart
}

type dpPendCQE struct {
	cqn  uint32
	sol  bool
	over bool // an injected CQ overrun in the CQE's place (dpfault.go)
	e    mlx4.CQE
}

// dpQPAfter, dpSRQAfter and dpCQAfter are an object of the last record
// applied with the state the record gives it (dpLog.dirty).
type dpQPAfter struct {
	qp         *qpObj
	st, sq, rq uint32
}

type dpSRQAfter struct {
	q                  *srqObj
	head, taken, limit uint32
}

type dpCQAfter struct {
	cq   *cqObj
	vals [pfstate.CQWords]uint32
}

type dpCQBefore struct {
	cq   *cqObj
	cqn  uint32
	eqn  int32
	eqP  uint32
	vals [pfstate.CQWords]uint32
}

// dpLog is the data path's log over the state file's region.
type dpLog struct {
	b    []byte
	hit  func(string)
	seq  uint64 // the last step's sequence (its record in slot seq % DPStepSlots)
	iseq uint64 // the last intent's
	free []int32
	next int32 // entries never used start here

	pend [pfstate.MaxStepCQEs]dpPendCQE
	np   int
	cqn  [pfstate.MaxStepCQs]uint32 // the distinct CQs of pend
	ncqn int
	wqe  bool // the WQE being executed has touched the step (dpTouch*, dpPend)
	in   bool // dpStep is writing the step's CQEs
	cqs  [pfstate.MaxStepCQs]dpCQBefore
	ncq  int
	qps  [pfstate.MaxStepQPs]*qpObj
	nqp  int
	srqs [pfstate.MaxStepSRQs]*srqObj
	nsrq int

	// dirty: the last record (l.seq's) is applied and is the newest copy
	// of its objects' positions, their entries older; dqp, dsrq and dcq
	// are those objects with the state it gives them. dpSettle stores
	// them before any other entry is stored; a step stores those it does
	// not move itself before its record.
	dirty bool
	dqp   [pfstate.MaxStepQPs]dpQPAfter
	ndqp  int
	dsrq  [pfstate.MaxStepSRQs]dpSRQAfter
	ndsrq int
	dcq   [pfstate.MaxStepCQs]dpCQAfter
	ndcq  int

	redo   bool
	redoEQ [pfstate.MaxStepCQs]struct {
		vf, eqn int
		next    uint32
	}
	nredo int

	ovValid bool
	ovQPN   uint32
	ovSQ    uint32
	ovOrig  uint64

	vals  [pfstate.EntWords]uint32
	stats DataPathLogStats
}

// DataPathLogStats returns the log's counters (nil without a log).
func (h *HCA) DataPathLogStats() *DataPathLogStats {
	if h.dl == nil {
		return nil
	}
	return &h.dl.stats
}

var le = binary.LittleEndian // the log's byte order (pfstate's)

// AttachDataPathLog installs the data path's log over region (the state
// file's Geometry.DP, DPSize bytes; zeroed for a fresh file) and, for a
// restarted PF after Load and the journal's replay, applies the positions
// it holds and redoes a step whose record was committed and not applied.
// hit is called at the named kill points (crashpoint.DP*). It reports
// whether a step was redone.
func (h *HCA) AttachDataPathLog(region []byte, hit func(string)) (redone bool) {
	if len(region) < pfstate.DPSize {
		return false
	}
	l := &dpLog{b: region[:pfstate.DPSize], hit: hit}
	h.dl = nil
	h.applyEntries(l)
	h.dl = l
	h.scratch()
	l.iseq = le.Uint64(l.b[pfstate.DPIntentOff+pfstate.IntSeq:])
	redone = h.recoverSteps()
	h.loadIntent()
	return redone
}

// recSlot is the step record slot of sequence seq.
func (l *dpLog) recSlot(seq uint64) []byte { return l.slotAt(int(seq % pfstate.DPStepSlots)) }

// slotAt is step record slot k.
func (l *dpLog) slotAt(k int) []byte {
	off := pfstate.DPStepOff + k*pfstate.DPStepSize
	return l.b[off : off+pfstate.DPStepSize]
}

// The states of a step record.
const (
	recNone      = iota // never written, torn, or not in its slot
	recCommitted        // committed, its CQEs not all written
	recApplied          // its CQEs written, its after-state whole
	recFlushed          // and its objects' entries stored
)

// recState is the state of the record in slot k and its sequence.
func (l *dpLog) recState(k int) (state int, seq uint64) {
	b := l.slotAt(k)
	seq = le.Uint64(b[pfstate.StepSeq:])
	switch le.Uint32(b[pfstate.StepCommit:]) {
	case pfstate.MagicStep ^ uint32(seq):
		state = recCommitted
	case pfstate.MagicApplied ^ uint32(seq):
		state = recApplied
	case pfstate.MagicFlushed ^ uint32(seq):
		state = recFlushed
	default:
		return recNone, seq
	}
	if seq == 0 || seq%pfstate.DPStepSlots != uint64(k) {
		return recNone, seq
	}
	if _, ok := recBody(b); !ok {
		return recNone, seq
	}
	return state, seq
}

// recBody returns the counts of the record b (CQEs, CQs, QPs, SRQs) if
// they are within the record's room and its check holds.
func recBody(b []byte) (n [4]int, ok bool) {
	cnt := le.Uint32(b[pfstate.StepCounts:])
	n = [4]int{int(cnt & 0xff), int(cnt >> 8 & 0xff), int(cnt >> 16 & 0xff), int(cnt >> 24)}
	if n[0] > pfstate.MaxStepCQEs || n[1] > pfstate.MaxStepCQs || n[2] > pfstate.MaxStepQPs || n[3] > pfstate.MaxStepSRQs {
		return n, false
	}
	end := pfstate.StepBody + n[0]*pfstate.StepCQESize + n[1]*pfstate.StepCQSize + n[2]*pfstate.StepQPSize + n[3]*pfstate.StepSRQSize
	return n, le.Uint32(b[pfstate.StepCheck:]) == pfstate.Checksum(b[pfstate.StepSeq:end])
}

// recoverSteps brings a restarted PF's positions up to the records: the
// newest whole record applied gives its objects their state after it (a
// record applied before it is covered: the objects it does not name were
// stored before it); one committed and not applied is redone over the
// state the record before it gives (if that one is applied and not
// flushed). Every object named is then stored and the records marked
// flushed, so that the next step starts from the entries. It reports
// whether a step was redone.
func (h *HCA) recoverSteps() (redone bool) {
	l := h.dl
	var st [pfstate.DPStepSlots]int
	var sq [pfstate.DPStepSlots]uint64
	x := -1
	for k := range pfstate.DPStepSlots {
		st[k], sq[k] = l.recState(k)
		l.seq = max(l.seq, sq[k])
		if st[k] != recNone && (x < 0 || sq[k] > sq[x]) {
			x = k
		}
	}
	if x < 0 {
		return false
	}
	y := int((sq[x] - 1) % pfstate.DPStepSlots)
	switch st[x] {
	case recApplied:
		h.applyAfter(l.recSlot(sq[x]), sq[x])
	case recCommitted:
		if st[y] == recApplied && sq[y]+1 == sq[x] {
			h.applyAfter(l.recSlot(sq[y]), sq[y])
		}
		redone = h.redoStep(l.recSlot(sq[x]), sq[x])
	}
	return redone
}

// applyAfter gives the objects of record b (sequence seq, applied) the
// state after it, stores their entries and marks the record flushed.
func (h *HCA) applyAfter(b []byte, seq uint64) {
	l := h.dl
	n, _ := recBody(b)
	cqOff := pfstate.StepBody + n[0]*pfstate.StepCQESize
	qpOff := cqOff + n[1]*pfstate.StepCQSize
	srqOff := qpOff + n[2]*pfstate.StepQPSize
	a := pfstate.StepAfter
	l.nqp, l.nsrq, l.ncq = 0, 0, 0
	for k := range n[2] {
		if qp := h.fw.qps[le.Uint32(b[qpOff+k*pfstate.StepQPSize:])]; qp != nil {
			h.applyQPEntry(qp, mlx4.QPState(le.Uint32(b[a:])), le.Uint32(b[a+4:]), le.Uint32(b[a+8:]))
			l.qps[l.nqp] = qp
			l.nqp++
		}
		a += pfstate.StepAfterQP
	}
	for k := range n[3] {
		if q := h.fw.srqs[le.Uint32(b[srqOff+k*pfstate.StepSRQSize:])]; q != nil {
			q.Head, q.Taken, q.Limit = uint16(le.Uint32(b[a:])), uint16(le.Uint32(b[a+4:])), uint16(le.Uint32(b[a+8:]))
			l.srqs[l.nsrq] = q
			l.nsrq++
		}
		a += pfstate.StepAfterSRQ
	}
	for k := range n[1] {
		cqn := le.Uint32(b[cqOff+k*pfstate.StepCQSize:])
		if cq := h.fw.cqs[cqn]; cq != nil {
			var v [pfstate.CQWords]uint32
			for j := range v {
				v[j] = le.Uint32(b[a+4*j:])
			}
			cqFromWords(cq, v[:])
			l.cqs[l.ncq] = dpCQBefore{cq: cq, cqn: cqn}
			l.ncq++
		}
		a += pfstate.StepAfterCQ
	}
	h.storeAll()
	le.PutUint32(b[pfstate.StepCommit:], pfstate.MagicFlushed^uint32(seq))
	l.nqp, l.nsrq, l.ncq = 0, 0, 0
}

func (l *dpLog) entry(i int32) []byte {
	off := pfstate.DPTableOff + int(i)*pfstate.DPEntrySize
	return l.b[off : off+pfstate.DPEntrySize]
}

// readEntry returns the newer valid copy of entry i: its sequence, key and
// words (in l.vals); ok false for a free or torn entry.
func (l *dpLog) readEntry(i int32) (seq, key uint32, ok bool) {
	e := l.entry(i)
	best := -1
	for c := range 2 {
		p := e[c*pfstate.DPCopySize : (c+1)*pfstate.DPCopySize]
		if le.Uint32(p[pfstate.EntKey:]) == 0 || le.Uint32(p[pfstate.EntCheck:]) != copyCheck(p) {
			continue
		}
		if s := le.Uint32(p[pfstate.EntSeq:]); best < 0 || int32(s-seq) > 0 {
			best, seq = c, s
		}
	}
	if best < 0 {
		return 0, 0, false
	}
	p := e[best*pfstate.DPCopySize:]
	key = le.Uint32(p[pfstate.EntKey:])
	for k := range l.vals {
		l.vals[k] = le.Uint32(p[pfstate.EntVals+4*k:])
	}
	return seq, key, true
}

func copyCheck(p []byte) uint32 { return pfstate.Checksum(p[pfstate.EntKey:pfstate.DPCopySize]) }

// writeEntry stores key and l.vals into the older copy of entry i (by
// sequence): the copy, its check word, then its sequence. A kill before
// the check leaves the copy torn (its check fails), one before the
// sequence leaves it older than the other: either way the other copy, the
// previous state, counts, and the next write goes to this copy again.
func (l *dpLog) writeEntry(i int32, key uint32) {
	e := l.entry(i)
	s0, s1 := le.Uint32(e[pfstate.EntSeq:]), le.Uint32(e[pfstate.DPCopySize+pfstate.EntSeq:])
	c, seq := 0, s1+1
	if int32(s1-s0) < 0 {
		c, seq = 1, s0+1
	}
	p := e[c*pfstate.DPCopySize : (c+1)*pfstate.DPCopySize]
	le.PutUint32(p[pfstate.EntKey:], key)
	for k, v := range l.vals {
		le.PutUint32(p[pfstate.EntVals+4*k:], v)
	}
	le.PutUint32(p[pfstate.EntCheck:], copyCheck(p))
	le.PutUint32(p[pfstate.EntSeq:], seq)
}

// clearEntry frees entry i (both copies' keys zero).
func (l *dpLog) clearEntry(i int32) {
	e := l.entry(i)
	le.PutUint32(e[pfstate.EntKey:], 0)
	le.PutUint32(e[pfstate.DPCopySize+pfstate.EntKey:], 0)
	l.free = append(l.free, i)
}

// slot returns the entry of an object (its cached slot+1 in *s), taking a
// free one if it has none; -1 when the table is full.
func (l *dpLog) slot(s *int32) int32 {
	if *s > 0 {
		return *s - 1
	}
	var i int32
	switch {
	case len(l.free) > 0:
		i = l.free[len(l.free)-1]
		l.free = l.free[:len(l.free)-1]
	case l.next < pfstate.DPEntries:
		i = l.next
		l.next++
	default:
		l.stats.NoSlot.Add(1)
		return -1
	}
	*s = i + 1
	return i
}

// applyEntries applies the table's entries to the objects that exist
// (a restart: after Load and the replay) and frees the others.
func (h *HCA) applyEntries(l *dpLog) {
	used := make([]bool, pfstate.DPEntries)
	for i := int32(0); i < pfstate.DPEntries; i++ {
		_, key, ok := l.readEntry(i)
		if !ok {
			continue
		}
		num := key & pfstate.EntNumMask
		applied := false
		switch key >> pfstate.EntKindShift {
		case pfstate.EntQP:
			if qp := h.fw.qps[num]; qp != nil && qp.dps == 0 {
				h.applyQPEntry(qp, mlx4.QPState(l.vals[0]), l.vals[1], l.vals[2])
				qp.dps, applied = i+1, true
			}
		case pfstate.EntSRQ:
			if q := h.fw.srqs[num]; q != nil && q.dps == 0 {
				q.Head, q.Taken, q.Limit = uint16(l.vals[0]), uint16(l.vals[1]), uint16(l.vals[2])
				q.dps, applied = i+1, true
			}
		case pfstate.EntCQ:
			if cq := h.fw.cqs[num]; cq != nil && cq.dps == 0 {
				cqFromWords(cq, l.vals[:pfstate.CQWords])
				cq.dps, applied = i+1, true
			}
		}
		if applied {
			used[i] = true
			l.stats.Applied.Add(1)
		}
	}
	// entries of objects that are gone are free; the rest stay in use
	last := int32(-1)
	for i := int32(0); i < pfstate.DPEntries; i++ {
		if used[i] {
			last = i
		}
	}
	l.next = last + 1
	for i := last - 1; i >= 0; i-- {
		if !used[i] {
			l.free = append(l.free, i)
		}
	}
	for i := last + 1; i < pfstate.DPEntries; i++ {
		e := l.entry(i)
		le.PutUint32(e[pfstate.EntKey:], 0)
		le.PutUint32(e[pfstate.DPCopySize+pfstate.EntKey:], 0)
	}
}

// applyQPEntry applies a QP's entry over its state restored from the
// checkpoint and the journal. Only the data path moves a QP without a
// command (to ERR, or SQER for UD and UC): an entry in another state the
// restored QP is not in was stored by a command the previous PF executed
// and never committed, which the restarted PF executes again (an early
// command's resume, or the VF's retry): the QP keeps its restored state,
// and after an uncommitted 2RST (which zeroes them) its positions too.
func (h *HCA) applyQPEntry(qp *qpObj, st mlx4.QPState, sq, rq uint32) {
	if st != qp.State && st != mlx4.QP_STATE_ERR && st != mlx4.QP_STATE_SQER {
		if st == mlx4.QP_STATE_RST {
			sq, rq = qp.SQHead, qp.RQHead
		}
		st = qp.State
	}
	h.dpSetQP(qp, st, sq, rq)
}

// dpSetQP sets a QP's state and positions from the log, attaching it to or
// detaching it from the scheduler as its state asks (no event: the
// previous PF raised it).
func (h *HCA) dpSetQP(qp *qpObj, st mlx4.QPState, sq, rq uint32) {
	qp.State, qp.SQHead, qp.RQHead = st, sq&0xffff, rq&0xffff
	w := qp.wq
	if w == nil {
		return
	}
	w.rqAhead = 0 // RQHead moved: read the record again
	walk := st == mlx4.QP_STATE_RTS || st == mlx4.QP_STATE_SQD || st == mlx4.QP_STATE_SQER || st == mlx4.QP_STATE_ERR
	switch {
	case walk && !w.attached:
		w.attached = true
		h.dpAttach(qp)
	case !walk && w.attached:
		w.attached = false
		h.dpDetach(qp)
	}
}

func cqWords(cq *cqObj, v []uint32) {
	v[0], v[1], v[2], v[3], v[4], v[5] = cq.Prod, cq.Cons, cq.ArmDB, cq.Arm, cq.ArmCI, cq.SolProd
	v[6], v[7] = 0, uint32(cq.Err)
	if cq.Sol {
		v[6] = 1
	}
}

// putCQWords writes a CQ's words little-endian at b (one bounds check).
func putCQWords(b []byte, v *[pfstate.CQWords]uint32) {
	s := (*[4 * pfstate.CQWords]byte)(b[:4*pfstate.CQWords])
	for j := range pfstate.CQWords {
		le.PutUint32(s[4*j:4*j+4], v[j])
	}
}

func cqFromWords(cq *cqObj, v []uint32) {
	cq.Prod, cq.Cons, cq.ArmDB, cq.Arm, cq.ArmCI, cq.SolProd = v[0], v[1], v[2], v[3], v[4], v[5]
	cq.Sol, cq.Err = v[6] != 0, uint8(v[7])
}

// --- stores of positions (commands and the engine) ---

func (h *HCA) dpOn() bool { return h.dl != nil && !h.fw.quiet }

// dpSaveQP stores a QP's state and positions.
func (h *HCA) dpSaveQP(qp *qpObj) {
	if !h.dpOn() || qp == nil || qp.tr == nil {
		return
	}
	h.dpSettle()
	h.storeQP(qp, uint32(qp.State), qp.SQHead, qp.RQHead)
}

// dpSaveSRQ stores an SRQ's positions and limit.
func (h *HCA) dpSaveSRQ(q *srqObj) {
	if !h.dpOn() || q == nil || q.tr == nil {
		return
	}
	h.dpSettle()
	h.storeSRQ(q, uint32(q.Head), uint32(q.Taken), uint32(q.Limit))
}

// dpSaveCQ stores a CQ's runtime state. Inside a step (CQEs held back)
// the step's record gives its state at its end.
func (h *HCA) dpSaveCQ(cq *cqObj) {
	if !h.dpOn() || cq == nil || cq.tr == nil {
		return
	}
	h.dpSettle()
	var v [pfstate.CQWords]uint32
	cqWords(cq, v[:])
	h.storeCQ(cq, &v)
}

// dpSettle makes the entries the newest copy of every position again
// before one is stored outside a step's end (a command, an arm, a
// destroy): the last record's objects stored with the state the record
// gives them, then the record marked flushed. While a step writes its
// CQEs (a CQ's arm fired, its failure) it does nothing: the step's own
// record counts for its objects, the one before it only for what the
// step does not name, which was stored before the step's record.
func (h *HCA) dpSettle() {
	l := h.dl
	if l == nil || !l.dirty || l.in || l.redo {
		return
	}
	h.flushDirty(false)
	le.PutUint32(l.recSlot(l.seq)[pfstate.StepCommit:], pfstate.MagicFlushed^uint32(l.seq))
}

// flushDirty stores the entries of the last record's objects with the
// state it gives them (but for those the current step moves, when
// exceptStep: its record gives them) and forgets them.
func (h *HCA) flushDirty(exceptStep bool) {
	l := h.dl
	for _, d := range l.dqp[:l.ndqp] {
		if !exceptStep || !l.stepHasQP(d.qp) {
			h.storeQP(d.qp, d.st, d.sq, d.rq)
		}
	}
	for _, d := range l.dsrq[:l.ndsrq] {
		if !exceptStep || !l.stepHasSRQ(d.q) {
			h.storeSRQ(d.q, d.head, d.taken, d.limit)
		}
	}
	for k := range l.ndcq {
		d := &l.dcq[k]
		if !exceptStep || !l.stepHasCQ(d.cq) {
			h.storeCQ(d.cq, &d.vals)
		}
	}
	l.ndqp, l.ndsrq, l.ndcq, l.dirty = 0, 0, 0, false
}

func (l *dpLog) stepHasQP(qp *qpObj) bool {
	for _, q := range l.qps[:l.nqp] {
		if q == qp {
			return true
		}
	}
	return false
}

func (l *dpLog) stepHasCQ(cq *cqObj) bool {
	for k := range l.ncq {
		if l.cqs[k].cq == cq {
			return true
		}
	}
	return false
}

func (l *dpLog) stepHasSRQ(q *srqObj) bool {
	for _, s := range l.srqs[:l.nsrq] {
		if s == q {
			return true
		}
	}
	return false
}

// storeQP, storeSRQ and storeCQ write an object's entry with the values
// given (no entry when the table is full: NoSlot).
func (h *HCA) storeQP(qp *qpObj, st, sq, rq uint32) {
	l := h.dl
	i := l.slot(&qp.dps)
	if i < 0 {
		return
	}
	clear(l.vals[:])
	l.vals[0], l.vals[1], l.vals[2] = st, sq, rq
	l.writeEntry(i, pfstate.EntQP<<pfstate.EntKindShift|uint32(qp.tr.ID)&pfstate.EntNumMask)
}

func (h *HCA) storeSRQ(q *srqObj, head, taken, limit uint32) {
	l := h.dl
	i := l.slot(&q.dps)
	if i < 0 {
		return
	}
	clear(l.vals[:])
	l.vals[0], l.vals[1], l.vals[2] = head, taken, limit
	l.writeEntry(i, pfstate.EntSRQ<<pfstate.EntKindShift|uint32(q.tr.ID)&pfstate.EntNumMask)
}

func (h *HCA) storeCQ(cq *cqObj, v *[pfstate.CQWords]uint32) {
	l := h.dl
	i := l.slot(&cq.dps)
	if i < 0 {
		return
	}
	clear(l.vals[:])
	copy(l.vals[:], v[:])
	l.writeEntry(i, pfstate.EntCQ<<pfstate.EntKindShift|uint32(cq.tr.ID)&pfstate.EntNumMask)
}

// storeAll stores the entries of the objects of the step's lists (l.qps,
// l.srqs, l.cqs) as they are now.
func (h *HCA) storeAll() {
	l := h.dl
	for _, qp := range l.qps[:l.nqp] {
		if qp.tr != nil {
			h.storeQP(qp, uint32(qp.State), qp.SQHead, qp.RQHead)
		}
	}
	for _, q := range l.srqs[:l.nsrq] {
		if q.tr != nil {
			h.storeSRQ(q, uint32(q.Head), uint32(q.Taken), uint32(q.Limit))
		}
	}
	for k := range l.ncq {
		if cq := l.cqs[k].cq; cq != nil && cq.tr != nil {
			var v [pfstate.CQWords]uint32
			cqWords(cq, v[:])
			h.storeCQ(cq, &v)
		}
	}
}

// dpForget frees an object's entry (the object is gone), the last record
// settled first: it may name the object, whose number a new one can take.
func (h *HCA) dpForget(s *int32) {
	if h.dl == nil {
		return
	}
	if !h.fw.quiet {
		h.dpSettle()
		if *s != 0 {
			h.dl.clearEntry(*s - 1)
		}
	}
	*s = 0
}

// --- the engine's steps ---

// dpTouchQP notes that the step moved qp (a consumer index, its state).
func (h *HCA) dpTouchQP(qp *qpObj) {
	l := h.dl
	if l == nil || l.redo {
		return
	}
	l.wqe = true
	for _, q := range l.qps[:l.nqp] {
		if q == qp {
			return
		}
	}
	if l.nqp == len(l.qps) {
		h.dpStep()
	}
	l.qps[l.nqp] = qp
	l.nqp++
}

// dpTouchSRQ notes that the step took a WQE of q.
func (h *HCA) dpTouchSRQ(q *srqObj) {
	l := h.dl
	if l == nil || l.redo {
		return
	}
	l.wqe = true
	for _, s := range l.srqs[:l.nsrq] {
		if s == q {
			return
		}
	}
	if l.nsrq == len(l.srqs) {
		h.dpStep()
	}
	l.srqs[l.nsrq] = q
	l.nsrq++
}

// dpHold holds a CQE back for the step's end; false: no log, write it now.
func (h *HCA) dpHold(cqn uint32, e *mlx4.CQE, solicited bool) bool {
	p := h.dpPend(cqn & mlx4.ObjectMask)
	if p == nil {
		return false
	}
	p.cqn, p.sol, p.over = cqn&mlx4.ObjectMask, solicited, false
	setCQE(&p.e, e)
	return true
}

// setCQE copies src into dst field by field. The engine builds a CQE
// field by field (zeroed, then narrow stores) just before it is held, and
// a whole-struct copy loads it in 16-byte pieces, each of which the store
// buffer cannot forward from those narrower stores: a stall per piece on
// the way to the CQE. Field loads forward. (A composite literal assigned
// through a pointer is built in a temporary and copied whole: the same.)
func setCQE(dst, src *mlx4.CQE) {
	dst.VlanMyQPN, dst.ImmedRSSInvalid, dst.GMLPathRQPN = src.VlanMyQPN, src.ImmedRSSInvalid, src.GMLPathRQPN
	dst.SLVID, dst.RLID, dst.Status = src.SLVID, src.RLID, src.Status
	dst.IPv6ExtMask, dst.BadFCSEnc = src.IPv6ExtMask, src.BadFCSEnc
	dst.ByteCnt, dst.WQEIndex, dst.Checksum = src.ByteCnt, src.WQEIndex, src.Checksum
	dst.Reserved[0], dst.Reserved[1], dst.Reserved[2] = src.Reserved[0], src.Reserved[1], src.Reserved[2]
	dst.Owner, dst.IsSend, dst.Opcode = src.Owner, src.IsSend, src.Opcode
}

// dpHoldOverrun holds an injected overrun of CQ cqn back for the step's
// end, in its place among the step's CQEs; false: no log, do it now.
func (h *HCA) dpHoldOverrun(cqn uint32) bool {
	p := h.dpPend(cqn & mlx4.ObjectMask)
	if p == nil {
		return false
	}
	p.cqn, p.sol, p.over, p.e = cqn&mlx4.ObjectMask, false, true, mlx4.CQE{}
	return true
}

// dpPend is the step's next held entry for CQ cqn (the step ended first
// if it is full), or nil when nothing is held: no log, a redo, or a quiet
// model.
func (h *HCA) dpPend(cqn uint32) *dpPendCQE {
	l := h.dl
	if l == nil || l.redo || h.fw.quiet {
		return nil
	}
	known := l.hasCQ(cqn)
	if l.np == len(l.pend) || !known && l.ncqn == len(l.cqn) {
		h.dpStep()
		known = false
	}
	if !known {
		l.cqn[l.ncqn] = cqn
		l.ncqn++
	}
	l.wqe = true
	p := &l.pend[l.np]
	l.np++
	return p
}

func (l *dpLog) hasCQ(cqn uint32) bool {
	for _, c := range l.cqn[:l.ncqn] {
		if c == cqn {
			return true
		}
	}
	return false
}

// dpRoom reports whether the step has room for another WQE's effects
// (two CQEs on two more CQs, two QPs, an SRQ); true without a log.
func (h *HCA) dpRoom() bool {
	l := h.dl
	return l == nil || l.np+2 <= len(l.pend) && l.ncqn+2 <= len(l.cqn) &&
		l.nqp+2 <= len(l.qps) && l.nsrq+1 <= len(l.srqs)
}

// dpHeld reports whether the step holds CQEs back.
func (h *HCA) dpHeld() bool { return h.dl != nil && h.dl.np > 0 }

// dpWQE notes that a WQE of the step starts: it has touched nothing yet.
func (h *HCA) dpWQE() {
	if h.dl != nil {
		h.dl.wqe = false
	}
}

// dpBeforeEvent ends the step before an async event the engine raises, so
// that the event follows the CQEs of the step's earlier WQEs, unless the
// WQE raising it has already touched the step (then the step cannot end
// between its effects).
func (h *HCA) dpBeforeEvent() {
	if l := h.dl; l != nil && !l.redo && !l.in && !l.wqe {
		h.dpStep()
	}
}

// dpStep ends the current step: its record, its CQEs, its positions.
func (h *HCA) dpStep() {
	l := h.dl
	if l == nil || l.redo || l.np == 0 && l.nqp == 0 && l.nsrq == 0 {
		return
	}
	l.hit(crashpoint.DPEffects)
	// The CQs' state before the CQEs, with their EQ's producer index.
	l.ncq = 0
	for _, cqn := range l.cqn[:l.ncqn] {
		c := &l.cqs[l.ncq]
		c.cq, c.cqn, c.eqn, c.eqP = h.fw.cqs[cqn], cqn, -1, 0
		if c.cq != nil {
			cqWords(c.cq, c.vals[:])
			if r := c.cq.ring; r != nil {
				if p, ok := h.EQProd(r.vf, c.cq.EQN); ok {
					c.eqn, c.eqP = int32(c.cq.EQN), p
				}
			}
		}
		l.ncq++
	}
	if l.dirty {
		h.flushDirty(true) // the record before this one is overwritten two steps on
	}
	l.writeStep()
	l.in = true
	// Each CQE's CQ as the step looked it up (l.cqs), and whether it is
	// not its CQ's last of the step: the record is read once, after the
	// last (completeCQObj).
	var cq [pfstate.MaxStepCQEs]*cqObj
	var later [pfstate.MaxStepCQEs]bool
	seen := uint(0)
	for k := l.np - 1; k >= 0; k-- {
		if i := l.stepCQIndex(l.pend[k].cqn); i >= 0 {
			cq[k], later[k] = l.cqs[i].cq, seen&(1<<i) != 0
			seen |= 1 << i
		}
	}
	b := l.recSlot(l.seq)
	for k := range l.np {
		p := &l.pend[k]
		h.postStepEntry(cq[k], p.cqn, &p.e, recCQE(b, k), p.sol, p.over, later[k])
		l.hit(crashpoint.DPCQE)
	}
	l.in = false
	h.applyStep()
	l.np, l.nqp, l.nsrq, l.ncq, l.ncqn, l.wqe = 0, 0, 0, 0, 0, false
}

// recCQE is the bytes of CQE k in record b (after its cqn and flags
// words), as writeStep encodes them.
func recCQE(b []byte, k int) *[mlx4.CQESize]byte {
	o := pfstate.StepBody + k*pfstate.StepCQESize + 8
	return (*[mlx4.CQESize]byte)(b[o : o+mlx4.CQESize])
}

// stepCQIndex is CQ cqn's index in l.cqs, or -1.
func (l *dpLog) stepCQIndex(cqn uint32) int {
	for k := range l.ncq {
		if l.cqs[k].cqn == cqn {
			return k
		}
	}
	return -1
}

// postStepEntry writes a held-back CQE into CQ cq (number cqn; nil: there
// is none), or carries out a held-back injected overrun (counting a
// refusal as h.cqe does).
func (h *HCA) postStepEntry(cq *cqObj, cqn uint32, e *mlx4.CQE, enc *[mlx4.CQESize]byte, sol, over, later bool) {
	var err error
	if over {
		err = h.overrunCQ(cqn)
	} else {
		err = h.completeCQObj(cq, e, enc, sol || e.IsError(), later)
	}
	if err != nil && cq != nil && cq.ring != nil {
		h.fw.vfs[cq.ring.vf].eng.CQEDrops.Add(1)
	}
}

// writeStep writes the step record, commit word last. Each entry is
// written through an array of its size (one bounds check per entry).
func (l *dpLog) writeStep() {
	l.seq++
	b := l.recSlot(l.seq)
	le.PutUint64(b[pfstate.StepSeq:], l.seq)
	le.PutUint32(b[pfstate.StepCounts:], uint32(l.np)|uint32(l.ncq)<<8|uint32(l.nqp)<<16|uint32(l.nsrq)<<24)
	off := pfstate.StepBody
	for k := range l.np {
		p := &l.pend[k]
		e := (*[pfstate.StepCQESize]byte)(b[off : off+pfstate.StepCQESize])
		f := uint32(0)
		if p.sol {
			f = pfstate.StepSolicited
		}
		if p.over {
			f |= pfstate.StepOverrun
		}
		le.PutUint32(e[0:4], p.cqn)
		le.PutUint32(e[4:8], f)
		_ = mlx4.PutCQE(e[8:], &p.e) // the bytes the ring gets (recCQE)
		off += pfstate.StepCQESize
	}
	for k := range l.ncq {
		c := &l.cqs[k]
		e := (*[pfstate.StepCQSize]byte)(b[off : off+pfstate.StepCQSize])
		le.PutUint32(e[0:4], c.cqn)
		le.PutUint32(e[4:8], uint32(c.eqn))
		le.PutUint32(e[8:12], c.eqP)
		putCQWords(e[16:], &c.vals)
		off += pfstate.StepCQSize
	}
	for _, qp := range l.qps[:l.nqp] {
		e := (*[pfstate.StepQPSize]byte)(b[off : off+pfstate.StepQPSize])
		le.PutUint32(e[0:4], uint32(qp.tr.ID))
		le.PutUint32(e[4:8], uint32(qp.State))
		le.PutUint32(e[8:12], qp.SQHead)
		le.PutUint32(e[12:16], qp.RQHead)
		off += pfstate.StepQPSize
	}
	for _, q := range l.srqs[:l.nsrq] {
		e := (*[pfstate.StepSRQSize]byte)(b[off : off+pfstate.StepSRQSize])
		le.PutUint32(e[0:4], uint32(q.tr.ID))
		le.PutUint32(e[4:8], uint32(q.Head))
		le.PutUint32(e[8:12], uint32(q.Taken))
		le.PutUint32(e[12:16], uint32(q.Limit))
		off += pfstate.StepSRQSize
	}
	le.PutUint32(b[pfstate.StepCheck:], pfstate.Checksum(b[pfstate.StepSeq:off]))
	// A plain store last, as the journal's commit words.
	le.PutUint32(b[pfstate.StepCommit:], pfstate.MagicStep^uint32(l.seq))
	l.stats.Steps.Add(1)
}

// applyStep writes the state after the step of every object it names
// into its record, then marks it applied: the record is now the newest
// copy of their positions (dirty), their entries are stored only when
// something else needs them to be (dpSettle, the next step's record).
func (h *HCA) applyStep() {
	l := h.dl
	b := l.recSlot(l.seq)
	a := pfstate.StepAfter
	first := true
	torn := func() {
		if first {
			first = false
			l.hit(crashpoint.DPCommitTorn)
		}
	}
	l.ndqp, l.ndsrq, l.ndcq = 0, 0, 0
	for _, qp := range l.qps[:l.nqp] {
		d := &l.dqp[l.ndqp]
		l.ndqp++
		d.qp, d.st, d.sq, d.rq = qp, uint32(qp.State), qp.SQHead, qp.RQHead
		le.PutUint32(b[a:], d.st)
		le.PutUint32(b[a+4:], d.sq)
		le.PutUint32(b[a+8:], d.rq)
		a += pfstate.StepAfterQP
		torn()
	}
	for _, q := range l.srqs[:l.nsrq] {
		d := &l.dsrq[l.ndsrq]
		l.ndsrq++
		d.q, d.head, d.taken, d.limit = q, uint32(q.Head), uint32(q.Taken), uint32(q.Limit)
		le.PutUint32(b[a:], d.head)
		le.PutUint32(b[a+4:], d.taken)
		le.PutUint32(b[a+8:], d.limit)
		a += pfstate.StepAfterSRQ
		torn()
	}
	for k := range l.ncq {
		if cq := l.cqs[k].cq; cq != nil && cq.tr != nil {
			d := &l.dcq[l.ndcq]
			l.ndcq++
			d.cq = cq
			cqWords(cq, d.vals[:])
			putCQWords(b[a:], &d.vals)
		} else {
			clear(b[a : a+pfstate.StepAfterCQ])
		}
		a += pfstate.StepAfterCQ
		torn()
	}
	le.PutUint32(b[pfstate.StepCommit:], pfstate.MagicApplied^uint32(l.seq))
	l.dirty = true
}

// redoStep redoes the step of record b (sequence seq), committed and not
// applied (a restart), stores its objects' entries and marks it flushed.
func (h *HCA) redoStep(b []byte, seq uint64) bool {
	l := h.dl
	n, ok := recBody(b)
	if !ok {
		return false
	}
	ncqe, ncq, nqp, nsrq := n[0], n[1], n[2], n[3]
	// The CQs as they were before the step's CQEs.
	off := pfstate.StepBody + ncqe*pfstate.StepCQESize
	l.nredo, l.ncq = 0, 0
	for range ncq {
		cqn := le.Uint32(b[off:])
		eqn := int32(le.Uint32(b[off+4:]))
		cq := h.fw.cqs[cqn]
		if cq != nil {
			var v [pfstate.CQWords]uint32
			for j := range v {
				v[j] = le.Uint32(b[off+16+4*j:])
			}
			cqFromWords(cq, v[:])
			l.cqs[l.ncq] = dpCQBefore{cq: cq, cqn: cqn}
			l.ncq++
			if eqn >= 0 && cq.ring != nil {
				dup := false
				for _, r := range l.redoEQ[:l.nredo] {
					dup = dup || r.vf == cq.ring.vf && r.eqn == int(eqn)
				}
				if !dup {
					r := &l.redoEQ[l.nredo]
					r.vf, r.eqn, r.next = cq.ring.vf, int(eqn), le.Uint32(b[off+8:])
					l.nredo++
				}
			}
		}
		off += pfstate.StepCQSize
	}
	l.redo = true
	for k := range ncqe {
		o := pfstate.StepBody + k*pfstate.StepCQESize
		e, _ := mlx4.DecodeCQE(recCQE(b, k)[:])
		f := le.Uint32(b[o+4:])
		cqn := le.Uint32(b[o:])
		h.postStepEntry(h.fw.cqs[cqn&mlx4.ObjectMask], cqn, &e, recCQE(b, k), f&pfstate.StepSolicited != 0, f&pfstate.StepOverrun != 0, false)
	}
	l.redo = false
	l.nqp, l.nsrq = 0, 0
	for range nqp {
		if qp := h.fw.qps[le.Uint32(b[off:])]; qp != nil {
			h.dpSetQP(qp, mlx4.QPState(le.Uint32(b[off+4:])), le.Uint32(b[off+8:]), le.Uint32(b[off+12:]))
			l.qps[l.nqp] = qp
			l.nqp++
		}
		off += pfstate.StepQPSize
	}
	for range nsrq {
		if q := h.fw.srqs[le.Uint32(b[off:])]; q != nil {
			q.Head, q.Taken, q.Limit = uint16(le.Uint32(b[off+4:])), uint16(le.Uint32(b[off+8:])), uint16(le.Uint32(b[off+12:]))
			l.srqs[l.nsrq] = q
			l.nsrq++
		}
		off += pfstate.StepSRQSize
	}
	h.storeAll()
	le.PutUint32(b[pfstate.StepCommit:], pfstate.MagicFlushed^uint32(seq))
	l.nqp, l.nsrq, l.ncq = 0, 0, 0
	l.stats.Redone.Add(1)
	return true
}

// dpRedoFire reports whether a completion EQE to VF vf's EQ eqn is to be
// written while a step is redone: not when the EQ's producer index shows
// the previous PF wrote it.
func (h *HCA) dpRedoFire(vf, eqn int, prod uint32) bool {
	l := h.dl
	if l == nil || !l.redo {
		return true
	}
	for k := range l.redoEQ[:l.nredo] {
		r := &l.redoEQ[k]
		if r.vf == vf && r.eqn == eqn {
			write := prod == r.next
			r.next = (r.next + 1) & mlx4.EQIndexMask
			return write
		}
	}
	return true
}

// dpRedoAhead: while a step is redone, a consumer index ahead of the
// producer by at most the step's CQEs is the VF having read CQEs the
// previous PF wrote before its death (they are rewritten in place), not an
// overrun.
func (h *HCA) dpRedoAhead(cq *cqObj) bool {
	return h.dl != nil && h.dl.redo && (cq.Cons-cq.Prod)&cqIndexMask <= pfstate.MaxStepCQEs
}

// --- atomics ---

// dpAtomic is an ATOMIC's original value: the one recorded before a kill
// for this WQE (its redo), else orig, recorded now before the remote value
// is written.
func (h *HCA) dpAtomic(qp *qpObj, orig uint64) uint64 {
	l := h.dl
	if l == nil || h.fw.quiet {
		return orig
	}
	if l.ovValid && l.ovQPN == qp.wq.qpn && l.ovSQ == qp.SQHead {
		l.ovValid = false
		l.stats.Replayed.Add(1)
		return l.ovOrig
	}
	l.ovValid = false
	b := l.b[pfstate.DPIntentOff : pfstate.DPIntentOff+pfstate.DPIntentSize]
	l.iseq++
	le.PutUint64(b[pfstate.IntSeq:], l.iseq)
	le.PutUint32(b[pfstate.IntQPN:], qp.wq.qpn)
	le.PutUint32(b[pfstate.IntSQ:], qp.SQHead)
	le.PutUint64(b[pfstate.IntOrig:], orig)
	le.PutUint32(b[pfstate.IntCheck:], pfstate.Checksum(b[pfstate.IntSeq:pfstate.IntEnd]))
	le.PutUint32(b[pfstate.IntCommit:], pfstate.MagicAtomic^uint32(l.iseq))
	l.stats.Atomics.Add(1)
	l.hit(crashpoint.DPIntent)
	return orig
}

// loadIntent keeps the last atomic intent for its WQE if that WQE is still
// the next of its QP (its step never committed).
func (h *HCA) loadIntent() {
	l := h.dl
	b := l.b[pfstate.DPIntentOff : pfstate.DPIntentOff+pfstate.DPIntentSize]
	if le.Uint32(b[pfstate.IntCommit:]) != pfstate.MagicAtomic^uint32(l.iseq) ||
		le.Uint32(b[pfstate.IntCheck:]) != pfstate.Checksum(b[pfstate.IntSeq:pfstate.IntEnd]) {
		return
	}
	qpn, sq := le.Uint32(b[pfstate.IntQPN:]), le.Uint32(b[pfstate.IntSQ:])
	if qp := h.fw.qps[qpn&mlx4.QPNMask]; qp != nil && qp.wq != nil && qp.SQHead == sq {
		l.ovValid, l.ovQPN, l.ovSQ, l.ovOrig = true, qpn, sq, le.Uint64(b[pfstate.IntOrig:])
	}
}
