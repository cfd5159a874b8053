package hca

import (
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/restrack"
)

// ALLOC_RES and FREE_RES dispatch by resource type through one table: the
// types resource_tracker.c allocates have both handlers, and only those;
// any other in_modifier[7:0] is BAD_PARAM for the in_modifier, and an
// op_modifier no handler takes is BAD_PARAM for the op_modifier.
func TestResOpsTable(t *testing.T) {
	allocatable := map[restrack.Type]bool{restrack.QP: true, restrack.CQ: true, restrack.SRQ: true, restrack.XRCD: true,
		restrack.MPT: true, restrack.MTT: true, restrack.MAC: true, restrack.VLAN: true, restrack.Counter: true}
	for ty, ops := range resOps {
		if (ops.alloc != nil) != allocatable[restrack.Type(ty)] || (ops.free != nil) != (ops.alloc != nil) {
			t.Errorf("%v: alloc handler %v, free handler %v", restrack.Type(ty), ops.alloc != nil, ops.free != nil)
		}
	}
	v := newRig(t, 1, nil).vf(0)
	const noSuchOp = 0x7f
	for ty := range 256 {
		want := mlx4.ReasonInModifier
		if allocatable[restrack.Type(ty)] {
			want = mlx4.ReasonOpModifier
		}
		for _, op := range []mlx4.Opcode{mlx4.ALLOC_RES, mlx4.FREE_RES} {
			c := v.cmd(op, 0, uint32(ty), noSuchOp, nil, false)
			if s := v.run(c); s != mlx4.BAD_PARAM || c.Reason != want {
				t.Errorf("%v of type %d, op_modifier %#x: %v (%v), want BAD_PARAM (%v)", op, ty, noSuchOp, s, c.Reason, want)
			}
		}
	}
}
