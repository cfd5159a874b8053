package mlx4

// QP context fields the data path reads (include/linux/mlx4/qp.h, and
// drivers/infiniband/hw/mlx4/qp.c __mlx4_ib_modify_qp, which fills them).
const (
	// params1 (QPCParams1, BE32): retry_count 18:16 (attr->retry_cnt <<
	// 16), rnr_retry 15:13 (attr->rnr_retry << 13; 7 = retry forever).
	QPCParams1RetryShift    = 16
	QPCParams1RNRRetryShift = 13

	// params2 (QPCParams2, BE32): the responder's remote access enables
	// (to_mlx4_access_flags: MLX4_QP_BIT_RRE, _RWE, _RAE).
	QP_BIT_RRE = 1 << 15
	QP_BIT_RWE = 1 << 14
	QP_BIT_RAE = 1 << 13
	// QPCParams2RRAMaxShift: params2 23:21 is rra_max, the log of the
	// responder's RDMA read and atomic resources (fls(max_dest_rd_atomic
	// - 1) << 21, with MLX4_QP_OPTPAR_RRA_MAX).
	QPCParams2RRAMaxShift = 21
	QPCParams2RRAMaxMask  = 7

	// PathSchedQueueSLShift: an IB path's SL is sched_queue 5:2
	// (mlx4_set_sched: 0x80 | (port - 1) << 6 | sl << 2).
	PathSchedQueueSLShift = 2
)

// The QP context's path-migration state (flags 12:11, MLX4_QP_PM_*:
// include/linux/mlx4/qp.h; mlx4_ib writes MIGRATED at RST2INIT and the
// IB_QP_PATH_MIG_STATE attribute's state after).
const (
	QPCFlagsPMStateShift = 11
	QPCFlagsPMStateMask  = 3
	QP_PM_MIGRATED       = 0x3
	QP_PM_ARMED          = 0x0
	QP_PM_REARM          = 0x1
)
