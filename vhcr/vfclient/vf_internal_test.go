package vfclient

import (
	"context"
	"github.com/vhcrd/vhcrd/vhcr/wire"
	"testing"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// BenchmarkVFPost measures the VF library's own cost per command: its
// slave_read is aliased to its slave_write, so every post is acknowledged
// the moment it is written and only the library's work remains.
func BenchmarkVFPost(b *testing.B) {
	l, err := wire.NewLayout(1, 64*1024, false, 0, 0, "mem:dma")
	if err != nil {
		b.Fatal(err)
	}
	br, _ := bar.NewMem("bar", l.ControlSize())
	vb, _ := bar.NewMem("vf0", l.VFBARSize)
	dr, _ := bar.NewMem("dma", l.DMASize)
	v, err := NewVF(br, vb, dr, l, 0)
	if err != nil {
		b.Fatal(err)
	}
	v.sr = v.sw
	req := Request{Op: mlx4.NOP}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Post(ctx, &req); err != nil {
			b.Fatal(err)
		}
	}
}
