package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/vhcrbench"
)

// vfctl bench prints every ratio with the target vhcrbench sets for it,
// names vhcrd's flags as vhcrd spells them (--num-vfs) and VFs in words.
func TestBenchPrintsTargets(t *testing.T) {
	res := &vhcrbench.Result{BOverA: 1.09, COverB: 53.3, TracedOverNOP: 0.95}
	ir := &vhcrbench.IRQResult{Ratio: 1.02, Raised: 10, Posted: 10}
	pr := &vhcrbench.PersistResult{}
	pr.CQ.Commands, pr.QP.Commands = 6, 12
	fr := &vhcrbench.FairResult{VFs: 64, Rounds: 5, PhaseS: 0.5,
		Throughput: []vhcrbench.ThroughputFigure{{Busy: 8}, {Busy: 64}},
		Bystander:  []vhcrbench.BystanderFigure{{Flooding: []int{63}}, {Flooding: []int{1, 2}}}}
	var b strings.Builder
	printBench(&b, 5, res, ir, pr, fr)
	out := b.String()
	for _, want := range []string{
		fmt.Sprintf("b/a = 1.09   (vhcrd NOP / physical limit; target <= %g)", vhcrbench.TargetBOverA),
		fmt.Sprintf("UNIX socket / vhcrd NOP; target >= %g", float64(vhcrbench.TargetCOverB)),
		fmt.Sprintf("median over rounds; target <= %g)\n", vhcrbench.TargetTraced),
		fmt.Sprintf("target <= %g; 10 interrupts for 10 EQEs", vhcrbench.TargetIRQ),
		fmt.Sprintf("NOP with state file / without = 0.000   (median over rounds; target <= %g)", vhcrbench.TargetPersistNOP),
		fmt.Sprintf("QP cycle with state file / without = 0.000   (median over rounds; target <= %g)", vhcrbench.TargetPersistCycle),
		"fairness: vhcrd serve --num-vfs 64,",
		fmt.Sprintf("64 busy VFs: per-VF NOP/s max/min = 0.000   (0 NOP/s in all; target <= %g)", vhcrbench.TargetFairMaxMin),
		"beside VF 63 flooding (scanned before VF 0 in 63 of 64 scans)",
		"beside VFs 1, 2 flooding:",
		fmt.Sprintf("(target <= %g)", float64(vhcrbench.TargetBystander)),
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
	if vhcrbench.TargetBOverA != 1.2 || vhcrbench.TargetPersistNOP != 1.2 || vhcrbench.TargetPersistCycle != 1.3 {
		t.Errorf("targets %v %v %v: docs/testing.md says b/a <= 1.2, state file NOP <= 1.2, CQ and QP <= 1.3",
			vhcrbench.TargetBOverA, vhcrbench.TargetPersistNOP, vhcrbench.TargetPersistCycle)
	}
}
