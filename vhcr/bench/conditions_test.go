package bench

import (
	"math"
	"testing"
)

// TestRegime: rounds are classified by the toggle-only round trip against
// FastRegimeBelowNS, and the regime says so in words.
func TestRegime(t *testing.T) {
	for _, tc := range []struct {
		rounds []float64
		name   string
		text   string
	}{
		{[]float64{92, 95, 90, 101, 97}, RegimeFast, "fast regime: shared-cache (toggle-only round trip 95 ns < 250 ns in 5 of 5 rounds)"},
		{[]float64{621, 671, 640}, RegimeSlow, "slow regime: cross-core (toggle-only round trip 640 ns >= 250 ns in 3 of 3 rounds)"},
		{[]float64{90, 640, 650}, RegimeMixed, "mixed regime: 1 of 3 rounds shared-cache (toggle-only < 250 ns), the others cross-core (median 640 ns); ratios mix the two"},
	} {
		g := ClassifyRegime(tc.rounds, tc.rounds)
		if g.Name != tc.name || g.String() != tc.text || g.Split != 0 {
			t.Errorf("%v: %s %q (split %d), want %s %q", tc.rounds, g.Name, g, g.Split, tc.name, tc.text)
		}
	}
	// The NOP's round 3 and the minimum's round 2 were measured after the
	// host moved the vCPUs: two rounds of five compare two regimes.
	g := ClassifyRegime([]float64{130, 130, 150, 130, 150}, []float64{130, 401, 140, 130, 130}, []float64{160, 160, 661, 160, 160})
	want := "fast regime: shared-cache (toggle-only round trip 130 ns < 250 ns in 5 of 5 rounds); in 2 of 5 rounds the figures beside it were in the other regime (the host moved the vCPUs): those rounds' ratios compare two regimes"
	if g.Name != RegimeFast || g.Split != 2 || g.String() != want {
		t.Errorf("split rounds: %s, split %d, %q; want fast, 2, %q", g.Name, g.Split, g, want)
	}
}

// TestLoadString: the load average's range over the rounds, one value when
// it did not move, unknown where /proc/loadavg could not be read.
func TestLoadString(t *testing.T) {
	for _, tc := range []struct {
		l    Load
		want string
	}{
		{Load{0.12, 0.4, 0.3}, "load 1m 0.12-0.40 over 3 rounds"},
		{Load{2.5}, "load 1m 2.50 over 1 round"},
		{Load{0.2, math.NaN(), 0.2}, "load 1m 0.20 over 3 rounds"},
		{Load{math.NaN()}, "load 1m unknown"},
		{nil, "load 1m unknown"},
	} {
		if got := tc.l.String(); got != tc.want {
			t.Errorf("%v: %q, want %q", []float64(tc.l), got, tc.want)
		}
	}
	if v := LoadAvg1(); !math.IsNaN(v) && v < 0 {
		t.Errorf("LoadAvg1 = %v", v)
	}
}
