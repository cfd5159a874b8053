package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// vfctl bench, briefly, between the real binaries: its interrupt figures
// come from a `vhcrd bench-irq` process (vfctl links no HCA), every EQE that
// process posted raised the vector once, and the internal command stays out
// of vhcrd's usage. No figure is asserted.
func TestVfctlBenchStartsVhcrdForInterrupts(t *testing.T) {
	out, err := exec.Command(filepath.Join(binDir, "vfctl"), "bench", "--vhcrd", filepath.Join(binDir, "vhcrd"),
		"--rounds", "1", "--iters", "200", "--sock-iters", "100", "--irq-iters", "200", "--persist-iters", "0", "--fair=false").CombinedOutput()
	if err != nil {
		t.Fatalf("vfctl bench: %v\n%s", err, out)
	}
	for _, want := range []string{"EQE posted → VF process wakes", "eventfd signal → VF process wakes",
		"; 220 interrupts for 220 EQEs)", "irq round 1: EQE→wake p50 "} {
		if !strings.Contains(string(out), want) {
			t.Errorf("vfctl bench output lacks %q:\n%s", want, out)
		}
	}
	help, _ := exec.Command(filepath.Join(binDir, "vhcrd"), "--help").CombinedOutput()
	if strings.Contains(string(help), "bench-irq") {
		t.Errorf("vhcrd --help lists the internal bench-irq:\n%s", help)
	}
}
