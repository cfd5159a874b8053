package hca

// EQ executors and event delivery into the VFs' EQ rings.
//
//	opcode    in_modifier / in_param
//	SW2HW_EQ  EQN (per function, < 1024); inbox = struct mlx4_eq_context
//	HW2SW_EQ  EQN
//	QUERY_EQ  EQN
//	MAP_EQ    EQN in 9:0, bit 31 = unmap; in_param = 64-bit event mask
//
// The ring model. SW2HW_EQ reads the EQ context (log size, page size, MTT
// base) and the MTT entries the VF wrote with WRITE_MTT: each entry is the
// IOVA of one ring page in the VF's DMA window, and every page is checked
// against the window (writable) when the EQ is created. EQEs are 32 bytes
// (struct mlx4_eqe); the PF writes EQE number prod at ring offset
// (prod mod nent)*32, with the owner bit (byte 0x1f bit 7) set on odd passes
// over the ring (prod & nent), written after the other 31 bytes, as
// firmware does. SW2HW_EQ hands the ring over with every EQE HW-owned
// (handOver): the VF's buffer may be zeroed, as Linux's is. CQ rings
// follow the same rule (cqring.go).
//
// Flow control. The VF reports its consumer index as the EQ doorbell value
// of mlx4's eq_set_ci (cons_index & 0xffffff | req_not << 31), which on
// hardware it writes to its UAR page. Two ways reach the model: the owner
// of that register calls EQDoorbell, or it installs a reader with
// SetDoorbellReader, which PostEQE calls (once) when a ring looks full. The
// ring is full when prod - cons ≥ nent (24-bit arithmetic; a consumer
// index ahead of the producer also counts as full): PostEQE then drops the
// event, counts an overrun and returns ErrOverrun. It never blocks. A VF
// that never rings the doorbell receives nent EQEs and then only overruns.

import (
	"encoding/binary"
	"errors"

	"github.com/vhcrd/vhcrd/dma"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

const (
	eqnMask      = mlx4.EQNMask
	maxRingPages = 1 << 16
)

// Event delivery errors.
var (
	ErrNoEQ    = errors.New("hca: no EQ mapped for the event type")
	ErrOverrun = errors.New("hca: EQ full, event dropped")
	ErrNoVF    = errors.New("hca: no such VF")
)

// SW2HW_EQ creates a VF EQ (mlx4_SW2HW_EQ_wrapper), in its order: tracks
// (vf<<10)|eqn (an existing EQN → INTERNAL_ERR, -EEXIST), checks the MTT
// range (owned, inside one allocation: BAD_OP / INTERNAL_ERR, reason MTT),
// then, as the firmware, the context (log size above 16, page size outside
// 4 KiB..1 GiB or a non-zero page offset → BAD_PARAM) and builds the ring
// from the MTT entries, every page inside the VF's window (BAD_PARAM,
// reason MTT, if an entry was never written or points outside). An EQN out
// of the VF's range → BAD_PARAM before anything (mlx4 does not check it).
func (h *HCA) SW2HW_EQ(c *Cmd) mlx4.Status {
	if c.InMod > eqnMask {
		return c.Refuse(mlx4.BAD_PARAM, refusal.InModifier)
	}
	eqn := int(c.InMod)
	ctx, _ := mlx4.DecodeEQContext(c.Inbox[:]) // a mailbox holds the context
	o, err := h.Res.CreateEQ(c.VF, eqn)
	if err != nil {
		s := c.refuse(err)
		if errors.Is(err, restrack.ErrRange) {
			return c.Refuse(mlx4.BAD_PARAM, refusal.InModifier)
		}
		return s
	}
	undo := func() { _ = h.Res.RemoveEQ(o) }
	mtt, err := h.Res.MTTRange(c.VF, ctx.MTTBase, ctx.MTTPages())
	if err != nil {
		undo()
		return mttRefuse(c, err)
	}
	// The context is the firmware's to judge, after the wrapper's checks.
	pageShift := ctx.LogPageSize + mlx4.PageShift
	if ctx.LogSize > maxEQLogSize || pageShift > 30 || ctx.PageOffset != 0 {
		undo()
		return c.Refuse(mlx4.BAD_PARAM, refusal.Context)
	}
	eq := &eqObj{tr: o, EQState: EQState{VF: c.VF, EQN: eqn, Nent: 1 << ctx.LogSize, PageShift: uint(pageShift), Armed: ctx.State == mlx4.EQ_STATE_ARMED},
		win: c.Mem, intr: ctx.Intr, always: ctx.State == mlx4.EQ_STATE_ALWAYS_ARMED}
	ring := uint64(eq.Nent) * mlx4.EQESize
	psize := uint64(1) << eq.PageShift
	npages := (ring + psize - 1) / psize
	if npages > uint64(ctx.MTTPages()) || npages > maxRingPages || c.Mem == nil {
		undo()
		return c.Refuse(mlx4.BAD_PARAM, refusal.MTT)
	}
	eq.Pages = make([]uint64, npages)
	for i := range eq.Pages {
		e := h.mttRead(mtt, ctx.MTTBase-mtt.ID+uint64(i))
		if e&1 == 0 { // never written
			undo()
			return c.Refuse(mlx4.BAD_PARAM, refusal.MTT)
		}
		addr := e &^ (psize - 1)
		if _, err := c.Mem.Translate(addr, int(min(psize, ring)), dma.Write); err != nil {
			undo()
			return c.Refuse(mlx4.BAD_PARAM, refusal.MTT)
		}
		eq.Pages[i] = addr
	}
	if err := h.Res.AddDep(o, mtt); err != nil {
		undo()
		return c.refuse(err)
	}
	copy(eq.Ctx[:], c.Inbox[:])
	// Hardware starts the indexes from the context (mlx4 writes zeros).
	eq.Cons, eq.Prod = ctx.Consumer, ctx.Producer
	if err := h.handOverUnlessQuiet(eq); err != nil {
		undo()
		return c.Refuse(mlx4.BAD_PARAM, refusal.MTT)
	}
	// A quiet replay (a restarted PF) must not sample the doorbell: its
	// word now is the VF's consumer index of this very EQ, and taken as
	// stale it would leave the restored producer index looking full.
	if h.fw.doorbell != nil && !h.fw.quiet {
		eq.DBAtCreate, eq.DBStale = h.fw.doorbell(c.VF, eqn)
		eq.dbLast = eq.DBAtCreate
	}
	h.fw.eqs[o.ID] = eq
	h.eqPos(eq.VF, eq.EQN, eq.Prod, true)
	h.Res.EndMove(o)
	return mlx4.OK
}

// handOver makes every EQE of the ring hardware-owned, as firmware does at
// SW2HW_EQ: Linux's mlx4_create_eq hands over a zeroed buffer, and its
// next_eqe_sw takes an entry as software's when its owner bit equals the
// pass bit cons & nent, so a zero owner byte would read as a valid EQE on
// the first pass. Slot s is next written by EQE number n (the first n ≥ prod
// with n mod nent = s), with the owner bit n & nent; until then it holds the
// opposite. Only the owner byte is written: the rest stays as the VF left
// it.
func (eq *eqObj) handOver() error {
	var b [1]byte
	for k := range eq.Nent {
		n := (eq.Prod + k) & mlx4.EQIndexMask
		b[0] = mlx4.EQEOwnerHW
		if n&eq.Nent != 0 {
			b[0] = 0
		}
		off := uint64(n&(eq.Nent-1)) * mlx4.EQESize
		addr := eq.Pages[off>>eq.PageShift] + off&(1<<eq.PageShift-1)
		if err := eq.win.CopyOut(addr+mlx4.EQEOwner, b[:]); err != nil {
			return err
		}
	}
	return nil
}

// HW2SW_EQ destroys a VF EQ: HW→RESERVED, MTT reference dropped, untracked;
// event types mapped to it are unmapped. Unknown EQ → INTERNAL_ERR.
func (h *HCA) HW2SW_EQ(c *Cmd) mlx4.Status {
	if c.InMod > eqnMask {
		return c.Refuse(mlx4.BAD_PARAM, refusal.InModifier)
	}
	id := restrack.EQID(c.VF, int(c.InMod))
	o, err := h.Res.StartMove(c.VF, restrack.EQ, id, restrack.Reserved)
	if err != nil {
		return c.refuse(err)
	}
	h.Res.DropDeps(o)
	h.Res.EndMove(o)
	if err := h.Res.RemoveEQ(o); err != nil {
		return c.refuse(err)
	}
	h.dropEQ(c.VF, int(c.InMod), id)
	return mlx4.OK
}

func (h *HCA) dropEQ(vf, eqn int, id uint64) {
	h.unwatch(h.fw.eqs[id])
	delete(h.fw.eqs, id)
	h.eqPos(vf, eqn, 0, false)
	v := &h.fw.vfs[vf]
	for i := range v.EventEQ {
		if int(v.EventEQ[i]) == eqn {
			v.EventEQ[i] = -1
		}
	}
}

// QUERY_EQ returns the EQ context with the current consumer and producer
// indexes. The EQ must be in HW (else BAD_PARAM, as mlx4's -EINVAL).
func (h *HCA) QUERY_EQ(c *Cmd) mlx4.Status {
	if c.InMod > eqnMask {
		return c.Refuse(mlx4.BAD_PARAM, refusal.InModifier)
	}
	id := restrack.EQID(c.VF, int(c.InMod))
	o, err := h.Res.Peek(c.VF, restrack.EQ, id)
	if err != nil {
		return c.refuse(err)
	}
	eq := h.fw.eqs[id]
	if o.State != restrack.HW || eq == nil {
		return c.Refuse(mlx4.BAD_PARAM, refusal.BadState)
	}
	h.refreshCI(eq)
	copy(c.Outbox[:], eq.Ctx[:])
	binary.BigEndian.PutUint32(c.Outbox[mlx4.EQCConsumerIndex:], eq.Cons&mlx4.EQIndexMask)
	binary.BigEndian.PutUint32(c.Outbox[mlx4.EQCProducerIndex:], eq.Prod&mlx4.EQIndexMask)
	return mlx4.OK
}

// MAP_EQ maps (bit 31 clear) or unmaps (set) the event types of the 64-bit
// in_param mask to/from the VF's EQ in_modifier[9:0] (mlx4_MAP_EQ_wrapper:
// bookkeeping only). Stricter than Linux: mapping needs the EQ to exist in
// HW (BAD_PARAM, reason EQ); unmapping clears the types whatever they
// pointed at, as mlx4.
func (h *HCA) MAP_EQ(c *Cmd) mlx4.Status {
	eqn := int(c.InMod & eqnMask)
	unmap := c.InMod&mlx4.MAP_EQ_UNMAP != 0
	if !unmap && !h.checkEQ(c.VF, eqn) {
		return c.Refuse(mlx4.BAD_PARAM, refusal.EQ)
	}
	v := &h.fw.vfs[c.VF]
	for i := range numEventTypes {
		if c.InParam&(1<<i) == 0 {
			continue
		}
		if unmap {
			v.EventEQ[i] = -1
		} else {
			v.EventEQ[i] = int16(eqn)
		}
	}
	return mlx4.OK
}

// HasEQ reports whether VF vf has an EQ in HW mapped for eventType, e.g.
// for command completions (mlx4.EventCmd) before accepting an 'e' command.
func (h *HCA) HasEQ(vf int, eventType uint8) bool {
	_, err := h.mappedEQ(vf, eventType)
	return err == nil
}

func (h *HCA) mappedEQ(vf int, eventType uint8) (*eqObj, error) {
	// Bare sentinels: this is the per-event path and must not allocate.
	if vf < 0 || vf >= len(h.fw.vfs) {
		return nil, ErrNoVF
	}
	if int(eventType) >= numEventTypes {
		return nil, ErrNoEQ
	}
	eqn := h.fw.vfs[vf].EventEQ[eventType]
	if eqn < 0 {
		return nil, ErrNoEQ
	}
	eq := h.fw.eqs[restrack.EQID(vf, int(eqn))]
	if eq == nil || eq.tr.State != restrack.HW {
		return nil, ErrNoEQ
	}
	return eq, nil
}

// EQDoorbell records VF vf's EQ doorbell write for EQ eqn: val is mlx4's
// eq_set_ci value, consumer index in bits 23:0, request-notification in
// bit 31 (arms the EQ; with EQEs pending it raises at once, irq.go).
// Unknown EQs are ignored (ErrNoEQ).
func (h *HCA) EQDoorbell(vf, eqn int, val uint32) error {
	if vf < 0 || vf >= len(h.fw.vfs) {
		return ErrNoVF
	}
	eq := h.fw.eqs[restrack.EQID(vf, eqn)]
	if eq == nil || eqn < 0 || eqn > eqnMask {
		return ErrNoEQ
	}
	eq.DBStale = false
	h.doorbellWrite(eq, val)
	if h.fw.irq != nil && eq.Armed && eq.pending() {
		h.raise(eq)
	}
	return nil
}

// refreshCI reads the EQ's doorbell word through the installed reader. A
// word still holding what it held when the EQ was created was not written
// for this EQ (a re-created EQ, a doorbell of an earlier life) and is
// ignored: the consumer index stays what the EQ context said, so the PF
// errs towards an overrun, never towards overwriting unread EQEs. A word
// is a write of the VF's only where it differs from the last one applied:
// an arm bit read again is not a new arm (irq.go).
func (h *HCA) refreshCI(eq *eqObj) {
	if h.fw.doorbell == nil {
		return
	}
	v, ok := h.fw.doorbell(eq.VF, eq.EQN)
	if !ok || (eq.DBStale && v == eq.DBAtCreate) {
		return
	}
	eq.DBStale = false
	if v != eq.dbLast {
		h.doorbellWrite(eq, v)
	}
	eq.Cons = v & mlx4.EQIndexMask
}

// SetDoorbellReader installs read, which returns VF vf's EQ doorbell word
// for EQ eqn (consumer index 23:0, arm bit 31) and whether it could be
// read. PostEQE consults it when an EQ looks full.
func (h *HCA) SetDoorbellReader(read func(vf, eqn int) (uint32, bool)) { h.fw.doorbell = read }

// SetEQEObserver installs posted, which PostEQE calls after writing an EQE
// into VF vf's EQ eqn (eqe as written: type, slave_id and owner set), on the
// goroutine that posted it: the PF's command trace.
func (h *HCA) SetEQEObserver(posted func(vf, eqn int, eqe *[mlx4.EQESize]byte)) { h.fw.posted = posted }

// PostEQE writes eqe as the next EQE of the EQ VF vf mapped for eventType:
// bytes 0..0x1e as given except the type (set to eventType) and slave_id
// (0x1c, VF+1), then the owner byte. Nothing mapped → ErrNoEQ (counted);
// ring full → ErrOverrun (counted, dropped); a ring page the VF's window no
// longer allows → the DMA error. It never blocks and allocates nothing.
func (h *HCA) PostEQE(vf int, eventType uint8, eqe *[mlx4.EQESize]byte) error {
	if h.fw.quiet {
		return nil
	}
	eq, err := h.mappedEQ(vf, eventType)
	if err != nil {
		if errors.Is(err, ErrNoEQ) {
			h.fw.vfs[vf].stats.NoEQ.Add(1)
		}
		return err
	}
	return h.writeEQE(eq, vf, eventType, eqe)
}

// writeEQE is PostEQE's write into eq, an EQ of VF vf in HW: also the
// path of completion events, which go to the EQ of the CQ's context. An
// injected fault's drop (faults.go) applies to both.
func (h *HCA) writeEQE(eq *eqObj, vf int, eventType uint8, eqe *[mlx4.EQESize]byte) error {
	if h.fw.quiet {
		return nil
	}
	if h.dropEvents != nil && h.dropEvent(vf) {
		return ErrOverrun
	}
	st := &h.fw.vfs[vf].stats
	if h.fw.irq != nil || (eq.Prod-eq.Cons)&mlx4.EQIndexMask >= eq.Nent {
		// With interrupts, every EQE first takes the arms the VF wrote
		// before it (irq.go); without, the index only when the ring
		// looks full.
		h.refreshCI(eq)
	}
	if (eq.Prod-eq.Cons)&mlx4.EQIndexMask >= eq.Nent {
		st.Overruns.Add(1)
		return ErrOverrun
	}
	off := uint64(eq.Prod&(eq.Nent-1)) * mlx4.EQESize
	addr := eq.Pages[off>>eq.PageShift] + off&(1<<eq.PageShift-1)
	// The EQE is completed in a scratch copy the HCA owns: a local array
	// would escape to the heap through CopyOut on every event.
	buf := &h.eqeScratch
	*buf = *eqe
	buf[mlx4.EQEType] = eventType
	buf[mlx4.EQESlaveID] = byte(vf + 1)
	owner := byte(0)
	if eq.Prod&eq.Nent != 0 {
		owner = mlx4.EQEOwnerHW
	}
	buf[mlx4.EQEOwner] = buf[mlx4.EQEOwner]&^mlx4.EQEOwnerHW | owner
	if err := eq.win.CopyOut(addr, buf[:mlx4.EQEOwner]); err != nil {
		return err
	}
	if err := eq.win.CopyOut(addr+mlx4.EQEOwner, buf[mlx4.EQEOwner:]); err != nil {
		return err
	}
	eq.Prod = (eq.Prod + 1) & mlx4.EQIndexMask
	h.eqPos(vf, eq.EQN, eq.Prod, true)
	st.EQEs.Add(1)
	if eventType == mlx4.EventCmd {
		st.Completes.Add(1)
	}
	if h.fw.posted != nil {
		h.fw.posted(vf, eq.EQN, buf)
	}
	if h.fw.irq != nil {
		h.eqeWritten(eq)
	}
	return nil
}

// CompletionEQE builds a command-completion EQE (type 0x0a): token BE16 at
// 0x06, status at 0x0f, the immediate out_param BE64 at 0x10. Unlike mlx4,
// which leaves status and out_param zero, the early way has the EQE carry them.
func CompletionEQE(token uint16, status mlx4.Status, outParam uint64) [mlx4.EQESize]byte {
	var e [mlx4.EQESize]byte
	mlx4.CompletionEQE(&e, token, status, outParam)
	return e
}

// objectEvent routes an event about a tracked object to its owner's EQ
// (mlx4_eq_int with mlx4_get_slave_from_resource_id): untracked objects
// → restrack.ErrNotFound.
func (h *HCA) objectEvent(ty restrack.Type, id uint32, eventType, subtype, syndrome uint8) error {
	key := id
	if ty == restrack.QP {
		key &= mlx4.QPNTrackerMask // mlx4_get_slave_from_resource_id: the tracker's QPN
	}
	vf, err := h.Res.Owner(ty, uint64(key))
	if err != nil {
		return err
	}
	h.dpBeforeEvent() // after the CQEs of the data-path step's earlier WQEs (dplog.go)
	ev := mlx4.EQE{Type: eventType, Subtype: subtype, Object: id}
	if eventType == mlx4.EventCQError {
		ev.Status = syndrome
	}
	e := mlx4.EncodeEQE(ev)
	return h.PostEQE(vf, eventType, &e)
}

// QPEvent delivers a QP event (PATH_MIG, COMM_EST, SQ_DRAINED,
// SRQ_QP_LAST_WQE, WQ_CATAS_ERROR, PATH_MIG_FAILED, WQ_INVAL_REQ_ERROR,
// WQ_ACCESS_ERROR) to the QP's owner, as mlx4_eq_int does: the EQE carries
// the 24-bit QPN (event.qp.qpn & 0xffffff), the owner is the tracker's QP
// of its low 23 bits (mlx4_get_slave_from_resource_id), and mlx4_slave_event
// forwards the EQE unchanged.
func (h *HCA) QPEvent(qpn uint32, eventType uint8) error {
	return h.objectEvent(restrack.QP, qpn&mlx4.QPNMask, eventType, 0, 0)
}

// SRQEvent delivers SRQ_LIMIT or SRQ_CATAS_ERROR to the SRQ's owner.
func (h *HCA) SRQEvent(srqn uint32, eventType uint8) error {
	return h.objectEvent(restrack.SRQ, srqn&mlx4.ObjectMask, eventType, 0, 0)
}

// CQError delivers CQ_ERROR (syndrome 1 = overrun, else access violation)
// to the CQ's owner.
func (h *HCA) CQError(cqn uint32, syndrome uint8) error {
	return h.objectEvent(restrack.CQ, cqn&mlx4.ObjectMask, mlx4.EventCQError, 0, syndrome)
}

// PortChange delivers PORT_CHANGE (subtype mlx4.PORT_CHANGE_SUBTYPE_DOWN
// or _ACTIVE) for physical port phys to every VF that has the port and
// whose link policy is auto, with the port number rewritten to the VF's
// own (event.port_change.port). It returns how many VFs got the EQE and the first error.
func (h *HCA) PortChange(phys int, subtype uint8) (int, error) {
	n := 0
	var first error
	for vf := range h.Funcs {
		fn := &h.Funcs[vf]
		if fn.LinkState != "auto" {
			continue
		}
		for i, p := range fn.Ports {
			if p != phys {
				continue
			}
			e := mlx4.EncodeEQE(mlx4.EQE{Type: mlx4.EventPortChange, Subtype: subtype, Port: i + 1})
			if err := h.PostEQE(vf, mlx4.EventPortChange, &e); err != nil {
				if first == nil {
					first = err
				}
				continue
			}
			n++
		}
	}
	return n, first
}
