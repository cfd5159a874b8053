package hca

// QP executors.
//
//	opcode        in_modifier
//	RST2INIT_QP   QPN (& 0x7fffff); inbox = optpar + QP context
//	INIT2INIT_QP  QPN
//	INIT2RTR_QP   QPN
//	RTR2RTS_QP    QPN
//	RTS2RTS_QP    QPN
//	SQERR2RTS_QP  QPN
//	2ERR_QP       QPN
//	RTS2SQD_QP    QPN
//	SQD2SQD_QP    QPN
//	SQD2RTS_QP    QPN
//	2RST_QP       QPN
//	QUERY_QP      QPN; outbox = QP context at offset 8
//	SUSPEND_QP    QPN
//	UNSUSPEND_QP  QPN
//	UPDATE_QP     QPN; inbox = struct mlx4_update_qp_context
//	QP_ATTACH     QPN 23:0; op_modifier 1 attach, 0 detach; GID at inbox 0
//
// Statuses of illegal transitions, as mlx4's master produces them:
//   - any transition but RST2INIT on a QP that is not in HW (reset state,
//     tracker MAPPED or RESERVED): RESOURCE_BUSY (the wrappers' -EBUSY);
//   - RST2INIT on a QP not in MAPPED (already in HW, or ICM not mapped) and
//     2RST on a QP not in HW: BAD_PARAM (qp_res_start_move_to's -EINVAL);
//   - a transition whose source state does not match the QP's firmware state
//     (INIT2RTR on an RTS QP, ...): BAD_PARAM. Firmware answers BAD_QP_STATE
//     (0x10); the mlx4 master turns it into -EINVAL and back into BAD_PARAM
//     (0x03), which is what a VF behind a real PF sees (§1.11). Reason:
//     bad_state. The firmware runs last, so every wrapper check wins.
//
// Context checks (mailbox offsets of §2.6), in the wrappers' order: the
// port of the primary path and, with its optpar bit, of the alternate path
// (sched_queue bit 6) one the VF has (BAD_PARAM, rewritten to the physical
// port; INIT2INIT converts none); for the transitions mlx4 verifies,
// rate_limit 0 (BAD_OP) and mgid_index below the VF's GID count for
// RC/UC/XRC (BAD_PARAM); MLX QPs on special QPNs in INIT2RTR need SMI
// (BAD_OP); at INIT2RTR an Ethernet QP other than MLX must use a source MAC
// index the VF registered on the port (BAD_PARAM). Then the QP itself is
// looked up, INIT2RTR's counter checked, the firmware's state checked. The
// model's own checks come last (qpcModel): pkey_index inside the VF's
// virtual P_Key table (BAD_PARAM: Linux does not bound it), the rate limit
// of RST2INIT, INIT2INIT and SQERR2RTS; then the P_Key and GID indexes are
// rewritten and proxy/tunnel QPs' Q_Key (176) set to the reserved Q_Key of
// their number. RST2INIT checks, after the QP's move, its MTT range
// (owned), send CQ (132), receive CQ (164) and SRQ (180, if bit 24) the
// VF's (INTERNAL_ERR unknown, BAD_OP other VF) and then in HW (BAD_PARAM:
// Linux does not check the state).

import (
	"encoding/binary"

	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// QP update masks (MLX4_UPD_QP_PATH_MASK_*).
const (
	updPathMaskMACIndex = 1 << mlx4.UPD_QP_PATH_MASK_MAC_INDEX
	updPathMaskMCLB     = 1 << mlx4.UPD_QP_PATH_MASK_ETH_SRC_CHECK_MC_LB
)

// mcgProtETH is MLX4_PROT_ETH, QP_ATTACH's in_modifier[30:28].
const mcgProtETH = 1

func (h *HCA) isEth(phys int) bool { return h.Cfg.Ports[phys-1].LinkLayer == "eth" }

// qpPath locates one address path's fields in the modify-QP mailbox.
type qpPath struct{ sched, pkey, mgid int }

var (
	priPath = qpPath{mlx4.QPMailboxPriPath + mlx4.PathSchedQueue, mlx4.QPMailboxPriPath + mlx4.PathPKeyIndex, mlx4.QPMailboxPriPath + mlx4.PathMGIDIndex}
	altPath = qpPath{mlx4.QPMailboxAltPath + mlx4.PathSchedQueue, mlx4.QPMailboxAltPath + mlx4.PathPKeyIndex, mlx4.QPMailboxAltPath + mlx4.PathMGIDIndex}
)

// pathPort converts one path's port (sched_queue bit 6) to the physical
// port and rewrites the bit (mlx4_slave_convert_port): a port the VF does
// not have is BAD_PARAM.
func (h *HCA) pathPort(c *Cmd, p qpPath) (int, mlx4.Status) {
	b := c.Inbox
	phys := h.PhysPort(c.VF, uint32(mlx4.SchedQueuePort(b[p.sched])))
	if phys == 0 {
		return 0, c.Refuse(mlx4.BAD_PARAM, refusal.Port)
	}
	b[p.sched] = b[p.sched]&^mlx4.SchedQueuePortBit | byte(phys-1)*mlx4.SchedQueuePortBit
	return phys, mlx4.OK
}

// qpcPorts is adjust_qp_sched_queue, the first check of every wrapper that
// carries a context: the primary path's port, and the alternate path's
// when optpar names it (alt is then its physical port, else 0).
func (h *HCA) qpcPorts(c *Cmd, q *mlx4.QPMailbox) (pri, alt int, s mlx4.Status) {
	if pri, s = h.pathPort(c, priPath); s != mlx4.OK {
		return 0, 0, s
	}
	if q.OptPar&mlx4.QP_OPTPAR_ALT_ADDR_PATH != 0 {
		if alt, s = h.pathPort(c, altPath); s != mlx4.OK {
			return 0, 0, s
		}
	}
	return pri, alt, mlx4.OK
}

// qpcVerify runs, after qpcPorts and in mlx4's order, the checks of
// verify_qp_parameters for the transitions that call it (path: INIT2RTR,
// RTR2RTS, RTS2RTS, SQD2SQD, SQD2RTS): rate limit BAD_OP; for RC/UC/XRC
// QPs the GID index of each path optpar names below the VF's GID count,
// BAD_PARAM; MLX QPs on reserved QPNs at INIT2RTR need SMI, BAD_OP; then
// roce_verify_mac at INIT2RTR (an Ethernet QP other than MLX must use a
// source MAC index the VF registered on the port, BAD_PARAM).
func (h *HCA) qpcVerify(c *Cmd, q *mlx4.QPMailbox, path bool, op mlx4.Opcode, pri, alt int) mlx4.Status {
	b := c.Inbox
	if path && q.Ctx.RateLimitParams != 0 {
		return c.Refuse(mlx4.BAD_OP, refusal.Context)
	}
	connected := q.Ctx.ST == mlx4.QP_ST_RC || q.Ctx.ST == mlx4.QP_ST_UC || q.Ctx.ST == mlx4.QP_ST_XRC
	if path && connected && q.OptPar&mlx4.QP_OPTPAR_PRIMARY_ADDR_PATH != 0 && int(b[priPath.mgid]) >= h.numGIDs(c.VF, pri) {
		return c.Refuse(mlx4.BAD_PARAM, refusal.GID)
	}
	if path && connected && alt != 0 && int(b[altPath.mgid]) >= h.numGIDs(c.VF, alt) {
		return c.Refuse(mlx4.BAD_PARAM, refusal.GID)
	}
	qpn := c.InMod & qpnMask
	if op == mlx4.INIT2RTR_QP && q.Ctx.ST == mlx4.QP_ST_MLX && qpn < uint32(h.Res.Config().Reserved[restrack.QP]) && !h.Funcs[c.VF].SMI {
		return c.Refuse(mlx4.BAD_OP, refusal.Privileged)
	}
	if Lookup(op).qp&qpSourceMAC != 0 && h.isEth(pri) && q.Ctx.ST != mlx4.QP_ST_MLX && !h.Res.HasMAC(c.VF, pri, int(q.Ctx.Pri.SMACIndex)) {
		return c.Refuse(mlx4.BAD_PARAM, refusal.NotOwner)
	}
	return mlx4.OK
}

// qpcModel runs the model's own context checks, after every refusal mlx4
// (wrapper and firmware) would give, so that they never change mlx4's
// status: the rate limit where mlx4 verifies nothing (RST2INIT, INIT2INIT,
// SQERR2RTS: BAD_OP, as verify_qp_parameters) and the P_Key index of each
// path inside the VF's virtual table (BAD_PARAM; update_pkey_index does
// not bound it). It then makes mlx4's rewrites: update_pkey_index,
// update_gid and adjust_proxy_tun_qkey.
func (h *HCA) qpcModel(c *Cmd, q *mlx4.QPMailbox, path bool, pri, alt int) mlx4.Status {
	b := c.Inbox
	if !path && q.Ctx.RateLimitParams != 0 {
		return c.Refuse(mlx4.BAD_OP, refusal.Context)
	}
	if int(b[priPath.pkey]) >= len(h.Funcs[c.VF].PKeyMap[pri]) {
		return c.Refuse(mlx4.BAD_PARAM, refusal.PKey)
	}
	if alt != 0 && int(b[altPath.pkey]) >= len(h.Funcs[c.VF].PKeyMap[alt]) {
		return c.Refuse(mlx4.BAD_PARAM, refusal.PKey)
	}
	h.pathRewrite(c, priPath, pri, q.Ctx.ST, path && q.OptPar&mlx4.QP_OPTPAR_PRIMARY_ADDR_PATH != 0)
	if alt != 0 {
		h.pathRewrite(c, altPath, alt, q.Ctx.ST, path)
	}
	// adjust_proxy_tun_qkey: proxy and tunnel QPs get their reserved Q_Key.
	qpn := c.InMod & qpnMask
	if qpn >= BaseProxySQPN && qpn < BaseTunnelSQPN+8*mlx4.MLX4_MFUNC_MAX {
		base := uint32(BaseProxySQPN)
		if qpn >= BaseTunnelSQPN {
			base = BaseTunnelSQPN
		}
		binary.BigEndian.PutUint32(b[mlx4.QPMailboxContext+mlx4.QPCQKey:], mlx4.RESERVED_QKEY_BASE+qpn-base)
	}
	return mlx4.OK
}

// pathRewrite is update_pkey_index and update_gid for one checked path:
// the virtual P_Key index becomes the physical one, the GID index the
// VF's (UD always, connected QPs when the path is being set).
func (h *HCA) pathRewrite(c *Cmd, p qpPath, phys int, st uint8, gidSet bool) {
	b := c.Inbox
	b[p.pkey] = byte(h.Funcs[c.VF].PKeyMap[phys][b[p.pkey]])
	connected := st == mlx4.QP_ST_RC || st == mlx4.QP_ST_UC || st == mlx4.QP_ST_XRC
	slave := byte(c.VF + 1)
	gbase, _ := h.gidSlice(c.VF, phys)
	base := byte(gbase)
	switch {
	case st == mlx4.QP_ST_UD && h.isEth(phys):
		b[p.mgid] = base&mlx4.MGIDIndexMask | mlx4.MGIDIndexUD
	case st == mlx4.QP_ST_UD:
		b[p.mgid] = slave&mlx4.MGIDIndexMask | mlx4.MGIDIndexUD
	case connected && gidSet && h.isEth(phys):
		b[p.mgid] = (b[p.mgid] + base) & mlx4.MGIDIndexMask
	case connected && gidSet:
		b[p.mgid] = slave & mlx4.MGIDIndexMask
	}
}

// ownedRef gets an object of the VF a QP context names (get_res: unknown
// INTERNAL_ERR, another VF's BAD_OP).
func (h *HCA) ownedRef(c *Cmd, ty restrack.Type, n uint32) (*restrack.Object, mlx4.Status) {
	o, err := h.Res.Peek(c.VF, ty, uint64(n))
	if err != nil {
		return nil, c.refuse(err)
	}
	return o, mlx4.OK
}

// RST2INIT_QP moves a QP from reset to INIT (mlx4_RST2INIT_QP_wrapper), in
// its order: ports, the QP MAPPED→HW, its MTT range, receive and send CQs
// and SRQ owned; then the model's own checks (CQs and SRQ in HW, BAD_PARAM;
// rate limit and P_Key index as qpcVerify) where mlx4 rewrites the context;
// references on the MTT, CQs and SRQ.
func (h *HCA) RST2INIT_QP(c *Cmd) mlx4.Status {
	qpn := c.InMod & qpnMask
	q, _ := mlx4.DecodeQPMailbox(c.Inbox[:]) // a mailbox holds the context
	phys, alt, s := h.qpcPorts(c, &q)
	if s != mlx4.OK {
		return s
	}
	o, err := h.Res.StartMove(c.VF, restrack.QP, uint64(qpn), restrack.QPHW)
	if err != nil {
		return c.refuse(err)
	}
	fail := func(s mlx4.Status) mlx4.Status { h.Res.AbortMove(o); return s }
	mtt, err := h.Res.MTTRange(c.VF, q.Ctx.MTTBase, q.Ctx.MTTPages())
	if err != nil {
		return fail(mttRefuse(c, err))
	}
	rcq, s := h.ownedRef(c, restrack.CQ, q.Ctx.CQNRecv)
	if s != mlx4.OK {
		return fail(s)
	}
	scq, s := h.ownedRef(c, restrack.CQ, q.Ctx.CQNSend)
	if s != mlx4.OK {
		return fail(s)
	}
	var srq *restrack.Object
	if q.Ctx.UseSRQ {
		if srq, s = h.ownedRef(c, restrack.SRQ, q.Ctx.SRQN); s != mlx4.OK {
			return fail(s)
		}
	}
	for _, d := range []*restrack.Object{rcq, scq, srq} {
		if d != nil && d.State != restrack.HW {
			return fail(c.Refuse(mlx4.BAD_PARAM, refusal.BadState))
		}
	}
	if s := h.qpcModel(c, &q, false, phys, alt); s != mlx4.OK {
		return fail(s)
	}
	for _, d := range []*restrack.Object{mtt, rcq, scq, srq} {
		if d != nil {
			if err := h.Res.AddDep(o, d); err != nil {
				h.Res.DropDeps(o)
				return fail(c.refuse(err))
			}
		}
	}
	w, s := h.wqBuild(c, &q.Ctx, mtt)
	if s != mlx4.OK {
		h.Res.DropDeps(o)
		return fail(s)
	}
	qp := &qpObj{tr: o, QPState: QPState{State: mlx4.QP_STATE_INIT, Port: phys}, wq: w}
	copy(qp.Ctx[:], c.Inbox[:])
	h.wqTransition(qp, mlx4.QP_STATE_RST)
	h.fw.qps[qpn] = qp
	h.Res.EndMove(o)
	return mlx4.OK
}

// hwQP gets the VF's QP, which must be in HW (else RESOURCE_BUSY, as mlx4's
// wrappers). The caller must Put qp.tr.
func (h *HCA) hwQP(c *Cmd) (*qpObj, mlx4.Status) {
	qpn := c.InMod & qpnMask
	o, err := h.Res.Get(c.VF, restrack.QP, uint64(qpn))
	if err != nil {
		return nil, c.refuse(err)
	}
	qp := h.fw.qps[qpn]
	if o.From() != restrack.QPHW || qp == nil {
		h.Res.Put(o)
		return nil, c.Refuse(mlx4.RESOURCE_BUSY, refusal.BadState)
	}
	return qp, mlx4.OK
}

// modifyQP runs a modify-QP command in mlx4's order: the
// wrapper's context checks (qpcPorts, qpcVerify), then the QP (GEN_QP:
// the VF's, in HW else RESOURCE_BUSY), the counter at INIT2RTR
// (update_vport_qp_param), the firmware's check of the QP's current state,
// and last the model's own checks (INIT2INIT's port, the counter of the
// other transitions when their optpar has COUNTER_INDEX, qpcModel), which
// mlx4 does not make.
func (h *HCA) modifyQP(c *Cmd, op mlx4.Opcode) mlx4.Status {
	x := Lookup(op) // the transition (qp.c's op[][]) and the wrapper's checks
	path := x.qp&qpVerifyPath != 0
	var q mlx4.QPMailbox
	var phys, alt int
	if x.HasInbox { // optpar + QP context
		q, _ = mlx4.DecodeQPMailbox(c.Inbox[:])
		var s mlx4.Status
		if op != mlx4.INIT2INIT_QP { // mlx4's INIT2INIT converts no port
			if phys, alt, s = h.qpcPorts(c, &q); s != mlx4.OK {
				return s
			}
		}
		if s := h.qpcVerify(c, &q, path, op, phys, alt); s != mlx4.OK {
			return s
		}
	}
	qp, s := h.hwQP(c)
	if s != mlx4.OK {
		return s
	}
	defer h.Res.Put(qp.tr)
	if op == mlx4.INIT2RTR_QP {
		if s := h.handleCounter(c, phys, true); s != mlx4.OK {
			return s
		}
	}
	if !x.QP.Has(qp.State) {
		return c.Refuse(mlx4.BAD_PARAM, refusal.BadState)
	}
	if x.HasInbox {
		if op == mlx4.INIT2INIT_QP {
			var s mlx4.Status
			if phys, alt, s = h.qpcPorts(c, &q); s != mlx4.OK {
				return s
			}
		}
		if op != mlx4.INIT2RTR_QP {
			if q.OptPar&mlx4.QP_OPTPAR_COUNTER_INDEX != 0 {
				if s := h.handleCounter(c, phys, false); s != mlx4.OK {
					return s
				}
			} else {
				// Past INIT2RTR the firmware takes only the fields optpar
				// names: without COUNTER_INDEX the QP keeps its counter.
				// Linux's mlx4_ib sends a zeroed context (counter 0) to
				// every transition but INIT2RTR.
				c.Inbox[qpcPriCounter] = qp.Ctx[qpcPriCounter]
			}
		}
		if s := h.qpcModel(c, &q, path, phys, alt); s != mlx4.OK {
			return s
		}
		// VST and spoof check (update_vport_qp_param). mlx4 rewrites the
		// INIT2RTR mailbox only; the model's context follows every
		// transition's mailbox, so a QP rewritten once is rewritten again
		// by later transitions rather than let a VF clear the forced bits.
		if op == mlx4.INIT2RTR_QP || qp.Vport {
			h.updateVportQP(c, phys, q.Ctx.ST)
			vp := &h.fw.vfs[c.VF].Vport[phys-1]
			qp.Vport = qp.Vport || vp.VST || vp.Spoof
		}
		mergeQPContext(&qp.Ctx, (*[mlx4.QPMailboxSize]byte)(c.Inbox[:mlx4.QPMailboxSize]), op, q.OptPar)
		qp.Port = phys
	}
	from := qp.State
	qp.State = x.QP.To
	h.wqTransition(qp, from)
	h.dpSaveQP(qp)
	return mlx4.OK
}

// INIT2INIT_QP modifies an INIT QP (P_Key index rewrite).
func (h *HCA) INIT2INIT_QP(c *Cmd) mlx4.Status { return h.modifyQP(c, mlx4.INIT2INIT_QP) }

// INIT2RTR_QP moves INIT → RTR (port, GID, P_Key, RoCE source MAC checks).
func (h *HCA) INIT2RTR_QP(c *Cmd) mlx4.Status { return h.modifyQP(c, mlx4.INIT2RTR_QP) }

// RTR2RTS_QP moves RTR → RTS.
func (h *HCA) RTR2RTS_QP(c *Cmd) mlx4.Status { return h.modifyQP(c, mlx4.RTR2RTS_QP) }

// RTS2RTS_QP modifies an RTS QP.
func (h *HCA) RTS2RTS_QP(c *Cmd) mlx4.Status { return h.modifyQP(c, mlx4.RTS2RTS_QP) }

// SQERR2RTS_QP moves SQE → RTS.
func (h *HCA) SQERR2RTS_QP(c *Cmd) mlx4.Status { return h.modifyQP(c, mlx4.SQERR2RTS_QP) }

// SQD2SQD_QP modifies an SQD QP.
func (h *HCA) SQD2SQD_QP(c *Cmd) mlx4.Status { return h.modifyQP(c, mlx4.SQD2SQD_QP) }

// SQD2RTS_QP moves SQD → RTS.
func (h *HCA) SQD2RTS_QP(c *Cmd) mlx4.Status { return h.modifyQP(c, mlx4.SQD2RTS_QP) }

// TWO_ERR_QP (2ERR_QP) moves any QP in HW to ERR.
func (h *HCA) TWO_ERR_QP(c *Cmd) mlx4.Status { return h.modifyQP(c, mlx4.TWO_ERR_QP) }

// RTS2SQD_QP moves RTS → SQD.
func (h *HCA) RTS2SQD_QP(c *Cmd) mlx4.Status { return h.modifyQP(c, mlx4.RTS2SQD_QP) }

// TWO_RST_QP (2RST_QP) returns a QP to reset: HW→MAPPED, references on its
// MTT, CQs and SRQ dropped. Not in HW → BAD_PARAM.
func (h *HCA) TWO_RST_QP(c *Cmd) mlx4.Status {
	qpn := c.InMod & qpnMask
	o, err := h.Res.StartMove(c.VF, restrack.QP, uint64(qpn), restrack.Mapped)
	if err != nil {
		return c.refuse(err)
	}
	h.resetQP(qpn, o)
	h.Res.EndMove(o)
	return mlx4.OK
}

// resetQP is the firmware side of 2RST: drop references, forget the
// context. Multicast attachments stay, as mlx4's mcg_list: FREE_RES of the
// QP is RESOURCE_BUSY until they are detached (or the VF is reset).
func (h *HCA) resetQP(qpn uint32, o *restrack.Object) {
	h.Res.DropDeps(o)
	h.wqDrop(h.fw.qps[qpn])
	if qp := h.fw.qps[qpn]; qp != nil {
		h.dpForget(&qp.dps)
	}
	delete(h.fw.qps, qpn)
}

// QUERY_QP returns the QP context at outbox offset 8, its state in bits
// 31:28 of the flags word. Not in HW → RESOURCE_BUSY.
func (h *HCA) QUERY_QP(c *Cmd) mlx4.Status {
	qp, s := h.hwQP(c)
	if s != mlx4.OK {
		return s
	}
	defer h.Res.Put(qp.tr)
	copy(c.Outbox[:], qp.Ctx[:])
	binary.BigEndian.PutUint32(c.Outbox[mlx4.QPMailboxOptPar:], 0)
	mlx4.PutQPCState(c.Outbox[mlx4.QPMailboxContext:], qp.State)
	return mlx4.OK
}

// SUSPEND_QP suspends a QP in HW (else RESOURCE_BUSY).
func (h *HCA) SUSPEND_QP(c *Cmd) mlx4.Status {
	qp, s := h.hwQP(c)
	if s != mlx4.OK {
		return s
	}
	qp.Suspended = true
	h.Res.Put(qp.tr)
	return mlx4.OK
}

// UNSUSPEND_QP resumes a suspended QP in HW (else RESOURCE_BUSY).
func (h *HCA) UNSUSPEND_QP(c *Cmd) mlx4.Status {
	qp, s := h.hwQP(c)
	if s != mlx4.OK {
		return s
	}
	qp.Suspended = false
	h.Res.Put(qp.tr)
	return mlx4.OK
}

// UPDATE_QP (mlx4_UPDATE_QP_wrapper): only the primary-path MAC_INDEX and
// ETH_SRC_CHECK_MC_LB bits; qp_mask and the secondary mask must be zero
// (BAD_OP); MC_LB is not supported by the model (INTERNAL_ERR, mlx4's
// -EOPNOTSUPP); the new source MAC index must be one the VF registered on
// the QP's port (INTERNAL_ERR, reason not_owner). The QP must be the VF's.
func (h *HCA) UPDATE_QP(c *Cmd) mlx4.Status {
	b := c.Inbox
	pri := binary.BigEndian.Uint64(b[mlx4.UpdQPPrimaryAddrPathMask:])
	if binary.BigEndian.Uint64(b[mlx4.UpdQPQPMask:]) != 0 || binary.BigEndian.Uint64(b[mlx4.UpdQPSecondaryAddrPathMask:]) != 0 ||
		pri&^(updPathMaskMACIndex|updPathMaskMCLB) != 0 {
		return c.Refuse(mlx4.BAD_OP, refusal.Context)
	}
	if pri&updPathMaskMCLB != 0 {
		return c.Refuse(mlx4.INTERNAL_ERR, refusal.Context)
	}
	qpn := c.InMod & mlx4.QPNMask // as mlx4: bit 23 names no QP
	o, err := h.Res.Get(c.VF, restrack.QP, uint64(qpn))
	if err != nil {
		return c.refuse(err)
	}
	defer h.Res.Put(o)
	qp := h.fw.qps[qpn]
	if pri&updPathMaskMACIndex != 0 {
		smac := b[mlx4.UpdQPContext+mlx4.QPCPriPath+mlx4.PathGRHMyLMC] // the whole byte, as mac_find_smac_ix_in_slave
		if qp == nil || !h.Res.HasMAC(c.VF, qp.Port, int(smac)) {
			return c.Refuse(mlx4.INTERNAL_ERR, refusal.NotOwner)
		}
		const g = mlx4.QPMailboxPriPath + mlx4.PathGRHMyLMC
		qp.Ctx[g] = qp.Ctx[g]&mlx4.GRHMyLMCGRH | smac
	}
	return mlx4.OK
}

// QP_ATTACH attaches (op_modifier ≠ 0) or detaches (0) a QP to/from the
// multicast group whose GID is at inbox offset 0 (mlx4_QP_ATTACH_wrapper),
// in its order: the QP (in_modifier 23:0, any tracker state) must be the
// VF's (INTERNAL_ERR unknown, BAD_OP another VF's); an Ethernet group's
// port (GID byte 5; with device-managed steering every attach's) must be
// the VF's (BAD_PARAM); attaching a group the QP is in is INTERNAL_ERR
// (add_mcg_res's -EEXIST), detaching one it is not in BAD_PARAM
// (rem_mcg_res's -EINVAL). An attachment holds the QP (FREE_RES of it is
// RESOURCE_BUSY until detached, across 2RST); at most 64 per QP
// (EXCEED_LIM, a bound of the model).
func (h *HCA) QP_ATTACH(c *Cmd) mlx4.Status {
	qpn := c.InMod & mlx4.QPNMask
	o, err := h.Res.Get(c.VF, restrack.QP, uint64(qpn))
	if err != nil {
		return c.refuse(err)
	}
	defer h.Res.Put(o)
	attach := c.OpMod != 0
	if prot := c.InMod >> 28 & 7; prot == mcgProtETH || (attach && h.fw.dmfs) {
		if h.PhysPort(c.VF, uint32(c.Inbox[5])) == 0 {
			return c.Refuse(mlx4.BAD_PARAM, refusal.Port)
		}
	}
	var gid [16]byte
	copy(gid[:], c.Inbox[:16])
	gids := h.fw.mcg[qpn]
	idx := -1
	for i := range gids {
		if gids[i] == gid {
			idx = i
		}
	}
	if attach {
		if idx >= 0 {
			return c.Refuse(mlx4.INTERNAL_ERR, refusal.Busy)
		}
		if len(gids) >= maxAttachPerQP {
			return c.Refuse(mlx4.EXCEED_LIM, refusal.Quota)
		}
		h.fw.mcg[qpn] = append(gids, gid)
		h.ethReindex()
		h.Res.Hold(o)
		return mlx4.OK
	}
	if idx < 0 {
		return c.Refuse(mlx4.BAD_PARAM, refusal.Context)
	}
	if gids = append(gids[:idx], gids[idx+1:]...); len(gids) == 0 {
		delete(h.fw.mcg, qpn)
	} else {
		h.fw.mcg[qpn] = gids
	}
	h.ethReindex()
	h.Res.Unhold(o)
	return mlx4.OK
}
