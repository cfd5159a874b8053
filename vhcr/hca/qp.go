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
//     bad_state.
//
// Context checks (mailbox offsets of §2.6): send CQ (132), receive CQ (164)
// and SRQ (180, if bit 24) the VF's (INTERNAL_ERR unknown, BAD_OP other VF)
// and in HW (BAD_PARAM: Linux does not check the state); MTT range owned;
// port (sched_queue bit 6) one the VF has (BAD_PARAM, rewritten to the
// physical port); pkey_index inside the VF's virtual P_Key table (BAD_PARAM:
// Linux does not bound it) and rewritten to the physical index; mgid_index
// below the VF's GID count for RC/UC/XRC paths (BAD_PARAM) and rewritten;
// rate_limit 0 (BAD_OP); proxy/tunnel QPs' Q_Key (176) set to the reserved
// Q_Key of their number; RoCE source MAC index registered by the VF on the
// port (BAD_PARAM); MLX QPs on special QPNs in INIT2RTR need SMI (BAD_OP).

import (
	"encoding/binary"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/restrack"
)

// qpState is the firmware QP state (enum mlx4_qp_state).
type qpState uint8

const (
	qpRST qpState = iota
	qpINIT
	qpRTR
	qpRTS
	qpSQER
	qpSQD
	qpERR
)

const anyHWState = 1<<qpINIT | 1<<qpRTR | 1<<qpRTS | 1<<qpSQER | 1<<qpSQD | 1<<qpERR

// qpTrans describes one modify-QP transition.
type qpTrans struct {
	from uint8 // bit set of legal source states
	to   qpState
	path bool // verify_qp_parameters' GID checks, update_gid, alt path
	smac bool // RoCE source MAC check (INIT2RTR)
}

var qpTransitions = map[mlx4.Opcode]qpTrans{
	mlx4.INIT2INIT_QP: {from: 1 << qpINIT, to: qpINIT},
	mlx4.INIT2RTR_QP:  {from: 1 << qpINIT, to: qpRTR, path: true, smac: true},
	mlx4.RTR2RTS_QP:   {from: 1 << qpRTR, to: qpRTS, path: true},
	mlx4.RTS2RTS_QP:   {from: 1 << qpRTS, to: qpRTS, path: true},
	mlx4.SQERR2RTS_QP: {from: 1 << qpSQER, to: qpRTS},
	mlx4.SQD2SQD_QP:   {from: 1 << qpSQD, to: qpSQD, path: true},
	mlx4.SQD2RTS_QP:   {from: 1 << qpSQD, to: qpRTS, path: true},
	mlx4.TWO_ERR_QP:   {from: anyHWState, to: qpERR},
	mlx4.RTS2SQD_QP:   {from: 1 << qpRTS, to: qpSQD},
}

// QP update masks (MLX4_UPD_QP_PATH_MASK_*).
const (
	updPathMaskMACIndex = 1 << (2 + 32)
	updPathMaskMCLB     = 1 << (19 + 32)
	updQPMask           = 0
	updPriPathMask      = 8
	updSecPathMask      = 16
	updCtx              = 32
)

// reservedQKeyBase is MLX4_RESERVED_QKEY_BASE.
const reservedQKeyBase = 0xffff0000

// numGIDs is the VF's GID count on a physical port: 1 on IB, an equal share
// of the table on Ethernet (as QUERY_PORT reports it).
func (h *HCA) numGIDs(phys int) int {
	p := &h.Cfg.Ports[phys-1]
	if p.LinkLayer == "eth" {
		return max(1, p.GIDTableLen/(h.NumVFs+1))
	}
	return 1
}

func (h *HCA) isEth(phys int) bool { return h.Cfg.Ports[phys-1].LinkLayer == "eth" }

// checkPath validates and rewrites one address path of the inbox: its port
// (sched_queue bit 6), its P_Key index and, for path transitions of
// connected QPs, its GID index. It returns the physical port.
func (h *HCA) checkPath(c *mlx4.Cmd, sched, pkey, mgid int, st uint8, gidCheck bool) (int, mlx4.Status) {
	b := c.Inbox
	phys := h.PhysPort(c.VF, uint32(b[sched]>>6&1)+1)
	if phys == 0 {
		return 0, c.Refuse(mlx4.BAD_PARAM, mlx4.ReasonPort)
	}
	pk := h.Funcs[c.VF].PKeyMap[phys]
	if int(b[pkey]) >= len(pk) {
		return 0, c.Refuse(mlx4.BAD_PARAM, mlx4.ReasonPKey)
	}
	connected := st == stRC || st == stUC || st == stXRC
	if gidCheck && connected && int(b[mgid]) >= h.numGIDs(phys) {
		return 0, c.Refuse(mlx4.BAD_PARAM, mlx4.ReasonGID)
	}
	b[sched] = b[sched]&^0x40 | byte(phys-1)<<6
	b[pkey] = byte(pk[b[pkey]])
	slave := byte(c.VF + 1)
	base := byte((c.VF + 1) * h.numGIDs(phys))
	switch {
	case st == stUD && h.isEth(phys):
		b[mgid] = base&0x7f | 0x80
	case st == stUD:
		b[mgid] = slave&0x7f | 0x80
	case connected && gidCheck && h.isEth(phys):
		b[mgid] = (b[mgid] + base) & 0x7f
	case connected && gidCheck:
		b[mgid] = slave & 0x7f
	}
	return phys, mlx4.OK
}

// checkQPC runs the context checks shared by the modify transitions.
func (h *HCA) checkQPC(c *mlx4.Cmd, q *qpCtx, path bool, op mlx4.Opcode) (int, mlx4.Status) {
	if q.rateLimit != 0 {
		return 0, c.Refuse(mlx4.BAD_OP, mlx4.ReasonContext)
	}
	gid := path && q.optpar&optPriAddrPath != 0
	phys, s := h.checkPath(c, qpcSched, qpcPKey, qpcMGID, q.st, gid)
	if s != mlx4.OK {
		return 0, s
	}
	if q.optpar&optAltAddrPath != 0 {
		if _, s := h.checkPath(c, qpcAltSched, qpcAltPKey, qpcAltMGID, q.st, path); s != mlx4.OK {
			return 0, s
		}
	}
	qpn := c.InMod & qpnMask
	// adjust_proxy_tun_qkey: proxy and tunnel QPs get their reserved Q_Key.
	if qpn >= BaseProxySQPN && qpn < BaseTunnelSQPN+8*128 {
		base := uint32(BaseProxySQPN)
		if qpn >= BaseTunnelSQPN {
			base = BaseTunnelSQPN
		}
		binary.BigEndian.PutUint32(c.Inbox[qpcQKey:], reservedQKeyBase+qpn-base)
	}
	if op == mlx4.INIT2RTR_QP && q.st == stMLX && qpn < uint32(h.Res.Config().Reserved[restrack.QP]) && !h.Funcs[c.VF].SMI {
		return 0, c.Refuse(mlx4.BAD_OP, mlx4.ReasonPrivileged)
	}
	return phys, mlx4.OK
}

// hwCQ gets a CQ of the VF that must be in HW, for a QP context.
func (h *HCA) hwRef(c *mlx4.Cmd, ty restrack.Type, n uint32) (*restrack.Object, mlx4.Status) {
	o, err := h.Res.Peek(c.VF, ty, uint64(n))
	if err != nil {
		return nil, restrack.Refuse(c, err)
	}
	if o.State != restrack.HW {
		return nil, c.Refuse(mlx4.BAD_PARAM, mlx4.ReasonBadState)
	}
	return o, mlx4.OK
}

// RST2INIT_QP moves a QP from reset to INIT (mlx4_RST2INIT_QP_wrapper): all
// context checks, the QP MAPPED→HW, references on its MTT, receive and send
// CQs and SRQ.
func (h *HCA) RST2INIT_QP(c *mlx4.Cmd) mlx4.Status {
	qpn := c.InMod & qpnMask
	q := decodeQPC(c.Inbox)
	phys, s := h.checkQPC(c, &q, false, mlx4.RST2INIT_QP)
	if s != mlx4.OK {
		return s
	}
	o, err := h.Res.StartMove(c.VF, restrack.QP, uint64(qpn), restrack.QPHW)
	if err != nil {
		return restrack.Refuse(c, err)
	}
	fail := func(s mlx4.Status) mlx4.Status { h.Res.AbortMove(o); return s }
	mtt, err := h.Res.MTTRange(c.VF, q.mttBase, q.mttSize)
	if err != nil {
		return fail(mttRefuse(c, err))
	}
	rcq, s := h.hwRef(c, restrack.CQ, q.cqnRecv)
	if s != mlx4.OK {
		return fail(s)
	}
	scq, s := h.hwRef(c, restrack.CQ, q.cqnSend)
	if s != mlx4.OK {
		return fail(s)
	}
	var srq *restrack.Object
	if q.useSRQ {
		if srq, s = h.hwRef(c, restrack.SRQ, q.srqn); s != mlx4.OK {
			return fail(s)
		}
	}
	for _, d := range []*restrack.Object{mtt, rcq, scq, srq} {
		if d != nil {
			if err := h.Res.AddDep(o, d); err != nil {
				h.Res.DropDeps(o)
				return fail(restrack.Refuse(c, err))
			}
		}
	}
	qp := &qpObj{tr: o, state: qpINIT, port: phys}
	copy(qp.ctx[:], c.Inbox[:qpcEnd])
	h.fw.qps[qpn] = qp
	h.Res.EndMove(o)
	return mlx4.OK
}

// hwQP gets the VF's QP, which must be in HW (else RESOURCE_BUSY, as mlx4's
// wrappers). The caller must Put qp.tr.
func (h *HCA) hwQP(c *mlx4.Cmd) (*qpObj, mlx4.Status) {
	qpn := c.InMod & qpnMask
	o, err := h.Res.Get(c.VF, restrack.QP, uint64(qpn))
	if err != nil {
		return nil, restrack.Refuse(c, err)
	}
	qp := h.fw.qps[qpn]
	if o.From() != restrack.QPHW || qp == nil {
		h.Res.Put(o)
		return nil, c.Refuse(mlx4.RESOURCE_BUSY, mlx4.ReasonBadState)
	}
	return qp, mlx4.OK
}

// modifyQP runs a transition of qpTransitions.
func (h *HCA) modifyQP(c *mlx4.Cmd, op mlx4.Opcode) mlx4.Status {
	t := qpTransitions[op]
	qp, s := h.hwQP(c)
	if s != mlx4.OK {
		return s
	}
	defer h.Res.Put(qp.tr)
	if t.from&(1<<qp.state) == 0 {
		return c.Refuse(mlx4.BAD_PARAM, mlx4.ReasonBadState)
	}
	if in, _ := mlx4.CmdInfo(op); in.HasInbox { // optpar + QP context
		q := decodeQPC(c.Inbox)
		phys, s := h.checkQPC(c, &q, t.path, op)
		if s != mlx4.OK {
			return s
		}
		if t.smac && h.isEth(phys) && (q.st == stRC || q.st == stUC || q.st == stXRC) &&
			!h.Res.HasMAC(c.VF, phys, int(q.smac)) {
			return c.Refuse(mlx4.BAD_PARAM, mlx4.ReasonNotOwner)
		}
		// VST and spoof check (update_vport_qp_param). mlx4 rewrites the
		// INIT2RTR mailbox only; the model's context follows every
		// transition's mailbox, so a QP rewritten once is rewritten again
		// by later transitions rather than let a VF clear the forced bits.
		if s := h.handleCounter(c, phys, op == mlx4.INIT2RTR_QP); s != mlx4.OK {
			return s
		}
		if op == mlx4.INIT2RTR_QP || qp.vport {
			h.updateVportQP(c, phys, q.st)
			vp := &h.fw.vfs[c.VF].vport[phys-1]
			qp.vport = qp.vport || vp.vst || vp.spoof
		}
		// Keep what RST2INIT validated (CQs, SRQ, MTT); take the rest.
		keep := qp.ctx
		copy(qp.ctx[:], c.Inbox[:qpcEnd])
		for _, r := range [][2]int{{qpcCQNSend, 4}, {qpcCQNRecv, 4}, {qpcSRQN, 4}, {qpcLogPageSize, 8},
			{qpcSQSizeStride - 1, 2}, {qpcParams2, 4}} {
			copy(qp.ctx[r[0]:r[0]+r[1]], keep[r[0]:r[0]+r[1]])
		}
		qp.port = phys
	}
	qp.state = t.to
	return mlx4.OK
}

// INIT2INIT_QP modifies an INIT QP (P_Key index rewrite).
func (h *HCA) INIT2INIT_QP(c *mlx4.Cmd) mlx4.Status { return h.modifyQP(c, mlx4.INIT2INIT_QP) }

// INIT2RTR_QP moves INIT → RTR (port, GID, P_Key, RoCE source MAC checks).
func (h *HCA) INIT2RTR_QP(c *mlx4.Cmd) mlx4.Status { return h.modifyQP(c, mlx4.INIT2RTR_QP) }

// RTR2RTS_QP moves RTR → RTS.
func (h *HCA) RTR2RTS_QP(c *mlx4.Cmd) mlx4.Status { return h.modifyQP(c, mlx4.RTR2RTS_QP) }

// RTS2RTS_QP modifies an RTS QP.
func (h *HCA) RTS2RTS_QP(c *mlx4.Cmd) mlx4.Status { return h.modifyQP(c, mlx4.RTS2RTS_QP) }

// SQERR2RTS_QP moves SQE → RTS.
func (h *HCA) SQERR2RTS_QP(c *mlx4.Cmd) mlx4.Status { return h.modifyQP(c, mlx4.SQERR2RTS_QP) }

// SQD2SQD_QP modifies an SQD QP.
func (h *HCA) SQD2SQD_QP(c *mlx4.Cmd) mlx4.Status { return h.modifyQP(c, mlx4.SQD2SQD_QP) }

// SQD2RTS_QP moves SQD → RTS.
func (h *HCA) SQD2RTS_QP(c *mlx4.Cmd) mlx4.Status { return h.modifyQP(c, mlx4.SQD2RTS_QP) }

// TWO_ERR_QP (2ERR_QP) moves any QP in HW to ERR.
func (h *HCA) TWO_ERR_QP(c *mlx4.Cmd) mlx4.Status { return h.modifyQP(c, mlx4.TWO_ERR_QP) }

// RTS2SQD_QP moves RTS → SQD.
func (h *HCA) RTS2SQD_QP(c *mlx4.Cmd) mlx4.Status { return h.modifyQP(c, mlx4.RTS2SQD_QP) }

// TWO_RST_QP (2RST_QP) returns a QP to reset: HW→MAPPED, references on its
// MTT, CQs and SRQ dropped. Not in HW → BAD_PARAM.
func (h *HCA) TWO_RST_QP(c *mlx4.Cmd) mlx4.Status {
	qpn := c.InMod & qpnMask
	o, err := h.Res.StartMove(c.VF, restrack.QP, uint64(qpn), restrack.Mapped)
	if err != nil {
		return restrack.Refuse(c, err)
	}
	h.resetQP(qpn, o)
	h.Res.EndMove(o)
	return mlx4.OK
}

// resetQP is the firmware side of 2RST: detach, drop references, forget
// the context.
func (h *HCA) resetQP(qpn uint32, o *restrack.Object) {
	if qp := h.fw.qps[qpn]; qp != nil {
		for range qp.attached {
			h.Res.Unhold(o)
		}
	}
	h.Res.DropDeps(o)
	delete(h.fw.qps, qpn)
}

// QUERY_QP returns the QP context at outbox offset 8, its state in bits
// 31:28 of the flags word. Not in HW → RESOURCE_BUSY.
func (h *HCA) QUERY_QP(c *mlx4.Cmd) mlx4.Status {
	qp, s := h.hwQP(c)
	if s != mlx4.OK {
		return s
	}
	defer h.Res.Put(qp.tr)
	copy(c.Outbox[:], qp.ctx[:])
	binary.BigEndian.PutUint32(c.Outbox[qpcOptpar:], 0)
	c.Outbox[qpcFlags] = c.Outbox[qpcFlags]&0x0f | byte(qp.state)<<4
	return mlx4.OK
}

// SUSPEND_QP suspends a QP in HW (else RESOURCE_BUSY).
func (h *HCA) SUSPEND_QP(c *mlx4.Cmd) mlx4.Status {
	qp, s := h.hwQP(c)
	if s != mlx4.OK {
		return s
	}
	qp.suspended = true
	h.Res.Put(qp.tr)
	return mlx4.OK
}

// UNSUSPEND_QP resumes a suspended QP in HW (else RESOURCE_BUSY).
func (h *HCA) UNSUSPEND_QP(c *mlx4.Cmd) mlx4.Status {
	qp, s := h.hwQP(c)
	if s != mlx4.OK {
		return s
	}
	qp.suspended = false
	h.Res.Put(qp.tr)
	return mlx4.OK
}

// UPDATE_QP (mlx4_UPDATE_QP_wrapper): only the primary-path MAC_INDEX and
// ETH_SRC_CHECK_MC_LB bits; qp_mask and the secondary mask must be zero
// (BAD_OP); MC_LB is not supported by the model (INTERNAL_ERR, mlx4's
// -EOPNOTSUPP); the new source MAC index must be one the VF registered on
// the QP's port (INTERNAL_ERR, reason not_owner). The QP must be the VF's.
func (h *HCA) UPDATE_QP(c *mlx4.Cmd) mlx4.Status {
	b := c.Inbox
	pri := binary.BigEndian.Uint64(b[updPriPathMask:])
	if binary.BigEndian.Uint64(b[updQPMask:]) != 0 || binary.BigEndian.Uint64(b[updSecPathMask:]) != 0 ||
		pri&^(updPathMaskMACIndex|updPathMaskMCLB) != 0 {
		return c.Refuse(mlx4.BAD_OP, mlx4.ReasonContext)
	}
	if pri&updPathMaskMCLB != 0 {
		return c.Refuse(mlx4.INTERNAL_ERR, mlx4.ReasonContext)
	}
	qpn := c.InMod & 0xffffff
	o, err := h.Res.Get(c.VF, restrack.QP, uint64(qpn&qpnMask))
	if err != nil {
		return restrack.Refuse(c, err)
	}
	defer h.Res.Put(o)
	qp := h.fw.qps[qpn&qpnMask]
	if pri&updPathMaskMACIndex != 0 {
		smac := b[updCtx+qpcGRHMyLMC-8] & 0x7f
		if qp == nil || !h.Res.HasMAC(c.VF, qp.port, int(smac)) {
			return c.Refuse(mlx4.INTERNAL_ERR, mlx4.ReasonNotOwner)
		}
		qp.ctx[qpcGRHMyLMC] = qp.ctx[qpcGRHMyLMC]&0x80 | smac
	}
	return mlx4.OK
}

// QP_ATTACH attaches (op_modifier 1) or detaches (0) a QP to/from the
// multicast group whose GID is at inbox offset 0 (mlx4_QP_ATTACH_wrapper):
// the QP must be the VF's; an attachment holds the QP (FREE_RES of it is
// RESOURCE_BUSY until detached or 2RST); at most 64 per QP (EXCEED_LIM);
// detaching a group the QP is not in → BAD_PARAM.
func (h *HCA) QP_ATTACH(c *mlx4.Cmd) mlx4.Status {
	qpn := c.InMod & 0xffffff & qpnMask
	o, err := h.Res.Get(c.VF, restrack.QP, uint64(qpn))
	if err != nil {
		return restrack.Refuse(c, err)
	}
	defer h.Res.Put(o)
	qp := h.fw.qps[qpn]
	if qp == nil {
		return c.Refuse(mlx4.RESOURCE_BUSY, mlx4.ReasonBadState)
	}
	var gid [16]byte
	copy(gid[:], c.Inbox[:16])
	idx := -1
	for i := range qp.gids {
		if qp.gids[i] == gid {
			idx = i
		}
	}
	switch c.OpMod {
	case 1:
		if idx >= 0 {
			return mlx4.OK
		}
		if len(qp.gids) >= maxAttachPerQP {
			return c.Refuse(mlx4.EXCEED_LIM, mlx4.ReasonQuota)
		}
		qp.gids = append(qp.gids, gid)
		qp.attached++
		h.Res.Hold(o)
	case 0:
		if idx < 0 {
			return c.Refuse(mlx4.BAD_PARAM, mlx4.ReasonContext)
		}
		qp.gids = append(qp.gids[:idx], qp.gids[idx+1:]...)
		qp.attached--
		h.Res.Unhold(o)
	default:
		return c.Refuse(mlx4.BAD_PARAM, mlx4.ReasonOpModifier)
	}
	return mlx4.OK
}
