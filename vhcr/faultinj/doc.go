// Package faultinj is vhcrd's fault catalogue and its selector: which
// faults the PF can inject into a VF's driver paths (Kind, with the
// parameters each takes and the mlx4 driver path it aims at), and which
// occurrence of which command of which VF gets one (Rule, Set).
//
// A rule names a kind, a VF (or any), what it fires at (an mlx4 opcode of
// a VHCR_POST, a comm channel command, the FLAGS reset request, or "now":
// once, when the rule is armed), which occurrence (the nth, every one, or
// each with a probability from a seed) and the kind's arguments. The
// selector is deterministic: every rule has its own PRNG (SplitMix64)
// seeded from the rule's seed and advanced once per occurrence that
// matches the rule's VF and target, so the same rules and the same driver
// give the same faults at the same commands.
//
// The package holds no mlx4 behaviour: the PF (vhcr/master's faults.go)
// asks the Set at its hooks and carries the fault out. With no rule armed
// the PF's hot path pays one load and one branch (Set.Armed's mask, cached
// by the PF); the Set's own Match allocates nothing.
//
// The data path's faults (error CQEs by syndrome, a CQE dropped or
// duplicated, a CQ overrun) are the kind group GroupDataPath at Point
// PointCQE: the work-request engine (vhcr/hca dpfault.go) asks the PF
// (vhcr/master faults_dp.go) at every CQE it writes, keyed by CQEKey (the
// work request's opcode, CQERecv for a receive) and qualified by the
// completion's success (Info.Success kinds count only successes).
package faultinj
