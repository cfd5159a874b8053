package mlx4

import (
	"testing"
	"time"
)

// TestQPCRetryGolden pins the retry fields to the bytes of struct
// mlx4_qp_context (the context, not the mailbox: rnr_nextrecvpsn at 0x94,
// params1 at 0x70, the primary path at 0x18 with ackto at +8) as
// __mlx4_ib_modify_qp writes them.
func TestQPCRetryGolden(t *testing.T) {
	var b [QPContextSize]byte
	b[0x94] = 0xe0 | 12 // min_rnr_timer 12 in 28:24; 7:5 of the byte are reserved
	b[0x95], b[0x96], b[0x97] = 0x12, 0x34, 0x56
	b[0x71] = 0xf8 | 5 // retry_cnt 5 in 18:16
	b[0x72] = 3 << 5   // rnr_retry 3 in 15:13
	b[0x18+8] = 14<<3 | 1
	if got := QPCMinRNRTimer(b[:]); got != 12 {
		t.Errorf("min_rnr_timer %d, want 12", got)
	}
	if got := QPCRetryCount(b[:]); got != 5 {
		t.Errorf("retry_cnt %d, want 5", got)
	}
	if got := QPCRNRRetry(b[:]); got != 3 {
		t.Errorf("rnr_retry %d, want 3", got)
	}
	if got := PathAckTimeout(b[0x18:]); got != 14 {
		t.Errorf("timeout %d, want 14", got)
	}
	c, _ := DecodeQPContext(b[:])
	if c.MinRNRTimer != 12 || c.RNRNextRecvPSN != 0x123456 || c.Pri.AckTimeout>>PathAckTOShift != 14 {
		t.Errorf("decoded min_rnr_timer %d rq_psn %#x ackto %#x", c.MinRNRTimer, c.RNRNextRecvPSN, c.Pri.AckTimeout)
	}
	var e [QPContextSize]byte
	QPContext{MinRNRTimer: 31, RNRNextRecvPSN: 0xabcdef}.Encode(e[:])
	if e[0x94] != 31 || e[0x95] != 0xab || e[0x96] != 0xcd || e[0x97] != 0xef {
		t.Errorf("encoded rnr_nextrecvpsn % x", e[0x94:0x98])
	}
	for _, k := range []struct {
		name      string
		got, want int
	}{
		{"min_rnr_timer << 24", QPCMinRNRTimerShift, 24},
		{"min_rnr_timer mask", QPCMinRNRTimerMask, 0x1f},
		{"retry mask", QPCParams1RetryMask, 7},
		{"ackto timeout << 3", PathAckTOShift, 3},
		{"rnr_retry infinite", RNRRetryInfinite, 7},
	} {
		if k.got != k.want {
			t.Errorf("%s = %#x, want %#x", k.name, k.got, k.want)
		}
	}
}

// TestRNRTimerTable: every row of IBA table 45 (enum ib_rnr_timeout).
func TestRNRTimerTable(t *testing.T) {
	us := time.Microsecond
	for code, want := range []time.Duration{
		655360 * us, 10 * us, 20 * us, 30 * us, 40 * us, 60 * us, 80 * us, 120 * us,
		160 * us, 240 * us, 320 * us, 480 * us, 640 * us, 960 * us, 1280 * us, 1920 * us,
		2560 * us, 3840 * us, 5120 * us, 7680 * us, 10240 * us, 15360 * us, 20480 * us, 30720 * us,
		40960 * us, 61440 * us, 81920 * us, 122880 * us, 163840 * us, 245760 * us, 327680 * us, 491520 * us,
	} {
		t.Run("", func(t *testing.T) {
			if got := RNRTimer(uint8(code)); got != want {
				t.Errorf("RNRTimer(%d) = %v, want %v", code, got, want)
			}
		})
	}
	if RNRTimer(32) != RNRTimer(0) {
		t.Error("a code wider than 5 bits is not masked")
	}
}

// TestLocalAckTimeoutTable: every code, 4.096 µs × 2^code, 0 infinite.
func TestLocalAckTimeoutTable(t *testing.T) {
	for code, want := range []time.Duration{
		0, 8192, 16384, 32768, 65536, 131072, 262144, 524288,
		1048576, 2097152, 4194304, 8388608, 16777216, 33554432, 67108864, 134217728,
		268435456, 536870912, 1073741824, 2147483648, 4294967296, 8589934592, 17179869184, 34359738368,
		68719476736, 137438953472, 274877906944, 549755813888, 1099511627776, 2199023255552, 4398046511104, 8796093022208,
	} {
		t.Run("", func(t *testing.T) {
			if got := LocalAckTimeout(uint8(code)); got != want {
				t.Errorf("LocalAckTimeout(%d) = %v, want %v", code, got, want)
			}
		})
	}
	if got := LocalAckTimeout(14); got.Round(100*time.Microsecond) != 67100*time.Microsecond {
		t.Errorf("timeout 14 = %v, want 67.1 ms", got)
	}
}
