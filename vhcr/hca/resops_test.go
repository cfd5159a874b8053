package hca

import (
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// ALLOC_RES and FREE_RES dispatch by resource type through one table: the
// types resource_tracker.c allocates have both handlers, and only those;
// any other in_modifier[7:0] is BAD_PARAM for the in_modifier under every
// mode cmd_info admits, and a mode it does not admit is BAD_PARAM for the
// op_modifier before the type is looked at (hca.Admit).
func TestResOpsTable(t *testing.T) {
	allocatable := map[restrack.Type]bool{restrack.QP: true, restrack.CQ: true, restrack.SRQ: true, restrack.XRCD: true,
		restrack.MPT: true, restrack.MTT: true, restrack.MAC: true, restrack.VLAN: true, restrack.Counter: true}
	for ty, ops := range resOps {
		if (ops.alloc != nil) != allocatable[restrack.Type(ty)] || (ops.free != nil) != (ops.alloc != nil) {
			t.Errorf("%v: alloc handler %v, free handler %v", restrack.Type(ty), ops.alloc != nil, ops.free != nil)
		}
	}
	v := newRig(t, 1, nil).vf(0)
	const notAdmitted = 0x7f
	modes := []uint8{uint8(mlx4.RES_OP_RESERVE), uint8(mlx4.RES_OP_RESERVE_AND_MAP), uint8(mlx4.RES_OP_MAP_ICM), notAdmitted}
	for ty := range 256 {
		for _, mode := range modes {
			want := refusal.InModifier
			switch {
			case mode == notAdmitted:
				want = refusal.OpModifier
			case allocatable[restrack.Type(ty)]:
				continue // the handlers' own modes: their tests
			}
			for _, op := range []mlx4.Opcode{mlx4.ALLOC_RES, mlx4.FREE_RES} {
				c := v.cmd(op, 0, uint32(ty), mode, nil, false)
				if s := v.run(c); s != mlx4.BAD_PARAM || c.Reason != want {
					t.Errorf("%v of type %d, op_modifier %#x: %v (%v), want BAD_PARAM (%v)", op, ty, mode, s, c.Reason, want)
				}
			}
		}
	}
}
