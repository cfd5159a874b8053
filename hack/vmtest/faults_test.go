package vmtest

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// The fault matrix: Debian's unmodified mlx4_core and mlx4_ib in a guest
// (ScenarioFaults) against `vhcrd serve`, which injects one fault per case
// (`vhcrd fault add` over the admin socket) at a point of the round (bind,
// steady state, unbind); the reaction is classified from the guest's
// console (the driver's lines, the guest's "vmtest: fault:" reports of
// sysfs) and compared with the reaction the driver's source predicts
// (faultCases, docs/faults.md "The matrix").
//
// VHCRD_FAULTS selects the cases: unset, the CI subset (one case or more
// per class of reaction); "all", every case; anything else, a regexp of
// case names. VHCRD_FAULTS_DOC, if set, is the markdown file (relative to
// the module root) whose matrix section gets the run's table (make faults).

// The classes of reaction, from the mildest.
const (
	classUnaffected  = "unaffected"     // no line, no error: the driver did not notice
	classFollowed    = "followed"       // the driver took the event: sysfs shows it, no error
	classError       = "error returned" // an error to the caller (a failed read, a failed teardown command), the device stays
	classRecovered   = "recovered"      // the driver reset the function (internal-error flow) and went on
	classProbeFailed = "probe failed"   // the probe gave up; the next bind is clean
	classHung        = "hung"           // no progress past the driver's own timeouts and a margin
	classOops        = "oops/BUG"       // a BUG, an oops or a panic
)

// faultStepLimit is how long a step of a case may go without a console
// line before the case is hung: a command's own timeout (MLX4_COMM_TIME +
// MLX4_CMD_TIME_CLASS_*, 10 s + 60 s), the reset handshake's 10 s
// (mlx4_reset_slave) and a margin for TCG.
const faultStepLimit = 110 * time.Second

// faultOopsGrace and faultHungGrace are how long the console is read after
// an oops line or a hung-task report, for the traces, before the guest is
// killed.
const (
	faultOopsGrace = 3 * time.Second
	faultHungGrace = 8 * time.Second
)

// faultResult is one case's outcome.
type faultResult struct {
	c        faultCase
	class    string
	evidence []string // the driver's lines that show the class
	notes    []string // what else the run saw (the clean round, hung-task reports)
	took     time.Duration
	rules    []string // the `vhcrd fault add` lines as run (a Config case: its configuration's entries)
	pre      []string // what the host did before the case's faults
	read     []string // what the host read of the rules when the case ended (ended)
	armed    []armedRule
	seeded   []seededFire // where the seeded rules fired (recordSeeded)
}

// armedRule is a rule added over the admin socket, with the id vhcrd gave it.
type armedRule struct {
	rule faultRule
	id   int
}

// faultLine classes of console lines.
var (
	oopsLine     = regexp.MustCompile(`\bBUG:|kernel BUG at|Oops|Kernel panic|general protection fault`)
	hungTaskLine = regexp.MustCompile(`blocked for more than \d+ seconds`)
	// driverLine: the kernel lines of mlx4_core, mlx4_ib and ib_core
	// about mlx4_0.
	driverLine = regexp.MustCompile(`^\[ *[0-9.]+\] (mlx4_core|mlx4_ib|infiniband mlx4_0|<mlx4_ib>)`)
	// driverErrLine: a driver line that reports a failure.
	driverErrLine = regexp.MustCompile(`(?i)fail|timed out|couldn't|error|bogus|unhandled|not supported|not responsive|offline|deferring|isn't sync|fw status`)
	// driverResetLine: the internal-error flow of catas.c, and a probe
	// deferred for the driver core to retry (main.c mlx4_init_slave).
	driverResetLine = regexp.MustCompile(`Internal error|device is going to be reset|VF Reset succeed|device was reset successfully|mlx4_restart_one was ended|Internal error mark|Deferring probe`)
	// normalDriverLine: lines of every clean probe of a VF that match
	// driverErrLine (main.c mlx4_slave_cap's slave-mode notices).
	normalDriverLine = regexp.MustCompile(`Timestamping is not supported in slave mode|User MAC FW update is not supported in slave mode`)
	// driverNoteLine: a driver line that shows it took an event.
	driverNoteLine = regexp.MustCompile(`EQ overrun|Unhandled event|CQ overrun on CQN|CQ access violation on CQN`)
	steadyReads    = regexp.MustCompile(`vmtest: fault: steady: (\d+) reads, (\d+) errors`)
	steadyPort     = regexp.MustCompile(`vmtest: fault: steady: port (\d+) states (.*); (.*) -> (.*)$`)
	timestamp      = regexp.MustCompile(`^\[ *[0-9.]+\] `)
)

// classifyFault classifies a case from its console lines (point is where
// the fault was injected); hung says the host gave up waiting.
func classifyFault(point string, lines []string, hung bool) (class string, evidence, notes []string) {
	var errs, resets []string
	var oops, hungTask, bound, followed, restartFailed bool
	readErrs, attrErrs := 0, 0
	for _, l := range lines {
		switch {
		case oopsLine.MatchString(l):
			oops = true
			evidence = appendOnce(evidence, strip(l))
		case hungTaskLine.MatchString(l):
			hungTask = true
			notes = appendOnce(notes, strip(l))
		case driverLine.MatchString(l) && !expectedLine(l) && !normalDriverLine.MatchString(l):
			if driverResetLine.MatchString(l) {
				resets = appendOnce(resets, strip(l))
				if strings.Contains(l, "mlx4_restart_one was ended") && !strings.HasSuffix(l, "ret=0") {
					restartFailed = true
				}
			} else if driverErrLine.MatchString(l) {
				errs = appendOnce(errs, strip(l))
			} else if driverNoteLine.MatchString(l) {
				followed = true
				evidence = appendOnce(evidence, strip(l))
			}
		case strings.HasPrefix(l, "vmtest: fault: bind:"):
			bound = strings.Contains(l, `driver "mlx4_core" ib true`)
		case strings.HasPrefix(l, "vmtest: fault: clean:"):
			notes = append(notes, strings.TrimPrefix(l, "vmtest: fault: "))
		}
		if m := steadyReads.FindStringSubmatch(l); m != nil {
			fmt.Sscan(m[2], &readErrs)
		}
		if m := steadyPort.FindStringSubmatch(l); m != nil && (strings.Contains(m[3], "=ERR") || strings.Contains(m[4], "=ERR")) {
			attrErrs++ // an attribute read failed: the error reached the caller
		} else if m != nil && (strings.Contains(m[2], ">") || m[3] != m[4]) {
			followed = true
			evidence = append(evidence, "port "+m[1]+": states "+m[2]+"; "+m[3]+" -> "+m[4])
		}
	}
	pp := pingpongOutcome(lines)
	switch {
	case oops:
		return classOops, append(evidence, first(errs, 2)...), notes
	case hung || hungTask:
		return classHung, first(append(errs, resets...), 4), notes
	case pp.hung:
		return classHung, append(merge(evidence, pp.evidence), first(append(errs, resets...), 4)...), notes
	case point == PointBind && !bound:
		return classProbeFailed, first(errs, 4), notes
	case len(resets) > 0 && !restartFailed:
		return classRecovered, first(append(resets, errs...), 6), notes
	case pp.failed:
		return classError, append(merge(evidence, pp.evidence), first(append(errs, resets...), 4)...), notes
	case readErrs > 0 || attrErrs > 0 || len(errs) > 0 || restartFailed:
		if readErrs > 0 {
			notes = append(notes, fmt.Sprintf("%d port reads failed", readErrs))
		}
		if attrErrs > 0 {
			notes = append(notes, fmt.Sprintf("%d port attribute reads failed", attrErrs))
		}
		return classError, first(append(errs, resets...), 5), notes
	case followed || pp.noted:
		return classFollowed, merge(evidence, pp.evidence), notes
	}
	return classUnaffected, pp.evidence, notes
}

func appendOnce(l []string, s string) []string {
	for _, x := range l {
		if x == s {
			return l
		}
	}
	return append(l, s)
}

func first(l []string, n int) []string { return l[:min(n, len(l))] }

// strip drops a kernel line's timestamp and the device's prefix.
func strip(l string) string {
	l = timestamp.ReplaceAllString(l, "")
	for _, p := range []string{"mlx4_core 0000:00:01.0: ", "mlx4_core 0000:00:02.0: "} {
		l = strings.TrimPrefix(l, p)
	}
	return l
}

// faultRun is the host's side of one guest of ScenarioFaults.
type faultRun struct {
	t      *testing.T
	e      *mlx4Env
	v      *vm
	lines  []string // the current case's console lines
	config []string // a Config case's vhcrd: the faults of its configuration
}

// await reads console lines into r.lines until one contains want. It
// returns "" when found, else why not: the console ended, no line for
// limit (hung), an oops or a hung-task report (the console read on for
// faultOopsGrace, or faultHungGrace, for the traces, then "oops" or
// "hung task").
func (r *faultRun) await(want string, limit time.Duration) string {
	silence := time.NewTimer(limit)
	defer silence.Stop()
	var grace <-chan time.Time
	var after string
	for {
		select {
		case <-silence.C:
			return fmt.Sprintf("no console line for %v waiting for %q", limit, want)
		case <-grace:
			return after
		case line, ok := <-r.v.con.lines:
			if !ok {
				return fmt.Sprintf("the guest console ended before %q", want)
			}
			silence.Reset(limit)
			r.lines = append(r.lines, line)
			switch {
			case grace != nil:
				r.t.Logf("guest console: %s", line) // the trace after an oops or a hung-task report
			case strings.HasPrefix(line, "vmtest: "):
				r.t.Logf("guest: %s", line)
			case driverLine.MatchString(line) && (driverErrLine.MatchString(line) || driverResetLine.MatchString(line) || driverNoteLine.MatchString(line)):
				r.t.Logf("guest dmesg: %s", line)
			}
			if grace == nil {
				switch {
				case oopsLine.MatchString(line):
					r.t.Logf("guest console: %s", line)
					grace, after = time.After(faultOopsGrace), "oops"
				case hungTaskLine.MatchString(line):
					r.t.Logf("guest console: %s", line)
					grace, after = time.After(faultHungGrace), "hung task"
				case strings.Contains(line, want):
					return ""
				}
			}
		case <-r.v.ctx.Done():
			return fmt.Sprintf("QEMU's limit before %q", want)
		}
	}
}

// vhcrdFault runs `vhcrd fault ARGS` on the serving vhcrd's admin socket.
func (r *faultRun) vhcrdFault(args ...string) (string, error) {
	args = append([]string{"fault"}, args...)
	args = append(args, "--admin-socket", filepath.Join(r.e.vhcrd.dir, "admin.sock"))
	out, err := exec.Command(r.e.vhcrd.bin, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// arm adds c's rules of point (each on VF 0); a Config case's are armed
// already.
func (r *faultRun) arm(c faultCase, point string, res *faultResult) {
	if c.Config {
		return
	}
	for _, rule := range c.rulesAt(point) {
		args := append([]string{"add"}, rule.args()...)
		out, err := r.vhcrdFault(args...)
		line := "vhcrd fault " + strings.Join(args, " ")
		if err != nil {
			r.t.Fatalf("%s: %s: %v\n%s", c.Name, line, err, out)
		}
		r.t.Logf("%s: %s: %s", c.Name, line, out)
		res.rules = append(res.rules, line)
		id, err := strconv.Atoi(strings.TrimSpace(out))
		if err != nil {
			r.t.Fatalf("%s: %s printed %q, not a rule id", c.Name, line, out)
		}
		res.armed = append(res.armed, armedRule{rule, id})
	}
}

// ended is what the host reads of vhcrd's rules when the case has ended,
// before it clears them.
func (r *faultRun) ended(c faultCase, res *faultResult) {
	r.recordSeeded(c, res)
	if c.Config {
		r.configFired(c, res)
	}
}

// steps of a round, with the point whose faults are added there.
var faultSteps = []struct{ step, point string }{
	{"arm", PointBind}, {"bound", PointSteady}, {"steady", PointUnbind}, {"unbound", ""}, {"done", ""},
}

// runCase runs case n (1-based in this guest). reboot says the guest is
// no longer usable (hung, oops, console gone, the device left unusable).
func (r *faultRun) runCase(c faultCase, n int) (res faultResult, reboot bool) {
	res.c = c
	r.lines = r.lines[:0]
	t0 := time.Now()
	defer func() { res.took = time.Since(t0) }()
	limit := c.limit()
	cleared := false
	if c.Config {
		for _, l := range r.config {
			res.rules = append(res.rules, "config "+l)
		}
		r.configArmed(c, &res)
	}
	for _, s := range caseSteps(c) {
		why := r.await(fmt.Sprintf("vmtest: wait %s %d", s.step, n), limit)
		if why != "" {
			if strings.HasPrefix(why, "no console line") {
				// The guest's own watchdog has dumped its kernel's stacks
				// (sysrq l and w) by now: keep them with the case.
				r.t.Logf("%s: %s; the guest console's last lines:\n%s", c.Name, why, r.v.tail(80))
			}
			res.class, res.evidence, res.notes = classifyFault(c.Point, r.lines, why != "oops")
			if why != "oops" && why != "hung task" {
				res.notes = append(res.notes, why)
			}
			if !cleared {
				r.ended(c, &res)
				r.clear(c)
			}
			res.notes = append(append(res.pre, res.notes...), res.read...)
			return res, true
		}
		switch {
		case s.point != "":
			if s.point == PointSteady && c.FlagsAtRest {
				r.flagsAtRest(c, &res)
			}
			r.arm(c, s.point, &res)
		case s.step == "unbound":
			r.arm(c, pointRestore, &res)
			r.ended(c, &res)
			r.clear(c)
			cleared = true
		case s.step == "done":
			res.class, res.evidence, res.notes = classifyFault(c.Point, r.lines, false)
			reboot = !r.cleanOK()
		}
		if _, err := io.WriteString(r.v.stdin, "go\n"); err != nil {
			r.t.Fatalf("writing go to the guest: %v", err)
		}
	}
	res.notes = append(append(res.pre, res.notes...), res.read...)
	return res, reboot
}

// flagsAtRest puts VF 0's FLAGS reset bits back to 0 when both are 1, as
// the driver's own next request would (catas.c mlx4_reset_slave writes the
// whole word, rst_req << 16, which clears bit 8 too): vhcrd answers a
// request only while bits 16 and 8 differ (vhcr/master flags.go
// checkFlags), so a 1 → 0 request, which that write leaves with both bits
// equal, looks acknowledged to the driver at once, whatever the PF does;
// the FLAGS cases need the 0 → 1 request the PF sees. The host writes the
// VF BAR file as the driver would; vhcrd keeps no other state of it.
func (r *faultRun) flagsAtRest(c faultCase, res *faultResult) {
	f, err := os.OpenFile(wire.VFBARPath(r.e.vhcrd.ctrl, guestVF), os.O_RDWR, 0)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	var b [4]byte
	if _, err := f.ReadAt(b[:], mlx4.MLX4_COMM_CHAN_FLAGS); err != nil {
		r.t.Fatal(err)
	}
	w := binary.BigEndian.Uint32(b[:])
	both := uint32(mlx4.CommFlagsResetReq | mlx4.CommFlagsResetAck)
	if w&both != both {
		return
	}
	binary.BigEndian.PutUint32(b[:], w&^both)
	if _, err := f.WriteAt(b[:], mlx4.MLX4_COMM_CHAN_FLAGS); err != nil {
		r.t.Fatal(err)
	}
	res.pre = append(res.pre, fmt.Sprintf("FLAGS %#08x set to %#08x before the case (a 0 → 1 request)", w, w&^both))
	r.t.Logf("%s: VF %d's FLAGS %#08x → %#08x: its next reset request toggles bit 16 from 0", c.Name, guestVF, w, w&^both)
}

func (r *faultRun) cleanOK() bool {
	for _, l := range r.lines {
		if strings.HasPrefix(l, "vmtest: fault: clean: ok") {
			return true
		}
	}
	return false
}

func (r *faultRun) clear(c faultCase) {
	if len(c.Rules) == 0 {
		return
	}
	if out, err := r.vhcrdFault("clear"); err != nil {
		r.t.Fatalf("%s: vhcrd fault clear: %v\n%s", c.Name, err, out)
	}
}

// selectFaultCases is VHCRD_FAULTS's choice of faultCases.
func selectFaultCases(t *testing.T) []faultCase {
	sel := os.Getenv("VHCRD_FAULTS")
	var out []faultCase
	var re *regexp.Regexp
	if sel != "" && sel != "all" {
		var err error
		if re, err = regexp.Compile(sel); err != nil {
			t.Fatalf("VHCRD_FAULTS: %v", err)
		}
	}
	for _, c := range faultCases {
		switch {
		case sel == "" && c.CI, sel == "all", re != nil && re.MatchString(c.Name):
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		t.Fatalf("VHCRD_FAULTS=%q selects no case", sel)
	}
	return out
}

func TestLinuxMLX4Faults(t *testing.T) {
	e := setupMLX4(t)
	cases := selectFaultCases(t)
	run := newMatrixRun(t, e.root, os.Getenv("VHCRD_FAULTS"))
	t0 := time.Now()
	var results []faultResult
	for len(results) < len(cases) {
		// One guest runs the cases up to the next Config case; a Config
		// case runs alone, against a vhcrd of its own.
		rest, env, config := cases[len(results):], e, []string(nil)
		if rest[0].Config {
			rest = rest[:1]
			env, config = e.withConfig(t, rest[0])
		} else if i := slices.IndexFunc(rest, func(c faultCase) bool { return c.Config }); i > 0 {
			rest = rest[:i]
		}
		cfg := scenarioConfig(ScenarioFaults)
		var budget time.Duration
		for _, c := range rest {
			cfg.Faults = append(cfg.Faults, FaultRound{Name: c.Name, Settle: c.settle(), Pingpong: c.pingpong()})
			budget += 5*c.limit() + c.settle()
		}
		r := &faultRun{t: t, e: env, v: env.bootWith(t, cfg, bootOpts{timeout: budget, extra: faultsUserspace(t, env, rest)}), config: config}
		if why := r.await("vmtest: fault: hung-task detector", mlx4Silence*3); why != "" {
			t.Fatalf("the faults guest did not start: %s; console tail:\n%s", why, r.v.tail(40))
		}
		for i, c := range rest {
			res, reboot := r.runCase(c, i+1)
			results = append(results, res)
			t.Logf("%s: %s (expected %s) in %.1fs: %s; %s", c.Name, res.class, c.want(), res.took.Seconds(), strings.Join(res.evidence, " | "), strings.Join(res.notes, "; "))
			if reboot {
				if i+1 < len(rest) {
					t.Logf("%s: the guest is rebooted for the next case", c.Name)
				}
				break
			}
		}
		if !r.v.done {
			r.v.kill()
		}
		env.awaitReleased(t)
		if env != e {
			env.vhcrd.stop(t)
		}
	}
	wall := time.Since(t0)
	t.Logf("fault matrix: %d cases in %.1fs", len(results), wall.Seconds())
	run.results, run.wall = results, wall
	section, err := run.section(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fault matrix:\n%s", section)
	if doc := os.Getenv("VHCRD_FAULTS_DOC"); doc != "" {
		if err := spliceMatrix(filepath.Join(e.root, doc), run); err != nil {
			t.Fatal(err)
		}
		t.Logf("fault matrix written to %s", doc)
	}
	for _, res := range results {
		if res.class != res.c.want() {
			t.Errorf("%s: %s, expected %s (%s); driver's lines: %s; %s", res.c.Name, res.class, res.c.want(), res.c.Why, strings.Join(res.evidence, " | "), strings.Join(res.notes, "; "))
		}
	}
	checkDataPathLines(t, results)
	faultReplays(t, results)
}

// awaitReleased waits (bounded) for vhcrd to have released the guest's VF
// after QEMU went away (it resets the VF when the ivshmem client goes).
func (e *mlx4Env) awaitReleased(t *testing.T) {
	t.Helper()
	lv := map[string]string{"vf": fmt.Sprint(guestVF)}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		m := e.vhcrd.metrics(t)
		if m.sum("vhcrd_resources", lv) == 0 && m.sum("vhcrd_vf_active", lv) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond) // polling another process's metrics
	}
	e.vhcrd.assertReleased(t, guestVF, "QEMU of the faults guest killed")
}

// TestClassifyFault pins the classes of reaction against console lines of
// the driver (from Linux 6.1's messages) and the guest's reports.
func TestClassifyFault(t *testing.T) {
	bound := `vmtest: fault: bind: driver "mlx4_core" ib true in 174ms: <nil> (<nil>)`
	steady := "vmtest: fault: steady: 12 reads, 0 errors (<nil>), restart \"\"; ib true (<nil>)"
	port := "vmtest: fault: steady: port 1 states 4: ACTIVE; lid=0x5 sm_lid=0x1 -> lid=0x5 sm_lid=0x1"
	for _, c := range []struct {
		name, point string
		lines       []string
		hung        bool
		want        string
	}{
		{"clean", PointSteady, []string{bound, port, steady, "[    3.6] mlx4_core 0000:00:01.0: Failed to map blue flame area",
			"[   11.2] mlx4_core 0000:00:01.0: Timestamping is not supported in slave mode",
			"[   11.2] mlx4_core 0000:00:01.0: User MAC FW update is not supported in slave mode"}, false, classUnaffected},
		{"probe", PointBind, []string{"[    3.6] mlx4_core 0000:00:01.0: slave driver version is not supported by the master",
			`vmtest: fault: bind: driver "" ib false in 12ms: <nil> (not bound)`}, false, classProbeFailed},
		{"read error", PointSteady, []string{bound, "vmtest: fault: steady: 12 reads, 1 errors (read state: invalid argument), restart \"\"; ib true (<nil>)"}, false, classError},
		{"teardown error", PointUnbind, []string{bound, steady, "[    9.1] mlx4_core 0000:00:01.0: HW2SW_EQ failed (-22)"}, false, classError},
		{"recovered", PointSteady, []string{bound,
			"[   14.1] mlx4_core 0000:00:01.0: Internal error detected on the communication channel",
			"[   14.1] mlx4_core 0000:00:01.0: device is going to be reset",
			"[   14.2] mlx4_core 0000:00:01.0: VF Reset succeed",
			"[   14.2] mlx4_core 0000:00:01.0: device was reset successfully",
			"[   15.0] mlx4_core 0000:00:01.0: mlx4_restart_one was ended, ret=0", steady}, false, classRecovered},
		{"restart failed", PointSteady, []string{bound,
			"[   14.1] mlx4_core 0000:00:01.0: device is going to be reset",
			"[   15.0] mlx4_core 0000:00:01.0: mlx4_restart_one was ended, ret=-5", steady}, false, classError},
		{"followed port", PointSteady, []string{bound, "vmtest: fault: steady: port 1 states 4: ACTIVE > 1: DOWN > 4: ACTIVE; lid=0x5 -> lid=0x5", steady}, false, classFollowed},
		{"followed lid", PointSteady, []string{bound, "vmtest: fault: steady: port 1 states 4: ACTIVE; lid=0x5 sm_lid=0x1 -> lid=0x25 sm_lid=0x1", steady}, false, classFollowed},
		{"attribute read failed", PointSteady, []string{bound, "vmtest: fault: steady: port 1 states 4: ACTIVE; lid=ERR sm_lid=0x1 -> lid=0x5 sm_lid=0x1", "vmtest: fault: steady: 12 reads, 0 errors (<nil>), restart \"\"; ib true (<nil>)"}, false, classError},
		{"overrun line", PointSteady, []string{bound, "[   14.1] mlx4_core 0000:00:01.0: EQ overrun on EQN 0", steady}, false, classFollowed},
		{"bug", PointSteady, []string{bound, "[   24.1] mlx4_core 0000:00:01.0: Fail to send reset over the communication channel",
			"[   24.1] kernel BUG at drivers/net/ethernet/mellanox/mlx4/catas.c:191!"}, false, classOops},
		{"hung", PointSteady, []string{bound}, true, classHung},
		{"deferred then bound", PointBind, []string{"[   30.3] mlx4_core 0000:00:01.0: slave is currently in the middle of FLR - Deferring probe", bound, steady}, false, classRecovered},
		{"hung task", PointSteady, []string{bound, "[  200.1] INFO: task kworker/0:1:20 blocked for more than 75 seconds.", steady}, false, classHung},
	} {
		got, ev, notes := classifyFault(c.point, c.lines, c.hung)
		if got != c.want {
			t.Errorf("%s: %s (evidence %q, notes %q), want %s", c.name, got, ev, notes, c.want)
		}
	}
	if s := strip("[   24.1] mlx4_core 0000:00:01.0: VF Reset succeed"); s != "VF Reset succeed" {
		t.Errorf("strip = %q", s)
	}
}

// TestFaultCases checks the matrix's table: unique names, known points
// and classes, a rule for every case but the baseline, and a CI subset
// that covers every class the matrix expects but hung.
func TestFaultCases(t *testing.T) {
	names := map[string]bool{}
	ci := map[string]bool{}
	all := map[string]bool{}
	for _, c := range faultCases {
		if names[c.Name] {
			t.Errorf("%s: twice", c.Name)
		}
		names[c.Name] = true
		switch c.Point {
		case PointBind, PointSteady, PointUnbind, PointPingpong:
		default:
			t.Errorf("%s: point %q", c.Name, c.Point)
		}
		switch c.Expect {
		case classUnaffected, classFollowed, classError, classRecovered, classProbeFailed, classHung, classOops:
		default:
			t.Errorf("%s: class %q", c.Name, c.Expect)
		}
		if len(c.Rules) == 0 && c.Name != "baseline" && c.Name != "pingpong-baseline" || c.Why == "" {
			t.Errorf("%s: no rule or no reason", c.Name)
		}
		if c.CI && c.Slow {
			t.Errorf("%s: a slow case in the CI subset", c.Name)
		}
		all[c.want()] = true
		if c.CI {
			ci[c.want()] = true
		}
	}
	for cl := range all {
		if !ci[cl] {
			t.Errorf("no CI case of class %s", cl)
		}
	}
}
