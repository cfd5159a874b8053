package mlx4

import "time"

// The RC requester's retry fields of the QP context and the IBA's two
// timer encodings they use (include/linux/mlx4/qp.h struct
// mlx4_qp_context; drivers/infiniband/hw/mlx4/qp.c __mlx4_ib_modify_qp
// writes them, mlx4_ib_query_qp reads them back the same way).
const (
	// rnr_nextrecvpsn (QPCRNRNextRecvPSN, BE32): min_rnr_timer 28:24
	// (attr->min_rnr_timer << 24), the responder's RNR NAK timer; the
	// next receive PSN 23:0.
	QPCMinRNRTimerShift = 24
	QPCMinRNRTimerMask  = 0x1f

	// params1's retry_count and rnr_retry (QPCParams1RetryShift,
	// QPCParams1RNRRetryShift) are 3 bits each.
	QPCParams1RetryMask = 7

	// ackto (PathAckTO): the local ACK timeout 7:3 (attr->timeout << 3);
	// 2:0 are the link type (MLX4_IB_LINK_TYPE_ETH on RoCE).
	PathAckTOShift = 3

	// RNRRetryInfinite is the rnr_retry that retries for ever.
	RNRRetryInfinite = 7
)

// QPCMinRNRTimer is the min_rnr_timer code of the QP context at ctx.
func QPCMinRNRTimer(ctx []byte) uint8 {
	return uint8(get32(ctx, QPCRNRNextRecvPSN) >> QPCMinRNRTimerShift & QPCMinRNRTimerMask)
}

// QPCRetryCount is params1's retry_count (transport retries).
func QPCRetryCount(ctx []byte) uint8 {
	return uint8(get32(ctx, QPCParams1) >> QPCParams1RetryShift & QPCParams1RetryMask)
}

// QPCRNRRetry is params1's rnr_retry (RNRRetryInfinite: for ever).
func QPCRNRRetry(ctx []byte) uint8 {
	return uint8(get32(ctx, QPCParams1) >> QPCParams1RNRRetryShift & QPCParams1RetryMask)
}

// PathAckTimeout is the local ACK timeout code of the QP path at path.
func PathAckTimeout(path []byte) uint8 { return path[PathAckTO] >> PathAckTOShift }

// rnrTimerUS is IBA table 45 (the RNR NAK timer field), in microseconds;
// the kernel's enum ib_rnr_timeout (include/rdma/ib_verbs.h,
// IB_RNR_TIMER_655_36 = 0 ... IB_RNR_TIMER_491_52 = 31) names the same.
var rnrTimerUS = [32]uint32{
	655360, 10, 20, 30, 40, 60, 80, 120,
	160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
}

// RNRTimer is the time an RNR NAK with timer code c (the responder's
// min_rnr_timer, 5 bits) tells the requester to wait before it retries.
func RNRTimer(c uint8) time.Duration {
	return time.Duration(rnrTimerUS[c&QPCMinRNRTimerMask]) * time.Microsecond
}

// LocalAckTimeout is the local ACK timeout a path's code c (5 bits) means:
// 4.096 µs × 2^c (IBA 9.7.6.1.3; ibv_modify_qp(3)), and 0 for code 0,
// which disables the timer: the requester waits for ever.
func LocalAckTimeout(c uint8) time.Duration {
	c &= 0x1f
	if c == 0 {
		return 0
	}
	return 4096 * time.Nanosecond << c
}
