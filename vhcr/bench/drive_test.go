package bench

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

func rigVFs(t *testing.T, n int) (*mastertest.Rig, []*vfclient.VF) {
	t.Helper()
	r := mastertest.New(t, n)
	r.Start(t)
	vfs := make([]*vfclient.VF, n)
	for i := range vfs {
		vfs[i] = r.InitVF(t, i)
	}
	return r, vfs
}

// TestDriverThroughput: busy VFs are served, idle VFs post nothing, and a
// phase ends with every command collected.
func TestDriverThroughput(t *testing.T) {
	_, vfs := rigVFs(t, 4)
	idle := []uint32{vfs[1].SlaveRead(), vfs[3].SlaveRead()}
	d := NewDriver(vfs)
	rates, err := d.Throughput(context.Background(), []int{0, 2}, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(rates) != 2 {
		t.Fatalf("%d rates for 2 busy VFs", len(rates))
	}
	for k, r := range rates {
		if r <= 0 {
			t.Errorf("busy VF %d: rate %v, want commands completed", []int{0, 2}[k], r)
		}
	}
	for i, v := range vfs {
		if _, _, err := v.Poll(); !errors.Is(err, vfclient.ErrNotStarted) {
			t.Errorf("VF %d after the phase: %v, want nothing in flight", i, err)
		}
	}
	if got := []uint32{vfs[1].SlaveRead(), vfs[3].SlaveRead()}; !slices.Equal(got, idle) {
		t.Errorf("idle VFs' slave_read %#x -> %#x: they posted", idle, got)
	}
	// The channels are usable afterwards.
	for _, v := range vfs {
		if _, err := v.Post(context.Background(), &vfclient.Request{Op: mlx4.NOP}); err != nil {
			t.Fatalf("VF %d after the phase: %v", v.Index, err)
		}
	}
}

// TestDriverLatency: the paced VF's samples are one per completion counted,
// sorted and positive.
func TestDriverLatency(t *testing.T) {
	_, vfs := rigVFs(t, 3)
	d := NewDriver(vfs)
	lat, flood, err := d.Latency(context.Background(), 1, []int{0, 2}, time.Microsecond, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(flood) != 2 {
		t.Fatalf("%d flood rates for 2 flooding VFs", len(flood))
	}
	if uint64(len(lat)) != d.st[1].n || len(lat) == 0 {
		t.Fatalf("%d samples for %d completions, want some", len(lat), d.st[1].n)
	}
	if !slices.IsSorted(lat) || lat[0] <= 0 {
		t.Fatalf("samples not sorted or not positive: %v", lat[:min(len(lat), 8)])
	}
}

// TestDriverStuck: a command nobody acknowledges ends the phase with
// ErrStuck instead of a hang.
func TestDriverStuck(t *testing.T) {
	r, vfs := rigVFs(t, 2)
	r.Stop(t)
	d := NewDriver(vfs)
	d.Stuck = 10 * time.Millisecond
	if _, err := d.Throughput(context.Background(), []int{0, 1}, time.Millisecond); !errors.Is(err, ErrStuck) {
		t.Fatalf("%v, want ErrStuck", err)
	}
}

func TestMaxOverMinQuantile(t *testing.T) {
	if got := MaxOverMin([]float64{100, 110, 105}); math.Abs(got-1.1) > 1e-9 {
		t.Errorf("MaxOverMin = %v, want 1.1", got)
	}
	if got := MaxOverMin([]float64{0, 5}); !math.IsInf(got, 1) {
		t.Errorf("MaxOverMin with a starved VF = %v, want +Inf", got)
	}
	s := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if Quantile(s, 0.5) != 6 || Quantile(s, 0.99) != 10 || Quantile(nil, 0.5) != 0 {
		t.Errorf("Quantile: p50 %v p99 %v", Quantile(s, 0.5), Quantile(s, 0.99))
	}
}

// TestDriverBystander: both modes' samples come back pooled and sorted, and
// the channels are idle afterwards.
func TestDriverBystander(t *testing.T) {
	_, vfs := rigVFs(t, 3)
	d := NewDriver(vfs)
	idle, busy, _, err := d.Bystander(context.Background(), 0, []int{1, 2}, time.Microsecond, 20*time.Millisecond, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(idle) == 0 || len(busy) == 0 {
		t.Fatalf("%d samples alone, %d beside the flood: want both", len(idle), len(busy))
	}
	if !slices.IsSorted(idle) || !slices.IsSorted(busy) {
		t.Fatal("samples not sorted")
	}
	for i, v := range vfs {
		if _, _, err := v.Poll(); !errors.Is(err, vfclient.ErrNotStarted) {
			t.Errorf("VF %d after the phases: %v, want nothing in flight", i, err)
		}
	}
}
