// Package crashtest is the crash tier: a real `vhcrd serve` process,
// built with the crashpoints tag, is killed with SIGKILL under a ledgered
// multi-VF load and restarted on the same files, and after every restart
// the test checks that the VFs lost nothing.
//
// The load (crash_test.go, ledger_test.go) runs in the test process: eight
// VFs over the region files, each a vfdrv.Driver whose Options.Ledger
// records every command posted and every completion taken (status,
// immediate output). VFs 0-1 post in poll mode, 2-4 with the 'e' bit the
// seed's way (pipelined, tokens 1, 2, 3, ...), 5-7 the way Linux's
// mlx4_core does (token 0xffff, one command at a time). Each VF keeps EQ 0
// (command completions, async events) and EQ 1, and creates and destroys
// sets of objects (two CQs, an MR, a QP taken to RTS), holding up to four
// sets at a time; now and then it resets its function (RESET, VHCR0..EN)
// and starts again. A VF never resets itself because its PF went away: it
// waits for its pending command (up to crashPost) and goes on.
//
// Kills: a seeded number of SIGKILLs at random moments of the load (every
// fourth, from the second, followed by one of the next PF within 60 ms of
// its start, in its recovery or just after; every third by one within 5 ms
// of the restarted PF serving), and
// rounds of one at each of the PF's named crash points
// (VHCRD_CRASHPOINT=name:N kills the process at the Nth time it reaches
// that point, N seeded; package vhcr/internal/crashpoint): the running PF
// is killed while every VF is idle, one with the point selected is started
// and the load runs into the point (or into it while the PF recovers,
// counted apart). After each restart the VFs finish what they had in
// flight and stop, and the test checks:
//   - lost: every posted command got exactly one completion (posted minus
//     completed, per VF); a completion EQE nothing waits for is a duplicate;
//   - duplicated: the PF holds no object the ledger does not (an ALLOC_RES
//     executed twice leaks one), per VF and type, from vhcrd_resources;
//   - failed: no command completed with a status other than OK (the load
//     completes every command OK without kills; a command re-executed on an
//     object it already changed, or run on an object the PF lost, does not);
//   - kept: every object the ledger holds is queried under its number
//     (QUERY_EQ, QUERY_CQ, QUERY_MPT, QUERY_QP) and matches what the VF
//     made of it (MTT base, size, key, QP state RTS, CQNs); a number the
//     PF hands out while the VF holds an object under it is a failure;
//   - the ledger equals /metrics: the objects by type per VF
//     (vhcrd_resources{vf,type}) after every restart; and, because a
//     process's counters start from zero and die with it, the commands by
//     opcode and status (vhcrd_opcode_commands_total) and by VF and status
//     (vhcrd_vf_commands_total) as deltas between two scrapes of one process
//     with every VF quiescent: across the verification queries after every
//     restart, and across a final load segment that is not killed.
//
// TestCrashDataPath is the data-path ledger: VFs 0 and 1 of its own
// vhcrd connect RC QPs with vfdrv's verbs and move data in batches (5
// SENDs of a pattern into VF 1's receive WQEs, 5 RDMA WRITEs of another,
// 5 FETCH_ADDs of 1 on VF 1's counter) while the process is killed at
// random moments (VHCRD_CRASH_DP_KILLS, default 6) and once at each
// data-path point (dp-intent, dp-effects, dp-cqe, dp-commit-torn), then
// restarted. After each batch: every WR id completed exactly once (lost,
// duplicated), the bytes in place, the counter equal to the adds, every
// add's original distinct. It prints "crash tier, data path: ... kills K,
// WQEs W, bytes B checked, messages sent S received R, CQEs C, lost 0,
// duplicated 0". Without the data path's log it loses completions.
//
// TestCrashTierSeesLoss is the tier's own check: against a PF without its
// state file (--pfstate off) one kill must produce findings.
//
// The totals (kills random and per point, lost, duplicated, failed, kept
// objects) are printed at the end (`make crash` shows them). The seed is
// printed too; VHCRD_CRASH_SEED=n repeats a run, VHCRD_CRASH_KILLS=n sets
// the number of random kills, VHCRD_CRASH_ROUNDS the kills at each point.
package crashtest
