// Package bench measures command round trips between processes, so that
// vhcrd's figure always stands next to the physical limit and a peer
// transport measured in the same run:
//
//	(a) two limits for the same work: bare responder processes that
//	    create vhcrd's regions for one VF (control region, DMA file, VF 0's
//	    BAR region, mapped as vhcrd maps them) and answer the comm
//	    channel's bring-up; per VHCR_POST the toggle-only one loads
//	    slave_write and toggles slave_read, the protocol-minimum one also
//	    reads the 32-byte vHCR from the VF's window and writes its status
//	    word. The VF side is the same vfclient.VF as in (b), so the three differ
//	    only in who answers; the toggle-only round trip gives the regime
//	    (Regime: shared-cache or cross-core) printed beside every ratio;
//	(b) a NOP round trip from a VF process through a real `vhcrd serve`;
//	(c) a 64-byte round trip over a UNIX stream socket between two Go
//	    processes using net.UnixConn, the transport vfio-user uses and the
//	    peer a Go user would reach for.
//
// and, with RunFair, how evenly one vhcrd serves many VFs:
//
//	(d) per-VF throughput with 8 and with 64 VFs each keeping a NOP pending
//	    (max/min over the VFs), and the latency of a bystander VF that posts
//	    now and then while another VF floods, next to its latency alone.
//	    Driver runs every VF from one OS thread (an event loop of VF.Start
//	    and VF.Poll), so the spread is the PF's, not the Go scheduler's.
//
// and, with RunIRQ, what an interrupt costs over the eventfd it rides on:
//
//	(e) an EQE posted by the software HCA into an armed EQ (the EQE written,
//	    the doorbell word read, MSI-X vector 0 raised) until a VF process
//	    blocked on the vector's eventfd wakes, finds the EQE, re-arms and
//	    acknowledges through a second eventfd; against the same round trip
//	    started by a bare write to the same eventfd, between the same two
//	    processes (the eventfds cross by SCM_RIGHTS), in alternating order
//	    each round. The PF process is `vhcrd bench-irq` (IRQPF with
//	    vhcr/bench/irqpf's HCA); the caller of RunIRQ is the VF.
//
// and, with RunPersist, what the PF state file costs a VF:
//
//	(f) NOP round trips, CQ cycles and QP cycles (create, RST→INIT→RTR→RTS
//	    →RST, destroy) posted by vfdrv in poll mode from this process to two
//	    `vhcrd serve` processes, one keeping its default state file, one
//	    with --pfstate off, the daemon that goes first alternating each
//	    round; ratios with/without per workload.
//
// Rounds interleave the figures, in an order that reverses every other
// round, so that machine noise hits them alike, and read the 1-minute load
// average (Load); each round reports its median and p99, and the summary
// takes medians over rounds. Timing uses the cycle counter (a few ns per read), not a Go
// benchmark loop, because percentiles matter here.
//
// The package is the VF side and links no PF, HCA or tracker (vfctl runs
// it; cmd/vfctl's TestVFSideLinksNoPF checks): where a figure needs the PF
// it starts vhcrd as a process.
package bench
