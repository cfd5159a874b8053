package hca

// Translation and protection table executors: MPTs and MTTs.
//
//	opcode     in_modifier / in_param
//	SW2HW_MPT  MPT index; inbox = struct mlx4_mpt_entry
//	QUERY_MPT  MPT index
//	HW2SW_MPT  MPT index
//	WRITE_MTT  entry count; inbox = BE64 start, entries from 16
//	READ_MTT   entry count; in_param = first entry (model-defined)
//	SYNC_TPT   (no effect in the model)

import (
	"encoding/binary"

	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// mttRefuse maps an MTT check error: a range outside the allocation is
// BAD_OP (check_mtt_range's -EPERM), reason MTT.
func mttRefuse(c *Cmd, err error) mlx4.Status {
	s := c.refuse(err)
	if c.Reason == refusal.Range || c.Reason == refusal.NotOwner || c.Reason == refusal.NotFound {
		c.Reason = refusal.MTT
	}
	return s
}

// SW2HW_MPT hands an MPT to hardware (mlx4_SW2HW_MPT_wrapper): the MPT must
// be the VF's and MAPPED (not found INTERNAL_ERR, other VF BAD_OP, wrong
// state BAD_PARAM); memory windows (no region bit), a PD of another
// function (PD bits 23:17 neither 0 nor VF+1) and fast-reg with bind enable
// are BAD_OP; a non-physical MPT's MTT range must lie in one MTT allocation
// of the VF (BAD_OP, reason MTT) and gains a reference.
func (h *HCA) SW2HW_MPT(c *Cmd) mlx4.Status {
	id := h.Res.MPTID(c.InMod)
	m, _ := mlx4.DecodeMPT(c.Inbox[:]) // a mailbox holds the entry
	o, err := h.Res.StartMove(c.VF, restrack.MPT, id, restrack.QPHW)
	if err != nil {
		return c.refuse(err)
	}
	fail := func(s mlx4.Status, r refusal.Reason) mlx4.Status {
		h.Res.AbortMove(o)
		return c.Refuse(s, r)
	}
	if !m.Region() {
		return fail(mlx4.BAD_OP, refusal.Context)
	}
	if s := m.PDSlave(); s != 0 && s-1 != c.VF+1 {
		return fail(mlx4.BAD_OP, refusal.NotOwner)
	}
	if m.PDFlags&mlx4.MPT_PD_FLAG_FAST_REG != 0 && m.Flags&mlx4.MPT_FLAG_BIND_ENABLE != 0 {
		return fail(mlx4.BAD_OP, refusal.Context)
	}
	if !m.Physical {
		// get_res on the MTT first (unknown INTERNAL_ERR, another VF's
		// BAD_OP), then check_mtt_range (BAD_OP): a size no allocation
		// holds fails the range check, after the lookup.
		mtt, err := h.Res.MTTRange(c.VF, m.MTTBase, int(m.MTTSize))
		if err != nil {
			h.Res.AbortMove(o)
			return mttRefuse(c, err)
		}
		if err := h.Res.AddDep(o, mtt); err != nil {
			h.Res.AbortMove(o)
			return c.refuse(err)
		}
	}
	obj := h.fw.mpts[id]
	if obj == nil {
		obj = &mptObj{tr: o}
		h.fw.mpts[id] = obj
	}
	copy(obj.Entry[:], c.Inbox[:])
	obj.Valid = true
	obj.decoded = false // the data path decodes the new entry
	h.Res.EndMove(o)
	return mlx4.OK
}

// HW2SW_MPT takes an MPT back from hardware (HW→MAPPED) and drops its MTT
// reference. Already MAPPED → BAD_PARAM (mr_res_start_move_to's -EINVAL).
// mlx4's tracker also lets a RESERVED MPT start the move and leaves the
// refusal to the firmware, whose BAD_RES_STATE (0x09) comes back through
// mlx4's status → errno → status round trip as INTERNAL_ERR (-EBADF).
func (h *HCA) HW2SW_MPT(c *Cmd) mlx4.Status {
	o, err := h.Res.StartMove(c.VF, restrack.MPT, h.Res.MPTID(c.InMod), restrack.Mapped)
	if err != nil {
		return c.refuse(err)
	}
	if o.From() != restrack.QPHW {
		h.Res.AbortMove(o)
		return c.Refuse(mlx4.INTERNAL_ERR, refusal.BadState)
	}
	h.Res.DropDeps(o)
	h.Res.EndMove(o)
	return mlx4.OK
}

// QUERY_MPT returns the MPT entry: in HW, or MAPPED (mlx4 copies the entry
// from its ICM then, so re-registration works from SW state); any other
// state → RESOURCE_BUSY.
func (h *HCA) QUERY_MPT(c *Cmd) mlx4.Status {
	id := h.Res.MPTID(c.InMod)
	o, err := h.Res.Get(c.VF, restrack.MPT, id)
	if err != nil {
		return c.refuse(err)
	}
	defer h.Res.Put(o)
	if st := o.From(); st != restrack.QPHW && st != restrack.Mapped {
		return c.Refuse(mlx4.RESOURCE_BUSY, refusal.BadState)
	}
	if obj := h.fw.mpts[id]; obj != nil {
		copy(c.Outbox[:], obj.Entry[:])
	}
	return mlx4.OK
}

// WRITE_MTT writes MTT entries (mlx4_WRITE_MTT_wrapper): in_modifier
// entries from the inbox (start index BE64 at 0, entries from 16), the
// range inside one MTT allocation of the VF (get_containing_mtt: else
// BAD_PARAM, its -EINVAL; reason MTT). Stricter than Linux: 16 + 8*n must
// fit the 4 KiB mailbox (else BAD_PARAM, reason range). Entries are stored
// with the present bit set.
func (h *HCA) WRITE_MTT(c *Cmd) mlx4.Status {
	n := int(c.InMod)
	if n < 0 || n > mlx4.MaxWriteMTTEntries || c.InMod > mlx4.MaxWriteMTTEntries {
		return c.Refuse(mlx4.BAD_PARAM, refusal.Range)
	}
	start := binary.BigEndian.Uint64(c.Inbox[mlx4.MTTMailboxStart:])
	o, err := h.Res.ContainingMTT(c.VF, start, n)
	if err != nil {
		s := c.refuse(err)
		c.Reason = refusal.MTT
		return s
	}
	ents := h.mttEntries(o)
	off := start - o.ID
	for i := range n {
		v := mlx4.MTTMailboxEntry(c.Inbox[:], i)
		ents[off+uint64(i)] = v&^mlx4.MTT_FLAG_PRESENT | mlx4.MTT_FLAG_PRESENT
	}
	return mlx4.OK
}

// mttEntries returns (allocating on first use) the entries of an MTT
// allocation: 2^order words, bounded by the VF's MTT quota.
func (h *HCA) mttEntries(o *restrack.Object) []uint64 {
	e := h.fw.mtt[o.ID]
	if e == nil {
		e = make([]uint64, 1<<o.Order)
		h.fw.mtt[o.ID] = e
	}
	return e
}

// mttRead returns entry i of allocation o (0 if never written).
func (h *HCA) mttRead(o *restrack.Object, i uint64) uint64 {
	e := h.fw.mtt[o.ID]
	if e == nil || i >= uint64(len(e)) {
		return 0
	}
	return e[i]
}

// READ_MTT is native in mlx4 (any MTT of the device). The model restricts
// it to the VF's own allocations: in_param = first entry, in_modifier =
// count (≤ 510), entries BE64 from outbox offset 16 like WRITE_MTT's inbox;
// out of range → BAD_PARAM as WRITE_MTT's get_containing_mtt, reason MTT.
func (h *HCA) READ_MTT(c *Cmd) mlx4.Status {
	if c.InMod > mlx4.MaxWriteMTTEntries {
		return c.Refuse(mlx4.BAD_PARAM, refusal.Range)
	}
	n := int(c.InMod)
	o, err := h.Res.ContainingMTT(c.VF, c.InParam, n)
	if err != nil {
		s := c.refuse(err)
		c.Reason = refusal.MTT
		return s
	}
	binary.BigEndian.PutUint64(c.Outbox[mlx4.MTTMailboxStart:], c.InParam)
	off := c.InParam - o.ID
	for i := range n {
		mlx4.PutMTTMailboxEntry(c.Outbox[:], i, h.mttRead(o, off+uint64(i)))
	}
	return mlx4.OK
}

// SYNC_TPT is native in mlx4 (flush the TPT caches); the model has none.
func (h *HCA) SYNC_TPT(c *Cmd) mlx4.Status { return mlx4.OK }
