package mlx4

// UAR doorbells: offsets in a UAR page (UARPageSize, eqc.go, which also
// has the EQ doorbells) and the values the drivers store there.
const (
	// MLX4_SEND_DOORBELL (include/linux/mlx4/doorbell.h, mlx4dv.h): a BE32 store of qpn << 8 after posting
	// send WQEs (mlx4_post_send: mmio_write32_be(uar + MLX4_SEND_DOORBELL,
	// doorbell_qpn); mlx4_ib_post_send; mlx4_en). It carries no index.
	MLX4_SEND_DOORBELL   = 0x14
	SendDoorbellQPNShift = 8
	// MLX4_CQ_DOORBELL (doorbell.h, mlx4dv.h; the commands in
	// include/linux/mlx4/cq.h): a 64-bit BE store (mlx4_write64): the high word sn << 28 | cmd | cqn,
	// the low word the consumer index (mlx4_cq_arm, libmlx4's mlx4_arm_cq).
	MLX4_CQ_DOORBELL       = 0x20
	MLX4_CQ_DB_REQ_NOT_SOL = 1 << 24 // arm for the next solicited completion
	MLX4_CQ_DB_REQ_NOT     = 2 << 24 // arm for the next completion
	CQDBCmdMask            = 3 << 24 // the command bits of the high word
	CQDBSNShift            = 28
	CQDBSNMask             = 3        // arm_sn & 3
	CQDBCIMask             = 0xffffff // cons_index & 0xffffff

	// The CQ doorbell record (8 bytes in host memory at the CQ context's
	// db_rec_addr; libmlx4's verbs.c arm_db = set_ci_db + 1, as the
	// kernel's mlx4_ib_cq has them; mlx4dv.h struct mlx4dv_cq):
	// set_ci = BE32 cons_index & 0xffffff (mlx4_cq_set_ci), arm_db = BE32
	// sn << 28 | cmd | ci, written before the UAR store.
	CQDBRecSetCI = 0x0
	CQDBRecArmDB = 0x4
	CQDBRecSize  = 8

	// The RQ doorbell record (4 bytes at the QP context's db_rec_addr):
	// BE32 rq.head & 0xffff (mlx4_post_recv: *qp->db = htobe32(qp->rq.head
	// & 0xffff); mlx4_ib_post_recv; mlx4_en's rx prod db), the count of
	// receive WQEs posted, modulo 2^16. An SRQ's record is its 16-bit WQE
	// counter the same way (mlx4_post_srq_recv: *srq->db =
	// htobe32(srq->counter), a uint16_t).
	RQDBRecSize     = 4
	RQDBRecHeadMask = 0xffff
)

// SendDoorbell is the value of a send doorbell for qpn (doorbell_qpn,
// stored BE32).
func SendDoorbell(qpn uint32) uint32 { return (qpn & QPNMask) << SendDoorbellQPNShift }

// SendDoorbellQPN is the QPN a send doorbell value names.
func SendDoorbellQPN(v uint32) uint32 { return v >> SendDoorbellQPNShift & QPNMask }

// CQDoorbell is the 64-bit value of a CQ arm doorbell (the BE64 store at
// MLX4_CQ_DOORBELL): sn << 28 | cmd | cqn in the high word, ci in the low.
func CQDoorbell(sn uint8, cmd uint32, cqn, ci uint32) uint64 {
	hi := uint32(sn&CQDBSNMask)<<CQDBSNShift | cmd&CQDBCmdMask | cqn&ObjectMask
	return uint64(hi)<<32 | uint64(ci&CQDBCIMask)
}

// SplitCQDoorbell is CQDoorbell's inverse.
func SplitCQDoorbell(v uint64) (sn uint8, cmd uint32, cqn, ci uint32) {
	hi := uint32(v >> 32)
	return uint8(hi >> CQDBSNShift & CQDBSNMask), hi & CQDBCmdMask, hi & ObjectMask, uint32(v) & CQDBCIMask
}

// CQArmDB is the arm_db word of the CQ doorbell record: sn << 28 | cmd |
// ci (mlx4_cq_arm, mlx4_arm_cq).
func CQArmDB(sn uint8, cmd uint32, ci uint32) uint32 {
	return uint32(sn&CQDBSNMask)<<CQDBSNShift | cmd&CQDBCmdMask | ci&CQDBCIMask
}

// SplitCQArmDB is CQArmDB's inverse.
func SplitCQArmDB(w uint32) (sn uint8, cmd uint32, ci uint32) {
	return uint8(w >> CQDBSNShift & CQDBSNMask), w & CQDBCmdMask, w & CQDBCIMask
}

// UARPageOffset is where a slave's UAR index lands in its BAR2 of barSize
// bytes: drivers/net/ethernet/mellanox/mlx4/pd.c mlx4_uar_alloc maps index
// i of a slave at page i mod (BAR2 length / uar_page_size) of BAR2 (the
// PF at page i of its own). A BAR smaller than a page holds none: 0.
func UARPageOffset(index uint32, barSize uint64) uint64 {
	pages := barSize / UARPageSize
	if pages == 0 {
		return 0
	}
	return uint64(index) % pages * UARPageSize
}
