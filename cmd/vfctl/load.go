package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/cmd/internal/clidoc"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

func init() {
	register("load", "drive command mixes from several VFs at once; print throughput and latency", runLoad)
}

// mixStep is one weighted command of a mix.
type mixStep struct {
	weight int
	req    vfclient.Request
}

var mixes = map[string][]mixStep{
	"basic": {
		{40, vfclient.Request{Op: mlx4.NOP}},
		{15, vfclient.Request{Op: mlx4.QUERY_FW}},
		{15, vfclient.Request{Op: mlx4.QUERY_DEV_CAP}},
		{10, vfclient.Request{Op: mlx4.QUERY_FUNC_CAP}},
		{10, vfclient.Request{Op: mlx4.QUERY_FUNC_CAP, OpMod: 1, InMod: 1}},
		{10, vfclient.Request{Op: mlx4.QUERY_PORT, InMod: 1}},
	},
	"nop": {{1, vfclient.Request{Op: mlx4.NOP}}},
	// realistic: QP/CQ/MR/EQ lifecycles through the VF driver model
	// (realistic.go), not weighted single commands.
	"realistic": nil,
}

// parseVFs parses "0-7", "3", "0,2,5-6".
func parseVFs(s string, n int) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("--vfs %q: %q is not a number", s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("--vfs %q: %q is not a number", s, hi)
			}
		}
		if a < 0 || b < a || b >= n {
			return nil, fmt.Errorf("--vfs %q: the region serves VFs 0..%d", s, n-1)
		}
		for i := a; i <= b; i++ {
			if !slices.Contains(out, i) {
				out = append(out, i)
			}
		}
	}
	return out, nil
}

// LoadResult is the summary `vfctl load --json` prints.
type LoadResult struct {
	VFs            []int             `json:"vfs"`
	Mix            string            `json:"mix"`
	DurationS      float64           `json:"duration_s"`
	Commands       uint64            `json:"commands"`
	ThroughputPerS float64           `json:"throughput_per_s"`
	LatencyNS      map[string]int64  `json:"latency_ns"`
	Statuses       map[string]uint64 `json:"statuses"`
	ProtocolErrors uint64            `json:"protocol_errors"`
	// Commands with an inbox (the table's Inbox flag) and their rate, and
	// the commands posted with the 'e' bit (--events).
	Events         bool              `json:"events"`
	InboxCommands  uint64            `json:"inbox_commands"`
	InboxPerS      float64           `json:"inbox_per_s"`
	EventCommands  uint64            `json:"event_commands"`
	EQRecycles     uint64            `json:"eq_recycles,omitempty"`
	LostCompletion uint64            `json:"lost_completions,omitempty"`
	StrayEQEs      uint64            `json:"stray_completions,omitempty"`
	PerVF          map[string]uint64 `json:"per_vf"`
	Errors         []string          `json:"errors,omitempty"`
}

const maxSamples = 1 << 19 // latency samples kept per VF (reservoir beyond)

type vfRun struct {
	n        atomic.Uint64
	inbox    atomic.Uint64
	events   atomic.Uint64
	recycles uint64
	lost     uint64
	stray    uint64
	statuses [256]uint64
	protoErr uint64
	samples  []int64
	firstErr error
}

// loadFlags are vfctl load's options.
type loadFlags struct {
	fs        *flag.FlagSet
	barSpec   *string
	vfs       *string
	dur       *time.Duration
	mixName   *string
	asJSON    *bool
	procs     *int
	events    *bool
	inflight  *int
	compare   *bool
	rounds    *int
	oneThread *bool
	bystander *int
	gap       *time.Duration
}

func newLoadFlags() *loadFlags {
	fs := clidoc.NewFlagSet("load", flag.ContinueOnError)
	return &loadFlags{
		fs:        fs,
		barSpec:   barFlag(fs),
		vfs:       fs.String("vfs", "0-7", "VFs to drive: 0-7, 3, 0,2,5-6"),
		dur:       fs.Duration("duration", 10*time.Second, "how long to run"),
		mixName:   fs.String("mix", "basic", "command mix: "+strings.Join(slices.Sorted(mapsKeys(mixes)), ", ")),
		asJSON:    fs.Bool("json", false, "print one JSON object instead of text"),
		procs:     fs.Int("procs", 1, "GOMAXPROCS for the VF goroutines (1 keeps one CPU for vhcrd's poller on small machines)"),
		events:    fs.Bool("events", false, "realistic mix: post with the 'e' bit (completions by EQE in each VF's EQ 0)"),
		inflight:  fs.Int("inflight", 4, "realistic mix with --events: accepted 'e' commands a VF may have in flight"),
		compare:   fs.Bool("compare", false, "realistic mix: measure poll and event mode in one run, in alternating phases (--rounds of each within --duration)"),
		rounds:    fs.Int("rounds", 5, "with --compare or --bystander: phases of each mode"),
		oneThread: fs.Bool("one-thread", false, "drive every VF from one OS thread (an event loop, a NOP always pending per VF) and print per-VF throughput: figures of the PF, not of goroutine scheduling"),
		bystander: fs.Int("bystander", -1, "with --one-thread: this VF of --vfs posts a NOP every --gap and its latency is measured alone and while the other VFs flood, in --rounds alternating phases"),
		gap:       fs.Duration("gap", 5*time.Microsecond, "with --bystander: the bystander's pause between commands"),
	}
}

// check refuses the combinations of options that mean nothing.
func (f *loadFlags) check() error {
	if *f.oneThread {
		var bad error
		f.fs.Visit(func(fl *flag.Flag) {
			if fl.Name == "mix" && *f.mixName != "nop" {
				bad = fmt.Errorf("--one-thread: posts NOPs (--mix nop), not --mix %s", *f.mixName)
			}
			if fl.Name == "events" || fl.Name == "compare" {
				bad = fmt.Errorf("--one-thread: not with --%s", fl.Name)
			}
		})
		if bad != nil {
			return usageErr(bad)
		}
	} else if *f.bystander >= 0 {
		return usageErr(fmt.Errorf("--bystander: only with --one-thread"))
	}
	if _, ok := mixes[*f.mixName]; !ok {
		return usageErr(fmt.Errorf("--mix %q: unknown", *f.mixName))
	}
	realistic := *f.mixName == "realistic"
	if *f.compare && (!realistic || *f.events || *f.rounds < 1) {
		return usageErr(fmt.Errorf("--compare: with --mix realistic, without --events, --rounds ≥ 1"))
	}
	if *f.events && !realistic {
		return usageErr(fmt.Errorf("--events: only with --mix realistic (the other mixes post single commands in poll mode)"))
	}
	return nil
}

func runLoad(args []string) error {
	f := newLoadFlags()
	if err := parseFlags(f.fs, args); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	if *f.procs > 0 {
		runtime.GOMAXPROCS(*f.procs)
	}
	a, err := attach(*f.barSpec)
	if err != nil {
		return err
	}
	defer a.Close()
	vfIdx, err := parseVFs(*f.vfs, a.Layout.NumVFs)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	vfs, err := bringUp(ctx, a, vfIdx)
	if err != nil {
		return err
	}
	if *f.oneThread {
		return runOneThread(ctx, vfs, vfIdx, *f.dur, *f.bystander, *f.gap, *f.rounds, *f.asJSON)
	}
	if *f.compare {
		return printCompare(runCompare(ctx, a, vfs, vfIdx, *f.dur, *f.rounds, *f.inflight), *f.asJSON)
	}
	runs := make([]*vfRun, len(vfs))
	deadline := time.Now().Add(*f.dur)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range vfs {
		runs[i] = &vfRun{samples: make([]int64, 0, 4096)}
		wg.Add(1)
		go func(v *vfclient.VF, r *vfRun, seed uint64) {
			defer wg.Done()
			if *f.mixName == "realistic" {
				realisticWorker(ctx, a, v, r, deadline, *f.events, *f.inflight)
				return
			}
			mixWorker(ctx, v, r, seed, mixes[*f.mixName], deadline)
		}(vfs[i], runs[i], uint64(vfIdx[i])+1)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	showProgress(runs, start, done)
	res := summarize(vfIdx, *f.mixName, time.Since(start), runs)
	res.Events = *f.events
	if *f.asJSON {
		enc := json.NewEncoder(os.Stdout)
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		printLoad(res)
	}
	if res.ProtocolErrors != 0 {
		return exitError{1}
	}
	return nil
}

// bringUp attaches to the VFs and brings each one's channel up.
func bringUp(ctx context.Context, a *vfclient.Attachment, vfIdx []int) ([]*vfclient.VF, error) {
	vfs := make([]*vfclient.VF, len(vfIdx))
	for i, idx := range vfIdx {
		var err error
		if vfs[i], err = a.VF(idx); err != nil {
			return nil, err
		}
		vfs[i].PFAlive = a.PFAlive
		if err := vfs[i].Init(ctx); err != nil {
			return nil, fmt.Errorf("VF %d bring-up: %w", idx, err)
		}
	}
	return vfs, nil
}

// printCompare prints --compare's result; protocol errors exit 1.
func printCompare(res CompareResult, asJSON bool) error {
	if asJSON {
		if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
			return err
		}
	} else {
		printLoad(res.Poll)
		printLoad(res.Events)
		fmt.Printf("commands with an inbox: events %.0f/s vs poll %.0f/s (×%.2f), %d alternating rounds of each\n",
			res.Events.InboxPerS, res.Poll.InboxPerS, res.InboxEventsVsPoll, res.Rounds)
	}
	if res.Poll.ProtocolErrors+res.Events.ProtocolErrors != 0 {
		return exitError{1}
	}
	return nil
}

// mixWorker posts the mix's commands, drawn by weight, on VF v until the
// deadline, keeping a reservoir of latencies; an internal error, a timeout
// or a busy channel brings the channel up again.
func mixWorker(ctx context.Context, v *vfclient.VF, r *vfRun, seed uint64, mix []mixStep, deadline time.Time) {
	total := 0
	for _, s := range mix {
		total += s.weight
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	var seen uint64
	for n := 0; ; n++ {
		if n%64 == 0 && (time.Now().After(deadline) || ctx.Err() != nil) {
			return
		}
		pick := rng.IntN(total)
		var req vfclient.Request
		for _, s := range mix {
			if pick < s.weight {
				req = s.req
				break
			}
			pick -= s.weight
		}
		t0 := time.Now()
		resp, err := v.Post(ctx, &req)
		lat := time.Since(t0).Nanoseconds()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.protoErr++
			if r.firstErr == nil {
				r.firstErr = fmt.Errorf("VF %d %v: %w", v.Index, req.Op, err)
			}
			if errors.Is(err, vfclient.ErrInternal) || errors.Is(err, vfclient.ErrTimeout) || errors.Is(err, vfclient.ErrBusy) {
				if v.Init(ctx) != nil {
					return
				}
			}
			continue
		}
		r.statuses[resp.Status]++
		seen++
		if len(r.samples) < maxSamples {
			r.samples = append(r.samples, lat)
		} else if j := rng.Uint64N(seen); j < maxSamples {
			r.samples[j] = lat
		}
		r.n.Add(1)
	}
}

// showProgress prints the count and rate of commands every second until done
// is closed, on a terminal only: no escapes in a log or a pipe.
func showProgress(runs []*vfRun, start time.Time, done <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	_, terr := unix.IoctlGetTermios(int(os.Stderr.Fd()), unix.TCGETS)
	tty := terr == nil
	var last uint64
	lastT := start
	for {
		select {
		case <-done:
			if tty {
				fmt.Fprint(os.Stderr, "\r\033[K")
			}
			return
		case now := <-tick.C:
			var n uint64
			for _, r := range runs {
				n += r.n.Load()
			}
			rate := float64(n-last) / now.Sub(lastT).Seconds()
			last, lastT = n, now
			if tty {
				fmt.Fprintf(os.Stderr, "\r%5.1fs  %10d commands  %9.0f/s   ", now.Sub(start).Seconds(), n, rate)
			}
		}
	}
}

func mapsKeys[M ~map[string]V, V any](m M) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func summarize(vfIdx []int, mix string, el time.Duration, runs []*vfRun) LoadResult {
	res := LoadResult{VFs: vfIdx, Mix: mix, DurationS: el.Seconds(), Statuses: map[string]uint64{},
		PerVF: map[string]uint64{}, LatencyNS: map[string]int64{}}
	var all []int64
	for i, r := range runs {
		n := r.n.Load()
		res.Commands += n
		res.PerVF[strconv.Itoa(vfIdx[i])] = n
		res.ProtocolErrors += r.protoErr
		res.InboxCommands += r.inbox.Load()
		res.EventCommands += r.events.Load()
		res.EQRecycles += r.recycles
		res.LostCompletion += r.lost
		res.StrayEQEs += r.stray
		for s, c := range r.statuses {
			if c != 0 {
				res.Statuses[mlx4.Status(s).Name()] += c
			}
		}
		if r.firstErr != nil {
			res.Errors = append(res.Errors, r.firstErr.Error())
		}
		all = append(all, r.samples...)
	}
	res.ThroughputPerS = float64(res.Commands) / el.Seconds()
	res.InboxPerS = float64(res.InboxCommands) / el.Seconds()
	slices.Sort(all)
	if len(all) > 0 {
		q := func(p float64) int64 { return all[min(len(all)-1, int(p*float64(len(all))))] }
		res.LatencyNS["p50"], res.LatencyNS["p90"], res.LatencyNS["p99"] = q(0.50), q(0.90), q(0.99)
		res.LatencyNS["p999"], res.LatencyNS["max"] = q(0.999), all[len(all)-1]
	}
	return res
}

func printLoad(r LoadResult) {
	mode := "poll"
	if r.Events {
		mode = "events"
	}
	fmt.Printf("VFs %v, mix %s (%s), %.2fs: %d commands, %.0f commands/s\n", r.VFs, r.Mix, mode, r.DurationS, r.Commands, r.ThroughputPerS)
	fmt.Printf("with an inbox: %d commands, %.0f/s; posted with the 'e' bit: %d\n", r.InboxCommands, r.InboxPerS, r.EventCommands)
	fmt.Printf("latency: p50 %s  p90 %s  p99 %s  p99.9 %s  max %s\n",
		ns(r.LatencyNS["p50"]), ns(r.LatencyNS["p90"]), ns(r.LatencyNS["p99"]), ns(r.LatencyNS["p999"]), ns(r.LatencyNS["max"]))
	keys := slices.Sorted(mapsKeys(r.Statuses))
	fmt.Print("statuses:")
	for _, k := range keys {
		fmt.Printf(" %s=%d", k, r.Statuses[k])
	}
	fmt.Printf("\nprotocol errors: %d\n", r.ProtocolErrors)
	for _, e := range r.Errors {
		fmt.Println("  first error:", e)
	}
}

func ns(v int64) string { return time.Duration(v).String() }
