package vmtest

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/u-root/u-root/pkg/cpio"
)

// The verbs tier's killed guest (issue 20 item 6): two guests of one
// vhcrd, each with a long ibv_rc_pingpong between two processes on its own
// VF. The victim (VF 0) has both its processes SIGKILLed mid-transfer: the
// kernel's uverbs cleanup destroys their QPs, CQs, MRs and PDs through
// mlx4_ib and vhcrd, and VF 0's resources must come back to what the bound
// driver held before the transfer. Then the victim runs the transfer
// again and its QEMU is killed under it: vhcrd resets the VF when its
// ivshmem client goes (the FLR path), and VF 0 must hold nothing. The
// bystander (VF 1) runs its transfer through all of it: its CQEs go on
// being written after each of the victim's deaths, its resources do not
// change until its transfer ends, none of its error counters moves, and
// the pingpong completes with its normal lines.

const (
	// killTarget is how long the bystander's transfer (round trips of 4
	// KiB) lasts, sized by the guest from a calibration run of
	// killCalibrate round trips: it must outlast the victim's kill, its
	// release, the second transfer's start and QEMU's kill, which take a
	// few seconds (the host checks that it did). killMaxIters caps it.
	killTarget    = 25 * time.Second
	killCalibrate = 300
	killMaxIters  = 1000000
	// killVictimIters is the victim's: it never ends on its own.
	killVictimIters = 100000000
	// killLimit bounds each transfer in the guest.
	killLimit = 3 * time.Minute
	// killProgressWait bounds the wait for a VF's next CQE while its
	// transfer runs.
	killProgressWait = 20 * time.Second
	// killReleaseWait bounds the wait for vhcrd to have released what a
	// killed process or guest held.
	killReleaseWait = 10 * time.Second
)

// killPingpong is the transfer of ScenarioVerbsKill (the guest adds -n).
var killPingpong = Pingpong{Name: "rc long", Tool: "ibv_rc_pingpong", Args: []string{"-d", "mlx4_0", "-i", "1"}}

func killConfig(role string) MLX4Config {
	cfg := DefaultMLX4Config()
	cfg.Scenario = ScenarioVerbsKill
	cfg.VerbsKill = VerbsKillConfig{Role: role, Pingpong: killPingpong, Iters: killVictimIters, TimeLimitMS: int(killLimit / time.Millisecond)}
	if role == KillBystander {
		cfg.VerbsKill.Iters, cfg.VerbsKill.CalibrateIters, cfg.VerbsKill.TargetMS = killMaxIters, killCalibrate, int(killTarget/time.Millisecond)
	}
	return cfg
}

// bystanderErrors are the counters of the bystander's VF that must not
// move while the victim dies: the data path's errors (error CQEs and
// flushes, CQEs dropped, CQ overruns and access errors, completion events
// lost, packets dropped, WQ catastrophic errors, doorbells naming a QP not
// on their page) and the channel's
// (resets, refusals, DMA faults, resyncs, EQ overruns, interrupts not
// raised, commands an FLR dropped).
var bystanderErrors = []string{
	"vhcrd_error_cqes_total", "vhcrd_cqes_dropped_total", "vhcrd_cq_overruns_total", "vhcrd_cq_access_errors_total",
	"vhcrd_completion_events_lost_total", "vhcrd_packets_dropped_total", "vhcrd_wq_catastrophic_errors_total", "vhcrd_foreign_doorbells_total",
	"vhcrd_comm_resets_total", "vhcrd_command_refusals_total", "vhcrd_dma_faults_total", "vhcrd_channel_resyncs_total",
	"vhcrd_eq_overruns_total", "vhcrd_interrupt_errors_total", "vhcrd_flr_dropped_commands_total",
}

func vfLabels(vf int) map[string]string { return map[string]string{"vf": fmt.Sprint(vf)} }

// vfResources is vhcrd_resources of vf by type.
func vfResources(m scrape, vf int) map[string]float64 {
	return m.byLabel("vhcrd_resources", "type", vfLabels(vf))
}

// resourceDiff is how got differs from want, by type ("" if not at all).
func resourceDiff(got, want map[string]float64) string {
	types := map[string]bool{}
	for ty := range got {
		types[ty] = true
	}
	for ty := range want {
		types[ty] = true
	}
	var d []string
	for ty := range types {
		if got[ty] != want[ty] {
			d = append(d, fmt.Sprintf("%s %v (want %v)", ty, got[ty], want[ty]))
		}
	}
	sort.Strings(d)
	return strings.Join(d, ", ")
}

// resourceText is a VF's non-zero resources, sorted by type.
func resourceText(r map[string]float64) string {
	var s []string
	for ty, n := range r {
		if n != 0 {
			s = append(s, fmt.Sprintf("%s=%v", ty, n))
		}
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

// awaitResources waits (bounded) until vf's resources are want.
func (v *vhcrdProc) awaitResources(t *testing.T, vf int, want map[string]float64, what string) scrape {
	t.Helper()
	for deadline := time.Now().Add(killReleaseWait); ; {
		m := v.metrics(t)
		got := vfResources(m, vf)
		d := resourceDiff(got, want)
		if d == "" {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: VF %d's resources after %v: %s", what, vf, killReleaseWait, d)
		}
		time.Sleep(20 * time.Millisecond) // polling another process's metrics
	}
}

// awaitProgress waits (bounded) until vhcrd has written a CQE into vf's
// CQs since the call: vf's transfer moves now.
func (v *vhcrdProc) awaitProgress(t *testing.T, vf int, what string) scrape {
	t.Helper()
	lv := vfLabels(vf)
	from := v.metrics(t).sum("vhcrd_cqes_total", lv)
	for deadline := time.Now().Add(killProgressWait); ; {
		m := v.metrics(t)
		if n := m.sum("vhcrd_cqes_total", lv); n > from {
			t.Logf("%s: VF %d's transfer moves: vhcrd_cqes_total %v → %v, vhcrd_wqes_total %v", what, vf, from, n, m.sum("vhcrd_wqes_total", lv))
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: vhcrd wrote no CQE for VF %d in %v (vhcrd_cqes_total %v): its transfer does not move", what, vf, killProgressWait, from)
		}
		time.Sleep(20 * time.Millisecond) // polling another process's metrics
	}
}

// holdsTransfer checks that held has the objects of a pingpong's two
// processes over base: a QP, a CQ and an MR (MPT) each, and their MTTs.
func holdsTransfer(t *testing.T, vf int, held, base map[string]float64, what string) {
	t.Helper()
	for _, ty := range []string{"qp", "cq", "mpt"} {
		if held[ty]-base[ty] < 2 {
			t.Fatalf("%s: VF %d holds %v, bound it held %v: not the QP, CQ and MR of two processes", what, vf, resourceText(held), resourceText(base))
		}
	}
	if held["mtt"] <= base["mtt"] {
		t.Fatalf("%s: VF %d holds %v MTTs, bound it held %v", what, vf, held["mtt"], base["mtt"])
	}
	t.Logf("%s: VF %d holds %s (bound: %s)", what, vf, resourceText(held), resourceText(base))
}

// bystanderClean checks that none of the bystander's error counters
// (bystanderErrors) and no status other than OK of its commands moved
// from base to m.
func bystanderClean(t *testing.T, m, base scrape, vf int, when string) {
	t.Helper()
	lv := vfLabels(vf)
	for _, name := range bystanderErrors {
		if d := m.sum(name, lv) - base.sum(name, lv); d != 0 {
			t.Errorf("%s: the bystander's VF %d: %s rose by %v (%v) during its transfer", when, vf, name, d, m.byLabel(name, "reason", lv))
		}
	}
	bad := map[string]string{"vf": fmt.Sprint(vf), "status": "!OK"}
	if d := m.sum("vhcrd_vf_commands_total", bad) - base.sum("vhcrd_vf_commands_total", bad); d != 0 {
		t.Errorf("%s: the bystander's VF %d: %v commands completed with a status other than OK during its transfer", when, vf, d)
	}
}

// destroyed checks that the kernel's uverbs cleanup destroyed the killed
// processes' objects through vhcrd from before to after: each process's QP
// to RESET, its CQ and its MR (MPT) back to software ownership, and no
// command of vf failed meanwhile (the bystander issues none during its
// transfer).
func destroyed(t *testing.T, before, after scrape, vf int) {
	t.Helper()
	var got []string
	for _, op := range []string{"2RST_QP", "HW2SW_CQ", "HW2SW_MPT", "FREE_RES"} {
		n := opCount(after, op) - opCount(before, op)
		got = append(got, fmt.Sprintf("%s ×%v", op, n))
		if n < 2 {
			t.Errorf("the killed processes' cleanup: vhcrd completed %v %s (OK), want one per process at least", n, op)
		}
	}
	bad := map[string]string{"vf": fmt.Sprint(vf), "status": "!OK"}
	if d := after.sum("vhcrd_vf_commands_total", bad) - before.sum("vhcrd_vf_commands_total", bad); d != 0 {
		t.Errorf("the killed processes' cleanup: %v commands of VF %d completed with a status other than OK", d, vf)
	}
	t.Logf("the killed processes' cleanup through vhcrd: %s, all OK", strings.Join(got, ", "))
}

// killedEnds are the victim's reports of its killed ends: its server's
// and its client's, each dead of SIGKILL.
func killedEnds(lines []string) ([]string, error) {
	var ends []string
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, KillKilledPrefix); ok {
			if !strings.Contains(rest, "signal: killed") {
				return nil, fmt.Errorf("the victim's end did not die of SIGKILL: %s", l)
			}
			ends = append(ends, l)
		}
	}
	if len(ends) != 2 {
		return nil, fmt.Errorf("the victim reported %d killed ends, want its server and client (lines %q)", len(ends), lines)
	}
	return ends, nil
}

// calibrated is the round trips the bystander's calibration line gives its
// transfer, and that line.
func calibrated(lines []string) (iters, line string, err error) {
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, KillCalibrationPrefix); ok {
			if _, n, ok := strings.Cut(rest, "-n "); ok && len(strings.Fields(n)) > 0 {
				return strings.Fields(n)[0], l, nil
			}
		}
	}
	return "", "", fmt.Errorf("the bystander printed no calibration line (%q)", lines)
}

// pingpongIters is the iteration count of a pingpong's "N iters in T
// seconds" lines.
var pingpongIters = regexp.MustCompile(`(\d+) iters in [\d.]+ seconds`)

// checkIters checks that both ends of pingpong name report iters round
// trips (the calibration's lines, named "NAME calibration", aside).
func checkIters(lines []string, name, iters string) error {
	n := 0
	for _, l := range lines {
		for _, end := range []string{"server", "client"} {
			rest, ok := strings.CutPrefix(l, "vmtest: "+name+" "+end+"| ")
			if m := pingpongIters.FindStringSubmatch(rest); ok && m != nil {
				if m[1] != iters {
					return fmt.Errorf("the bystander's transfer: %q, want %s iters", l, iters)
				}
				n++
			}
		}
	}
	if n != 2 {
		return fmt.Errorf("the bystander's transfer: %d iters lines of %s, want its server's and client's", n, name)
	}
	return nil
}

// killGuest is TestLinuxMLX4Verbs' killguest scenario on e's vhcrd, whose
// VF 0 and VF 1 are guests'.
func (e *mlx4Env) killGuest(t *testing.T, recs []cpio.Record) {
	v := e.vhcrd
	victimVF, byVF := guestVF, bystanderVF
	a := e.bootWith(t, killConfig(KillVictim), bootOpts{name: "killguest-victim", extra: recs, timeout: verbsBootTimeout})
	bcfg := killConfig(KillBystander)
	b := e.bootWith(t, bcfg, bootOpts{name: "killguest-bystander", extra: recs, timeout: verbsBootTimeout, ram: v.ram1, socket: v.socket1})
	var al, bl consoleLog

	// Both guests bound, then the victim's transfer, then the
	// bystander's: it has to outlast only what the host does to the
	// victim.
	a.expect("vmtest: wait bound 1")
	al.keep(a)()
	b.expect("vmtest: wait bound 1")
	bl.keep(b)()
	bBound := v.metrics(t)
	baseA, baseB := vfResources(bBound, victimVF), vfResources(bBound, byVF)
	// The FLRs of VF 0 so far (the previous guest's QEMU exit is one,
	// which vhcrd counts when it sees the client go, long before the
	// bind).
	flrBefore := guestResets(bBound, "flr")
	t.Logf("bound: VF %d (victim) holds %s; VF %d (bystander) holds %s", victimVF, resourceText(baseA), byVF, resourceText(baseB))
	a.goOn()
	a.expect("vmtest: wait running 1")
	al.keep(a)()
	v.awaitProgress(t, victimVF, "victim's transfer 1")
	traceFrom := map[string]int64{bcfg.VerbsKill.Pingpong.Name: traceSize(v)}
	b.goOn()
	b.expect("vmtest: wait running 1")
	bl.keep(b)()
	iters, cal, err := calibrated(b.said)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bystander: %s", cal)
	runB := vfResources(v.awaitProgress(t, byVF, "bystander's transfer"), byVF)
	holdsTransfer(t, byVF, runB, baseB, "bystander's transfer")
	// untouched: the bystander's data path moves, its VF still holds
	// exactly its transfer's objects, and no error counter of its moved.
	untouched := func(when string) scrape {
		t.Helper()
		m := v.awaitProgress(t, byVF, when)
		if d := resourceDiff(vfResources(m, byVF), runB); d != "" {
			t.Fatalf("%s: the bystander's VF %d: %s (its transfer ended, or vhcrd touched it)", when, byVF, d)
		}
		if m.sum("vhcrd_vf_active", vfLabels(byVF)) != 1 {
			t.Fatalf("%s: the bystander's VF %d is not active", when, byVF)
		}
		bystanderClean(t, m, bBound, byVF, when)
		return m
	}

	// SIGKILL of the victim's processes mid-transfer.
	preKill := v.metrics(t)
	holdsTransfer(t, victimVF, vfResources(preKill, victimVF), baseA, "victim's transfer 1")
	a.goOn()
	a.expect("vmtest: wait killed 1")
	al.keep(a)()
	ends, err := killedEnds(a.said)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ends {
		t.Logf("victim: %s", l)
	}
	m := v.awaitResources(t, victimVF, baseA, "the victim's processes SIGKILLed")
	t.Logf("the victim's processes SIGKILLed mid-transfer: VF %d's resources back to the bound driver's: %s (vhcrd_wqes_total %v, vhcrd_cqes_total %v, vhcrd_error_cqes_total %v)",
		victimVF, resourceText(vfResources(m, victimVF)), m.sum("vhcrd_wqes_total", vfLabels(victimVF)), m.sum("vhcrd_cqes_total", vfLabels(victimVF)), m.sum("vhcrd_error_cqes_total", vfLabels(victimVF)))
	destroyed(t, preKill, m, victimVF)
	untouched("after the victim's processes were killed")

	// The victim's QEMU killed mid-transfer: the FLR path.
	a.goOn()
	a.expect("vmtest: wait running 2")
	al.keep(a)()
	v.awaitProgress(t, victimVF, "victim's transfer 2")
	holdsTransfer(t, victimVF, vfResources(v.metrics(t), victimVF), baseA, "victim's transfer 2")
	untouched("before the victim's QEMU is killed")
	a.kill()
	e.awaitReleased(t)
	m = v.assertReleased(t, victimVF, "the victim's QEMU killed mid-transfer")
	if n := guestResets(m, "flr") - flrBefore; n != 1 {
		t.Fatalf("vhcrd counted %v FLRs of VF %d for the killed QEMU, want 1", n, victimVF)
	}
	t.Logf("the victim's QEMU killed mid-transfer: vhcrd reset VF %d (vhcrd_comm_resets_total{reason=\"flr\"} +1), vhcrd_vf_active 0, resources all 0", victimVF)
	untouched("after the victim's QEMU was killed")

	// The bystander's transfer completes.
	before := v.metrics(t)
	b.goOn()
	b.expect("vmtest: wait transfer")
	bl.keep(b)()
	if !hasLine(b.said, KillStillRunning) {
		t.Fatalf("the bystander's transfer had ended before the victim's QEMU was killed (raise killTarget): %q", b.said)
	}
	pp := bcfg.VerbsKill.Pingpong
	t.Run("bystander", func(t *testing.T) {
		checkPingpongs(t, []Pingpong{pp}, map[string][]string{"": bl.lines}, v, traceFrom)
		if err := checkIters(bl.lines, pp.Name, iters); err != nil {
			t.Error(err)
		}
	})
	m = v.awaitResources(t, byVF, baseB, "the bystander's transfer ended")
	bystanderClean(t, m, bBound, byVF, "the bystander's transfer ended")
	lv := vfLabels(byVF)
	t.Logf("the bystander's VF %d during its transfer: %v WQEs and %v CQEs, %v of the CQEs after the victim's QEMU was gone; no error CQE, drop, overrun, foreign doorbell, reset, refusal or DMA fault (send doorbells %v)",
		byVF, m.sum("vhcrd_wqes_total", lv)-bBound.sum("vhcrd_wqes_total", lv), m.sum("vhcrd_cqes_total", lv)-bBound.sum("vhcrd_cqes_total", lv),
		m.sum("vhcrd_cqes_total", lv)-before.sum("vhcrd_cqes_total", lv), m.sum("vhcrd_send_doorbells_total", lv)-bBound.sum("vhcrd_send_doorbells_total", lv))
	b.goOn()
	b.step("unbound 1", func() { v.assertReleased(t, byVF, "unbind of the bystander's guest") })
	took := b.finish()
	t.Logf("killguest: the bystander's guest %.1fs of QEMU", took.Seconds())
}

// TestVerbsKillLines: the host's reading of the killed guest's and the
// bystander's lines, as the guests print them.
func TestVerbsKillLines(t *testing.T) {
	pp := killPingpong
	by := []string{
		"vmtest: run rc long calibration server: /usr/bin/ibv_rc_pingpong -d mlx4_0 -i 1 -n 300",
		"vmtest: rc long calibration client| 300 iters in 1.50 seconds = 5000.00 usec/iter",
		"vmtest: pingpong rc long calibration: ok in 2.1s",
		KillCalibrationPrefix + "5000.00 usec/iter, the transfer runs -n 5000 (about 25s)",
		"vmtest: verbskill: running 1: rc long, both ends connected 812ms after the start",
		KillStillRunning,
		"vmtest: rc long server|   local address:  LID 0x0001, QPN 0x000848, PSN 0x13cc16, GID ::",
		"vmtest: rc long server| 20480000 bytes in 24.10 seconds = 6.80 Mbit/sec",
		"vmtest: rc long server| 5000 iters in 24.10 seconds = 4820.00 usec/iter",
		"vmtest: rc long client| 20480000 bytes in 24.10 seconds = 6.80 Mbit/sec",
		"vmtest: rc long client| 5000 iters in 24.10 seconds = 4820.00 usec/iter",
		"vmtest: pingpong rc long: ok in 24.9s",
	}
	iters, _, err := calibrated(by)
	if err != nil || iters != "5000" {
		t.Fatalf("calibrated: %q, %v; want 5000", iters, err)
	}
	if err := checkIters(by, pp.Name, iters); err != nil {
		t.Fatal(err)
	}
	if err := checkIters(by, pp.Name, "300"); err == nil {
		t.Fatal("checkIters took the calibration's 300 iters for the transfer's")
	}
	if err := checkIters(by[:9], pp.Name, iters); err == nil {
		t.Fatal("checkIters passed a transfer whose client printed no iters line")
	}
	if !hasLine(by, KillStillRunning) {
		t.Fatal("no still-running line")
	}
	checkPingpongs(t, []Pingpong{pp}, map[string][]string{"": by}, &vhcrdProc{trace: "testdata/no-such-trace"}, nil)
	if _, _, err := calibrated(by[:3]); err == nil {
		t.Fatal("calibrated without the calibration line")
	}

	victim := []string{
		KillKilledPrefix + "rc long server: signal: killed after 9.1s",
		KillKilledPrefix + "rc long client: signal: killed after 8.9s",
	}
	if ends, err := killedEnds(victim); err != nil || len(ends) != 2 {
		t.Fatalf("killedEnds: %q, %v", ends, err)
	}
	if _, err := killedEnds(victim[:1]); err == nil {
		t.Fatal("killedEnds passed one killed end")
	}
	if _, err := killedEnds([]string{victim[0], KillKilledPrefix + "rc long client: exit 0 after 8.9s"}); err == nil {
		t.Fatal("killedEnds passed an end that exited on its own")
	}
	if d := resourceDiff(map[string]float64{"qp": 3, "cq": 2}, map[string]float64{"qp": 3, "cq": 2, "mtt": 0}); d != "" {
		t.Fatalf("resourceDiff of equal sets: %q", d)
	}
	if d := resourceDiff(map[string]float64{"qp": 5, "cq": 2}, map[string]float64{"qp": 3, "cq": 2, "mtt": 1}); d != "mtt 0 (want 1), qp 5 (want 3)" {
		t.Fatalf("resourceDiff: %q", d)
	}
}
