package hca

import (
	"encoding/binary"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Which fields of a modify-QP context the firmware takes. Past RST2INIT a
// transition applies the fields it requires and those its optpar names,
// and leaves the others as they were: Linux's mlx4_ib (__mlx4_ib_modify_qp)
// sends a context zeroed but for the attributes of the call, so RTR2RTS's
// mailbox carries no destination QPN, path or MTU, and a QP that took them
// wholesale would lose what INIT2RTR set. The table names the fields the
// data path reads; the rest of the context follows the mailbox, as before.
type qpcField struct {
	off, n   int
	init2rtr bool   // INIT2RTR requires it
	rtr2rts  bool   // RTR2RTS requires it
	optpar   uint32 // optpar bits that carry it in any transition
	bits     uint32 // for a BE32 word (n 4) that shares its bits: the field's; 0: all n bytes
}

var qpcCarried = [...]qpcField{
	{mlx4.QPCRemoteQPN, 4, true, false, 0, 0},
	// The primary path but its ackto byte, which RTR2RTS carries (mlx4_ib
	// writes attr->timeout << 3 there with MLX4_QP_OPTPAR_ACK_TIMEOUT, and
	// no path otherwise: the local ACK timeout of the RC retries).
	{mlx4.QPCPriPath, mlx4.PathAckTO, true, false, priPathOptPar, 0},
	{mlx4.QPCPriPath + mlx4.PathAckTO, 1, true, true, priPathOptPar | mlx4.QP_OPTPAR_ACK_TIMEOUT, 0},
	{mlx4.QPCPriPath + mlx4.PathAckTO + 1, mlx4.QPPathSize - mlx4.PathAckTO - 1, true, false, priPathOptPar, 0},
	{mlx4.QPCAltPath, mlx4.QPPathSize, false, false, mlx4.QP_OPTPAR_ALT_ADDR_PATH, 0},
	{mlx4.QPCMTUMsgMax, 1, true, false, 0, 0},
	{mlx4.QPCParams1, 4, false, true, mlx4.QP_OPTPAR_RETRY_COUNT | mlx4.QP_OPTPAR_RNR_RETRY | mlx4.QP_OPTPAR_ACK_TIMEOUT | mlx4.QP_OPTPAR_SRA_MAX, 0},
	{mlx4.QPCNextSendPSN, 4, false, true, 0, 0},
	{mlx4.QPCQKey, 4, false, false, mlx4.QP_OPTPAR_Q_KEY, 0},
	{mlx4.QPCRNRNextRecvPSN, 4, true, false, mlx4.QP_OPTPAR_RNR_TIMEOUT, 0},
	// The remote access enables and rra_max: mlx4_ib sets them (with
	// their optpar bits) only in a transition whose attributes name the
	// access flags or max_dest_rd_atomic — rdma_cm's INIT2INIT and
	// INIT2RTR — and RTR2RTS's params2 has them zero: a QP that took them
	// from it would refuse the RDMA READ and WRITE it was opened for.
	{mlx4.QPCParams2, 4, false, false, mlx4.QP_OPTPAR_RRE | mlx4.QP_OPTPAR_RWE | mlx4.QP_OPTPAR_RAE, params2Access},
	{mlx4.QPCParams2, 4, false, false, mlx4.QP_OPTPAR_RRA_MAX, params2RRAMax},
}

// The params2 fields a transition past RST2INIT may set (qpcCarried); the
// rest of params2 stays RST2INIT's (modifyQP).
const (
	params2Access  = mlx4.QP_BIT_RRE | mlx4.QP_BIT_RWE | mlx4.QP_BIT_RAE
	params2RRAMax  = mlx4.QPCParams2RRAMaxMask << mlx4.QPCParams2RRAMaxShift
	params2Carried = params2Access | params2RRAMax
)

// priPathOptPar are the optpar bits that carry the primary path.
const priPathOptPar = mlx4.QP_OPTPAR_PRIMARY_ADDR_PATH | mlx4.QP_OPTPAR_PKEY_INDEX | mlx4.QP_OPTPAR_SCHED_QUEUE

// keepUncarried restores in ctx, from keep (the context before the
// transition), each field of qpcCarried that transition op with optpar
// does not carry.
func keepUncarried(op mlx4.Opcode, optpar uint32, ctx, keep *[mlx4.QPMailboxSize]byte) {
	for _, f := range &qpcCarried {
		if f.init2rtr && op == mlx4.INIT2RTR_QP || f.rtr2rts && op == mlx4.RTR2RTS_QP || optpar&f.optpar != 0 {
			continue
		}
		off := mlx4.QPMailboxContext + f.off
		if f.bits != 0 {
			w := binary.BigEndian.Uint32(ctx[off:])&^f.bits | binary.BigEndian.Uint32(keep[off:])&f.bits
			binary.BigEndian.PutUint32(ctx[off:], w)
			continue
		}
		copy(ctx[off:off+f.n], keep[off:off+f.n])
	}
}

// mergeQPContext is a transition past RST2INIT's effect on the QP's context
// ctx: it keeps what RST2INIT validated (CQs, SRQ, MTT, params2 but for the
// fields optpar carries), takes the rest of the mailbox in, and then keeps
// each field of qpcCarried the transition does not carry (keepUncarried).
func mergeQPContext(ctx, in *[mlx4.QPMailboxSize]byte, op mlx4.Opcode, optpar uint32) {
	keep := *ctx
	*ctx = *in
	for _, r := range [][2]int{{mlx4.QPCCQNSend, 4}, {mlx4.QPCCQNRecv, 4}, {mlx4.QPCSRQN, 4},
		{mlx4.QPCLogPageSize, 8}, {mlx4.QPCRQSizeStride, 2}} {
		off := mlx4.QPMailboxContext + r[0]
		copy(ctx[off:off+r[1]], keep[off:off+r[1]])
	}
	p2 := mlx4.QPMailboxContext + mlx4.QPCParams2
	binary.BigEndian.PutUint32(ctx[p2:], binary.BigEndian.Uint32(ctx[p2:])&params2Carried|
		binary.BigEndian.Uint32(keep[p2:])&^params2Carried)
	keepUncarried(op, optpar, ctx, &keep)
}
