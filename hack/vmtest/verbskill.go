package vmtest

// ScenarioVerbsKill is the killed guest's scenario and its bystander's: a
// guest binds, waits for port 1 ACTIVE, and runs VerbsKill.Pingpong with
// both ends on its VF (the client to 127.0.0.1), a long transfer. The
// victim (Role KillVictim) runs it twice: at "running 1" the host lets it
// SIGKILL both ends mid-transfer (the kernel's uverbs cleanup destroys
// their QPs, CQs, MRs and PDs through the driver) and it reports their
// end at "killed 1"; at "running 2" the host kills QEMU itself. The
// bystander (KillBystander) runs it once: at "running 1" it waits while
// the host does all that to the victim, then lets its transfer complete,
// reports it (the pingpong's result line, as ScenarioVerbs prints it) at
// "transfer", and unbinds.
const ScenarioVerbsKill = "verbskill"

// The roles of ScenarioVerbsKill.
const (
	KillVictim    = "victim"
	KillBystander = "bystander"
)

// Lines of ScenarioVerbsKill (the host matches them).
const (
	// KillRunningPrefix starts the line a guest prints once both ends of
	// its transfer have printed their peer's address (their QPs are
	// connected and the loop runs).
	KillRunningPrefix = "vmtest: verbskill: running "
	// KillKilledPrefix starts the victim's line about an end it killed:
	// "vmtest: verbskill: killed END: signal: killed after D".
	KillKilledPrefix = "vmtest: verbskill: killed "
	// KillStillRunning is the bystander's line at the host's go when its
	// transfer had not ended yet.
	KillStillRunning = "vmtest: verbskill: the transfer was still running at the host's go"
)

// KillCalibrationPrefix starts the bystander's line about its calibration
// run: "vmtest: verbskill: calibration: U usec/iter, the transfer runs -n N".
const KillCalibrationPrefix = "vmtest: verbskill: calibration: "

// VerbsKillConfig is ScenarioVerbsKill's part of MLX4Config.
type VerbsKillConfig struct {
	Role string // KillVictim or KillBystander
	// Pingpong is the transfer, both ends in this guest; the guest adds
	// "-n ITERS" to its Args.
	Pingpong Pingpong
	// Iters is the transfer's round trips. With CalibrateIters, the guest
	// first runs the pingpong with that many (Name "... calibration") and
	// sizes the transfer from its client's usec/iter to last about
	// TargetMS, at least CalibrateIters and at most Iters round trips.
	Iters, CalibrateIters, TargetMS int
	// TimeLimitMS bounds each transfer: past it both ends are killed and
	// the guest fails.
	TimeLimitMS int
}
