package mlx4

// The syndromes of a CQ_ERROR event (struct mlx4_eqe event.cq_err.syndrome,
// EQECQErrSyndrome): drivers/net/ethernet/mellanox/mlx4/eq.c mlx4_eq_int
// reports "CQ overrun" for syndrome 1 and "CQ access violation" for any
// other; the ConnectX PRM's CQ error syndromes are 0x01 overrun and 0x02
// access violation (a CQ doorbell record or ring page the device cannot
// reach).
const (
	CQErrOverrun         = 0x01
	CQErrAccessViolation = 0x02
)
