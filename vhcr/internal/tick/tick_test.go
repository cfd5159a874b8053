package tick

import "testing"

// TestCounter: the counter does not go backwards and its calibrated rate
// converts a rate's worth of ticks to one nanosecond per tick-rate.
func TestCounter(t *testing.T) {
	a := Now()
	b := Now()
	if b < a {
		t.Fatalf("counter went backwards: %d then %d", a, b)
	}
	r := PerNS()
	if r <= 0 {
		t.Fatalf("rate %v", r)
	}
	if ns := ToNS(uint64(r*1e6), r); ns < 999_999 || ns > 1_000_001 {
		t.Errorf("%v ticks at %v per ns: %d ns, want 1e6", uint64(r*1e6), r, ns)
	}
}
