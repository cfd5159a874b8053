package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/vhcrd/vhcrd/cmd/internal/clidoc"
	"github.com/vhcrd/vhcrd/vhcr/bench"
)

func init() {
	register("bench", "measure round trips: toggle-only and protocol-minimum limits, NOP through vhcrd, UNIX socket, interrupt delivery (medians, p99, ratios); bench dp: the data path's figures alone", runBench)
	register("bench-peer", "(internal) the peer process of vfctl bench", bench.Peer)
}

func runBench(args []string) error {
	// "vfctl bench dp [flags]": the data path's figures alone (the NOP
	// round trip of the same run included), without the limits, the
	// interrupts, the state file and the fairness runs.
	dpOnly := len(args) > 0 && args[0] == "dp"
	if dpOnly {
		args = args[1:]
	}
	fs := clidoc.NewFlagSet("bench", flag.ContinueOnError)
	vhcrd := fs.String("vhcrd", "bin/vhcrd", "the vhcrd binary to measure")
	rounds := fs.Int("rounds", 5, "interleaved rounds")
	iters := fs.Int("iters", 100000, "round trips per round for the shared-memory figures")
	sock := fs.Int("sock-iters", 10000, "round trips per round for the socket")
	asJSON := fs.Bool("json", false, "print JSON")
	fair := fs.Bool("fair", true, "also measure fairness: VFs driven from one thread against vhcrd serve --num-vfs of --fair-vfs")
	fairVFs := fs.Int("fair-vfs", 64, "VFs vhcrd serves for the fairness figures")
	phase := fs.Duration("fair-phase", 500*time.Millisecond, "length of one fairness phase")
	irqIters := fs.Int("irq-iters", 20000, "round trips per round for the interrupt figures (0: skip them)")
	persistIters := fs.Int("persist-iters", 20000, "NOP round trips per round for the state-file cost figures, CQ and QP cycles a tenth of it (0: skip them)")
	dpWrite := fs.Int("dp-write-iters", 2000, "data path: RDMA_WRITEs of 64 KiB per round (0: skip the data path figures)")
	dpSend := fs.Int("dp-send-iters", 200000, "data path: 64-byte SENDs per round")
	dpPing := fs.Int("dp-ping-iters", 10000, "data path: RC ping-pong round trips per round")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	o := bench.Options{PeerArg: "bench-peer", VHCRD: *vhcrd, Rounds: *rounds, Iters: *iters, SockIters: *sock, Log: os.Stderr}
	dp := bench.DataPath{WriteIters: *dpWrite, SendIters: *dpSend, PingIters: *dpPing, NOPIters: *iters / 5}
	if dpOnly {
		return benchDataPath(o, dp, *asJSON)
	}
	res, err := bench.Run(context.Background(), o)
	if err != nil {
		return err
	}
	var ir *bench.IRQResult
	if *irqIters > 0 {
		if ir, err = bench.RunIRQ(context.Background(), o, *irqIters); err != nil {
			return fmt.Errorf("interrupts: %w", err)
		}
	}
	var pr *bench.PersistResult
	if *persistIters > 0 {
		if pr, err = bench.RunPersist(context.Background(), o, bench.Persist{NOPIters: *persistIters, Cycles: max(1, *persistIters/10)}); err != nil {
			return fmt.Errorf("state file cost: %w", err)
		}
	}
	var dr *bench.DataPathResult
	if *dpWrite > 0 {
		if dr, err = bench.RunDataPath(context.Background(), o, dp); err != nil {
			return fmt.Errorf("data path: %w", err)
		}
	}
	var fr *bench.FairResult
	if *fair {
		busy := []int{8, *fairVFs}
		if *fairVFs <= 8 {
			busy = []int{*fairVFs}
		}
		if fr, err = bench.RunFair(context.Background(), o, bench.Fair{VFs: *fairVFs, Busy: busy, Phase: *phase}); err != nil {
			return fmt.Errorf("fairness: %w", err)
		}
	}
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(struct {
			*bench.Result
			IRQ     *bench.IRQResult      `json:"interrupts,omitempty"`
			Persist *bench.PersistResult  `json:"state_file_cost,omitempty"`
			Fair    *bench.FairResult     `json:"fairness,omitempty"`
			Data    *bench.DataPathResult `json:"data_path,omitempty"`
		}{res, ir, pr, fr, dr})
	}
	printBench(os.Stdout, *rounds, res, ir, pr, fr)
	if dr != nil {
		printDataPath(os.Stdout, dr)
	}
	return nil
}

// benchDataPath is "vfctl bench dp": the data path's figures alone.
func benchDataPath(o bench.Options, dp bench.DataPath, asJSON bool) error {
	if dp.WriteIters <= 0 {
		return usageErr(fmt.Errorf("vfctl bench dp: --dp-write-iters must be positive"))
	}
	dr, err := bench.RunDataPath(context.Background(), o, dp)
	if err != nil {
		return fmt.Errorf("data path: %w", err)
	}
	if asJSON {
		return json.NewEncoder(os.Stdout).Encode(struct {
			Data *bench.DataPathResult `json:"data_path"`
		}{dr})
	}
	printDataPath(os.Stdout, dr)
	return nil
}

// printBench prints vfctl bench's figures, each ratio with its target
// (package bench's Target constants) and the conditions it was measured in
// (the regime and the load); ir, pr and fr may be nil (not measured).
func printBench(w io.Writer, rounds int, res *bench.Result, ir *bench.IRQResult, pr *bench.PersistResult, fr *bench.FairResult) {
	fmt.Fprintf(w, "%-34s %10s %10s   (medians over %d rounds)\n", "round trip", "median", "p99", rounds)
	for _, f := range []bench.Figure{res.Toggle, res.Minimum, res.NOP, res.Socket, res.TracedNOP} {
		fmt.Fprintf(w, "%-34s %8.0f ns %8.0f ns\n", f.Name, f.MedianNS, f.P99NS)
	}
	fmt.Fprintf(w, "%s; %s\n", res.Regime, res.Load)
	cond := fmt.Sprintf("%s regime, %s", res.Regime.Name, res.Load)
	fastOnly := "in the fast regime"
	if res.Regime.Name != bench.RegimeFast {
		fastOnly += ", not this one"
	}
	fmt.Fprintf(w, "NOP/protocol-minimum = %.2f   (vhcrd NOP / protocol-minimum responder, median over rounds; target <= %g %s) [%s]\n",
		res.NOPOverMinimum, bench.TargetNOPOverMinimum, fastOnly, cond)
	fmt.Fprintf(w, "NOP/toggle-only = %.2f   (vhcrd NOP / toggle-only responder, median over rounds; target <= %g %s) [%s]\n",
		res.NOPOverToggle, bench.TargetNOPOverToggle, fastOnly, cond)
	fmt.Fprintf(w, "c/b = %.1f    (UNIX socket / vhcrd NOP; target >= %g) [%s]\n", res.COverB, float64(bench.TargetCOverB), cond)
	fmt.Fprintf(w, "traced/untraced = %.3f   (vhcrd --trace /dev/null against vhcrd, NOP medians, median over rounds; target <= %g) [%s]\n", res.TracedOverNOP, bench.TargetTraced, cond)
	if ir != nil {
		for _, f := range []bench.Figure{ir.EQE, ir.Bare} {
			fmt.Fprintf(w, "%-34s %8.0f ns %8.0f ns\n", f.Name, f.MedianNS, f.P99NS)
		}
		fmt.Fprintf(w, "EQE/eventfd = %.3f   (EQE posted → VF process wakes / bare eventfd signal, same two processes, median over rounds; target <= %g; %d interrupts for %d EQEs) [%s]\n",
			ir.Ratio, bench.TargetIRQ, ir.Raised, ir.Posted, ir.Load)
	}
	if pr != nil {
		printPersist(w, pr)
	}
	if fr != nil {
		printFair(w, fr)
	}
}

// printDataPath prints the data path's figures of vfctl bench, each ratio
// against the NOP or the copy measured in the same run.
func printDataPath(w io.Writer, dr *bench.DataPathResult) {
	fmt.Fprintln(w, "data path: vhcrd serve --num-vfs 2, vfdrv's verbs on both VFs in this process, one PF thread (the poller)")
	fmt.Fprintf(w, "%-34s %8.0f ns %8.0f ns\n", dr.NOP.Name, dr.NOP.MedianNS, dr.NOP.P99NS)
	fmt.Fprintf(w, "RDMA_WRITE 64 KiB: %.0f MB/s; memcpy of the same bytes from the same place into the other VF's window: %.0f MB/s; write/memcpy = %.3f   (median over rounds; target >= %g) [%s]\n",
		dr.WriteMBps, dr.MemcpyMBps, dr.WriteOverMemcpy, bench.TargetWriteOverMemcpy, dr.Load)
	fmt.Fprintf(w, "SEND 64 B: %.0f msg/s (target >= %g); NOP capacity %.0f/s; SEND/NOP = %.2f   (median over rounds) [%s]\n",
		dr.SendRate, float64(bench.TargetSendRate), dr.NOPRate, dr.SendOverNOP, dr.Load)
	fmt.Fprintf(w, "RC ping-pong 64 B half round trip: %.0f ns; half round trip/NOP = %.2f   (median over rounds; target <= %g) [%s]\n",
		dr.HalfRTTNS, dr.HalfRTTOverNOP, float64(bench.TargetHalfRTTOverNOP), dr.Load)
	fmt.Fprintf(w, "VF allocations: %d over %d WQEs and %d CQEs: %.5f per WQE, %.5f per CQE   (target 0)\n",
		dr.Mallocs, dr.WQEs, dr.CQEs, dr.AllocsPerWQE, dr.AllocsPerCQE)
}

// printPersist prints the state-file cost figures of vfctl bench.
func printPersist(w io.Writer, pr *bench.PersistResult) {
	fmt.Fprintln(w, "state file cost: vhcrd with its state file against vhcrd --pfstate off, vfdrv in poll mode, alternating rounds")
	for _, p := range []*bench.PersistPair{&pr.NOP, &pr.CQ, &pr.QP} {
		with, wo := p.PerCommand()
		for _, f := range []bench.Figure{p.With, p.Without} {
			fmt.Fprintf(w, "%-34s %8.0f ns %8.0f ns\n", f.Name, f.MedianNS, f.P99NS)
		}
		if p.Commands > 1 {
			fmt.Fprintf(w, "  %d commands per cycle: %.0f ns per command with the state file, %.0f ns without\n", p.Commands, with, wo)
		}
	}
	fmt.Fprintf(w, "NOP with state file / without = %.3f   (median over rounds; target <= %g) [%s]\n", pr.NOP.Ratio, bench.TargetPersistNOP, pr.Load)
	fmt.Fprintf(w, "CQ cycle with state file / without = %.3f   (median over rounds; target <= %g) [%s]\n", pr.CQ.Ratio, bench.TargetPersistCycle, pr.Load)
	fmt.Fprintf(w, "QP cycle with state file / without = %.3f   (median over rounds; target <= %g) [%s]\n", pr.QP.Ratio, bench.TargetPersistCycle, pr.Load)
}

// printFair prints the fairness figures of vfctl bench.
func printFair(w io.Writer, fr *bench.FairResult) {
	fmt.Fprintf(w, "fairness: vhcrd serve --num-vfs %d, VFs driven from one thread, %v phases (medians over %d rounds)\n",
		fr.VFs, time.Duration(fr.PhaseS*float64(time.Second)), fr.Rounds)
	for _, t := range fr.Throughput {
		fmt.Fprintf(w, "%2d busy VFs: per-VF NOP/s max/min = %.3f   (%.0f NOP/s in all; target <= %g) [%s]\n", t.Busy, t.MaxOverMin, t.TotalPerS, bench.TargetFairMaxMin, fr.Load)
	}
	fmt.Fprintf(w, "bystander VF 0, a NOP every %v, alone and beside flooding VFs in alternating sub-phases:\n", time.Duration(fr.GapNS))
	for _, b := range fr.Bystander {
		order := ""
		if len(b.Flooding) == 1 {
			// The scan's start advances by one per scan: VF f is visited
			// before VF 0 when the start is in 1..f.
			order = fmt.Sprintf(" (scanned before VF 0 in %d of %d scans)", b.Flooding[0], fr.VFs)
		}
		fmt.Fprintf(w, "  beside %s flooding%s: p50 %.0f ns, p99 %.0f ns; alone p50 %.0f ns, p99 %.0f ns; busy/alone p50 = %.2f (target <= %g) [%s]\n",
			vfList(b.Flooding), order, b.BusyP50NS, b.BusyP99NS, b.IdleP50NS, b.IdleP99NS, b.P50Ratio, float64(bench.TargetBystander), fr.Load)
	}
}

// vfList names VFs as the figures say them: "VF 63", "VFs 1, 2, 3".
func vfList(vfs []int) string {
	w := make([]string, len(vfs))
	for i, v := range vfs {
		w[i] = strconv.Itoa(v)
	}
	if len(w) == 1 {
		return "VF " + w[0]
	}
	return "VFs " + strings.Join(w, ", ")
}
