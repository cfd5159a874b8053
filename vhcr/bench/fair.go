package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

// Fair configures the fairness figures of RunFair.
type Fair struct {
	VFs  int   // VFs vhcrd serves (--num-vfs); 64 by default
	Busy []int // numbers of busy VFs for the throughput figures (VFs 0..n-1); 8 and 64 by default
	// Flooders are the sets of VFs that flood beside bystander VF 0, one
	// latency figure each. By default VF VFs-1 alone, which the PF's scan
	// visits before VF 0 in all but one of VFs scans, and VF 1 alone, which
	// it visits after VF 0 in all but one.
	Flooders [][]int
	Phase    time.Duration // length of one measured phase (per mode for the bystander); 500 ms by default
	Gap      time.Duration // the bystander's pause between its commands; 5 µs by default
	Slices   int           // alternating sub-phases of a bystander phase; 10 by default
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

// BystanderFigure is the latency of VF 0 posting now and then (one NOP, then
// a pause), alone and while the Flooding VFs keep a NOP pending, the two
// measured in alternating sub-phases of each round.
type BystanderFigure struct {
	Flooding     []int     `json:"flooding_vfs"`
	IdleP50NS    float64   `json:"idle_p50_ns"` // medians over rounds
	IdleP99NS    float64   `json:"idle_p99_ns"`
	BusyP50NS    float64   `json:"busy_p50_ns"`
	BusyP99NS    float64   `json:"busy_p99_ns"`
	P50Ratio     float64   `json:"busy_over_idle_p50"` // median over rounds of each round's ratio
	FloodPerS    float64   `json:"flood_per_vf_per_s"` // median over rounds
	RoundIdleP50 []float64 `json:"round_idle_p50_ns"`
	RoundIdleP99 []float64 `json:"round_idle_p99_ns"`
	RoundBusyP50 []float64 `json:"round_busy_p50_ns"`
	RoundBusyP99 []float64 `json:"round_busy_p99_ns"`
	RoundRatio   []float64 `json:"round_busy_over_idle_p50"`
	RoundFlood   []float64 `json:"round_flood_per_vf_per_s"`
}

// FairResult is a fairness run.
type FairResult struct {
	VFs        int                `json:"vfs"`
	Rounds     int                `json:"rounds"`
	PhaseS     float64            `json:"phase_s"`
	GapNS      int64              `json:"bystander_gap_ns"`
	Throughput []ThroughputFigure `json:"throughput"`
	Bystander  []BystanderFigure  `json:"bystander"`
	// Load is the 1-minute load average at each round.
	Load Load `json:"loadavg_1m"`
}

// RunFair starts `vhcrd serve --num-vfs f.VFs`, brings every VF up and drives
// them from one thread (Driver): per round, a throughput phase for each
// entry of f.Busy and a bystander phase (Driver.Bystander) for each set of
// f.Flooders. o gives the vhcrd binary, the directory of its regions, the
// rounds and the log.
func RunFair(ctx context.Context, o Options, f Fair) (*FairResult, error) {
	if err := f.settle(&o); err != nil {
		return nil, err
	}
	p, err := startVHCRD(ctx, o, f.VFs)
	if err != nil {
		return nil, err
	}
	defer p.close()
	vfs, err := bringUpAll(ctx, p, f.VFs)
	if err != nil {
		return nil, err
	}
	d := NewDriver(vfs)
	res := &FairResult{VFs: f.VFs, Rounds: o.Rounds, PhaseS: f.Phase.Seconds(), GapNS: f.Gap.Nanoseconds()}
	for _, n := range f.Busy {
		res.Throughput = append(res.Throughput, ThroughputFigure{Busy: n})
	}
	for _, set := range f.Flooders {
		res.Bystander = append(res.Bystander, BystanderFigure{Flooding: set})
	}
	for r := 0; r < o.Rounds; r++ {
		res.Load = append(res.Load, LoadAvg1())
		for k, n := range f.Busy {
			rates, err := d.Throughput(ctx, seq(0, n), f.Phase)
			if err != nil {
				return nil, fmt.Errorf("throughput, %d busy: %w", n, err)
			}
			t := &res.Throughput[k]
			t.RoundMaxOverMin = append(t.RoundMaxOverMin, MaxOverMin(rates))
			t.RoundMinPerS = append(t.RoundMinPerS, slices.Min(rates))
			t.RoundMaxPerS = append(t.RoundMaxPerS, slices.Max(rates))
			t.RoundTotalPerS = append(t.RoundTotalPerS, mean(rates)*float64(len(rates)))
			fmt.Fprintf(o.Log, "round %d: %d busy VFs: max/min %.3f, %.0f NOP/s in all\n", r+1, n, t.RoundMaxOverMin[r], t.RoundTotalPerS[r])
		}
		for k, set := range f.Flooders {
			b := &res.Bystander[k]
			idle, busy, flood, err := d.Bystander(ctx, 0, set, f.Gap, f.Phase, f.Slices)
			if err != nil {
				return nil, fmt.Errorf("bystander: %w", err)
			}
			b.RoundIdleP50 = append(b.RoundIdleP50, Quantile(idle, 0.50))
			b.RoundIdleP99 = append(b.RoundIdleP99, Quantile(idle, 0.99))
			b.RoundBusyP50 = append(b.RoundBusyP50, Quantile(busy, 0.50))
			b.RoundBusyP99 = append(b.RoundBusyP99, Quantile(busy, 0.99))
			b.RoundRatio = append(b.RoundRatio, b.RoundBusyP50[r]/b.RoundIdleP50[r])
			b.RoundFlood = append(b.RoundFlood, flood)
			fmt.Fprintf(o.Log, "round %d: bystander VF 0 p50 alone %.0f ns, beside VFs %v flooding %.0f ns (p99 %.0f ns)\n",
				r+1, b.RoundIdleP50[r], set, b.RoundBusyP50[r], b.RoundBusyP99[r])
		}
	}
	res.medians()
	return res, nil
}

// settle fills in f's and o's defaults and checks f.
func (f *Fair) settle(o *Options) error {
	if f.VFs == 0 {
		f.VFs = 64
	}
	if f.Busy == nil {
		f.Busy = []int{8, 64}
	}
	if f.Flooders == nil {
		f.Flooders = [][]int{{f.VFs - 1}, {1}}
	}
	if f.Phase == 0 {
		f.Phase = 500 * time.Millisecond
	}
	if f.Gap == 0 {
		f.Gap = 5 * time.Microsecond
	}
	if f.Slices == 0 {
		f.Slices = 10
	}
	if o.Rounds == 0 {
		o.Rounds = 5
	}
	if o.Dir == "" {
		o.Dir = "/dev/shm"
	}
	if f.VFs < 2 {
		return fmt.Errorf("fairness: %d VFs; a bystander needs company", f.VFs)
	}
	for _, n := range f.Busy {
		if n < 1 || n > f.VFs {
			return fmt.Errorf("fairness: %d busy VFs of %d", n, f.VFs)
		}
	}
	for _, set := range f.Flooders {
		for _, i := range set {
			if i < 1 || i >= f.VFs {
				return fmt.Errorf("fairness: flooding VF %d: want 1..%d beside bystander VF 0", i, f.VFs-1)
			}
		}
	}
	return nil
}

// bringUpAll brings VFs 1..n-1 up beside p's VF 0 and returns the n.
func bringUpAll(ctx context.Context, p *nopPeer, n int) ([]*vfclient.VF, error) {
	vfs := []*vfclient.VF{p.vf}
	for i := 1; i < n; i++ {
		v, err := p.att.VF(i)
		if err != nil {
			return nil, err
		}
		if err := v.Init(ctx); err != nil {
			return nil, fmt.Errorf("VF %d bring-up: %w", i, err)
		}
		vfs = append(vfs, v)
	}
	return vfs, nil
}

// medians sets each figure to the median of its rounds.
func (res *FairResult) medians() {
	for k := range res.Throughput {
		t := &res.Throughput[k]
		t.MaxOverMin, t.TotalPerS = median(t.RoundMaxOverMin), median(t.RoundTotalPerS)
	}
	for k := range res.Bystander {
		b := &res.Bystander[k]
		b.IdleP50NS, b.IdleP99NS = median(b.RoundIdleP50), median(b.RoundIdleP99)
		b.BusyP50NS, b.BusyP99NS = median(b.RoundBusyP50), median(b.RoundBusyP99)
		b.P50Ratio, b.FloodPerS = median(b.RoundRatio), median(b.RoundFlood)
	}
}

func seq(lo, hi int) []int {
	s := make([]int, 0, hi-lo)
	for i := lo; i < hi; i++ {
		s = append(s, i)
	}
	return s
}
