package hca

// CQ and SRQ executors.
//
//	opcode     in_modifier
//	SW2HW_CQ   CQN; inbox = struct mlx4_cq_context
//	HW2SW_CQ   CQN
//	QUERY_CQ   CQN
//	MODIFY_CQ  CQN; op_modifier 0 resize, 1 moderation
//	SW2HW_SRQ  SRQN; inbox = struct mlx4_srq_context
//	HW2SW_SRQ  SRQN
//	QUERY_SRQ  SRQN
//	ARM_SRQ    SRQN; in_param = limit watermark

import (
	"encoding/binary"

	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// checkEQ: the CQ's completion EQ must be an EQ of this VF in HW. Linux
// does not check comp_eqn (§2.9); the model does: BAD_PARAM, reason EQ.
func (h *HCA) checkEQ(vf, eqn int) bool {
	o, err := h.Res.Peek(vf, restrack.EQ, restrack.EQID(vf, eqn))
	return err == nil && o.State == restrack.HW && eqn < 1024
}

// SW2HW_CQ hands a CQ to hardware (mlx4_SW2HW_CQ_wrapper): the CQ must be
// the VF's and ALLOCATED; its MTT range must lie in an MTT allocation of
// the VF (BAD_OP/INTERNAL_ERR, reason MTT) and its comp_eqn must be an EQ of
// the VF in HW (model check). The CQ takes a reference on its MTT.
func (h *HCA) SW2HW_CQ(c *Cmd) mlx4.Status {
	cqn := c.InMod & mlx4.ObjectMask
	ctx, _ := mlx4.DecodeCQContext(c.Inbox[:]) // a mailbox holds the context
	o, err := h.Res.StartMove(c.VF, restrack.CQ, uint64(cqn), restrack.HW)
	if err != nil {
		return c.refuse(err)
	}
	mtt, err := h.Res.MTTRange(c.VF, ctx.MTTBase, ctx.MTTPages())
	if err != nil {
		h.Res.AbortMove(o)
		return mttRefuse(c, err)
	}
	if !h.checkEQ(c.VF, int(ctx.CompEQN)) {
		h.Res.AbortMove(o)
		return c.Refuse(mlx4.BAD_PARAM, refusal.EQ)
	}
	obj := &cqObj{tr: o, CQState: CQState{EQN: int(ctx.CompEQN)}}
	if s := h.cqCreated(c, cqn, obj, mtt); s != mlx4.OK { // the ring (cqring.go)
		h.Res.AbortMove(o)
		return s
	}
	if err := h.Res.AddDep(o, mtt); err != nil {
		h.Res.AbortMove(o)
		return c.refuse(err)
	}
	copy(obj.Ctx[:], c.Inbox[:])
	h.fw.cqs[cqn] = obj
	h.dpSaveCQ(obj)
	h.Res.EndMove(o)
	return mlx4.OK
}

// HW2SW_CQ takes a CQ back (HW→ALLOCATED): RESOURCE_BUSY while a QP uses
// it, BAD_PARAM if not in HW; drops the MTT reference.
func (h *HCA) HW2SW_CQ(c *Cmd) mlx4.Status {
	return h.toSW(c, restrack.CQ, h.dropCQ)
}

// toSW moves the VF's CQ or SRQ numbered by in_modifier from HW back to
// ALLOCATED (HW2SW_CQ, HW2SW_SRQ): StartMove refuses one a QP still uses;
// its references are dropped and forget removes the firmware's copy.
func (h *HCA) toSW(c *Cmd, ty restrack.Type, forget func(n uint32)) mlx4.Status {
	n := c.InMod & mlx4.ObjectMask
	o, err := h.Res.StartMove(c.VF, ty, uint64(n), restrack.Allocated)
	if err != nil {
		return c.refuse(err)
	}
	h.Res.DropDeps(o)
	forget(n)
	h.Res.EndMove(o)
	return mlx4.OK
}

// QUERY_CQ returns the CQ context. As in mlx4, a CQ that is the VF's but
// not in HW answers OK without executing (a zero outbox).
func (h *HCA) QUERY_CQ(c *Cmd) mlx4.Status {
	cqn := c.InMod & mlx4.ObjectMask
	o, err := h.Res.Get(c.VF, restrack.CQ, uint64(cqn))
	if err != nil {
		return c.refuse(err)
	}
	defer h.Res.Put(o)
	if obj := h.fw.cqs[cqn]; obj != nil && o.From() == restrack.HW {
		copy(c.Outbox[:], obj.Ctx[:])
		binary.BigEndian.PutUint32(c.Outbox[mlx4.CQCProducerIndex:], obj.Prod&cqIndexMask)
	}
	return mlx4.OK
}

// MODIFY_CQ: op_modifier 0 resizes (the new MTT from the inbox context must
// lie in an allocation of the VF other than the CQ's current one, which
// mlx4 holds busy: RESOURCE_BUSY; the CQ's reference moves to it), others
// set moderation (cq_period, cq_max_count). A CQ not in HW answers OK
// without executing, as in mlx4.
func (h *HCA) MODIFY_CQ(c *Cmd) mlx4.Status {
	cqn := c.InMod & mlx4.ObjectMask
	o, err := h.Res.Get(c.VF, restrack.CQ, uint64(cqn))
	if err != nil {
		return c.refuse(err)
	}
	defer h.Res.Put(o)
	obj := h.fw.cqs[cqn]
	if o.From() != restrack.HW || obj == nil {
		return mlx4.OK
	}
	if c.OpMod == 0 {
		ctx, _ := mlx4.DecodeCQContext(c.Inbox[:])
		// handle_resize holds the CQ's MTT busy while it gets the new
		// one: resizing into the same allocation is RESOURCE_BUSY.
		if d := o.Deps(); len(d) > 0 && d[0].ID == ctx.MTTBase {
			return c.Refuse(mlx4.RESOURCE_BUSY, refusal.Busy)
		}
		mtt, err := h.Res.MTTRange(c.VF, ctx.MTTBase, ctx.MTTPages())
		if err != nil {
			return mttRefuse(c, err)
		}
		if s := h.cqResized(c, cqn, obj, mtt); s != mlx4.OK { // the new ring (cqring.go)
			return s
		}
		var old *restrack.Object
		if d := o.Deps(); len(d) > 0 {
			old = d[0]
		}
		if old != nil {
			h.Res.ReplaceDep(o, old, mtt)
		} else if err := h.Res.AddDep(o, mtt); err != nil {
			return c.refuse(err)
		}
		obj.Ctx[mlx4.CQCLogSizeUsrPage] = c.Inbox[mlx4.CQCLogSizeUsrPage] // log size 28:24; usr_page stays
		copy(obj.Ctx[mlx4.CQCLogPageSize:mlx4.CQCMTTBaseAddrL+4], c.Inbox[mlx4.CQCLogPageSize:])
		return mlx4.OK
	}
	copy(obj.Ctx[mlx4.CQCCQPeriod:mlx4.CQCCQMaxCount+2], c.Inbox[mlx4.CQCCQPeriod:])
	return mlx4.OK
}

// SW2HW_SRQ hands an SRQ to hardware (mlx4_SW2HW_SRQ_wrapper): in_modifier
// must equal the SRQN in the context (BAD_PARAM); the SRQ must be the VF's
// and ALLOCATED; its MTT range must lie in an allocation of the VF.
func (h *HCA) SW2HW_SRQ(c *Cmd) mlx4.Status {
	srqn := c.InMod & mlx4.ObjectMask
	ctx, _ := mlx4.DecodeSRQContext(c.Inbox[:]) // a mailbox holds the context
	if ctx.SRQN != srqn || c.InMod > mlx4.ObjectMask {
		return c.Refuse(mlx4.BAD_PARAM, refusal.Context)
	}
	o, err := h.Res.StartMove(c.VF, restrack.SRQ, uint64(srqn), restrack.HW)
	if err != nil {
		return c.refuse(err)
	}
	mtt, err := h.Res.MTTRange(c.VF, ctx.MTTBase, ctx.MTTPages())
	if err != nil {
		h.Res.AbortMove(o)
		return mttRefuse(c, err)
	}
	if err := h.Res.AddDep(o, mtt); err != nil {
		h.Res.AbortMove(o)
		return c.refuse(err)
	}
	obj := &srqObj{tr: o}
	copy(obj.Ctx[:], c.Inbox[:])
	h.fw.srqs[srqn] = obj
	h.dpSaveSRQ(obj)
	h.Res.EndMove(o)
	return mlx4.OK
}

// HW2SW_SRQ takes an SRQ back (HW→ALLOCATED; RESOURCE_BUSY while a QP uses
// it) and drops its MTT reference.
func (h *HCA) HW2SW_SRQ(c *Cmd) mlx4.Status {
	return h.toSW(c, restrack.SRQ, func(n uint32) {
		if q := h.fw.srqs[n]; q != nil {
			h.dpForget(&q.dps)
		}
		delete(h.fw.srqs, n)
	})
}

// hwSRQ gets the VF's SRQ that must be in HW (else RESOURCE_BUSY, as mlx4).
func (h *HCA) hwSRQ(c *Cmd) (*srqObj, mlx4.Status) {
	srqn := c.InMod & mlx4.ObjectMask
	o, err := h.Res.Get(c.VF, restrack.SRQ, uint64(srqn))
	if err != nil {
		return nil, c.refuse(err)
	}
	defer h.Res.Put(o)
	obj := h.fw.srqs[srqn]
	if o.From() != restrack.HW || obj == nil {
		return nil, c.Refuse(mlx4.RESOURCE_BUSY, refusal.BadState)
	}
	return obj, mlx4.OK
}

// QUERY_SRQ returns the SRQ context (with the armed limit watermark).
func (h *HCA) QUERY_SRQ(c *Cmd) mlx4.Status {
	obj, s := h.hwSRQ(c)
	if s != mlx4.OK {
		return s
	}
	copy(c.Outbox[:], obj.Ctx[:])
	binary.BigEndian.PutUint16(c.Outbox[mlx4.SRQCLimitWatermark:], obj.Limit)
	return mlx4.OK
}

// ARM_SRQ sets the SRQ limit watermark (in_param low 16 bits).
func (h *HCA) ARM_SRQ(c *Cmd) mlx4.Status {
	obj, s := h.hwSRQ(c)
	if s != mlx4.OK {
		return s
	}
	obj.Limit = uint16(c.InParam)
	h.dpSaveSRQ(obj)
	return mlx4.OK
}
