package trace

import (
	"time"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// anchor is the test rings' wall-clock anchor, at tick 1000; ticks run at
// 2 per ns.
var anchor = time.Date(2026, 12, 1, 3, 21, 19, 123456789, time.UTC)

func testRing(records int) *Ring {
	r, err := New(Config{Records: records, Ticks: func() uint64 { return 1000 }, TicksPerNS: 2,
		Now: func() time.Time { return anchor }})
	if err != nil {
		panic(err)
	}
	return r
}

// script writes one of every kind of record, as the poller would for a VF
// that starts, brings its channel up, posts commands and is reset.
func script(r *Ring) {
	t := uint64(1000)
	r.Restart(t, 3, true)
	r.Restart(t+2, 4, false)
	r.Comm(t+100, 3, CommReset, 1<<31, 0)
	r.Comm(t+200, 3, CommVHCR0, 0, 0x0001)
	r.Comm(t+300, 3, CommVHCR1, 1<<31, 0x0002)
	r.Comm(t+400, 3, CommVHCR2, 0, 0x0003)
	r.Comm(t+500, 3, CommVHCREn, 1<<31, 0x4000)
	c := mlx4.Cmd{VF: 3, Op: mlx4.QUERY_FUNC_CAP, OpMod: 1, InMod: 2, OutParam: 0x5000, Token: 0xffff}
	r.Post(t+1000, t+3400, 0, &c, mlx4.OK)
	c = mlx4.Cmd{VF: 3, Op: mlx4.NOP, Token: 1}
	r.Post(t+4000, t+4250, 1, &c, mlx4.OK)
	c = mlx4.Cmd{VF: 4, Op: mlx4.QUERY_FUNC_CAP, OpMod: 7, Token: 2, Reason: mlx4.ReasonOpModifier}
	r.Post(t+5000, t+5300, 1, &c, mlx4.BAD_PARAM)
	c = mlx4.Cmd{VF: 3, Op: mlx4.SW2HW_MPT, InMod: 7, InParam: 0x7f0001000, EBit: true, Token: 0x12,
		Reason: mlx4.ReasonNotOwner}
	r.Post(t+6000, t+12200, 0, &c, mlx4.BAD_RESOURCE)
	r.EQE(t+12100, 3, mlx4.EventCmd, 2, 0x12)
	r.IRQ(t+12150, 3, 2)
	c = mlx4.Cmd{VF: 3, Op: mlx4.Opcode(0xabc), Token: 3, Reason: mlx4.ReasonUnknownOpcode}
	r.Post(t+13000, t+260000, 1, &c, mlx4.BAD_PARAM)
	c = mlx4.Cmd{VF: 4, Op: mlx4.NOP, Token: 4, EBit: true}
	r.PostUntimed(t+280000, 0, &c, mlx4.OK)
	r.Reset(t+300000, 3, 3)
	r.FLR(t+400000, 4, true)
	r.FLR(t+2_400_000_000, 4, false)
}
