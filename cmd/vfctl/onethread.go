package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/bench"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

// OneThreadResult is what `vfctl load --one-thread --json` prints.
type OneThreadResult struct {
	VFs        []int              `json:"vfs"`
	DurationS  float64            `json:"duration_s"`
	PerVF      map[string]float64 `json:"per_vf_per_s,omitempty"`
	MaxOverMin float64            `json:"max_over_min,omitempty"`
	TotalPerS  float64            `json:"total_per_s,omitempty"`
	Bystander  *BystanderResult   `json:"bystander,omitempty"`
}

// BystanderResult is the bystander's latency (ns), medians over rounds.
type BystanderResult struct {
	VF        int     `json:"vf"`
	Flooding  []int   `json:"flooding_vfs"`
	Rounds    int     `json:"rounds"`
	GapNS     int64   `json:"gap_ns"`
	IdleP50NS float64 `json:"idle_p50_ns"`
	IdleP99NS float64 `json:"idle_p99_ns"`
	BusyP50NS float64 `json:"busy_p50_ns"`
	BusyP99NS float64 `json:"busy_p99_ns"`
	P50Ratio  float64 `json:"busy_over_idle_p50"`
	FloodPerS float64 `json:"flood_per_vf_per_s"`
}

// runOneThread is `vfctl load --one-thread`: every VF of vfIdx driven from
// one OS thread. Without a bystander, all keep a NOP pending for dur; with
// one (a VF index of vfIdx), it alternates idle and busy latency phases.
func runOneThread(ctx context.Context, vfs []*vfclient.VF, vfIdx []int, dur time.Duration, bystander int, gap time.Duration, rounds int, asJSON bool) error {
	d := bench.NewDriver(vfs)
	res := OneThreadResult{VFs: vfIdx, DurationS: dur.Seconds()}
	if bystander < 0 {
		rates, err := d.Throughput(ctx, seqInts(len(vfs)), dur)
		if err != nil {
			return err
		}
		res.PerVF = map[string]float64{}
		for i, r := range rates {
			res.PerVF[strconv.Itoa(vfIdx[i])] = r
			res.TotalPerS += r
		}
		// +Inf (a VF completed nothing) has no JSON form: the field is then
		// omitted and the VF's 0 is in PerVF.
		if m := bench.MaxOverMin(rates); !math.IsInf(m, 1) {
			res.MaxOverMin = m
		}
	} else {
		by := slices.Index(vfIdx, bystander)
		if by < 0 {
			return usageErr(fmt.Errorf("--bystander %d: not one of --vfs %v", bystander, vfIdx))
		}
		if rounds < 1 {
			return usageErr(fmt.Errorf("--rounds %d: want ≥ 1", rounds))
		}
		var flood []int
		b := &BystanderResult{VF: bystander, Rounds: rounds, GapNS: gap.Nanoseconds()}
		for i := range vfs {
			if i != by {
				flood = append(flood, i)
				b.Flooding = append(b.Flooding, vfIdx[i])
			}
		}
		phase := dur / time.Duration(2*rounds)
		var idle50, idle99, busy50, busy99, floodRate []float64
		for r := 0; r < rounds; r++ {
			idle, busy, rate, err := d.Bystander(ctx, by, flood, gap, phase, 10)
			if err != nil {
				return err
			}
			idle50, idle99 = append(idle50, bench.Quantile(idle, 0.5)), append(idle99, bench.Quantile(idle, 0.99))
			busy50, busy99 = append(busy50, bench.Quantile(busy, 0.5)), append(busy99, bench.Quantile(busy, 0.99))
			floodRate = append(floodRate, rate)
		}
		b.IdleP50NS, b.IdleP99NS = medianOf(idle50), medianOf(idle99)
		b.BusyP50NS, b.BusyP99NS = medianOf(busy50), medianOf(busy99)
		b.P50Ratio, b.FloodPerS = b.BusyP50NS/b.IdleP50NS, medianOf(floodRate)
		res.Bystander = b
	}
	if asJSON {
		return json.NewEncoder(os.Stdout).Encode(res)
	}
	printOneThread(res)
	return nil
}

func printOneThread(r OneThreadResult) {
	if b := r.Bystander; b != nil {
		fmt.Printf("bystander VF %d (a NOP every %v) alone and beside %d flooding VFs, driven from one thread, in alternating sub-phases; medians over %d rounds:\n",
			b.VF, time.Duration(b.GapNS), len(b.Flooding), b.Rounds)
		fmt.Printf("  idle:  p50 %.0f ns  p99 %.0f ns\n", b.IdleP50NS, b.IdleP99NS)
		fmt.Printf("  busy:  p50 %.0f ns  p99 %.0f ns   (busy/idle p50 = %.2f; %.0f NOP/s per flooding VF)\n",
			b.BusyP50NS, b.BusyP99NS, b.P50Ratio, b.FloodPerS)
		return
	}
	fmt.Printf("VFs %v driven from one thread, a NOP always pending each, %.2fs: %.0f NOP/s in all\n", r.VFs, r.DurationS, r.TotalPerS)
	lo, hi := -1.0, 0.0
	for _, vf := range r.VFs {
		x := r.PerVF[strconv.Itoa(vf)]
		fmt.Printf("  VF %3d  %10.0f NOP/s\n", vf, x)
		if lo < 0 || x < lo {
			lo = x
		}
		hi = max(hi, x)
	}
	if lo == 0 {
		fmt.Printf("per-VF throughput: min 0/s (a VF completed nothing)  max %.0f/s\n", hi)
		return
	}
	fmt.Printf("per-VF throughput: min %.0f/s  max %.0f/s  max/min %.3f\n", lo, hi, r.MaxOverMin)
}

func seqInts(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
