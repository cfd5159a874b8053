package vfdrv

import (
	"context"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr"
	"github.com/vhcrd/vhcrd/vhcr/hcr"
	"github.com/vhcrd/vhcrd/vhcr/vhcrtest"
)

func benchmarkNOP(b *testing.B, events bool) {
	r := vhcrtest.New(b, 1)
	r.Start(b)
	v := r.InitVF(b, 0)
	d, err := New(v, Options{BAR: r.BAR, Layout: r.Layout})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if events {
		if _, err := d.EnableEvents(ctx, 0, 7); err != nil {
			b.Fatal(err)
		}
	}
	req := &vhcr.Request{Op: hcr.NOP}
	b.ResetTimer()
	for range b.N {
		res, err := d.Do(ctx, req)
		if err != nil || res.Status != hcr.OK {
			b.Fatal(res.Status, err)
		}
	}
}

func BenchmarkNOPPoll(b *testing.B)   { benchmarkNOP(b, false) }
func BenchmarkNOPEvents(b *testing.B) { benchmarkNOP(b, true) }
