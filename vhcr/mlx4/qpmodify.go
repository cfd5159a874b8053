package mlx4

// qpModifyOp is op[][] of __mlx4_qp_modify (drivers/net/ethernet/mellanox/
// mlx4/qp.c): the command that takes a QP from a state (first index) to
// another (second index); 0 where qp.c has no entry (-EINVAL).
var qpModifyOp = [...][7]Opcode{
	QP_STATE_RST:  {QP_STATE_RST: TWO_RST_QP, QP_STATE_ERR: TWO_ERR_QP, QP_STATE_INIT: RST2INIT_QP},
	QP_STATE_INIT: {QP_STATE_RST: TWO_RST_QP, QP_STATE_ERR: TWO_ERR_QP, QP_STATE_INIT: INIT2INIT_QP, QP_STATE_RTR: INIT2RTR_QP},
	QP_STATE_RTR:  {QP_STATE_RST: TWO_RST_QP, QP_STATE_ERR: TWO_ERR_QP, QP_STATE_RTS: RTR2RTS_QP},
	QP_STATE_RTS:  {QP_STATE_RST: TWO_RST_QP, QP_STATE_ERR: TWO_ERR_QP, QP_STATE_RTS: RTS2RTS_QP, QP_STATE_SQD: RTS2SQD_QP},
	QP_STATE_SQD:  {QP_STATE_RST: TWO_RST_QP, QP_STATE_ERR: TWO_ERR_QP, QP_STATE_RTS: SQD2RTS_QP, QP_STATE_SQD: SQD2SQD_QP},
	QP_STATE_SQER: {QP_STATE_RST: TWO_RST_QP, QP_STATE_ERR: TWO_ERR_QP, QP_STATE_RTS: SQERR2RTS_QP},
	QP_STATE_ERR:  {QP_STATE_RST: TWO_RST_QP, QP_STATE_ERR: TWO_ERR_QP},
}

// QPNumStates is MLX4_QP_NUM_STATE.
const QPNumStates = len(qpModifyOp)

// QPModifyOp returns the command qp.c's op[][] uses to take a QP from state
// from to state to, and false where the table has none (qp.c: -EINVAL).
func QPModifyOp(from, to QPState) (Opcode, bool) {
	if int(from) >= QPNumStates || int(to) >= QPNumStates {
		return 0, false
	}
	op := qpModifyOp[from][to]
	return op, op != 0
}

// QPTransition is one modify-QP command as qp.c's op[][] has it: the
// states it leaves from and the state it reaches.
type QPTransition struct {
	From uint8   // bit set of source states (bit s: QPState s)
	To   QPState // target state
}

// Has reports whether s is one of the transition's source states.
func (t QPTransition) Has(s QPState) bool { return int(s) < QPNumStates && t.From&(1<<s) != 0 }

// QPTransitionOf returns op's transition in qp.c's op[][], and false for
// an opcode that is not a modify-QP command there.
func QPTransitionOf(op Opcode) (QPTransition, bool) {
	var t QPTransition
	for from := range qpModifyOp {
		for to, o := range qpModifyOp[from] {
			if o == op && o != 0 {
				t.From |= 1 << from
				t.To = QPState(to)
			}
		}
	}
	return t, t.From != 0
}
