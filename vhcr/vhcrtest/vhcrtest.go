// Package vhcrtest runs a PF over heap-backed regions for tests: the race
// detector sees every access, and VFs in the same process talk to the poller
// exactly as vfctl does over a file.
package vhcrtest

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr"
	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/master"
)

// Rig is a running PF with its regions.
type Rig struct {
	BAR, DMA *bar.Mem
	Layout   vhcr.Layout
	HCA      *hca.HCA
	PF       *master.PF
	Config   *config.Config
	cancel   context.CancelFunc
	done     chan error
}

// Window is the DMA window size rigs use.
const Window = 64 * 1024

// New builds a PF for n VFs over fresh heap regions (DMA in a separate
// region) without starting it.
func New(t testing.TB, n int) *Rig {
	t.Helper()
	l, err := vhcr.NewLayout(n, Window, false, 0, 0, "mem:dma")
	if err != nil {
		t.Fatal(err)
	}
	b, err := bar.NewMem("bar", l.BARSize())
	if err != nil {
		t.Fatal(err)
	}
	d, err := bar.NewMem("dma", l.DMASize)
	if err != nil {
		t.Fatal(err)
	}
	r := &Rig{BAR: b, DMA: d, Layout: l, Config: config.Default()}
	r.Rebuild(t)
	return r
}

// Rebuild makes a new PF over the rig's regions (a PF restart).
func (r *Rig) Rebuild(t testing.TB) {
	t.Helper()
	h, err := hca.New(r.Config, r.Layout.NumVFs)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := master.New(master.Options{BAR: r.BAR, DMA: r.DMA, Layout: r.Layout, HCA: h,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r.HCA, r.PF = h, pf
}

// Start runs the poller until the test ends (or Stop).
func (r *Rig) Start(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan error, 1)
	go func() { r.done <- r.PF.Run(ctx) }()
	t.Cleanup(func() { r.Stop(t) })
}

// Stop stops the poller and waits for it.
func (r *Rig) Stop(t testing.TB) {
	if r.cancel == nil {
		return
	}
	r.cancel()
	if err := <-r.done; err != nil {
		t.Errorf("poller: %v", err)
	}
	r.cancel = nil
}

// VF opens VF i with timeouts short enough that a test that goes wrong ends.
func (r *Rig) VF(t testing.TB, i int) *vhcr.VF {
	t.Helper()
	v, err := vhcr.NewVF(r.BAR, r.DMA, r.Layout, i)
	if err != nil {
		t.Fatal(err)
	}
	v.Timeouts = vhcr.Timeouts{Sync: time.Second, Offline: 10 * time.Second, Comm: 10 * time.Second, Post: 10 * time.Second}
	return v
}

// InitVF opens and brings up VF i.
func (r *Rig) InitVF(t testing.TB, i int) *vhcr.VF {
	t.Helper()
	v := r.VF(t, i)
	if err := v.Init(context.Background()); err != nil {
		t.Fatalf("VF %d init: %v", i, err)
	}
	return v
}
