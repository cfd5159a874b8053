package crashtest

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

// The PF's named crash points and the variable that selects one (package
// vhcr/internal/crashpoint, which this package cannot import; the names
// are stable).
const crashEnv = "VHCRD_CRASHPOINT"

var crashPoints = []string{"post-accepted", "post-executing", "post-written-back", "reset-acked", "commit-torn"}

// pointHits is the range of N in name:N per point: the Nth time the poller
// reaches it (resets are rarer than posts and commits).
var pointHits = map[string]int{"post-accepted": 150, "post-executing": 150, "post-written-back": 150, "reset-acked": 3, "commit-torn": 100}

const (
	numVFs      = 8
	randomKills = 12 // default; VHCRD_CRASH_KILLS overrides
	pointRounds = 3  // kills at each point; VHCRD_CRASH_ROUNDS overrides
	// pointWait bounds the load a crash point has to be reached under.
	pointWait = 30 * time.Second
)

var (
	vhcrdBin string
	hasHook  bool // the binary has the crashpoint hook
)

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "vhcrd-crash-bin")
	if err != nil {
		panic(err)
	}
	out, err := exec.Command("go", "build", "-tags", "crashpoints", "-o", dir+"/", "github.com/vhcrd/vhcrd/cmd/vhcrd").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building vhcrd -tags crashpoints: %v\n%s", err, out)
		os.Exit(1)
	}
	vhcrdBin = filepath.Join(dir, "vhcrd")
	if b, err := os.ReadFile(vhcrdBin); err == nil {
		hasHook = bytes.Contains(b, []byte(crashEnv))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// daemon is one vhcrd serve process.
type daemon struct {
	cmd     *exec.Cmd
	metrics string
	mu      sync.Mutex
	log     bytes.Buffer
	exited  chan struct{}
	state   *os.ProcessState
}

func (d *daemon) logText() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.log.String()
}

// serveArgs are vhcrd's arguments for the files of dir.
func serveArgs(dir string, extra []string) []string {
	args := []string{"serve", "--bar", "file:" + filepath.Join(dir, "bar"), "--dma", "file:" + filepath.Join(dir, "dma"),
		"--num-vfs", strconv.Itoa(numVFs), "--window", "512K", "--metrics-addr", "127.0.0.1:0"}
	return append(args, extra...)
}

// killDuringStart starts vhcrd on the files of dir and kills it delay
// later, served or not: in the middle of its recovery (loading the state,
// replaying the journal, completing what the VFs had pending) if it is
// quick enough. It reports whether the process was still alive to be
// killed.
func killDuringStart(t *testing.T, dir string, delay time.Duration, extra []string) bool {
	cmd := exec.Command(vhcrdBin, serveArgs(dir, extra)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(delay) // the kill's moment, not a synchronisation
	err := cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	return err == nil
}

// startDaemon runs vhcrd serve on the files of dir (created at the first
// start, reused after) with point selected (empty: none) and waits until
// it serves. A process killed by SIGKILL before it served (a point reached
// while it recovered) is returned exited and not serving; any other end
// before serving fails the test.
func startDaemon(t *testing.T, dir, point string, extra ...string) (d *daemon, serving bool) {
	t.Helper()
	cmd := exec.Command(vhcrdBin, serveArgs(dir, extra)...)
	cmd.Env = os.Environ()
	if point != "" {
		cmd.Env = append(cmd.Env, crashEnv+"="+point)
	}
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d = &daemon{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		d.state = cmd.ProcessState
		pw.Close()
		close(d.exited)
	}()
	urlRE := regexp.MustCompile(`url=(http://[0-9.:]+)/metrics`)
	ready := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		url, served := "", false
		for sc.Scan() {
			l := sc.Text()
			d.mu.Lock()
			d.log.WriteString(l + "\n")
			d.mu.Unlock()
			if m := urlRE.FindStringSubmatch(l); m != nil {
				url = m[1]
			}
			if strings.Contains(l, "msg=serving") {
				served = true
			}
			if url != "" && served {
				ready <- url
				url = ""
			}
		}
	}()
	select {
	case d.metrics = <-ready:
		return d, true
	case <-d.exited:
		<-scanned
		select {
		case d.metrics = <-ready:
			return d, true // it served, then died
		default:
		}
		if d.killedBySIGKILL() {
			return d, false
		}
		t.Fatalf("vhcrd exited before serving (%v):\n%s", d.state, d.logText())
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-d.exited
		t.Fatalf("vhcrd did not start serving:\n%s", d.logText())
	}
	return d, false
}

// kill sends SIGKILL and waits for the process to be gone (its region lock
// released with it).
func (d *daemon) kill() {
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.exited
}

// killedBySIGKILL reports whether the process died of SIGKILL.
func (d *daemon) killedBySIGKILL() bool {
	ws, ok := d.state.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

func (d *daemon) stop(t *testing.T) {
	select {
	case <-d.exited:
		return
	default:
	}
	_ = d.cmd.Process.Signal(os.Interrupt)
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		t.Errorf("vhcrd did not stop on SIGINT")
		d.kill()
	}
}

var (
	seriesRE = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? ([-+0-9.eEInfa]+)$`)
	labelRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

// scrape reads /metrics into name → label set → value, for the families
// the tier compares.
func scrape(url string) (map[string]map[string]float64, error) {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	out := map[string]map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		m := seriesRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		switch m[1] {
		case "vhcrd_opcode_commands_total", "vhcrd_vf_commands_total", "vhcrd_resources":
		default:
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", sc.Text(), err)
		}
		var kv []string
		for _, l := range labelRE.FindAllStringSubmatch(m[2], -1) {
			kv = append(kv, l[1]+"="+l[2])
		}
		slices.Sort(kv)
		if out[m[1]] == nil {
			out[m[1]] = map[string]float64{}
		}
		out[m[1]][strings.Join(kv, ",")] = v
	}
	return out, sc.Err()
}

// totals are the tier's figures.
type totals struct {
	randomKills int
	idleKills   int // kills with every VF idle, to start a process with a point selected
	doubleKills int // random kills right after a restart (of the random ones)
	startKills  int // random kills of a PF that was starting (of the random ones)
	// point kills that came while the restarted PF recovered (it re-runs
	// what the journal holds), before it served
	recoveryKills int
	pointKills    map[string]int
	lost          int // posted commands without a completion
	duplicated    int // completions nothing waited for, objects the PF holds beyond the ledger
	failed        int // completions with a status other than OK
	kept          int // objects found under their numbers, summed over the checks
	missing       int // objects the ledger holds that the PF did not have as made
	mismatches    int // ledger ≠ /metrics
	checks        int
}

// rig is the load over one set of region files.
type rig struct {
	t       *testing.T
	dir     string
	a       *vfclient.Attachment
	workers []*worker
	ctx     context.Context
	wg      sync.WaitGroup
	d       *daemon
	extra   []string // more vhcrd serve arguments
	// finding reports what a check found (t.Errorf; the self-test counts)
	finding func(format string, args ...any)
	tot     totals
	// per VF: what the ledger counted at the last checkpoint
	lastPosted, lastCompleted, lastNonOK []int
	lastStray                            []uint64
	// per VF and type: the PF's objects beyond the ledger's at the last
	// check (a leak stays until the VF resets: counted when it appears)
	surplus []map[string]int
}

func newRig(t *testing.T, seed uint64, extra ...string) *rig {
	dir := mastertest.TempDir(t, "vhcrd-crash")
	r := &rig{t: t, dir: dir, extra: extra, finding: t.Errorf, tot: totals{pointKills: map[string]int{}},
		lastPosted: make([]int, numVFs), lastCompleted: make([]int, numVFs), lastNonOK: make([]int, numVFs), lastStray: make([]uint64, numVFs)}
	for range numVFs {
		r.surplus = append(r.surplus, map[string]int{})
	}
	if r.d, _ = startDaemon(t, dir, "", extra...); r.d.metrics == "" {
		t.Fatalf("vhcrd killed before it served:\n%s", r.d.logText())
	}
	a, err := vfclient.AttachFile(filepath.Join(dir, "bar"))
	if err != nil {
		t.Fatal(err)
	}
	r.a = a
	ctx, cancel := context.WithCancel(context.Background())
	r.ctx = ctx
	t.Cleanup(func() {
		cancel()
		r.wg.Wait()
		r.d.stop(t)
		a.Close()
	})
	for i := range numVFs {
		w, err := newWorker(a, i, seed)
		if err != nil {
			t.Fatal(err)
		}
		r.workers = append(r.workers, w)
		r.wg.Add(1)
		go func() { defer r.wg.Done(); w.run(ctx) }()
	}
	return r
}

// pauseAll asks every VF to stop after its step and waits until all have.
func (r *rig) pauseAll() {
	t0 := time.Now()
	for _, w := range r.workers {
		close(w.pauseT)
	}
	for _, w := range r.workers {
		<-w.paused
	}
	if el := time.Since(t0); el > time.Second {
		r.t.Logf("pausing the VFs took %v (a VF waited for a completion)", el.Round(time.Millisecond))
	}
}

func (r *rig) resumeAll() {
	for _, w := range r.workers {
		w.pauseT = make(chan struct{})
		w.resume <- w.pauseT
	}
}

// onAll runs f on every paused worker, concurrently.
func (r *rig) onAll(f func(w *worker)) {
	var wg sync.WaitGroup
	for _, w := range r.workers {
		wg.Add(1)
		go func() { defer wg.Done(); w.do(func() { f(w) }) }()
	}
	wg.Wait()
}

// checkpoint runs with every VF paused after a restart (or at the start):
// lost, duplicated, failed, kept, and the ledger against /metrics.
func (r *rig) checkpoint(what string, afterKill bool) {
	t := r.t
	r.tot.checks++
	report := r.finding
	found := false
	r.finding = func(format string, args ...any) { found = true; report(format, args...) }
	defer func() {
		r.finding = report
		if found {
			// What the restarted PF said of its recovery.
			var warn []string
			for _, l := range strings.Split(r.d.logText(), "\n") {
				if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") || strings.Contains(l, "restored") {
					warn = append(warn, l)
				}
			}
			t.Logf("%s: vhcrd's log since the restart (warnings, errors, restore):\n%s", what, strings.Join(warn, "\n"))
		}
	}()
	// observe scrapes /metrics and then snapshots every VF's ledger.
	observe := func() (map[string]map[string]float64, []tally) {
		m, err := scrape(r.d.metrics)
		if err != nil {
			t.Fatalf("%s: scrape: %v", what, err)
		}
		var snap []tally
		for _, w := range r.workers {
			snap = append(snap, w.l.snapshot())
		}
		return m, snap
	}
	before, snap0 := observe()
	results := make([]checkResult, numVFs)
	r.onAll(func(w *worker) { results[w.idx] = w.verify(r.ctx) })
	after, snap1 := observe()
	for i, res := range results {
		w := r.workers[i]
		posted, completed, nonOK := snap0[i].totals()
		lost := (posted - r.lastPosted[i]) - (completed - r.lastCompleted[i])
		if lost > 0 {
			r.tot.lost += lost
			r.finding("%s: VF %d (%v): %d posted commands without a completion", what, i, w.mode, lost)
		} else if lost < 0 {
			r.tot.duplicated += -lost
			r.finding("%s: VF %d (%v): %d completions more than commands posted", what, i, w.mode, -lost)
		}
		if d := int(res.stray - r.lastStray[i]); d > 0 {
			r.tot.duplicated += d
			r.finding("%s: VF %d (%v): %d completion EQEs with a token nothing waited for", what, i, w.mode, d)
		}
		p1, c1, n1 := snap1[i].totals()
		if n := n1 - r.lastNonOK[i]; n > 0 {
			r.tot.failed += n
			w.l.mu.Lock()
			r.finding("%s: VF %d (%v): %d commands completed with a status other than OK: %v", what, i, w.mode, n, w.l.nonOK)
			w.l.nonOK = nil
			w.l.mu.Unlock()
		}
		_ = nonOK
		if res.broken != nil {
			r.finding("%s: %v", what, res.broken)
		}
		if afterKill {
			r.tot.kept += res.kept
			r.tot.missing += res.lostObjs
		}
		if n := len(res.missing); n > 0 {
			r.finding("%s: VF %d (%v): %d objects of the ledger missing or not as made: %s", what, i, w.mode, res.lostObjs, strings.Join(res.missing[:min(n, 3)], "; "))
		}
		// The objects by type: the PF's gauge against the ledger.
		if res.broken == nil {
			for _, ty := range heldTypes {
				pf := int(after["vhcrd_resources"]["type="+ty+",vf="+strconv.Itoa(i)])
				led := res.counts[ty]
				if d, last := pf-led, r.surplus[i][ty]; d != last {
					r.tot.mismatches++
					if d > max(last, 0) {
						r.tot.duplicated += d - max(last, 0)
					}
					if d != 0 {
						r.finding("%s: VF %d (%v): vhcrd_resources{type=%q} %d, the ledger holds %d", what, i, w.mode, ty, pf, led)
					}
					r.surplus[i][ty] = d
				}
			}
		}
		r.lastPosted[i], r.lastCompleted[i], r.lastNonOK[i], r.lastStray[i] = p1, c1, n1, res.stray
	}
	r.compareCounters(what+" (verification queries)", before, after, snap0, snap1)
	// VFs that failed start again from RESET (the ledger forgets what they
	// held: the PF releases it).
	r.onAll(func(w *worker) {
		if err := w.recover(r.ctx); err != nil {
			r.finding("%s: VF %d (%v): recovery: %v", what, w.idx, w.mode, err)
		}
	})
	for i, w := range r.workers {
		r.lastPosted[i], r.lastCompleted[i], r.lastNonOK[i] = w.l.snapshot().totals()
		r.lastStray[i] = w.d.Stats.Stray
	}
}

// compareCounters checks the delta of the command counters between two
// scrapes of one process, every VF quiescent at both, against the ledger's
// completions between them: by opcode and status, and by VF and status.
func (r *rig) compareCounters(what string, before, after map[string]map[string]float64, snap0, snap1 []tally) {
	wantOp := map[string]int{}
	wantVF := map[string]int{}
	for i := range snap1 {
		for op, m := range snap1[i].completed {
			for s, n := range m {
				d := n - snap0[i].completed[op][s]
				if d == 0 {
					continue
				}
				wantOp["opcode="+op.String()+",status="+s.Name()] += d
				wantVF["status="+s.Name()+",vf="+strconv.Itoa(i)] += d
			}
		}
	}
	cmp := func(family string, want map[string]int) {
		keys := map[string]bool{}
		for k := range want {
			keys[k] = true
		}
		for k := range after[family] {
			keys[k] = true
		}
		for k := range keys {
			got := int(after[family][k] - before[family][k])
			if got != want[k] {
				r.tot.mismatches++
				r.finding("%s: %s{%s} rose by %d, the ledger has %d completions", what, family, k, got, want[k])
			}
		}
	}
	cmp("vhcrd_opcode_commands_total", wantOp)
	cmp("vhcrd_vf_commands_total", wantVF)
}

// restart starts vhcrd again on the same files after the previous process
// died and reports whether it serves. Without a point selected, a process
// killed before it served was killed from outside the test (nothing in
// vhcrd sends SIGKILL without a point): that is said, and it starts again.
func (r *rig) restart(point string) bool {
	var ok bool
	r.d, ok = startDaemon(r.t, r.dir, point, r.extra...)
	for tries := 0; !ok && point == "" && tries < 2; tries++ {
		r.t.Logf("vhcrd was killed before it served, no crash point selected: a SIGKILL from outside the test; starting it again\n%s", r.d.logText())
		r.d, ok = startDaemon(r.t, r.dir, point, r.extra...)
	}
	if !ok && point == "" {
		r.t.Fatalf("vhcrd killed before serving three times")
	}
	return ok
}

// killAfter ends the current process at a random moment of the load:
// after a seeded delay.
func (r *rig) killAfter(delay time.Duration) {
	select {
	case <-time.After(delay):
		r.d.kill()
	case <-r.d.exited:
		r.t.Errorf("vhcrd exited on its own:\n%s", r.d.logText())
	}
	if !r.d.killedBySIGKILL() {
		r.t.Errorf("vhcrd ended with %v, not SIGKILL", r.d.state)
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v >= 0 {
		return v
	}
	return def
}

// TestCrash is the crash tier (see the package comment).
func TestCrash(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("VHCRD_CRASH_SEED"), 0, 64); err == nil {
		seed = v
	}
	kills := envInt("VHCRD_CRASH_KILLS", randomKills)
	rounds := envInt("VHCRD_CRASH_ROUNDS", pointRounds)
	fmt.Printf("crash tier: seed %d (VHCRD_CRASH_SEED=%d repeats it), %d random kills, %d at each of %v\n", seed, seed, kills, rounds, crashPoints)
	rng := rand.New(rand.NewPCG(seed, 0xc7a5))
	r := newRig(t, seed)
	start := time.Now()

	// A first checkpoint without a kill: the ledger and the PF agree, or
	// the model of the load is wrong. Between kills the VFs stay paused
	// after each checkpoint.
	time.Sleep(time.Duration(100+rng.IntN(200)) * time.Millisecond) // load runs: nothing waits on it
	r.pauseAll()
	r.checkpoint("before any kill", false)

	for k := range kills {
		delay := time.Duration(20+rng.IntN(400)) * time.Millisecond
		r.resumeAll()
		r.killAfter(delay)
		r.tot.randomKills++
		what := fmt.Sprintf("random kill %d (after %v of load)", k+1, delay)
		if k%4 == 1 {
			// The next PF is killed while it starts: in its recovery, or
			// just after.
			early := time.Duration(rng.IntN(60000)) * time.Microsecond
			if killDuringStart(t, r.dir, early, r.extra) {
				r.tot.randomKills++
				r.tot.startKills++
			}
			what += fmt.Sprintf(" and again %v into the next start", early)
		}
		r.restart("")
		if k%3 == 2 {
			// Every third: killed again right after it served, while it
			// completes what the VFs had pending at the first kill.
			again := time.Duration(rng.IntN(5000)) * time.Microsecond
			r.killAfter(again)
			r.tot.randomKills++
			r.tot.doubleKills++
			r.restart("")
			what += fmt.Sprintf(" and again %v after the restart", again)
		}
		r.pauseAll()
		r.checkpoint(what, true)
	}
	if !hasHook {
		t.Errorf("this vhcrd has no crash point hook (%s absent from the binary built with -tags crashpoints): the named points %v were not exercised", crashEnv, crashPoints)
	} else {
		for i := range rounds * len(crashPoints) {
			p := crashPoints[i%len(crashPoints)]
			sel := fmt.Sprintf("%s:%d", p, 1+rng.IntN(pointHits[p]))
			// The process has no point selected: kill it while every VF is
			// idle and start one that has, then let the load run into it.
			r.d.kill()
			r.tot.idleKills++
			if !r.restart(sel) {
				r.tot.recoveryKills++ // the point came while it recovered
			}
			r.resumeAll()
			select {
			case <-r.d.exited:
				if r.d.killedBySIGKILL() {
					r.tot.pointKills[p]++
				} else {
					t.Errorf("%s: vhcrd ended with %v, not SIGKILL:\n%s", sel, r.d.state, r.d.logText())
				}
			case <-time.After(pointWait):
				r.d.kill()
				r.tot.randomKills++
				t.Errorf("crash point %s not reached within %v of load", sel, pointWait)
			}
			r.restart("")
			r.pauseAll()
			r.checkpoint("kill at "+sel, true)
		}
	}

	// A last segment without a kill: the counters of one process across a
	// stretch of load, quiescent at both ends, against the ledger.
	before, err := scrape(r.d.metrics)
	if err != nil {
		t.Fatal(err)
	}
	var snap0 []tally
	for _, w := range r.workers {
		snap0 = append(snap0, w.l.snapshot())
	}
	r.resumeAll()
	time.Sleep(300 * time.Millisecond) // load runs: nothing waits on it
	r.pauseAll()
	after, err := scrape(r.d.metrics)
	if err != nil {
		t.Fatal(err)
	}
	var snap1 []tally
	var steps int
	for _, w := range r.workers {
		snap1 = append(snap1, w.l.snapshot())
		steps += w.steps
	}
	r.compareCounters("final load segment", before, after, snap0, snap1)
	r.checkpoint("final", false)

	var posted, events int
	for _, s := range snap1 {
		p, _, _ := s.totals()
		posted += p
		events += s.events
	}
	pk := 0
	var pts []string
	for _, p := range crashPoints {
		pk += r.tot.pointKills[p]
		pts = append(pts, fmt.Sprintf("%s %d", p, r.tot.pointKills[p]))
	}
	fmt.Printf("crash tier: %d kills (%d random, %d of them while the PF started, %d right after it served; %d at points: %s, %d of them while recovering; and %d with every VF idle), %d checkpoints, %v\n",
		r.tot.randomKills+pk+r.tot.idleKills, r.tot.randomKills, r.tot.startKills, r.tot.doubleKills, pk, strings.Join(pts, ", "), r.tot.recoveryKills, r.tot.idleKills, r.tot.checks, time.Since(start).Round(time.Millisecond))
	fmt.Printf("crash tier: %d commands posted (%d with the 'e' bit) in %d steps by %d VFs (poll 0-1, early 'e' 2-4, mlx4 'e' 5-7)\n",
		posted, events, steps, numVFs)
	fmt.Printf("crash tier: lost %d, duplicated %d, failed %d, kept objects %d (summed over the checks after each kill), missing %d, ledger≠metrics %d\n",
		r.tot.lost, r.tot.duplicated, r.tot.failed, r.tot.kept, r.tot.missing, r.tot.mismatches)
}

// TestCrashTierSeesLoss is the tier's self-test: with the PF's state file
// off (`vhcrd serve --pfstate off`), a restarted PF has lost every object,
// and the checks must say so.
func TestCrashTierSeesLoss(t *testing.T) {
	r := newRig(t, 7, "--pfstate", "off")
	var findings int
	r.finding = func(string, ...any) { findings++ }
	r.pauseAll()
	r.checkpoint("before any kill", false)
	if findings != 0 {
		t.Fatalf("%d findings without a kill", findings)
	}
	r.resumeAll()
	r.killAfter(100 * time.Millisecond)
	r.restart("")
	r.pauseAll()
	r.checkpoint("kill without a state file", true)
	if findings == 0 || r.tot.missing == 0 {
		t.Fatalf("a restart without the state file: %d findings, %d objects missing; the tier saw no loss", findings, r.tot.missing)
	}
	t.Logf("without the state file: %d findings, %d objects missing, %d failed, %d kept", findings, r.tot.missing, r.tot.failed, r.tot.kept)
}
