package bench

import (
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
