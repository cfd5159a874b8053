package vfdrv

import (
	"context"
	"errors"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

// completionsRig is a running PF whose VFs' completion mode is mode (the
// configuration's vfs.default.completions), VF 0 driven by the early-completion driver
// and VF 1 by the mlx4-mode driver, both in event mode.
func completionsRig(t *testing.T, mode string) (r *mastertest.Rig, seed, lx *Driver) {
	t.Helper()
	r = mastertest.New(t, 2)
	r.Config.VFs.Default.Completions = mode
	r.Rebuild(t)
	r.Start(t)
	seed = newDriver(t, r, 0, Options{MaxInFlight: 4})
	lx = newDriver(t, r, 1, Options{Completions: CompletionsMlx4})
	ctx := context.Background()
	for _, d := range []*Driver{seed, lx} {
		if _, err := d.EnableEvents(ctx, 4, 7); err != nil {
			t.Fatalf("%v driver: EnableEvents: %v", d.opt.Completions, err)
		}
	}
	return r, seed, lx
}

// pipelines checks that the early-completion driver has several commands accepted and
// uncompleted at once, and that each completes with its own token and
// immediate output (distinct CQNs).
func pipelines(t *testing.T, d *Driver) {
	t.Helper()
	ctx := context.Background()
	var tks []Ticket
	for range 4 {
		tk, err := d.Submit(ctx, &vfclient.Request{Op: mlx4.ALLOC_RES, InMod: ResCQ, OpMod: opReserveAndMap})
		ok(t, "Submit", err)
		tks = append(tks, tk)
	}
	if d.InFlight() != 4 {
		t.Fatalf("seed VF: %d in flight after 4 accepted commands: not pipelined", d.InFlight())
	}
	seen := map[uint64]bool{}
	for _, tk := range tks {
		res, err := d.Wait(ctx, tk)
		ok(t, "Wait", err)
		if res.Status != mlx4.OK || !res.Event || res.OutParam == 0 || seen[res.OutParam] {
			t.Fatalf("seed VF: %+v", res)
		}
		seen[res.OutParam] = true
	}
}

// linuxWay checks the mlx4-mode driver: every command completes by the EQE
// with the next context token, status and immediate output from the vHCR,
// the outbox delivered, a refusal's status delivered.
func linuxWay(t *testing.T, d *Driver) {
	t.Helper()
	ctx := context.Background()
	before := d.ev.ctxToken
	res, err := d.PostEvent(ctx, &vfclient.Request{Op: mlx4.NOP})
	ok(t, "NOP", err)
	if res.Status != mlx4.OK || !res.Event || res.Token != before+1 {
		t.Fatalf("mlx4 VF NOP: %+v, want token %d", res, before+1)
	}
	res, err = d.PostEvent(ctx, &vfclient.Request{Op: mlx4.ALLOC_RES, InMod: ResCQ, OpMod: opReserveAndMap})
	ok(t, "ALLOC_RES", err)
	if res.Status != mlx4.OK || res.OutParam == 0 || res.Token != before+2 {
		t.Fatalf("mlx4 VF ALLOC_RES: %+v: the immediate output is read from the vHCR", res)
	}
	res, err = d.PostEvent(ctx, &vfclient.Request{Op: mlx4.QUERY_FW})
	ok(t, "QUERY_FW", err)
	if res.Status != mlx4.OK || len(res.Out) != mlx4.MailboxSize || res.Token != before+3 {
		t.Fatalf("mlx4 VF QUERY_FW: %+v", res)
	}
	// A refusal: the status comes from the vHCR (the EQE's is 0).
	res, err = d.PostEvent(ctx, &vfclient.Request{Op: mlx4.FREE_RES, InMod: ResCQ, OpMod: opReserveAndMap, InParam: 0xfffff})
	ok(t, "FREE_RES", err)
	if res.Status == mlx4.OK || !res.Event || res.Token != before+4 {
		t.Fatalf("mlx4 VF FREE_RES of an unknown CQ: %+v", res)
	}
	if d.Stats.Stray != 0 || d.InFlight() != 0 {
		t.Fatalf("mlx4 VF stats %+v", d.Stats)
	}
}

// TestCompletionsAuto: the default configuration serves both kinds of VF on
// one PF without being told which is which: the early-completion VF pipelines, the
// Linux-style VF gets mlx4's completions, each across whole object
// lifecycles; RESET zeroes the token counter.
func TestCompletionsAuto(t *testing.T) {
	r, seed, lx := completionsRig(t, "")
	if f := r.HCA.Funcs[1].Completions; f != "auto" {
		t.Fatalf("embedded default: %q", f)
	}
	pipelines(t, seed)
	linuxWay(t, lx)
	for _, d := range []*Driver{seed, lx} {
		lifecycle(t, d, 4)
		if d.Stats.Stray != 0 || d.Stats.Lost != 0 || d.Stats.Completions+d.Stats.Refused != d.Stats.Events {
			t.Fatalf("%v VF stats %+v", d.opt.Completions, d.Stats)
		}
	}
	if lx.Stats.Completions == 0 || r.HCA.Stats(1).Completes.Load() != lx.Stats.Completions {
		t.Fatalf("mlx4 VF: %d completions matched, the PF wrote %d", lx.Stats.Completions, r.HCA.Stats(1).Completes.Load())
	}
	ctx := context.Background()
	ok(t, "Reset", lx.Reset(ctx))
	_, err := lx.EnableEvents(ctx, 4, 7)
	ok(t, "EnableEvents", err)
	res, err := lx.PostEvent(ctx, &vfclient.Request{Op: mlx4.NOP})
	ok(t, "NOP after RESET", err)
	if res.Token != 1 {
		t.Fatalf("first completion after RESET carries token %d, want 1", res.Token)
	}
}

// TestCompletionsMlx4Override: with "mlx4" the Linux-style VF is served as
// under auto; an early-completion VF is accepted only after completion (no pipelining),
// its status still right (written back to the vHCR) but its immediate
// output lost (the EQE carries 0), which is why an early-completion VF must not be
// forced to mlx4.
func TestCompletionsMlx4Override(t *testing.T) {
	_, seed, lx := completionsRig(t, "mlx4")
	linuxWay(t, lx)
	ctx := context.Background()
	tk, err := seed.Submit(ctx, &vfclient.Request{Op: mlx4.ALLOC_RES, InMod: ResCQ, OpMod: opReserveAndMap})
	ok(t, "Submit", err)
	if seed.InFlight() > 1 {
		t.Fatalf("%d in flight", seed.InFlight())
	}
	if _, err := seed.Submit(ctx, &vfclient.Request{Op: mlx4.NOP}); err != nil {
		t.Fatal(err)
	}
	res, err := seed.Wait(ctx, tk)
	ok(t, "Wait", err)
	if res.Status != mlx4.OK || res.OutParam != 0 {
		t.Fatalf("seed VF under mlx4: %+v, want status OK and the immediate output lost", res)
	}
	ok(t, "Drain", seed.Drain(ctx))
	res, err = seed.PostEvent(ctx, &vfclient.Request{Op: mlx4.FREE_RES, InMod: ResCQ, OpMod: opReserveAndMap, InParam: 0xfffff})
	ok(t, "FREE_RES", err)
	if res.Status == mlx4.OK {
		t.Fatal("seed VF under mlx4: a refused command read as OK")
	}
}

// TestCompletionsEarlyOverride: with "early" the early-completion VF pipelines as under
// auto; the Linux-style VF receives an EQE with its 0xffff echoed and no
// write-back, and its command fails (Linux would time out after 70 s).
func TestCompletionsEarlyOverride(t *testing.T) {
	_, seed, lx := completionsRig(t, "early")
	pipelines(t, seed)
	_, err := lx.PostEvent(context.Background(), &vfclient.Request{Op: mlx4.NOP})
	if !errors.Is(err, ErrStrayCompletion) {
		t.Fatalf("mlx4 VF under early: %v, want ErrStrayCompletion", err)
	}
	if lx.Stats.Stray != 1 {
		t.Fatalf("stats %+v", lx.Stats)
	}
}

// An mlx4-mode driver without an EQ for completions refuses to post an 'e'
// command (it could only wait out its timeout).
func TestMlx4SubmitWithoutEQ(t *testing.T) {
	r := mastertest.New(t, 1)
	r.Start(t)
	d := newDriver(t, r, 0, Options{Completions: CompletionsMlx4})
	if _, err := d.Submit(context.Background(), &vfclient.Request{Op: mlx4.NOP}); !errors.Is(err, ErrNoEvents) {
		t.Fatalf("Submit without an EQ: %v, want ErrNoEvents", err)
	}
}
