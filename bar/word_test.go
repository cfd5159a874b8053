package bar

import "testing"

// TestWordOps: the shared-word operations do what sync/atomic's do, in
// every build (race builds use their assembly).
func TestWordOps(t *testing.T) {
	var w [2]uint32
	WordStore(&w[1], 7)
	if got := WordLoad(&w[1]); got != 7 || w[0] != 0 {
		t.Fatalf("WordStore/WordLoad: %d (neighbour %d)", got, w[0])
	}
	if got := WordAdd(&w[1], 5); got != 12 {
		t.Fatalf("WordAdd returned %d, want 12", got)
	}
	if got := WordAdd(&w[1], ^uint32(0)); got != 11 || w[1] != 11 {
		t.Fatalf("WordAdd(-1) returned %d, word %d, want 11", got, w[1])
	}
	const n = 1000
	done := make(chan struct{})
	for range 2 {
		go func() {
			for range n {
				WordAdd(&w[0], 1)
			}
			done <- struct{}{}
		}()
	}
	<-done
	<-done
	if w[0] != 2*n {
		t.Fatalf("concurrent WordAdd: %d, want %d", w[0], 2*n)
	}
}
