package hca

import (
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// TestQPCounterLinuxRebind is what Linux's mlx4_ib does to a proxy QP
// (__mlx4_ib_modify_qp): the context is zeroed for every transition, so
// pri_path.counter_index is 0 except at INIT2RTR, where it names the
// function's default counter with MLX4_QP_OPTPAR_COUNTER_INDEX. After an
// unbind (RESET) and a new bind, the new default counter is another index
// and counter 0 is nobody's; RTR2RTS must still succeed.
func TestQPCounterLinuxRebind(t *testing.T) {
	r := newRig(t, 1, nil)
	a := r.vf(0)
	for bind := 1; bind <= 2; bind++ {
		a.setupEQ(1, 4)
		def := byte(a.mustAlloc(restrack.Counter, resOpReserve, 0))
		cq := a.createCQ()
		qpn, q := a.newQP(cq)
		ctx := func(idx byte, optpar uint32) []byte {
			c := q
			c.optpar = optpar
			in := c.bytes()
			in[qpcPriCounter] = idx
			return in
		}
		for _, st := range []struct {
			op     mlx4.Opcode
			idx    byte
			optpar uint32
		}{{mlx4.RST2INIT_QP, 0, 0}, {mlx4.INIT2RTR_QP, def, mlx4.QP_OPTPAR_COUNTER_INDEX}, {mlx4.RTR2RTS_QP, 0, 0}} {
			c := a.cmd(st.op, 0, qpn, 0, ctx(st.idx, st.optpar), false)
			if s := a.run(c); s != mlx4.OK {
				t.Fatalf("bind %d (default counter %d): %v with counter index %d: %v (%v)", bind, def, st.op, st.idx, s, c.Reason)
			}
		}
		if got := r.h.fw.qps[qpn].Ctx[qpcPriCounter]; got != def {
			t.Fatalf("bind %d: QP counts into %d after RTR2RTS, want its INIT2RTR counter %d", bind, got, def)
		}
		r.h.ResetFunction(0)
	}
}
