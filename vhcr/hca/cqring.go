package hca

// CQ rings, CQEs, CQ arming and completion events.
//
// The ring. SW2HW_CQ (and RESIZE_CQ, MODIFY_CQ op_modifier 0) builds the
// ring from the CQ context as firmware does: 2^log_size CQEs of
// cqeStride bytes, pages of 2^(log_page_size+12) bytes whose addresses are
// the MTT entries from mtt_base, each checked against the VF's window
// (writable) when the ring is built. A log size above QUERY_DEV_CAP's
// log_max_cq_sz, a page offset, a page size outside 4 KiB..1 GiB, an MTT
// entry never written or outside the window, or a ring with more pages
// than the MTT range the context names: BAD_PARAM, reason MTT or Context
// (the wrapper's MTT checks, BAD_OP, come first). The ring is handed over
// hardware-owned (handOver, the rule SW2HW_EQ follows): Linux and libmlx4
// zero the buffer, and their get_sw_cqe takes CQE n as software's when its
// owner bit equals !!(n & nent), so every slot gets the opposite of the
// owner bit its next CQE will carry.
//
// CQE size. The CQE stride is the device's, not the CQ's: mlx4_slave_cap
// takes it from QUERY_HCA (MLX4_DEV_CAP_64B_CQE_ENABLED, or the CQE
// stride), and the model's QUERY_HCA advertises 32-byte CQEs (madifc.go,
// INIT_HCA_EQE_CQE_OFFSETS 0), so both the VF's kernel and libmlx4 use
// 32-byte CQEs. The ring code keeps the stride as a parameter
// (mlx4.CQEOffset places the valid half of a 64-byte slot).
//
// postCQE writes CQE number prod at slot prod mod nent with owner =
// !!(prod & nent), the owner byte last (its own store after the other 31
// bytes, as firmware's ordering), and advances the producer index. The
// consumer index is the CQ doorbell record's set_ci (in the VF's memory at
// the context's db_rec_addr); the ring is full when prod - ci ≥ nent (24
// bits): the CQE is dropped, counted, and the CQ fails as hardware's does,
// with the CQ error async event (mlx4 MLX4_EVENT_TYPE_CQ_ERROR, syndrome
// overrun) to the VF's EQ mapped for it, once; a failed CQ writes no CQE
// until it is destroyed. A doorbell record or ring page the window does not
// allow is the access-violation CQ error, the same way.
//
// Arming. mlx4_cq_arm and libmlx4's mlx4_arm_cq write arm_db = sn << 28 |
// cmd | ci into the record (+4), then the same high word with the CQN and
// ci to the UAR page's MLX4_CQ_DOORBELL. The model takes the record as the
// truth: a new arm is an arm_db word that differs from the last one
// applied (the sequence number sn changes after every completion event,
// since mlx4_cq_completion and libmlx4's mlx4_cq_event increment arm_sn),
// REQ_NOT for the next CQE, REQ_NOT_SOL for the next solicited or error
// CQE. An armed CQ that gets such a CQE posts a completion EQE
// (MLX4_EVENT_TYPE_COMP with the CQN) to its EQ (c_eqn of the context, not
// the event mapping: completion EQs are the VF's own), through the EQ's
// ring and interrupt path (eq.go, irq.go: the EQ raises its vector once per
// EQ arm), and is disarmed: once per CQ arm. An arm whose ci is behind the
// producer index (a CQE it has not consumed, solicited for REQ_NOT_SOL)
// fires at once, as ConnectX does and mlx4 relies on: mlx4_ib_arm_cq
// never reports missed events, and ibv_rc_pingpong -e re-arms before it
// polls.
//
// When the model reads the record: before every CQE it writes unless the
// CQ is armed for every completion, and for CQs that are disarmed with
// CQEs pending (the watch list, the only CQs where an arm owes an event at
// once): every scan when the high word of their UAR page's CQ doorbell
// changed (a hint), and on every sweep and idle checkpoint (CheckArms)
// whatever the UAR says.

import (
	"encoding/binary"
	"errors"
	"sync/atomic"

	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

const (
	// cqeStride is the bytes of a CQ slot: the 32-byte CQEs the model's
	// QUERY_HCA advertises (madifc.go).
	cqeStride = mlx4.CQESize
	// maxCQLogSize is QUERY_DEV_CAP's log_max_cq_sz (query.go).
	maxCQLogSize = 22
	cqIndexMask  = mlx4.CQDBCIMask
)

// Errors of postCQE, which the engine counts.
var (
	ErrNoCQ       = errors.New("hca: no such CQ in HW")
	ErrCQOverrun  = errors.New("hca: CQ full, CQE dropped")
	ErrCQFailed   = errors.New("hca: CQ in error, CQE dropped")
	errRingParams = errors.New("hca: CQ ring does not fit its context")
)

// DataPathStats are one VF's data-path counters (metrics read them at
// scrape time).
type DataPathStats struct {
	CQEs       atomic.Uint64 // CQEs written
	CQEDropped atomic.Uint64 // CQEs dropped: the CQ full or failed
	CQOverruns atomic.Uint64 // CQs that overran (CQ error, overrun syndrome)
	CQAccess   atomic.Uint64 // CQs failed by an access violation (record or ring page outside the window)
	CQArms     atomic.Uint64 // CQ arms taken from doorbell records
	CompEvents atomic.Uint64 // completion EQEs posted (once per CQ arm)
	CompNoEQ   atomic.Uint64 // completion events lost: the CQ's EQ is gone
	// Send doorbells: UAR words seen changed, and those naming a QP that
	// is not one of the VF's attached QPs on that page (ignored).
	Doorbells        atomic.Uint64
	ForeignDoorbells atomic.Uint64
}

// cqRing is a CQ's ring in the VF's memory: transient, rebuilt from the
// context and the MTT by SW2HW_CQ, RESIZE_CQ and Load.
type cqRing struct {
	win       *dma.Window
	vf        int
	cqn       uint32
	nent      uint32
	stride    uint32
	pageShift uint
	pages     []uint64 // IOVA of each ring page
	dbRec     uint64   // IOVA of the doorbell record (set_ci, arm_db)
	uar       uint64   // offset of the CQ's UAR page in the VF's BAR region
	uarLast   uint32   // high word of the page's CQ doorbell last seen
	watched   bool     // in dpSched.cqWatch
	recRead   bool     // the doorbell record has been read since the ring was built (writeCQE)
}

// slot is the IOVA of slot s's valid 32 bytes.
func (r *cqRing) slot(n uint32) uint64 {
	off := uint64(n&(r.nent-1))*uint64(r.stride) + uint64(mlx4.CQEOffset(int(r.stride)))
	return r.pages[off>>r.pageShift] + off&(1<<r.pageShift-1)
}

// buildCQRing builds the ring a CQ context describes: its pages are the
// entries ents of the MTT allocation mtt from the context's mtt_base, each
// inside win and writable.
func buildCQRing(win *dma.Window, vf int, cqn uint32, ctx mlx4.CQContext, raw []byte, mtt *restrack.Object, ents []uint64) (*cqRing, refusal.Reason, error) {
	pageShift := uint(ctx.LogPageSize + mlx4.PageShift)
	if ctx.LogSize > maxCQLogSize || pageShift > 30 || binary.BigEndian.Uint16(raw[mlx4.CQCPageOffset:]) != 0 {
		return nil, refusal.Context, errRingParams
	}
	r := &cqRing{win: win, vf: vf, cqn: cqn, nent: 1 << ctx.LogSize, stride: cqeStride, pageShift: pageShift,
		dbRec: ctx.DBRecAddr, uar: mlx4.UARPageOffset(ctx.UsrPage, mlx4.UARSize)}
	ring := uint64(r.nent) * uint64(r.stride)
	psize := uint64(1) << pageShift
	npages := (ring + psize - 1) / psize
	first := ctx.MTTBase - mtt.ID
	// The ring may not claim more pages than the MTT range of its
	// context, nor than the allocation holds.
	if win == nil || npages > uint64(ctx.MTTPages()) || first+npages > 1<<mtt.Order || npages > maxRingPages {
		return nil, refusal.MTT, errRingParams
	}
	r.pages = make([]uint64, npages)
	for i := range r.pages {
		var e uint64
		if j := first + uint64(i); j < uint64(len(ents)) {
			e = ents[j]
		}
		if e&1 == 0 { // never written
			return nil, refusal.MTT, errRingParams
		}
		addr := e &^ (psize - 1)
		if _, err := win.Translate(addr, int(min(psize, ring)), dma.Write); err != nil {
			return nil, refusal.MTT, errRingParams
		}
		r.pages[i] = addr
	}
	return r, refusal.None, nil
}

// handOver makes every slot hardware-owned for the CQEs from prod on: slot
// s is next written by CQE number n (the first n ≥ prod with n mod nent =
// s), with owner bit !!(n & nent); until then it holds the opposite. Only
// the owner byte is written (opcode bits zero: a slot software does not
// own).
func (r *cqRing) handOver(prod uint32) error {
	var b [1]byte
	for k := range r.nent {
		n := (prod + k) & cqIndexMask
		b[0] = 0
		if !mlx4.CQEOwner(n, r.nent) {
			b[0] = mlx4.CQE_OWNER_MASK
		}
		if err := r.win.CopyOut(r.slot(n)+mlx4.CQEOwnerSROpcode, b[:]); err != nil {
			return err
		}
	}
	return nil
}

// cqCreated is SW2HW_CQ's hook, after the wrapper's checks: the ring built
// and handed over, the indexes from the context. The last arm word applied
// starts at zero, what mlx4_ib_create_cq and libmlx4's mlx4_create_cq
// write into the record (a record the VF left non-zero reads as one arm:
// at most one event it did not ask for). The record is not sampled: a
// replayed SW2HW_CQ would sample a later word and ignore a real arm.
func (h *HCA) cqCreated(c *Cmd, cqn uint32, obj *cqObj, mtt *restrack.Object) mlx4.Status {
	ctx, _ := mlx4.DecodeCQContext(c.Inbox[:])
	r, why, err := buildCQRing(c.Mem, c.VF, cqn, ctx, c.Inbox[:], mtt, h.fw.mtt[mtt.ID])
	if err != nil {
		return c.Refuse(mlx4.BAD_PARAM, why)
	}
	obj.Prod = binary.BigEndian.Uint32(c.Inbox[mlx4.CQCProducerIndex:]) & cqIndexMask
	obj.Cons = binary.BigEndian.Uint32(c.Inbox[mlx4.CQCConsumerIndex:]) & cqIndexMask
	if !h.fw.quiet {
		if r.handOver(obj.Prod) != nil {
			return c.Refuse(mlx4.BAD_PARAM, refusal.MTT)
		}
	}
	obj.ring = r
	h.cqPos(obj, true)
	return mlx4.OK
}

// cqResized is RESIZE_CQ's hook (MODIFY_CQ op_modifier 0), before the
// CQ's MTT reference moves: the new ring is built from the inbox's log
// size, page size and MTT; the old ring gets the resize CQE (opcode
// MLX4_CQE_OPCODE_RESIZE) at the producer index, which both
// mlx4_ib_cq_resize_copy_cqes and libmlx4's mlx4_cq_resize_copy_cqes copy
// up to and skip (they copy old CQEs i to new slots i+1 and stop at the
// resize CQE without looking at owner bits: without it they would never
// stop); the CQEs after it go to the new ring, handed over from there.
func (h *HCA) cqResized(c *Cmd, cqn uint32, obj *cqObj, mtt *restrack.Object) mlx4.Status {
	ctx, _ := mlx4.DecodeCQContext(c.Inbox[:])
	old := obj.ring
	if old == nil {
		return c.Refuse(mlx4.BAD_PARAM, refusal.BadState)
	}
	r, why, err := buildCQRing(c.Mem, c.VF, cqn, ctx, c.Inbox[:], mtt, h.fw.mtt[mtt.ID])
	if err != nil {
		return c.Refuse(mlx4.BAD_PARAM, why)
	}
	// mlx4_cq_resize's context carries only the size, page size and MTT:
	// the record and the UAR page stay the CQ's.
	r.dbRec, r.uar, r.uarLast, r.watched, r.recRead = old.dbRec, old.uar, old.uarLast, old.watched, old.recRead
	if !h.fw.quiet && obj.Err == 0 {
		var rz mlx4.CQE
		rz.Opcode = mlx4.CQE_OPCODE_RESIZE
		if err := h.writeCQE(obj, &rz); err != nil && !errors.Is(err, ErrCQOverrun) {
			return c.Refuse(mlx4.BAD_PARAM, refusal.MTT)
		}
		if r.handOver(obj.Prod) != nil {
			return c.Refuse(mlx4.BAD_PARAM, refusal.MTT)
		}
	} else if obj.Err == 0 {
		obj.Prod = (obj.Prod + 1) & cqIndexMask // the resize CQE's index, as written
	}
	obj.ring = r
	h.dpSaveCQ(obj)
	return mlx4.OK
}

// dropCQ forgets CQ cqn (HW2SW_CQ, a VF's reset): off the watch list.
func (h *HCA) dropCQ(cqn uint32) {
	if cq := h.fw.cqs[cqn]; cq != nil && cq.ring != nil {
		if cq.ring.watched {
			h.sched.unwatchCQ(cq)
		}
		h.cqPos(cq, false)
	}
	if cq := h.fw.cqs[cqn]; cq != nil {
		h.dpForget(&cq.dps)
	}
	delete(h.fw.cqs, cqn)
}

// postCQE writes e as the next CQE of CQ cqn (the engine's completions):
// owner bit of its pass, written last; the producer index advanced; the
// arm served (REQ_NOT: this CQE fires; REQ_NOT_SOL: only an error CQE
// fires, postSolicitedCQE for a solicited one). It allocates nothing.
// ErrNoCQ, ErrCQOverrun (dropped; the CQ error event posted),
// ErrCQFailed (a failed CQ: dropped).
func (h *HCA) postCQE(cqn uint32, e *mlx4.CQE) error { return h.completeCQ(cqn, e, false) }

// postSolicitedCQE is postCQE for a solicited completion (a receive of a
// SEND with the solicited-event bit): it also fires a REQ_NOT_SOL arm.
func (h *HCA) postSolicitedCQE(cqn uint32, e *mlx4.CQE) error {
	return h.completeCQ(cqn, e, true)
}

func (h *HCA) completeCQ(cqn uint32, e *mlx4.CQE, solicited bool) error {
	return h.completeCQObj(h.fw.cqs[cqn&mlx4.ObjectMask], e, nil, solicited, false)
}

// completeCQObj is completeCQ for the CQ object a caller has already
// looked up (nil: no such CQ), as a step's end has (dplog.go), with e's
// bytes if the caller has them encoded (enc, the step's record: not
// encoded again; nil: encoded here); later says that another CQE of the
// same step follows on this CQ, after which the record is read: once per
// CQ and step, as the step's CQEs go out together.
func (h *HCA) completeCQObj(cq *cqObj, e *mlx4.CQE, enc *[mlx4.CQESize]byte, solicited, later bool) error {
	if cq == nil || cq.ring == nil || cq.tr.State != restrack.HW {
		return ErrNoCQ
	}
	if h.fw.quiet {
		return nil
	}
	// The record after the CQE, unless armed for every completion (an arm
	// then changes nothing), writeCQE read it before, or the CQ is watched
	// (an arm rings its UAR word, which cqHints looks at every scan and
	// CheckArms before a sleep: either reads the record then): the read is
	// a line the VF writes at every poll, and the CQE goes out without
	// waiting for it. An arm the VF wrote since the last read is taken
	// then, after the arm known before this CQE has fired for it, and fires
	// for this CQE as for the ones before it (cqArmWord, owed) if its
	// consumer index says the VF has not seen them.
	after := cq.Arm != mlx4.MLX4_CQ_DB_REQ_NOT
	read, err := h.writeCQEAt(cq, e, enc)
	if err != nil {
		return err
	}
	if solicited || e.IsError() {
		cq.SolProd, cq.Sol = cq.Prod, true
	}
	switch {
	case cq.Arm == mlx4.MLX4_CQ_DB_REQ_NOT, cq.Arm == mlx4.MLX4_CQ_DB_REQ_NOT_SOL && (solicited || e.IsError()):
		h.cqFire(cq)
	}
	if after && !read && !later && !cq.ring.watched {
		h.cqRecord(cq) // a record the window stopped allowing fails the CQ for the next CQE
	}
	if cq.Arm != mlx4.MLX4_CQ_DB_REQ_NOT && !cq.ring.watched {
		h.sched.watchCQ(cq) // a new arm (or REQ_NOT over REQ_NOT_SOL) would owe an event at once
	}
	return nil
}

// writeCQE writes e at the producer index. The doorbell record is read
// first only when the ring is full by the consumer index last read (set_ci
// moves only forward: room the VF made since) or has not been read since
// the ring was built (a record outside the window fails the CQ before its
// first CQE, nothing written); otherwise the consumer index last read
// stands, as a device caches it, and completeCQObj reads the record after
// the CQE for arms (a watched CQ's arms come through its UAR word).
func (h *HCA) writeCQE(cq *cqObj, e *mlx4.CQE) error {
	_, err := h.writeCQEAt(cq, e, nil)
	return err
}

// writeCQEAt is writeCQE, of e's bytes enc if not nil; read reports
// whether it read the record.
func (h *HCA) writeCQEAt(cq *cqObj, e *mlx4.CQE, enc *[mlx4.CQESize]byte) (read bool, err error) {
	r := cq.ring
	st := &h.sched.stats[r.vf]
	if cq.Err != 0 {
		st.CQEDropped.Add(1)
		return false, ErrCQFailed
	}
	if !r.recRead || (cq.Prod-cq.Cons)&cqIndexMask >= r.nent {
		read = true
		if !h.cqRecord(cq) {
			st.CQEDropped.Add(1)
			return read, ErrCQFailed
		}
	}
	if (cq.Prod-cq.Cons)&cqIndexMask >= r.nent && !h.dpRedoAhead(cq) {
		st.CQEDropped.Add(1)
		st.CQOverruns.Add(1)
		h.cqFail(cq, mlx4.CQErrOverrun)
		return read, ErrCQOverrun
	}
	buf := &h.cqeScratch
	if enc != nil {
		*buf = *enc
	} else {
		_ = mlx4.PutCQE(buf[:], e) // 32 bytes: never short
	}
	owner := byte(0)
	if mlx4.CQEOwner(cq.Prod, r.nent) {
		owner = mlx4.CQE_OWNER_MASK
	}
	buf[mlx4.CQEOwnerSROpcode] = buf[mlx4.CQEOwnerSROpcode]&^mlx4.CQE_OWNER_MASK | owner
	addr := r.slot(cq.Prod)
	if r.win.CopyOutLast(addr, buf[:mlx4.CQESize], mlx4.CQEOwnerSROpcode) != nil {
		st.CQEDropped.Add(1)
		st.CQAccess.Add(1)
		h.cqFail(cq, mlx4.CQErrAccessViolation)
		return read, ErrCQFailed
	}
	cq.Prod = (cq.Prod + 1) & cqIndexMask
	h.cqPos(cq, true)
	st.CQEs.Add(1)
	return read, nil
}

// SetCQPositions installs pos, which the HCA calls with a CQ's producer
// index whenever it changes (created, a CQE written: live) and when the
// CQ goes away (not live), as SetEQPositions does for EQs: the positions a
// restarted PF needs to continue the VF's CQs.
func (h *HCA) SetCQPositions(pos func(vf int, cqn, prod uint32, live bool)) { h.sched.cqPos = pos }

func (h *HCA) cqPos(cq *cqObj, live bool) {
	if h.sched.cqPos != nil && !h.fw.quiet && cq.ring != nil {
		h.sched.cqPos(cq.ring.vf, cq.ring.cqn, cq.Prod, live)
	}
}

// cqRecord reads the CQ's doorbell record: set_ci is the consumer index,
// an arm_db word other than the last one applied is a new arm (taken,
// and fired at once if CQEs it has not consumed are pending). A record the
// window does not allow fails the CQ (access violation): false.
func (h *HCA) cqRecord(cq *cqObj) bool {
	r := cq.ring
	rec := &h.cqRec
	if r.win.CopyIn(rec[:], r.dbRec) != nil {
		h.sched.stats[r.vf].CQAccess.Add(1)
		h.cqFail(cq, mlx4.CQErrAccessViolation)
		return false
	}
	r.recRead = true
	cq.Cons = binary.BigEndian.Uint32(rec[mlx4.CQDBRecSetCI:]) & cqIndexMask
	h.cqArmWord(cq, binary.BigEndian.Uint32(rec[mlx4.CQDBRecArmDB:]))
	return true
}

// cqArmWord applies the record's arm_db word w.
func (h *HCA) cqArmWord(cq *cqObj, w uint32) {
	if w == cq.ArmDB {
		return
	}
	cq.ArmDB = w
	_, cmd, ci := mlx4.SplitCQArmDB(w)
	switch {
	case cmd&mlx4.MLX4_CQ_DB_REQ_NOT != 0:
		cq.Arm = mlx4.MLX4_CQ_DB_REQ_NOT
	case cmd&mlx4.MLX4_CQ_DB_REQ_NOT_SOL != 0:
		if cq.Arm != mlx4.MLX4_CQ_DB_REQ_NOT {
			cq.Arm = mlx4.MLX4_CQ_DB_REQ_NOT_SOL
		}
	default:
		return // no command: not an arm
	}
	cq.ArmCI = ci
	h.dpSaveCQ(cq)
	h.sched.stats[cq.ring.vf].CQArms.Add(1)
	if cq.owed() {
		h.cqFire(cq)
	}
}

// owed reports whether the CQ's arm finds a CQE it must fire for already
// written: one beyond the arm's consumer index (for REQ_NOT_SOL a
// solicited or error one).
func (cq *cqObj) owed() bool {
	pending := (cq.Prod - cq.ArmCI) & cqIndexMask
	switch cq.Arm {
	case mlx4.MLX4_CQ_DB_REQ_NOT:
		return pending != 0
	case mlx4.MLX4_CQ_DB_REQ_NOT_SOL:
		// the last solicited CQE is one of the pending ones: its index
		// (SolProd - 1) is at or after ArmCI
		return cq.Sol && pending != 0 && (cq.SolProd-1-cq.ArmCI)&cqIndexMask < pending
	}
	return false
}

// cqFire posts the completion EQE of CQ cq to its EQ and disarms it.
func (h *HCA) cqFire(cq *cqObj) {
	cq.Arm = 0
	h.dpSaveCQ(cq)
	r := cq.ring
	st := &h.sched.stats[r.vf]
	eq := h.fw.eqs[restrack.EQID(r.vf, cq.EQN)]
	if eq == nil || eq.tr.State != restrack.HW {
		st.CompNoEQ.Add(1)
		return
	}
	if !h.dpRedoFire(r.vf, cq.EQN, eq.Prod) {
		return // a redone step's event the previous PF posted (dplog.go)
	}
	h.compEQE = mlx4.EncodeEQE(mlx4.EQE{Type: mlx4.EventComp, Object: r.cqn})
	if h.writeEQE(eq, r.vf, mlx4.EventComp, &h.compEQE) == nil {
		st.CompEvents.Add(1)
	}
}

// cqFail puts the CQ in error with syndrome (CQErrOverrun,
// CQErrAccessViolation) and reports it to the VF, once.
func (h *HCA) cqFail(cq *cqObj, syndrome uint8) {
	if cq.Err != 0 {
		return
	}
	cq.Err = syndrome
	h.dpSaveCQ(cq)
	if cq.ring.watched {
		h.sched.unwatchCQ(cq)
	}
	_ = h.CQError(cq.ring.cqn, syndrome)
}

// checkCQArm reads a watched CQ's record: an arm owed fires; a CQ caught
// up (the VF consumed every CQE), armed for every completion or failed
// leaves the watch list.
// It reports whether it fired.
func (h *HCA) checkCQArm(cq *cqObj) bool {
	before := h.sched.stats[cq.ring.vf].CompEvents.Load()
	if h.cqRecord(cq) && (cq.Arm == mlx4.MLX4_CQ_DB_REQ_NOT || cq.Prod == cq.Cons) && cq.ring.watched {
		h.sched.unwatchCQ(cq)
	}
	return h.sched.stats[cq.ring.vf].CompEvents.Load() != before
}

// CQProd returns the producer index of CQ cqn and whether it is in HW
// with a ring.
func (h *HCA) CQProd(cqn uint32) (uint32, bool) {
	if cq := h.fw.cqs[cqn&mlx4.ObjectMask]; cq != nil && cq.ring != nil {
		return cq.Prod, true
	}
	return 0, false
}

// DPStats returns VF vf's data-path counters.
func (h *HCA) DPStats(vf int) *DataPathStats {
	if vf < 0 || vf >= len(h.sched.stats) {
		return nil
	}
	return &h.sched.stats[vf]
}

// cqRing rebuilds the ring of a CQ a checkpoint restored, from its context
// and the MTT entries; a ring that no longer builds (the VF's window
// changed) leaves the CQ without one: it takes no CQE (ErrNoCQ).
func (l *imageLoad) cqRing(cqn uint32, o *restrack.Object, s CQState) *cqRing {
	d := o.Deps()
	if len(d) == 0 || o.State != restrack.HW {
		return nil
	}
	ctx, _ := mlx4.DecodeCQContext(s.Ctx[:])
	r, _, err := buildCQRing(l.window(o.Owner), o.Owner, cqn, ctx, s.Ctx[:], d[0], l.fw.mtt[d[0].ID])
	if err != nil {
		return nil
	}
	return r
}
