package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/bench"
)

// vfctl bench prints every ratio with the target package bench sets for it,
// names vhcrd's flags as vhcrd spells them (--num-vfs) and VFs in words.
func TestBenchPrintsTargets(t *testing.T) {
	res := &bench.Result{NOPOverMinimum: 1.07, NOPOverToggle: 1.62, COverB: 53.3, TracedOverNOP: 0.95,
		Regime: bench.ClassifyRegime([]float64{96, 92, 99, 95, 94}), Load: bench.Load{0.1, 0.25, 0.2, 0.15, 0.12}}
	res.Toggle = bench.Figure{Name: "toggle-only limit", MedianNS: 95, P99NS: 130}
	res.Minimum = bench.Figure{Name: "protocol-minimum limit", MedianNS: 144, P99NS: 190}
	ir := &bench.IRQResult{Ratio: 1.02, Raised: 10, Posted: 10, Load: bench.Load{3.5}}
	pr := &bench.PersistResult{Load: bench.Load{1, 2}}
	pr.CQ.Commands, pr.QP.Commands = 6, 12
	fr := &bench.FairResult{VFs: 64, Rounds: 5, PhaseS: 0.5,
		Throughput: []bench.ThroughputFigure{{Busy: 8}, {Busy: 64}},
		Bystander:  []bench.BystanderFigure{{Flooding: []int{63}}, {Flooding: []int{1, 2}}}}
	var b strings.Builder
	printBench(&b, 5, res, ir, pr, fr)
	out := b.String()
	for _, want := range []string{
		"toggle-only limit                        95 ns      130 ns\n",
		"protocol-minimum limit                  144 ns      190 ns\n",
		"fast regime: shared-cache (toggle-only round trip 95 ns < 250 ns in 5 of 5 rounds); load 1m 0.10-0.25 over 5 rounds\n",
		fmt.Sprintf("NOP/protocol-minimum = 1.07   (vhcrd NOP / protocol-minimum responder, median over rounds; target <= %g in the fast regime) [fast regime, load 1m 0.10-0.25 over 5 rounds]\n", bench.TargetNOPOverMinimum),
		fmt.Sprintf("NOP/toggle-only = 1.62   (vhcrd NOP / toggle-only responder, median over rounds; target <= %g in the fast regime) [fast regime, load 1m 0.10-0.25 over 5 rounds]\n", bench.TargetNOPOverToggle),
		fmt.Sprintf("UNIX socket / vhcrd NOP; target >= %g", float64(bench.TargetCOverB)),
		fmt.Sprintf("median over rounds; target <= %g) [fast regime, load 1m 0.10-0.25 over 5 rounds]\n", bench.TargetTraced),
		fmt.Sprintf("target <= %g; 10 interrupts for 10 EQEs) [load 1m 3.50 over 1 round]\n", bench.TargetIRQ),
		fmt.Sprintf("NOP with state file / without = 0.000   (median over rounds; target <= %g) [load 1m 1.00-2.00 over 2 rounds]\n", bench.TargetPersistNOP),
		fmt.Sprintf("QP cycle with state file / without = 0.000   (median over rounds; target <= %g) [load 1m 1.00-2.00 over 2 rounds]\n", bench.TargetPersistCycle),
		"fairness: vhcrd serve --num-vfs 64,",
		fmt.Sprintf("64 busy VFs: per-VF NOP/s max/min = 0.000   (0 NOP/s in all; target <= %g) [load 1m unknown]", bench.TargetFairMaxMin),
		"beside VF 63 flooding (scanned before VF 0 in 63 of 64 scans)",
		"beside VFs 1, 2 flooding:",
		fmt.Sprintf("(target <= %g)", float64(bench.TargetBystander)),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("vfctl bench output lacks %q:\n%s", want, out)
		}
	}
	// The issue-era numbers and flags are gone: b/a's 1.5, vhcrd --vfs, Go slices.
	for _, bad := range []*regexp.Regexp{regexp.MustCompile(`target <= 1\.5`), regexp.MustCompile(`--vfs \d`), regexp.MustCompile(`\[\d[\d ]*\]`)} {
		if bad.MatchString(out) {
			t.Errorf("vfctl bench output has %v:\n%s", bad, out)
		}
	}
	if bench.TargetNOPOverMinimum != 1.1 || bench.TargetNOPOverToggle != 1.3 || bench.FastRegimeBelowNS != 250 ||
		bench.TargetPersistNOP != 1.2 || bench.TargetPersistCycle != 1.3 {
		t.Errorf("targets %v %v %v %v %v: docs/testing.md says NOP/protocol-minimum <= 1.1 and NOP/toggle-only <= 1.3 in the fast regime (< 250 ns), state file NOP <= 1.2, CQ and QP <= 1.3",
			bench.TargetNOPOverMinimum, bench.TargetNOPOverToggle, bench.FastRegimeBelowNS, bench.TargetPersistNOP, bench.TargetPersistCycle)
	}
	// A ratio outside the fast regime says that its target is not for it.
	res.Regime = bench.ClassifyRegime([]float64{621, 671, 640})
	b.Reset()
	printBench(&b, 3, res, nil, nil, nil)
	if want := "target <= 1.1 in the fast regime, not this one) [slow regime, load 1m"; !strings.Contains(b.String(), want) {
		t.Errorf("slow-regime output lacks %q:\n%s", want, b.String())
	}
}
