package hca

import "github.com/vhcrd/vhcrd/vhcr/mlx4"

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
}

var qpcCarried = [...]qpcField{
	{mlx4.QPCRemoteQPN, 4, true, false, 0},
	// The primary path but its ackto byte, which RTR2RTS carries (mlx4_ib
	// writes attr->timeout << 3 there with MLX4_QP_OPTPAR_ACK_TIMEOUT, and
	// no path otherwise: the local ACK timeout of the RC retries).
	{mlx4.QPCPriPath, mlx4.PathAckTO, true, false, priPathOptPar},
	{mlx4.QPCPriPath + mlx4.PathAckTO, 1, true, true, priPathOptPar | mlx4.QP_OPTPAR_ACK_TIMEOUT},
	{mlx4.QPCPriPath + mlx4.PathAckTO + 1, mlx4.QPPathSize - mlx4.PathAckTO - 1, true, false, priPathOptPar},
	{mlx4.QPCAltPath, mlx4.QPPathSize, false, false, mlx4.QP_OPTPAR_ALT_ADDR_PATH},
	{mlx4.QPCMTUMsgMax, 1, true, false, 0},
	{mlx4.QPCParams1, 4, false, true, mlx4.QP_OPTPAR_RETRY_COUNT | mlx4.QP_OPTPAR_RNR_RETRY | mlx4.QP_OPTPAR_ACK_TIMEOUT | mlx4.QP_OPTPAR_SRA_MAX},
	{mlx4.QPCNextSendPSN, 4, false, true, 0},
	{mlx4.QPCQKey, 4, false, false, mlx4.QP_OPTPAR_Q_KEY},
	{mlx4.QPCRNRNextRecvPSN, 4, true, false, mlx4.QP_OPTPAR_RNR_TIMEOUT},
}

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
		copy(ctx[off:off+f.n], keep[off:off+f.n])
	}
}
