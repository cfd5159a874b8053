package bench

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Regime says where the host ran the VF process and its responder, as the
// toggle-only limit's round trip shows it: below FastRegimeBelowNS the two
// share a core's caches (vCPUs the host placed so) and a few tens of ns of
// vhcrd's own work show in the ratios; above it every round trip pays
// cache-line transfers between cores. The host can move the vCPUs within
// a run, even within a round (Split).
type Regime struct {
	Name       string    `json:"name"` // "fast", "slow" or "mixed"
	ToggleNS   float64   `json:"toggle_only_median_ns"`
	FastRounds int       `json:"fast_rounds"`
	Rounds     int       `json:"rounds"`
	RoundNS    []float64 `json:"toggle_only_round_medians_ns"`
	// Split counts the rounds in which a figure measured beside the
	// toggle-only one (the protocol minimum, vhcrd's NOP) fell on the
	// other side of FastRegimeBelowNS: the host moved the vCPUs between
	// the two measurements, and that round's ratio compares two regimes.
	Split int `json:"split_rounds"`
}

// Regime names.
const (
	RegimeFast  = "fast"
	RegimeSlow  = "slow"
	RegimeMixed = "mixed"
)

// ClassifyRegime classifies the rounds by their toggle-only medians (ns)
// and counts the rounds in which one of the figures beside them (their
// round medians, ns) was in the other regime.
func ClassifyRegime(roundNS []float64, beside ...[]float64) Regime {
	g := Regime{Rounds: len(roundNS), RoundNS: slices.Clone(roundNS)}
	if len(roundNS) > 0 {
		g.ToggleNS = median(roundNS)
	}
	for r, v := range roundNS {
		fast := v < FastRegimeBelowNS
		if fast {
			g.FastRounds++
		}
		for _, f := range beside {
			if r < len(f) && (f[r] < FastRegimeBelowNS) != fast {
				g.Split++
				break
			}
		}
	}
	switch g.FastRounds {
	case g.Rounds:
		g.Name = RegimeFast
	case 0:
		g.Name = RegimeSlow
	default:
		g.Name = RegimeMixed
	}
	return g
}

// String is the regime as vfctl bench prints it beside every ratio.
func (g Regime) String() string {
	s := g.name()
	if g.Split > 0 {
		s += fmt.Sprintf("; in %d of %d rounds the figures beside it were in the other regime (the host moved the vCPUs): those rounds' ratios compare two regimes", g.Split, g.Rounds)
	}
	return s
}

func (g Regime) name() string {
	switch g.Name {
	case RegimeFast:
		return fmt.Sprintf("fast regime: shared-cache (toggle-only round trip %.0f ns < %g ns in %d of %d rounds)", g.ToggleNS, float64(FastRegimeBelowNS), g.FastRounds, g.Rounds)
	case RegimeSlow:
		return fmt.Sprintf("slow regime: cross-core (toggle-only round trip %.0f ns >= %g ns in %d of %d rounds)", g.ToggleNS, float64(FastRegimeBelowNS), g.Rounds, g.Rounds)
	}
	return fmt.Sprintf("mixed regime: %d of %d rounds shared-cache (toggle-only < %g ns), the others cross-core (median %.0f ns); ratios mix the two", g.FastRounds, g.Rounds, float64(FastRegimeBelowNS), g.ToggleNS)
}

// Load is the 1-minute load average (/proc/loadavg) read at each round;
// NaN where it could not be read.
type Load []float64

// LoadAvg1 reads the 1-minute load average, NaN if /proc/loadavg cannot
// be read.
func LoadAvg1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return math.NaN()
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return math.NaN()
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// String is the load as vfctl bench prints it beside every ratio:
// "load 1m 0.12-0.40 over 5 rounds".
func (l Load) String() string {
	var v []float64
	for _, x := range l {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return "load 1m unknown"
	}
	lo, hi := slices.Min(v), slices.Max(v)
	rounds := "round"
	if len(l) != 1 {
		rounds = "rounds"
	}
	if lo == hi {
		return fmt.Sprintf("load 1m %.2f over %d %s", lo, len(l), rounds)
	}
	return fmt.Sprintf("load 1m %.2f-%.2f over %d %s", lo, hi, len(l), rounds)
}
