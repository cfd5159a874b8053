package vfdrv

import (
	"context"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

func benchmarkNOP(b *testing.B, events bool, mode Completions) {
	r := mastertest.New(b, 1)
	r.Start(b)
	v := r.InitVF(b, 0)
	d, err := New(v, Options{BAR: r.VFBARs[0], Completions: mode})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if events {
		if _, err := d.EnableEvents(ctx, 0, 7); err != nil {
			b.Fatal(err)
		}
	}
	req := &vfclient.Request{Op: mlx4.NOP}
	b.ResetTimer()
	for range b.N {
		res, err := d.Do(ctx, req)
		if err != nil || res.Status != mlx4.OK {
			b.Fatal(res.Status, err)
		}
	}
}

func BenchmarkNOPPoll(b *testing.B)   { benchmarkNOP(b, false, CompletionsEarly) }
func BenchmarkNOPEvents(b *testing.B) { benchmarkNOP(b, true, CompletionsEarly) }

// BenchmarkNOPEventsMlx4 is BenchmarkNOPEvents as Linux's VF speaks it
// (token 0xffff, mlx4's completion: write-back, EQE, then the toggle).
func BenchmarkNOPEventsMlx4(b *testing.B) { benchmarkNOP(b, true, CompletionsMlx4) }

func benchmarkPipeline(b *testing.B, events bool) {
	r := mastertest.New(b, 1)
	r.Start(b)
	d, err := New(r.InitVF(b, 0), Options{BAR: r.VFBARs[0], MaxInFlight: 16})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if events {
		if _, err := d.EnableEvents(ctx, 0, 7); err != nil {
			b.Fatal(err)
		}
	}
	reqs := make([]vfclient.Request, 16)
	for i := range reqs {
		reqs[i] = vfclient.Request{Op: mlx4.NOP}
	}
	b.ResetTimer()
	for range b.N / 16 {
		if _, err := d.Pipeline(ctx, reqs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPipelinePoll(b *testing.B)   { benchmarkPipeline(b, false) }
func BenchmarkPipelineEvents(b *testing.B) { benchmarkPipeline(b, true) }
