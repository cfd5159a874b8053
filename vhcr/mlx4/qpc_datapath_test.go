package mlx4

import "testing"

// TestQPCDataPathGolden pins the data path's QP context bits to
// include/linux/mlx4/qp.h and mlx4_ib's __mlx4_ib_modify_qp.
func TestQPCDataPathGolden(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"retry_cnt << 16", QPCParams1RetryShift, 16},
		{"rnr_retry << 13", QPCParams1RNRRetryShift, 13},
		{"MLX4_QP_BIT_RRE", QP_BIT_RRE, 0x8000},
		{"MLX4_QP_BIT_RWE", QP_BIT_RWE, 0x4000},
		{"MLX4_QP_BIT_RAE", QP_BIT_RAE, 0x2000},
		{"sched_queue sl << 2", PathSchedQueueSLShift, 2},
		{"pm_state << 11", QPCFlagsPMStateShift, 11},
		{"MLX4_QP_PM_MIGRATED", QP_PM_MIGRATED, 3},
		{"MLX4_QP_PM_ARMED", QP_PM_ARMED, 0},
		{"MLX4_QP_PM_REARM", QP_PM_REARM, 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
}
