package vmtest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/bench"
)

// BenchmarkGuestBindPolicy measures the poller's idle policy for guests,
// which cannot ring the futex doorbell (their driver only writes
// slave_write): Debian's mlx4_core + mlx4_ib bind in a QEMU guest (the
// guest's own clock around the bind write, which returns once mlx4_0 is
// registered) under vhcrd's default policy (a sleep bounded by
// GuestSleep while a guest is attached) and under busy polling (--idle
// busy: the poller never sleeps), in the same run, the two alternating in
// rounds, one guest and one vhcrd at a time; and vhcrd's CPU while the
// guest's driver is bound and idle (every thread's run time from /proc,
// over idleWindow). It prints the median bind of each policy over its
// rounds' binds, their ratio and the idle CPU of each (its higher round's,
// the whole process and its busiest thread, the poller's) against
// their targets (vhcr/bench's TargetGuestBindOverBusy and
// TargetGuestIdleCPU). One iteration whatever b.N (run it with -benchtime
// 1x): a guest's boot is the unit.
func BenchmarkGuestBindPolicy(b *testing.B) {
	e := setupMLX4Env(b)
	const binds = 9
	const rounds = 2
	const idleWindow = 5 * time.Second
	type result struct {
		binds []time.Duration
		idle  float64 // CPU fraction over idleWindow
		top   float64 // the busiest thread's part of it
	}
	run := func(policy string, round int) result {
		dir := filepath.Join(e.tmp, fmt.Sprintf("policy-%s-%d", policy, round))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		v := startVhcrdGuests(b, filepath.Join(e.tmp, "vhcrd"), dir, nil, false, "--idle", policy)
		e.vhcrd = v
		cfg := DefaultMLX4Config()
		cfg.Binds = binds
		g := e.bootWith(b, cfg, bootOpts{name: fmt.Sprintf("bind-%s-%d", policy, round)})
		var r result
		for i := 1; i <= binds; i++ {
			g.step(fmt.Sprintf("bound %d", i), func() {
				d, ok := boundIn(g.said, i)
				if !ok {
					b.Fatalf("%s: no bind time in the guest's lines %q", policy, g.said)
				}
				r.binds = append(r.binds, d)
				if i == binds {
					r.idle, r.top = cpuOver(b, v.cmd.Process.Pid, idleWindow)
				}
			})
			g.step(fmt.Sprintf("unbound %d", i), nil)
		}
		g.finish()
		if err := v.terminate(); err != nil {
			b.Fatalf("vhcrd serve --idle %s: %v\n%s", policy, err, v.logText())
		}
		v.cmd = nil // terminated: its cleanup has only the tracer to stop
		return r
	}
	// The policies alternate, a guest and a vhcrd per round, and each
	// policy's binds of all rounds are pooled: a drift of the machine
	// between the two policies' runs (the busy policy's bind alone has
	// varied from 48 to 78 ms between runs) weighs on both alike.
	var def, busy result
	for r := range rounds {
		d, u := run("default", r), run("busy", r)
		def.binds, busy.binds = append(def.binds, d.binds...), append(busy.binds, u.binds...)
		def.idle, def.top, busy.idle, busy.top = max(def.idle, d.idle), max(def.top, d.top), max(busy.idle, u.idle), max(busy.top, u.top)
	}
	md, mb := median(def.binds), median(busy.binds)
	b.Logf("guest bind of mlx4_core + mlx4_ib (%d binds each in %d rounds, the guest's clock): default policy median %v %v, busy polling median %v %v", binds*rounds, rounds, md, def.binds, mb, busy.binds)
	b.Logf("default/busy = %.3f (target <= %v); vhcrd's idle CPU with the guest's driver bound, over %v (the higher round's): default %.2f %% (target <= %v %%; its busiest thread %.2f %%), busy %.1f %% (%.1f %%)",
		float64(md)/float64(mb), bench.TargetGuestBindOverBusy, idleWindow, 100*def.idle, 100*bench.TargetGuestIdleCPU, 100*def.top, 100*busy.idle, 100*busy.top)
	b.ReportMetric(float64(md.Microseconds())/1000, "bind-default-ms")
	b.ReportMetric(float64(mb.Microseconds())/1000, "bind-busy-ms")
	b.ReportMetric(float64(md)/float64(mb), "default/busy")
	b.ReportMetric(100*def.idle, "idle-cpu-default-%")
	b.ReportMetric(100*def.top, "idle-cpu-default-poller-%")
	b.ReportMetric(100*busy.idle, "idle-cpu-busy-%")
}

// boundIn finds "bound N: BDF to mlx4_core in D" among the guest's lines.
func boundIn(said []string, n int) (time.Duration, bool) {
	prefix := fmt.Sprintf("vmtest: bound %d: ", n)
	for _, l := range said {
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		if i := strings.LastIndex(l, " in "); i >= 0 {
			if d, err := time.ParseDuration(strings.TrimSpace(l[i+4:])); err == nil {
				return d, true
			}
		}
	}
	return 0, false
}

// cpuOver is the CPU time process pid's threads ran during the next d,
// as a fraction of d (/proc/PID/task/*/schedstat: run time in ns), and
// the part of its busiest thread (the poller's, locked to its thread).
func cpuOver(t testing.TB, pid int, d time.Duration) (all, top float64) {
	t.Helper()
	ran := func() map[string]int64 {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
		if err != nil || len(tasks) == 0 {
			t.Fatalf("no threads of %d in /proc: %v", pid, err)
		}
		m := map[string]int64{}
		for _, f := range tasks {
			b, err := os.ReadFile(f)
			if err != nil {
				continue // a thread that ended: its time is gone with it
			}
			m[f], _ = strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
		}
		return m
	}
	r0, t0 := ran(), time.Now()
	time.Sleep(d) // the window measured, not a synchronisation
	r1, el := ran(), float64(time.Since(t0).Nanoseconds())
	var sum, most int64
	for f, n := range r1 {
		sum += n - r0[f]
		most = max(most, n-r0[f])
	}
	return float64(sum) / el, float64(most) / el
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
