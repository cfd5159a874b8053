package trace

import (
	"time"

	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
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
	c := hca.Cmd{VF: 3, Op: mlx4.QUERY_FUNC_CAP, OpMod: 1, InMod: 2, OutParam: 0x5000, Token: 0xffff}
	r.Post(t+1000, t+3400, 0, &c, mlx4.OK)
	c = hca.Cmd{VF: 3, Op: mlx4.NOP, Token: 1}
	r.Post(t+4000, t+4250, 1, &c, mlx4.OK)
	c = hca.Cmd{VF: 4, Op: mlx4.QUERY_FUNC_CAP, OpMod: 7, Token: 2, Reason: refusal.OpModifier}
	r.Post(t+5000, t+5300, 1, &c, mlx4.BAD_PARAM)
	c = hca.Cmd{VF: 3, Op: mlx4.SW2HW_MPT, InMod: 7, InParam: 0x7f0001000, EBit: true, Token: 0x12,
		Reason: refusal.NotOwner}
	r.Post(t+6000, t+12200, 0, &c, mlx4.BAD_RESOURCE)
	r.EQE(t+12100, 3, mlx4.EventCmd, 2, 0x12)
	r.IRQ(t+12150, 3, 2)
	c = hca.Cmd{VF: 3, Op: mlx4.Opcode(0xabc), Token: 3, Reason: refusal.UnknownOpcode}
	r.Post(t+13000, t+260000, 1, &c, mlx4.BAD_PARAM)
	c = hca.Cmd{VF: 4, Op: mlx4.NOP, Token: 4, EBit: true}
	r.PostUntimed(t+280000, 0, &c, mlx4.OK)
	r.Reset(t+300000, 3, 3)
	r.FLR(t+400000, 4, true)
	r.FLR(t+2_400_000_000, 4, false)
	// What the trace decodes: resources, QPNs, MAD_IFC, EQE types.
	c = hca.Cmd{VF: 3, Op: mlx4.ALLOC_RES, OpMod: uint8(mlx4.RES_OP_RESERVE), InMod: uint32(mlx4.RES_QP),
		InParam: 8<<32 | 1, OutParam: 0x848, Token: 5}
	r.PostUntimed(t+2_400_001_000, 1, &c, mlx4.OK)
	c = hca.Cmd{VF: 3, Op: mlx4.ALLOC_RES, OpMod: uint8(mlx4.RES_OP_MAP_ICM), InMod: uint32(mlx4.RES_QP),
		InParam: 0x848, Token: 6}
	r.PostUntimed(t+2_400_002_000, 0, &c, mlx4.OK)
	c = hca.Cmd{VF: 3, Op: mlx4.ALLOC_RES, OpMod: uint8(mlx4.RES_OP_RESERVE_AND_MAP),
		InMod: 1<<mlx4.ResPortShift | uint32(mlx4.RES_MAC), InParam: 0x0002c9000103, Token: 7}
	r.PostUntimed(t+2_400_003_000, 1, &c, mlx4.OK)
	c = hca.Cmd{VF: 3, Op: mlx4.RST2INIT_QP, InMod: 0x848, InParam: 0x1000, Token: 8, Inbox: &qpInbox}
	r.PostUntimed(t+2_400_004_000, 0, &c, mlx4.OK)
	c = hca.Cmd{VF: 3, Op: mlx4.MAD_IFC, OpMod: 1, InMod: 1, InParam: 0x2000, OutParam: 0x3000, Token: 9,
		Inbox: &madInbox}
	r.PostUntimed(t+2_400_005_000, 1, &c, mlx4.OK)
	c = hca.Cmd{VF: 3, Op: mlx4.FREE_RES, OpMod: uint8(mlx4.RES_OP_RESERVE), InMod: uint32(mlx4.RES_QP),
		InParam: 1<<32 | 0x848, Token: 10}
	r.PostUntimed(t+2_400_006_000, 0, &c, mlx4.OK)
	c = hca.Cmd{VF: 3, Op: mlx4.FREE_RES, OpMod: 5, InMod: 0x2a, Token: 11, Reason: refusal.OpModifier}
	r.PostUntimed(t+2_400_007_000, 1, &c, mlx4.BAD_PARAM)
	r.EQE(t+2_400_008_000, 3, mlx4.EventPortChange, 1, 0)
	r.EQE(t+2_400_009_000, 3, 0x0b, 1, 0)
}

// madInbox is a MAD_IFC inbox: SubnGet(PortInfo) of port 1, LID-routed;
// qpInbox a QP context's first bytes (not a MAD).
var madInbox, qpInbox = func() (m, q [mlx4.MailboxSize]byte) {
	copy(m[:], []byte{1, 0x01, 1, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34, 0x00, 0x15, 0, 0, 0, 0, 0, 1})
	copy(q[:], []byte{0x00, 0x03, 0, 0, 0, 0, 0, 0x11})
	return m, q
}()
