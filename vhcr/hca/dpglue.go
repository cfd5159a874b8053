package hca

// The engine's entries into the CQ layer and the scheduler (cqring.go's
// postCQE, dpsched.go's dpAttach and dpDetach).
var (
	postCQE  = (*HCA).postCQE
	dpAttach = (*HCA).dpAttach
	dpDetach = (*HCA).dpDetach
)
