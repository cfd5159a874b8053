package vhcrbench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/vhcrd/vhcrd/vhcr"
)

// Fair configures the fairness figures of RunFair.
type Fair struct {
	VFs    int           // VFs vhcrd serves (--vfs); 64 by default
	Busy   []int         // numbers of busy VFs for the throughput figures; 8 and 64 by default
	Floods []int         // numbers of flooding VFs beside the bystander; 1 by default
	Phase  time.Duration // length of one measured phase; 500 ms by default
	Gap    time.Duration // the bystander's pause between its commands; 5 µs by default
}

// ThroughputFigure is the spread of per-VF throughput with Busy VFs each
// keeping a NOP pending, summarised over rounds.
type ThroughputFigure struct {
	Busy            int       `json:"busy_vfs"`
	MaxOverMin      float64   `json:"max_over_min"`       // median over rounds
	TotalPerS       float64   `json:"total_per_s"`        // median over rounds
	RoundMaxOverMin []float64 `json:"round_max_over_min"` // per round
	RoundMinPerS    []float64 `json:"round_min_vf_per_s"` // slowest VF, per round
	RoundMaxPerS    []float64 `json:"round_max_vf_per_s"` // fastest VF, per round
	RoundTotalPerS  []float64 `json:"round_total_per_s"`  // all busy VFs, per round
}

// BystanderFigure is the latency of a VF that posts now and then (one NOP,
// then a pause), alone and while Floods other VFs keep a NOP pending, the
// two measured in alternating phases of each round.
type BystanderFigure struct {
	Floods       int       `json:"flooding_vfs"`
	IdleP50NS    float64   `json:"idle_p50_ns"` // medians over rounds
	IdleP99NS    float64   `json:"idle_p99_ns"`
	BusyP50NS    float64   `json:"busy_p50_ns"`
	BusyP99NS    float64   `json:"busy_p99_ns"`
	P50Ratio     float64   `json:"busy_over_idle_p50"`
	FloodPerS    float64   `json:"flood_per_vf_per_s"` // median over rounds of the flooders' mean
	RoundIdleP50 []float64 `json:"round_idle_p50_ns"`
	RoundIdleP99 []float64 `json:"round_idle_p99_ns"`
	RoundBusyP50 []float64 `json:"round_busy_p50_ns"`
	RoundBusyP99 []float64 `json:"round_busy_p99_ns"`
}

// FairResult is a fairness run.
type FairResult struct {
	VFs        int                `json:"vfs"`
	Rounds     int                `json:"rounds"`
	PhaseS     float64            `json:"phase_s"`
	Throughput []ThroughputFigure `json:"throughput"`
	Bystander  []BystanderFigure  `json:"bystander"`
}

// RunFair starts `vhcrd serve --vfs f.VFs`, brings every VF up and drives
// them from one thread (Driver): per round, a throughput phase for each
// entry of f.Busy (VFs 0..n-1 busy) and, for each entry of f.Floods, an idle
// and a busy latency phase of bystander VF 0 (VFs 1..n flooding). o gives
// the vhcrd binary, the directory of its regions, the rounds and the log.
func RunFair(ctx context.Context, o Options, f Fair) (*FairResult, error) {
	if f.VFs == 0 {
		f.VFs = 64
	}
	if f.Busy == nil {
		f.Busy = []int{8, 64}
	}
	if f.Floods == nil {
		f.Floods = []int{1}
	}
	if f.Phase == 0 {
		f.Phase = 500 * time.Millisecond
	}
	if f.Gap == 0 {
		f.Gap = 5 * time.Microsecond
	}
	if o.Rounds == 0 {
		o.Rounds = 5
	}
	if o.Dir == "" {
		o.Dir = "/dev/shm"
	}
	for _, n := range append(append([]int(nil), f.Busy...), f.Floods...) {
		if n < 1 || n > f.VFs || (n == f.VFs && slices.Contains(f.Floods, n)) {
			return nil, fmt.Errorf("fairness: %d VFs busy beside %d served", n, f.VFs)
		}
	}
	p, err := startVHCRD(ctx, o, f.VFs)
	if err != nil {
		return nil, err
	}
	defer p.close()
	vfs := []*vhcr.VF{p.vf}
	for i := 1; i < f.VFs; i++ {
		v, err := p.att.VF(i)
		if err != nil {
			return nil, err
		}
		if err := v.Init(ctx); err != nil {
			return nil, fmt.Errorf("VF %d bring-up: %w", i, err)
		}
		vfs = append(vfs, v)
	}
	d := NewDriver(vfs)
	res := &FairResult{VFs: f.VFs, Rounds: o.Rounds, PhaseS: f.Phase.Seconds()}
	for _, n := range f.Busy {
		res.Throughput = append(res.Throughput, ThroughputFigure{Busy: n})
	}
	for _, n := range f.Floods {
		res.Bystander = append(res.Bystander, BystanderFigure{Floods: n})
	}
	floodRates := make([][]float64, len(f.Floods))
	for r := 0; r < o.Rounds; r++ {
		for k, n := range f.Busy {
			rates, err := d.Throughput(ctx, seq(0, n), f.Phase)
			if err != nil {
				return nil, fmt.Errorf("throughput, %d busy: %w", n, err)
			}
			t := &res.Throughput[k]
			total := 0.0
			for _, x := range rates {
				total += x
			}
			t.RoundMaxOverMin = append(t.RoundMaxOverMin, MaxOverMin(rates))
			t.RoundMinPerS = append(t.RoundMinPerS, slices.Min(rates))
			t.RoundMaxPerS = append(t.RoundMaxPerS, slices.Max(rates))
			t.RoundTotalPerS = append(t.RoundTotalPerS, total)
			fmt.Fprintf(o.Log, "round %d: %d busy VFs: max/min %.3f, %.0f NOP/s in all\n", r+1, n, t.RoundMaxOverMin[r], total)
		}
		for k, n := range f.Floods {
			b := &res.Bystander[k]
			idle, _, err := d.Latency(ctx, 0, nil, f.Gap, f.Phase)
			if err != nil {
				return nil, fmt.Errorf("bystander, idle: %w", err)
			}
			busy, rates, err := d.Latency(ctx, 0, seq(1, n+1), f.Gap, f.Phase)
			if err != nil {
				return nil, fmt.Errorf("bystander, %d flooding: %w", n, err)
			}
			b.RoundIdleP50 = append(b.RoundIdleP50, Quantile(idle, 0.50))
			b.RoundIdleP99 = append(b.RoundIdleP99, Quantile(idle, 0.99))
			b.RoundBusyP50 = append(b.RoundBusyP50, Quantile(busy, 0.50))
			b.RoundBusyP99 = append(b.RoundBusyP99, Quantile(busy, 0.99))
			floodRates[k] = append(floodRates[k], mean(rates))
			fmt.Fprintf(o.Log, "round %d: bystander p50 idle %.0f ns, beside %d flooding %.0f ns (p99 %.0f ns)\n",
				r+1, b.RoundIdleP50[r], n, b.RoundBusyP50[r], b.RoundBusyP99[r])
		}
	}
	for k := range res.Throughput {
		t := &res.Throughput[k]
		t.MaxOverMin, t.TotalPerS = median(t.RoundMaxOverMin), median(t.RoundTotalPerS)
	}
	for k := range res.Bystander {
		b := &res.Bystander[k]
		b.IdleP50NS, b.IdleP99NS = median(b.RoundIdleP50), median(b.RoundIdleP99)
		b.BusyP50NS, b.BusyP99NS = median(b.RoundBusyP50), median(b.RoundBusyP99)
		b.P50Ratio = b.BusyP50NS / b.IdleP50NS
		b.FloodPerS = median(floodRates[k])
	}
	return res, nil
}

func seq(lo, hi int) []int {
	s := make([]int, 0, hi-lo)
	for i := lo; i < hi; i++ {
		s = append(s, i)
	}
	return s
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}
