package master_test

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
)

// TestMlx4CompletionOrder: an 'e' command with token 0xffff completes as
// Linux's PF completes it (mlx4_master_process_vhcr, then mlx4_GEN_EQE,
// then the toggle): when the EQE is posted the vHCR already holds the
// status and the immediate output and the toggle is not yet acknowledged;
// the EQE carries the counter 1, 2, 3, ..., status 0 and out_param 0.
func TestMlx4CompletionOrder(t *testing.T) {
	r := mastertest.New(t, 1)
	r.Start(t)
	ctx := context.Background()
	v := r.InitVF(t, 0)
	d, err := vfdrv.New(v, vfdrv.Options{BAR: r.VFBARs[0], Completions: vfdrv.CompletionsMlx4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.EnableEvents(ctx, 2, 3); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		token, vhcrToken uint16
		eqeStatus        byte
		eqeOut           uint64
		vhcrStatus       mlx4.Status
		vhcrOut          uint64
		acked            bool
	}
	var got []seen
	acked := func() bool {
		sw, err := r.VFBARs[0].Load32(mlx4.CommSlaveWrite)
		return err == nil && sw>>mlx4.CommToggleShift == v.SlaveRead()>>mlx4.CommToggleShift
	}
	vh := v.Memory()[vfclient.VFPageVHCR*4096:]
	// Runs on the poller inside PostEQE (it replaces the trace's observer).
	if err := r.PF.Do(func() {
		r.HCA.SetEQEObserver(func(vf, eqn int, eqe *[mlx4.EQESize]byte) {
			got = append(got, seen{
				token:      binary.BigEndian.Uint16(eqe[mlx4.EQECmdToken:]),
				vhcrToken:  binary.BigEndian.Uint16(vh[mlx4.OffToken:]),
				eqeStatus:  eqe[0x0f],
				eqeOut:     binary.BigEndian.Uint64(eqe[0x10:]),
				vhcrStatus: mlx4.Status(vh[mlx4.OffStatus]),
				vhcrOut:    binary.BigEndian.Uint64(vh[mlx4.OffOutParam:]),
				acked:      acked(),
			})
		})
	}); err != nil {
		t.Fatal(err)
	}
	for _, req := range []vfclient.Request{
		{Op: mlx4.NOP},
		{Op: mlx4.ALLOC_RES, InMod: 2 /* CQ */, OpMod: 1},
		{Op: mlx4.FREE_RES, InMod: 2, OpMod: 1, InParam: 0xfffff},
	} {
		if _, err := d.PostEvent(ctx, &req); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 3 {
		t.Fatalf("%d EQEs, want 3", len(got))
	}
	for i, g := range got {
		if g.token != uint16(i+1) || g.vhcrToken != mlx4.PollToken || g.eqeStatus != 0 || g.eqeOut != 0 || g.acked {
			t.Errorf("EQE %d: %+v; want token %d, status 0, out_param 0, posted before the toggle", i, g, i+1)
		}
	}
	if got[0].vhcrStatus != mlx4.OK || got[1].vhcrStatus != mlx4.OK || got[1].vhcrOut == 0 || got[2].vhcrStatus == mlx4.OK {
		t.Errorf("the vHCR was not written back before the EQE: %+v", got)
	}
}

// TestTraceOfBothCompletions: the trace records the token each completion
// EQE actually carried: the early-completion VF's own token echoed, the Linux-style
// VF's counter (its vHCR holds 0xffff).
func TestTraceOfBothCompletions(t *testing.T) {
	ring, err := master.NewTrace(1024)
	if err != nil {
		t.Fatal(err)
	}
	r := mastertest.NewWith(t, 2, mastertest.Options{Trace: ring})
	r.Start(t)
	ctx := context.Background()
	var ds [2]*vfdrv.Driver
	for i, mode := range []vfdrv.Completions{vfdrv.CompletionsEarly, vfdrv.CompletionsMlx4} {
		d, err := vfdrv.New(r.InitVF(t, i), vfdrv.Options{BAR: r.VFBARs[i], MaxInFlight: 1, Completions: mode})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.EnableEvents(ctx, 2, 3); err != nil {
			t.Fatal(err)
		}
		ds[i] = d
	}
	for range 2 {
		for _, d := range ds {
			if _, err := d.Do(ctx, &vfclient.Request{Op: mlx4.NOP, InMod: 5}); err != nil {
				t.Fatal(err)
			}
		}
	}
	r.Stop(t)
	var got []string
	for _, l := range traceLines(t, ring) {
		if len(l) > 10 && (l[4:8] == "EQE " || l[4:13] == "POST  NOP") {
			got = append(got, l)
		}
	}
	diffLines(t, got, []string{
		"vf0 POST  NOP op_mod=0 in_mod=0x5 in=0x0 out=0x0 tok=0x1 event  OK",
		"vf0 EQE CMD type=0x0a eq=2 tok=0x1",
		"vf1 POST  NOP op_mod=0 in_mod=0x5 in=0x0 out=0x0 tok=0xffff event  OK",
		"vf1 EQE CMD type=0x0a eq=2 tok=0x1",
		"vf0 POST  NOP op_mod=0 in_mod=0x5 in=0x0 out=0x0 tok=0x2 event  OK",
		"vf0 EQE CMD type=0x0a eq=2 tok=0x2",
		"vf1 POST  NOP op_mod=0 in_mod=0x5 in=0x0 out=0x0 tok=0xffff event  OK",
		"vf1 EQE CMD type=0x0a eq=2 tok=0x2",
	})
}

// TestMlx4TokenZeroedByResetAndFLR: the counter counts mlx4's completions
// only, and RESET and FLR zero it (mlx4_master_do_cmd's RESET sets
// event_eq[].token = 0; an FLR releases the function as a reset does).
func TestMlx4TokenZeroedByResetAndFLR(t *testing.T) {
	r := mastertest.New(t, 2)
	r.Start(t)
	ctx := context.Background()
	up := func(i int, mode vfdrv.Completions) *vfdrv.Driver {
		d, err := vfdrv.New(r.InitVF(t, i), vfdrv.Options{BAR: r.VFBARs[i], Completions: mode})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.EnableEvents(ctx, 2, 3); err != nil {
			t.Fatal(err)
		}
		return d
	}
	lx, seed := up(0, vfdrv.CompletionsMlx4), up(1, vfdrv.CompletionsEarly)
	for range 3 {
		for _, d := range []*vfdrv.Driver{lx, seed} {
			if _, err := d.Do(ctx, &vfclient.Request{Op: mlx4.NOP}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if a, b := r.PF.CmdToken(0), r.PF.CmdToken(1); a != 3 || b != 0 {
		t.Fatalf("counters %d and %d, want 3 (mlx4 VF) and 0 (seed VF)", a, b)
	}
	if err := r.PF.FLR(0); err != nil {
		t.Fatal(err)
	}
	if n := r.PF.CmdToken(0); n != 0 {
		t.Fatalf("counter %d after FLR", n)
	}
	lx = up(0, vfdrv.CompletionsMlx4)
	if _, err := lx.Do(ctx, &vfclient.Request{Op: mlx4.NOP}); err != nil || r.PF.CmdToken(0) != 1 {
		t.Fatalf("after FLR and RESET: %v, counter %d", err, r.PF.CmdToken(0))
	}
	if err := lx.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if n := r.PF.CmdToken(0); n != 0 {
		t.Fatalf("counter %d after RESET", n)
	}
}

// TestParseCompletionsEarlyAlias: "early" names the accept-early way and
// "seed", its name before, still parses to it; String gives the new name.
func TestParseCompletionsEarlyAlias(t *testing.T) {
	for _, s := range []string{"early", "seed"} {
		c, err := master.ParseCompletions(s)
		if err != nil || c != master.CompletionsEarly || c.String() != "early" {
			t.Errorf("ParseCompletions(%q) = %v (%q), %v; want CompletionsEarly (\"early\")", s, c, c.String(), err)
		}
	}
	if _, err := master.ParseCompletions("seeds"); !errors.Is(err, master.ErrCompletions) {
		t.Errorf("ParseCompletions(\"seeds\"): %v, want ErrCompletions", err)
	}
}
