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

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/restrack"
)

// mttRefuse maps an MTT check error: a range outside the allocation is
// BAD_OP (check_mtt_range's -EPERM), reason MTT.
func mttRefuse(c *mlx4.Cmd, err error) mlx4.Status {
	s := restrack.Refuse(c, err)
	if c.Reason == mlx4.ReasonRange || c.Reason == mlx4.ReasonNotOwner || c.Reason == mlx4.ReasonNotFound {
		c.Reason = mlx4.ReasonMTT
	}
	return s
}

// SW2HW_MPT hands an MPT to hardware (mlx4_SW2HW_MPT_wrapper): the MPT must
// be the VF's and MAPPED (not found INTERNAL_ERR, other VF BAD_OP, wrong
// state BAD_PARAM); memory windows (no region bit), a PD of another
// function (PD bits 23:17 neither 0 nor VF+1) and fast-reg with bind enable
// are BAD_OP; a non-physical MPT's MTT range must lie in one MTT allocation
// of the VF (BAD_OP, reason MTT) and gains a reference.
func (h *HCA) SW2HW_MPT(c *mlx4.Cmd) mlx4.Status {
	id := h.Res.MPTID(c.InMod)
	m := decodeMPT(c.Inbox[:mptSize])
	o, err := h.Res.StartMove(c.VF, restrack.MPT, id, restrack.QPHW)
	if err != nil {
		return restrack.Refuse(c, err)
	}
	fail := func(s mlx4.Status, r mlx4.Reason) mlx4.Status {
		h.Res.AbortMove(o)
		return c.Refuse(s, r)
	}
	if !m.region {
		return fail(mlx4.BAD_OP, mlx4.ReasonContext)
	}
	if m.pdSlave != 0 && m.pdSlave-1 != c.VF+1 {
		return fail(mlx4.BAD_OP, mlx4.ReasonNotOwner)
	}
	if m.pdFlags&mptFastReg != 0 && m.flags&mptBindEn != 0 {
		return fail(mlx4.BAD_OP, mlx4.ReasonContext)
	}
	if !m.physical {
		if m.mttSize > 1<<30 {
			return fail(mlx4.BAD_OP, mlx4.ReasonMTT)
		}
		mtt, err := h.Res.MTTRange(c.VF, m.mttBase, int(m.mttSize))
		if err != nil {
			h.Res.AbortMove(o)
			return mttRefuse(c, err)
		}
		if err := h.Res.AddDep(o, mtt); err != nil {
			h.Res.AbortMove(o)
			return restrack.Refuse(c, err)
		}
	}
	obj := h.fw.mpts[id]
	if obj == nil {
		obj = &mptObj{tr: o}
		h.fw.mpts[id] = obj
	}
	copy(obj.entry[:], c.Inbox[:mptSize])
	obj.valid = true
	h.Res.EndMove(o)
	return mlx4.OK
}

// HW2SW_MPT takes an MPT back from hardware (HW→MAPPED) and drops its MTT
// reference. Not in HW → BAD_PARAM.
func (h *HCA) HW2SW_MPT(c *mlx4.Cmd) mlx4.Status {
	o, err := h.Res.StartMove(c.VF, restrack.MPT, h.Res.MPTID(c.InMod), restrack.Mapped)
	if err != nil {
		return restrack.Refuse(c, err)
	}
	h.Res.DropDeps(o)
	h.Res.EndMove(o)
	return mlx4.OK
}

// QUERY_MPT returns the MPT entry: in HW, or MAPPED (mlx4 copies the entry
// from its ICM then, so re-registration works from SW state); any other
// state → RESOURCE_BUSY.
func (h *HCA) QUERY_MPT(c *mlx4.Cmd) mlx4.Status {
	id := h.Res.MPTID(c.InMod)
	o, err := h.Res.Get(c.VF, restrack.MPT, id)
	if err != nil {
		return restrack.Refuse(c, err)
	}
	defer h.Res.Put(o)
	if st := o.From(); st != restrack.QPHW && st != restrack.Mapped {
		return c.Refuse(mlx4.RESOURCE_BUSY, mlx4.ReasonBadState)
	}
	if obj := h.fw.mpts[id]; obj != nil {
		copy(c.Outbox[:], obj.entry[:])
	}
	return mlx4.OK
}

// WRITE_MTT writes MTT entries (mlx4_WRITE_MTT_wrapper): in_modifier
// entries from the inbox (start index BE64 at 0, entries from 16), the
// range inside one MTT allocation of the VF (else BAD_OP, reason MTT).
// Stricter than Linux: 16 + 8*n must fit the 4 KiB mailbox (else
// BAD_PARAM, reason range). Entries are stored with the present bit set.
func (h *HCA) WRITE_MTT(c *mlx4.Cmd) mlx4.Status {
	n := int(c.InMod)
	if n < 0 || n > maxWriteMTT || c.InMod > maxWriteMTT {
		return c.Refuse(mlx4.BAD_PARAM, mlx4.ReasonRange)
	}
	start := binary.BigEndian.Uint64(c.Inbox[0:])
	o, err := h.Res.ContainingMTT(c.VF, start, n)
	if err != nil {
		return mttRefuse(c, err)
	}
	ents := h.mttEntries(o)
	off := start - o.ID
	for i := range n {
		v := binary.BigEndian.Uint64(c.Inbox[16+8*i:])
		ents[off+uint64(i)] = v&^1 | 1
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
// out of range → BAD_OP, reason MTT.
func (h *HCA) READ_MTT(c *mlx4.Cmd) mlx4.Status {
	if c.InMod > maxWriteMTT {
		return c.Refuse(mlx4.BAD_PARAM, mlx4.ReasonRange)
	}
	n := int(c.InMod)
	o, err := h.Res.ContainingMTT(c.VF, c.InParam, n)
	if err != nil {
		return mttRefuse(c, err)
	}
	binary.BigEndian.PutUint64(c.Outbox[0:], c.InParam)
	off := c.InParam - o.ID
	for i := range n {
		binary.BigEndian.PutUint64(c.Outbox[16+8*i:], h.mttRead(o, off+uint64(i)))
	}
	return mlx4.OK
}

// SYNC_TPT is native in mlx4 (flush the TPT caches); the model has none.
func (h *HCA) SYNC_TPT(c *mlx4.Cmd) mlx4.Status { return mlx4.OK }
