package bench

import (
	"context"
	"errors"
	"fmt"
	"github.com/vhcrd/vhcrd/vhcr/internal/tick"
	"math"
	"runtime"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

// ErrStuck is returned when a VF's command is not acknowledged within
// Driver.Stuck.
var ErrStuck = errors.New("bench: command not acknowledged")

// maxLatencySamples bounds the latency samples one phase keeps (8 MiB).
const maxLatencySamples = 1 << 20

// Driver drives VFs from one OS thread: an event loop over the VFs, each
// with at most one NOP in flight (VF.Start, then VF.Poll on every pass until
// slave_read's toggle answers). Per-VF figures then measure the PF, not the
// Go scheduler, which with one goroutine per VF decides who posts next.
//
// The loop spins. When no command has completed for YieldAfter while some
// are in flight, it yields its CPU (sched_yield) at each check, as the VF
// library's wait does: on a machine with fewer free CPUs than spinners, the
// PF may be waiting for the very CPU the driver spins on.
type Driver struct {
	VFs []*vfclient.VF // brought up (Init) by the caller
	// Stuck bounds the wait for one acknowledgement (10 s if zero).
	Stuck time.Duration
	// YieldAfter is how long the loop spins without a completion before it
	// yields (50 µs if zero).
	YieldAfter time.Duration

	st    []vfLoop
	perNS float64
	req   vfclient.Request
}

// role is what a VF does in one phase.
type role uint8

const (
	roleOff   role = iota // posts nothing
	roleFlood             // keeps a command pending at all times
	rolePaced             // posts one command a gap after the last completed; latencies sampled
)

type vfLoop struct {
	role    role
	pending bool
	t0, due uint64 // ticks: when the pending command was posted; when a paced VF posts next
	n       uint64 // completions within the phase
}

// NewDriver returns a Driver over vfs.
func NewDriver(vfs []*vfclient.VF) *Driver {
	return &Driver{VFs: vfs, st: make([]vfLoop, len(vfs)), perNS: tick.PerNS(), req: vfclient.Request{Op: mlx4.NOP}}
}

// Throughput keeps a NOP pending on each VF whose index (into VFs) is in
// busy for dur, and returns each busy VF's completions per second, in the
// order of busy.
func (d *Driver) Throughput(ctx context.Context, busy []int, dur time.Duration) ([]float64, error) {
	roles := make([]role, len(d.VFs))
	for _, i := range busy {
		roles[i] = roleFlood
	}
	if _, err := d.run(ctx, roles, 0, dur, nil); err != nil {
		return nil, err
	}
	out := make([]float64, len(busy))
	for k, i := range busy {
		out[k] = float64(d.st[i].n) / dur.Seconds()
	}
	return out, nil
}

// Latency has VF by post one NOP gap after its previous one completed, while
// each VF in flood keeps a NOP pending, for dur. It returns by's round-trip
// latencies (post to observed completion) in ns, sorted, and the commands
// completed per flooding VF per second.
func (d *Driver) Latency(ctx context.Context, by int, flood []int, gap, dur time.Duration) (lat []float64, floodRate []float64, err error) {
	roles := make([]role, len(d.VFs))
	for _, i := range flood {
		roles[i] = roleFlood
	}
	roles[by] = rolePaced
	samples := make([]uint64, 0, min(maxLatencySamples, int(dur/max(gap, 100*time.Nanosecond))+1))
	if samples, err = d.run(ctx, roles, gap, dur, samples); err != nil {
		return nil, nil, err
	}
	lat = make([]float64, len(samples))
	for k, s := range samples {
		lat[k] = float64(s) / d.perNS
	}
	slices.Sort(lat)
	for _, i := range flood {
		floodRate = append(floodRate, float64(d.st[i].n)/dur.Seconds())
	}
	return lat, floodRate, nil
}

// Bystander measures VF by's latency (Latency, one NOP every gap) alone and
// beside the VFs in flood, for dur in each mode, in alternating sub-phases
// of dur/n: machine noise that comes and goes then hits both modes
// alike. It returns the pooled, sorted latencies (ns) of each mode and the
// mean completions per second of a flooding VF.
func (d *Driver) Bystander(ctx context.Context, by int, flood []int, gap, dur time.Duration, n int) (idle, busy []float64, floodPerS float64, err error) {
	n = max(n, 1)
	sub := dur / time.Duration(n)
	for k := 0; k < n; k++ {
		lat, _, err := d.Latency(ctx, by, nil, gap, sub)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("alone: %w", err)
		}
		idle = append(idle, lat...)
		lat, rates, err := d.Latency(ctx, by, flood, gap, sub)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("beside %d flooding: %w", len(flood), err)
		}
		busy = append(busy, lat...)
		floodPerS += mean(rates) / float64(n)
	}
	slices.Sort(idle)
	slices.Sort(busy)
	return idle, busy, floodPerS, nil
}

// run is the event loop of one phase, on the calling goroutine locked to its
// thread. Completions are counted until dur has passed; then no VF posts
// and the loop drains what is in flight. Latencies of the paced VF are
// appended to samples (up to its capacity) and returned.
func (d *Driver) run(ctx context.Context, roles []role, gap, dur time.Duration, samples []uint64) ([]uint64, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	stuck := d.Stuck
	if stuck == 0 {
		stuck = 10 * time.Second
	}
	yieldAfter := d.YieldAfter
	if yieldAfter == 0 {
		yieldAfter = 50 * time.Microsecond
	}
	gapT := uint64(float64(gap.Nanoseconds()) * d.perNS)
	stuckT := uint64(float64(stuck.Nanoseconds()) * d.perNS)
	yieldT := uint64(float64(yieldAfter.Nanoseconds()) * d.perNS)
	for i := range d.st {
		d.st[i] = vfLoop{role: roles[i]}
	}
	start := tick.Now()
	end := start + uint64(float64(dur.Nanoseconds())*d.perNS)
	posting := true
	lastDone := start
	for pass := 0; ; pass++ {
		inFlight := false
		for i := range d.st {
			s := &d.st[i]
			if s.pending {
				resp, done, err := d.VFs[i].Poll()
				if !done && err == nil {
					inFlight = true
					continue
				}
				if lastDone, samples, err = d.completed(i, resp.Status, err, end, gapT, samples); err != nil {
					return samples, err
				}
			}
			if !posting || s.role == roleOff || (s.role == rolePaced && tick.Now() < s.due) {
				continue
			}
			s.t0 = tick.Now()
			if err := d.VFs[i].Start(&d.req); err != nil {
				return samples, fmt.Errorf("VF %d: %w", d.VFs[i].Index, err)
			}
			s.pending, inFlight = true, true
		}
		if !posting && !inFlight {
			return samples, nil
		}
		if pass&15 != 0 {
			continue
		}
		now := tick.Now()
		if posting && (now > end || ctx.Err() != nil) {
			posting = false
		}
		if !inFlight || now-lastDone < yieldT {
			continue
		}
		if err := d.stuck(now, stuckT, stuck); err != nil {
			return samples, err
		}
		schedYield()
	}
}

// stuck fails with ErrStuck when a VF's command has been pending for
// longer than stuckT ticks (stuck).
func (d *Driver) stuck(now, stuckT uint64, stuck time.Duration) error {
	for i := range d.st {
		if s := &d.st[i]; s.pending && now-s.t0 > stuckT {
			return fmt.Errorf("VF %d: %w within %v", d.VFs[i].Index, ErrStuck, stuck)
		}
	}
	return nil
}

// completed counts VF i's command that completed at now (returned) with
// status st or err, and its latency if the VF is the paced one; the VF's
// next command is due gapT later.
func (d *Driver) completed(i int, st mlx4.Status, err error, end, gapT uint64, samples []uint64) (now uint64, _ []uint64, _ error) {
	s := &d.st[i]
	now = tick.Now()
	s.pending = false
	if err != nil {
		return now, samples, fmt.Errorf("VF %d: %w", d.VFs[i].Index, err)
	}
	if st != mlx4.OK {
		return now, samples, fmt.Errorf("VF %d: NOP: %w", d.VFs[i].Index, st)
	}
	if now <= end {
		s.n++
		if s.role == rolePaced && len(samples) < cap(samples) {
			samples = append(samples, now-s.t0)
		}
	}
	s.due = now + gapT
	return now, samples, nil
}

// MaxOverMin is max(v)/min(v) (+Inf if the minimum is 0).
func MaxOverMin(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	lo, hi := slices.Min(v), slices.Max(v)
	if lo == 0 {
		return math.Inf(1)
	}
	return hi / lo
}

// Quantile is the q-quantile of sorted samples.
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func schedYield() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	return sum / float64(len(v))
}
