// Package restrack is the PF's resource tracker (mlx4 resource_tracker.c):
// it owns which function (VF) owns which QP, CQ, SRQ, XRCD, MPT, MTT range,
// MAC, VLAN, counter and EQ; the per-type state machines with their BUSY
// moves (start / end / abort); reference counts between objects; the number
// allocators (bitmaps, MTT ranges by order); the per-function quotas and
// guaranteed amounts of the §2.3 algorithm (research/mlx4-commchan.md); and
// the release of everything a function holds, in mlx4's cleanup order
// (DeleteAll).
//
// Functions are VF indices 0..NumVFs-1. The PF is not a function here, but
// the quota algorithm keeps the PF's guaranteed share reserved exactly as
// mlx4 does (slave 0 = PF), so VFs cannot take it.
//
// Errors are wrapped sentinels (ErrNotFound, ErrNotOwner, ErrBadState,
// ErrBusy, ErrQuota, ErrExists, ErrInvalid, ErrRange, ErrNoSpace); Status
// maps an error to the command status and refusal reason a VF sees, as the
// mlx4 master's errno_to_status does (§1.11, §2.2).
//
// A Tracker has one owner, the goroutine that executes commands (the PF's
// poller, through the HCA): it has no locks, as the HCA has none. Any other
// goroutine reads it through the owner: the metrics collector and the admin
// socket run their reads inside the PF's PF.Do, on the poller. Its lookups
// allocate nothing. Objects returned by the tracker must only be modified
// through it.
package restrack
