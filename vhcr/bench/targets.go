package bench

// The bounds the project set for the ratios vfctl bench prints, in one
// place: vfctl bench prints them beside each figure, and docs/testing.md
// states them. Benchmarks print figures against them; nothing asserts them
// (a loaded machine's timings are not a test).
const (
	// TargetCOverB is the least c/b: a 64-byte UNIX socket round trip over
	// vhcrd's NOP.
	TargetCOverB = 15
	// TargetTraced bounds vhcrd --trace's NOP over the untraced one.
	TargetTraced = 1.1
	// TargetIRQ bounds an EQE's wake-up over a bare eventfd signal's.
	TargetIRQ = 1.2
	// TargetPersistNOP bounds a NOP with the PF state file over one
	// without; TargetPersistCycle a CQ or QP create/destroy cycle.
	TargetPersistNOP   = 1.2
	TargetPersistCycle = 1.3
	// TargetFairMaxMin bounds per-VF NOP throughput max/min with every VF
	// busy; TargetBystander a bystander VF's p50 beside a flooding VF over
	// its p50 alone.
	TargetFairMaxMin = 1.1
	TargetBystander  = 2
	// The data path's: RDMA_WRITE of 64 KiB over a plain copy of the same
	// bytes (least), 64-byte SENDs per second on one PF thread (least), an
	// RC ping-pong's half round trip over the NOP round trip (most).
	TargetWriteOverMemcpy = 0.8
	TargetSendRate        = 4_000_000
	TargetHalfRTTOverNOP  = 2
	// A QEMU guest's bind of mlx4_core + mlx4_ib under the poller's
	// default idle policy over its bind under busy polling (most), and
	// the poller's idle CPU with the guest's driver bound (most, as a
	// fraction of a CPU): hack/vmtest BenchmarkGuestBindPolicy.
	TargetGuestBindOverBusy = 1.3
	TargetGuestIdleCPU      = 0.02
)

// The NOP against its two limits (package bench's LimitMinimum and
// LimitToggle), which hold in the fast regime, where the two processes
// share a core's caches: there vhcrd's own work is not hidden by
// cache-line transfers. FastRegimeBelowNS is the toggle-only round trip
// (ns, per round) below which a round counts as fast; the 2-vCPU machine
// of the project measured 80-150 ns in that regime and two cross-core
// levels, about 400 and 600-700 ns.
const (
	// TargetNOPOverMinimum bounds vhcrd's NOP over the protocol-minimum
	// responder's (median over rounds of each round's ratio).
	TargetNOPOverMinimum = 1.1
	// TargetNOPOverToggle bounds vhcrd's NOP over the toggle-only
	// responder's.
	TargetNOPOverToggle = 1.3
	FastRegimeBelowNS   = 250
)
