// Package crashpoint kills the process at named points of the PF's post
// path and of its state commit, for the crash tier: built with
// `-tags crashpoints`, Hit(name) sends SIGKILL to its own process when the
// environment variable VHCRD_CRASHPOINT selects that point
// (VHCRD_CRASHPOINT=name kills at the first hit, name:N at the Nth). Without
// the tag Hit is an empty function the compiler removes.
// VHCRD_CRASHPOINT_ACTION=stall makes the point block the poller forever
// instead (the process runs on, its poller does not scan).
//
// The points (stable names; Names lists them):
//
//	post-accepted      a VHCR_POST's intent is durable (and, completed the
//	                   early way, the toggle acknowledged); nothing executed
//	post-executing     the command has executed; its result is not committed
//	post-written-back  the result is committed and written back into the
//	                   vHCR (or its EQE posted); the toggle is not written
//	reset-acked        a RESET is acknowledged; the VF's VHCR0 not yet served
//	commit-torn        in the middle of writing a journal record: the record
//	                   is half written, its commit word not
//	dp-intent          an ATOMIC's intent (its original value) is durable;
//	                   the remote value not yet written
//	dp-effects         a WQE's data is written (remote memory, the
//	                   responder's scatter, a READ's sink); nothing of its
//	                   completion recorded
//	dp-cqe             a step's record is committed and a CQE of it written
//	                   (hit after each); the state after it not yet written
//	dp-commit-torn     in the middle of writing the state after a step into
//	                   its record: the first object's written, the record
//	                   not marked applied
package crashpoint

// The named points.
const (
	PostAccepted    = "post-accepted"
	PostExecuting   = "post-executing"
	PostWrittenBack = "post-written-back"
	ResetAcked      = "reset-acked"
	CommitTorn      = "commit-torn"

	DPIntent     = "dp-intent"
	DPEffects    = "dp-effects"
	DPCQE        = "dp-cqe"
	DPCommitTorn = "dp-commit-torn"
)

// Names lists every point.
var Names = []string{PostAccepted, PostExecuting, PostWrittenBack, ResetAcked, CommitTorn, DPIntent, DPEffects, DPCQE, DPCommitTorn}

// EnvVar selects the point (name or name:N).
const EnvVar = "VHCRD_CRASHPOINT"

// ActionEnvVar=stall makes the selected point stall the poller (Hit never
// returns) instead of killing the process: the watchdog's test.
const (
	ActionEnvVar = "VHCRD_CRASHPOINT_ACTION"
	ActionStall  = "stall"
)
