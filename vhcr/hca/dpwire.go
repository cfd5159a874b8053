package hca

import "github.com/vhcrd/vhcrd/vhcr/mlx4"

// The engine (sq.go, rq.go) and the CQ layer (cqring.go, dpsched.go) meet
// here: the engine's CQEs go to postCQE and its QPs in and out of the
// scheduler's lists, and the scheduler checks and runs send queues with
// the engine's sqPending and runSQ.
func init() {
	postCQE = func(h *HCA, cqn uint32, e *mlx4.CQE) error { return h.postCQE(cqn, e) }
	dpAttach = func(h *HCA, qp *qpObj) { h.dpAttach(qp) }
	dpDetach = func(h *HCA, qp *qpObj) { h.dpDetach(qp) }
	dpPending = func(h *HCA, qp *qpObj) bool { return h.sqPending(qp) }
	dpRun = func(h *HCA, qp *qpObj, budget int) int { return h.runSQ(qp, budget) }
}
