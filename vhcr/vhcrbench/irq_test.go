package vhcrbench

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// TestMain lets the test binary be the bench's peer process: run as
// "bench-peer ...", it is Peer.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "bench-peer" {
		if err := Peer(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestRunIRQ runs (e) briefly between two real processes: every EQE posted
// raised the vector once (the peer consumed it and re-armed before the next),
// and both figures were measured. No figure is asserted.
func TestRunIRQ(t *testing.T) {
	dir := "/dev/shm"
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		dir = t.TempDir()
	}
	res, err := RunIRQ(context.Background(), Options{Self: os.Args[0], PeerArg: "bench-peer", Rounds: 2, Dir: dir}, 300)
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
