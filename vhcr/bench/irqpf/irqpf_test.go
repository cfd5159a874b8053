package irqpf

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/bench"
)

// TestMain lets the test binary be the PF process of (e): run as
// "bench-irq ...", it is vhcrd bench-irq.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "bench-irq" {
		if err := bench.IRQPF(os.Args[2:], New); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestRunIRQ runs (e) briefly between two real processes, this one the VF
// (bench.RunIRQ) and a second the PF with the software HCA: every EQE
// posted raised the vector once (the VF consumed it and re-armed before the
// next), and both figures were measured. No figure is asserted.
func TestRunIRQ(t *testing.T) {
	dir := "/dev/shm"
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		dir = t.TempDir()
	}
	res, err := bench.RunIRQ(context.Background(), bench.Options{VHCRD: os.Args[0], Rounds: 2, Dir: dir}, 300)
	if err != nil {
		t.Fatal(err)
	}
	if res.Posted != 2*(300+30) || res.Raised != res.Posted {
		t.Fatalf("%d interrupts for %d EQEs, want %d each", res.Raised, res.Posted, 2*330)
	}
	if len(res.RoundRatios) != 2 || res.EQE.MedianNS <= 0 || res.Bare.MedianNS <= 0 {
		t.Fatalf("figures missing: %+v", res)
	}
	t.Logf("EQE→wake %.0f ns, eventfd→wake %.0f ns, ratio %.2f", res.EQE.MedianNS, res.Bare.MedianNS, res.Ratio)
}

// The PF process refuses arguments it cannot use, before it touches a
// region.
func TestIRQPFArgs(t *testing.T) {
	for _, args := range [][]string{nil, {"/nonexistent"}, {"/nonexistent", "x", "10"}, {"/nonexistent", "2", "0"}} {
		if err := bench.IRQPF(args, New); err == nil {
			t.Errorf("IRQPF(%q) = nil, want a usage error", args)
		}
	}
}
