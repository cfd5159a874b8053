package trace_test

import (
	"context"
	"os"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/master/trace"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// The poller writes whether or not anyone reads; a reader that attaches
// afterwards streams, from the oldest record the ring holds, what it missed
// (a clock in nanoseconds here; the poller's is its cycle counter).
func Example() {
	wall := time.Date(2026, 12, 1, 3, 21, 19, 0, time.UTC)
	r, err := trace.New(trace.Config{Records: 1024, Ticks: func() uint64 { return 0 }, TicksPerNS: 1,
		Now: func() time.Time { return wall }})
	if err != nil {
		panic(err)
	}
	// The poller.
	if r.Enabled() {
		c := hca.Cmd{VF: 3, Op: mlx4.QUERY_FUNC_CAP, OpMod: 1, InMod: 2, OutParam: 0x5000, Token: 0xffff}
		r.Post(1000, 2200, 1<<31, &c, mlx4.OK)
		c = hca.Cmd{VF: 3, Op: mlx4.SW2HW_MPT, InMod: 7, EBit: true, Token: 0x12, Reason: refusal.NotOwner}
		r.PostUntimed(3000, 0, &c, mlx4.BAD_RESOURCE)
		r.EQE(3100, 3, mlx4.EventCmd, 2, 0x12)
		r.IRQ(3150, 3, 2)
		r.Comm(4000, 3, trace.CommReset, 1<<31, 0)
		r.Reset(5000, 3, 3)
	}

	// A reader attaches after the fact.
	rd := r.NewReaderFromStart()
	if err := trace.Stream(context.Background(), os.Stdout, rd, trace.Options{Filter: trace.All}); err != nil {
		panic(err)
	}
	// Output:
	// 03:21:19.000001000 vf3 POST  QUERY_FUNC_CAP op_mod=1 in_mod=0x2 in=0x0 out=0x5000 tok=0xffff poll  OK  1.2µs
	// 03:21:19.000003000 vf3 POST  SW2HW_MPT op_mod=0 in_mod=0x7 in=0x0 out=0x0 tok=0x12 event  BAD_RESOURCE reason=not_owner
	// 03:21:19.000003100 vf3 EQE CMD type=0x0a eq=2 tok=0x12
	// 03:21:19.000003150 vf3 IRQ vector=2
	// 03:21:19.000004000 vf3 COMM RESET toggle=1
	// 03:21:19.000005000 vf3 RESET reason=toggle
}
