package vmtest

import "time"

// ScenarioFaults runs the fault matrix's cases (MLX4Config.Faults) one
// after the other in one guest. Each case is the same round: bind, a
// steady state of port queries, unbind, and then a clean bind and unbind
// with the faults cleared. The host injects the case's fault (`vhcrd fault
// add`) at the step its point names and classifies the driver's reaction
// from the console lines of the round and the guest's "vmtest: fault:"
// reports.
const ScenarioFaults = "faults"

// Fault injection points: the step of the round before which the host
// adds the fault.
const (
	PointBind   = "bind"   // before the bind: the fault hits the probe
	PointSteady = "steady" // bound: the fault hits the port queries or comes on its own
	PointUnbind = "unbind" // before the unbind: the fault hits the teardown
)

// FaultRound is one case of ScenarioFaults as the guest sees it.
type FaultRound struct {
	Name string
	// Settle is how long the steady state runs: port-state reads (each
	// a MAD_IFC) every SettleRead, watching the kernel log for the
	// driver's restart. A fault that comes on its own (the internal-error
	// bit, a port event) needs the catas poll's 5 s and the restart.
	Settle time.Duration
	// Pingpong, if set, is the data-path point's pingpong (faults_dp.go),
	// run after the steady state.
	Pingpong *FaultPingpong
}

// SettleRead is the period of the steady state's port-state reads.
const SettleRead = 250 * time.Millisecond

// HungTaskTimeout is what the faults guest writes to
// /proc/sys/kernel/hung_task_timeout_secs: just past the driver's longest
// wait of its own (a command's MLX4_COMM_TIME + class timeout, 10 s + 60
// s), so that a report of the detector is a task blocked beyond any
// timeout of the driver. The detector checks every HungTaskCheck seconds.
const (
	HungTaskTimeout = 75
	HungTaskCheck   = 5
)
