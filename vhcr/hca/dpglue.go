package hca

import (
	"errors"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// The engine's entries into the CQ layer and the scheduler (cq.go's
// postCQE, dpAttach, dpDetach), through these variables until that layer
// is part of the package.
var (
	errNoCQLayer = errors.New("hca: no CQ layer")
	postCQE      = func(h *HCA, cqn uint32, e *mlx4.CQE) error { return errNoCQLayer }
	dpAttach     = func(h *HCA, qp *qpObj) {}
	dpDetach     = func(h *HCA, qp *qpObj) {}
)
