package mlx4

import "testing"

// TestQPModifyOp pins qp.c's op[][] (__mlx4_qp_modify), written out pair by
// pair: every (from, to) with a command, and none elsewhere.
func TestQPModifyOp(t *testing.T) {
	const rst, ini, rtr, rts, sqer, sqd, err = QP_STATE_RST, QP_STATE_INIT, QP_STATE_RTR, QP_STATE_RTS, QP_STATE_SQER, QP_STATE_SQD, QP_STATE_ERR
	want := map[[2]QPState]Opcode{
		{rst, rst}: 0x21, {rst, err}: 0x1e, {rst, ini}: 0x19,
		{ini, rst}: 0x21, {ini, err}: 0x1e, {ini, ini}: 0x2d, {ini, rtr}: 0x1a,
		{rtr, rst}: 0x21, {rtr, err}: 0x1e, {rtr, rts}: 0x1b,
		{rts, rst}: 0x21, {rts, err}: 0x1e, {rts, rts}: 0x1c, {rts, sqd}: 0x1f,
		{sqd, rst}: 0x21, {sqd, err}: 0x1e, {sqd, rts}: 0x20, {sqd, sqd}: 0x38,
		{sqer, rst}: 0x21, {sqer, err}: 0x1e, {sqer, rts}: 0x1d,
		{err, rst}: 0x21, {err, err}: 0x1e,
	}
	if QPNumStates != 7 {
		t.Fatalf("QPNumStates %d, MLX4_QP_NUM_STATE is 7", QPNumStates)
	}
	for from := QPState(0); from <= 8; from++ {
		for to := QPState(0); to <= 8; to++ {
			op, ok := QPModifyOp(from, to)
			w, wok := want[[2]QPState{from, to}]
			if ok != wok || op != w {
				t.Errorf("%v→%v: %v %v, qp.c has %v %v", from, to, op, ok, w, wok)
			}
		}
	}
}

// TestQPTransitionOf: each modify-QP command's sources and target, as the
// table gives them; other opcodes have none.
func TestQPTransitionOf(t *testing.T) {
	all := uint8(1<<QPNumStates - 1)
	for _, tc := range []struct {
		op   Opcode
		from uint8
		to   QPState
	}{
		{RST2INIT_QP, 1 << QP_STATE_RST, QP_STATE_INIT},
		{INIT2INIT_QP, 1 << QP_STATE_INIT, QP_STATE_INIT},
		{INIT2RTR_QP, 1 << QP_STATE_INIT, QP_STATE_RTR},
		{RTR2RTS_QP, 1 << QP_STATE_RTR, QP_STATE_RTS},
		{RTS2RTS_QP, 1 << QP_STATE_RTS, QP_STATE_RTS},
		{RTS2SQD_QP, 1 << QP_STATE_RTS, QP_STATE_SQD},
		{SQD2SQD_QP, 1 << QP_STATE_SQD, QP_STATE_SQD},
		{SQD2RTS_QP, 1 << QP_STATE_SQD, QP_STATE_RTS},
		{SQERR2RTS_QP, 1 << QP_STATE_SQER, QP_STATE_RTS},
		{TWO_ERR_QP, all, QP_STATE_ERR},
		{TWO_RST_QP, all, QP_STATE_RST},
	} {
		tr, ok := QPTransitionOf(tc.op)
		if !ok || tr.From != tc.from || tr.To != tc.to {
			t.Errorf("%v: %+v %v, want from %#b to %v", tc.op, tr, ok, tc.from, tc.to)
		}
	}
	for _, op := range []Opcode{QUERY_QP, UPDATE_QP, SUSPEND_QP, NOP, 0} {
		if tr, ok := QPTransitionOf(op); ok {
			t.Errorf("%v: transition %+v", op, tr)
		}
	}
	if tr, _ := QPTransitionOf(SQD2RTS_QP); !tr.Has(QP_STATE_SQD) || tr.Has(QP_STATE_RTS) || tr.Has(9) {
		t.Errorf("SQD2RTS_QP: Has disagrees with From %#b", tr.From)
	}
}
