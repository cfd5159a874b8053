package vmtest

// The data-path point of ScenarioFaults: a round whose FaultRound has a
// Pingpong runs, after its steady state, a short rdma-core pingpong with
// both ends on the guest's one VF (the client to 127.0.0.1), and the host
// arms the case's data-path rules (cqe_error, cqe_drop, cqe_dup,
// cq_overrun) just before it starts:
//
//	wait "pingpong N"  the host adds the faults of point pingpong
//	pingpong           "fault: pingpong server| LINE", "fault: pingpong client| LINE"
//	                   (the tool's stdout and stderr), then one FaultPingpongEnd
//	                   line per end, the kernel's mlx4/ib lines of the run
//	                   (FaultPingpongDmesg) and FaultPingpongDone
//
// An end that has not exited when LimitMS has passed is SIGKILLed by the
// guest (rdma-core's pingpongs have no timeout of their own) and reported
// as hung; the kernel's uverbs cleanup then destroys its objects, and the
// round goes on with the unbind and the clean round.

// PointPingpong: bound, before the guest's pingpong: the fault hits its
// completions.
const PointPingpong = "pingpong"

// Lines of the data-path point (the host matches them).
const (
	// FaultPingpongTool is the name of the pingpong's runs: its ends'
	// lines are "vmtest: fault: pingpong server| LINE" and "... client| LINE".
	FaultPingpongTool = "fault: pingpong"
	// FaultPingpongEnd starts an end's outcome: "vmtest: fault: pingpong:
	// end server: exit 0 in 1.2s", "... end client: exit status 1 in
	// 0.9s", "... end client: hung: killed at the 8s bound after 8s".
	FaultPingpongEnd = "vmtest: fault: pingpong: end "
	// FaultPingpongDmesg starts a kernel line of mlx4_core, mlx4_ib,
	// ib_core or ib_uverbs logged while the pingpong ran.
	FaultPingpongDmesg = "vmtest: fault: pingpong: dmesg: "
	// FaultPingpongDone ends the report: "... done: ok", "... done:
	// failed", "... done: hung" (an end was killed at the bound).
	FaultPingpongDone = "vmtest: fault: pingpong: done: "
	// FaultPingpongHung is in an end's outcome when the guest killed it at
	// the bound.
	FaultPingpongHung = "hung: killed at the "
)

// FaultPingpong is the pingpong of a data-path round.
type FaultPingpong struct {
	Pingpong Pingpong // both ends in the guest; the guest adds "-n Iters"
	Iters    int
	// LimitMS bounds the run: past it the guest kills both ends.
	LimitMS int
}
