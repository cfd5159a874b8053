package master_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/faultinj"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
)

// The completion-EQE, EQ and MSI-X kinds, against a running PF with
// vfdrv as the VFs' drivers (VF 0 and VF 1 alike; the rules are VF 1's).

// eqeLog records every EQE the HCA posts (on the poller), by VF.
type eqeLog struct {
	mu   sync.Mutex
	eqes [2][]mlx4.EQE
	// do runs a function on the poller (PF.Do): the observer runs after
	// the EQE is written, so a VF may see an EQE before its record is in
	// the log; a read through the poller comes after it.
	do func(func()) error
}

// of is VF vf's EQEs so far, read on the poller: every EQE a VF has seen
// is in it.
func (l *eqeLog) of(vf int) []mlx4.EQE {
	var out []mlx4.EQE
	read := func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		out = append([]mlx4.EQE(nil), l.eqes[vf]...)
	}
	if l.do == nil || l.do(read) != nil {
		read()
	}
	return out
}

// irqLog is an MSI-X delivery that records the vectors raised.
type irqLog struct {
	mu     sync.Mutex
	raised [2][]int
}

func (l *irqLog) Raise(vf, vector int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.raised[vf] = append(l.raised[vf], vector)
	return nil
}

func (l *irqLog) of(vf int) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.raised[vf]...)
}

// eventRig is a running 2-VF PF, both VFs with events enabled (EQ 4) in
// completion mode mode, every EQE logged.
func eventRig(t *testing.T, mode vfdrv.Completions, irqs *irqLog) (*mastertest.Rig, [2]*vfdrv.Driver, *eqeLog) {
	t.Helper()
	o := mastertest.Options{}
	if irqs != nil {
		o.Interrupts = irqs
	}
	r := mastertest.NewWith(t, 2, o)
	r.Start(t)
	var ds [2]*vfdrv.Driver
	for i := range ds {
		d, err := vfdrv.New(r.InitVF(t, i), vfdrv.Options{BAR: r.VFBARs[i], MaxInFlight: 2, Completions: mode})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.EnableEvents(context.Background(), 4, 4); err != nil {
			t.Fatal(err)
		}
		ds[i] = d
	}
	log := &eqeLog{do: r.PF.Do}
	if err := r.PF.Do(func() {
		r.HCA.SetEQEObserver(func(vf, eqn int, b *[mlx4.EQESize]byte) {
			e, _ := mlx4.DecodeEQE(b[:]) // every 32 bytes decode
			log.mu.Lock()
			log.eqes[vf] = append(log.eqes[vf], e)
			log.mu.Unlock()
		})
	}); err != nil {
		t.Fatal(err)
	}
	return r, ds, log
}

// nops submits n NOPs with the 'e' bit on d and waits for each.
func nops(t *testing.T, d *vfdrv.Driver, n int) []error {
	t.Helper()
	ctx := context.Background()
	var tks []vfdrv.Ticket
	for k := 0; k < n; k++ {
		tk, err := d.Submit(ctx, &vfclient.Request{Op: mlx4.NOP})
		if err != nil {
			t.Fatal(err)
		}
		tks = append(tks, tk)
	}
	var errs []error
	for _, tk := range tks {
		res, err := d.Wait(ctx, tk)
		if err == nil && res.Status != mlx4.OK {
			err = res.Status
		}
		errs = append(errs, err)
	}
	return errs
}

func allOK(t *testing.T, what string, errs []error) {
	t.Helper()
	for k, err := range errs {
		if err != nil {
			t.Fatalf("%s: command %d: %v", what, k, err)
		}
	}
}

// TestFaultEQEKindsEarly: the 2nd NOP of VF 1 loses its EQE, gets another
// status in it, or gets it twice; the 1st and 3rd and VF 0's are as usual.
func TestFaultEQEKindsEarly(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		args  map[string]string
		check func(t *testing.T, errs []error, d *vfdrv.Driver, eqes []mlx4.EQE)
	}{
		{kind: "eqe_drop", check: func(t *testing.T, errs []error, d *vfdrv.Driver, eqes []mlx4.EQE) {
			if !errors.Is(errs[1], vfdrv.ErrLostCompletion) || errs[0] != nil || errs[2] != nil || len(eqes) != 2 {
				t.Fatalf("%v, %d EQEs", errs, len(eqes))
			}
		}},
		{kind: "eqe_status", args: map[string]string{"status": "BAD_PARAM"}, check: func(t *testing.T, errs []error, d *vfdrv.Driver, eqes []mlx4.EQE) {
			if !errors.Is(errs[1], mlx4.BAD_PARAM) || errs[0] != nil || errs[2] != nil || eqes[1].Status != uint8(mlx4.BAD_PARAM) {
				t.Fatalf("%v", errs)
			}
		}},
		{kind: "eqe_dup", check: func(t *testing.T, errs []error, d *vfdrv.Driver, eqes []mlx4.EQE) {
			if errs[0] != nil || errs[1] != nil || errs[2] != nil || len(eqes) != 4 || eqes[1].Token != eqes[2].Token || d.Stats.Stray != 1 {
				t.Fatalf("%v, EQEs %+v, stray %d", errs, eqes, d.Stats.Stray)
			}
		}},
		{kind: "eqe_token", args: map[string]string{"xor": "0x100"}, check: func(t *testing.T, errs []error, d *vfdrv.Driver, eqes []mlx4.EQE) {
			if !errors.Is(errs[1], vfdrv.ErrLostCompletion) || errs[2] != nil || d.Stats.Stray != 1 || eqes[1].Token^eqes[0].Token == 0 {
				t.Fatalf("%v, stray %d", errs, d.Stats.Stray)
			}
		}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			r, ds, log := eventRig(t, vfdrv.CompletionsEarly, nil)
			rule := addFault(t, r.PF, faultinj.Spec{Kind: tc.kind, VF: vfp(1), Op: "NOP", Nth: 2, Args: tc.args})
			allOK(t, "VF 0", nops(t, ds[0], 3))
			var errs []error
			if tc.kind == "eqe_drop" || tc.kind == "eqe_token" {
				// A lost completion shows when a later one arrives: the
				// 2nd and 3rd posted together.
				errs = append(nops(t, ds[1], 1), nops(t, ds[1], 2)...)
			} else {
				for k := 0; k < 3; k++ {
					errs = append(errs, nops(t, ds[1], 1)...)
				}
			}
			allOK(t, "VF 0", nops(t, ds[0], 3))
			tc.check(t, errs, ds[1], log.of(1))
			if h := hits(t, r.PF, rule.ID); h != 1 {
				t.Fatalf("%d hits", h)
			}
		})
	}
}

// TestFaultEQEKindsMlx4: Linux's way: the 2nd NOP's EQE with another token
// is a stray completion; a duplicated one is a stray after the match.
func TestFaultEQEKindsMlx4(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{"eqe_token", "eqe_dup"} {
		t.Run(kind, func(t *testing.T) {
			r, ds, log := eventRig(t, vfdrv.CompletionsMlx4, nil)
			addFault(t, r.PF, faultinj.Spec{Kind: kind, VF: vfp(1), Op: "NOP", Nth: 2})
			for k := 0; k < 2; k++ {
				_, err := ds[1].PostEvent(ctx, &vfclient.Request{Op: mlx4.NOP})
				switch {
				case k == 0 && err != nil:
					t.Fatal(err)
				case k == 1 && kind == "eqe_token" && !errors.Is(err, vfdrv.ErrStrayCompletion):
					t.Fatalf("want a stray completion, got %v", err)
				case k == 1 && kind == "eqe_dup" && err != nil:
					t.Fatal(err)
				}
			}
			if kind == "eqe_dup" {
				// The duplicate is a stray while the 2nd command waits for its
				// toggle, or while the 3rd waits (whichever pump reads it).
				_, err := ds[1].PostEvent(ctx, &vfclient.Request{Op: mlx4.NOP})
				if err != nil && !errors.Is(err, vfdrv.ErrStrayCompletion) || ds[1].Stats.Stray != 1 {
					t.Fatalf("3rd NOP: %v, stray %d", err, ds[1].Stats.Stray)
				}
			}
			eqes := log.of(1)
			if kind == "eqe_token" && (len(eqes) != 2 || eqes[1].Token != 2^1) {
				t.Fatalf("EQEs %+v", eqes)
			}
			if kind == "eqe_dup" && (len(eqes) < 3 || eqes[1].Token != 2 || eqes[2].Token != 2) {
				t.Fatalf("EQEs %+v", eqes)
			}
			for k := 0; k < 3; k++ {
				if _, err := ds[0].PostEvent(ctx, &vfclient.Request{Op: mlx4.NOP}); err != nil {
					t.Fatalf("VF 0: %v", err)
				}
			}
		})
	}
}

// TestFaultEQKinds: eq_full drops VF 1's next EQE as a full EQ does;
// eq_overrun posts EQ_OVERFLOW to VF 1 alone.
func TestFaultEQKinds(t *testing.T) {
	t.Run("eq_full", func(t *testing.T) {
		r, ds, _ := eventRig(t, vfdrv.CompletionsEarly, nil)
		before := r.HCA.Stats(1).Overruns.Load()
		addFault(t, r.PF, faultinj.Spec{Kind: "eq_full", VF: vfp(1)})
		errs := nops(t, ds[1], 2)
		if !errors.Is(errs[0], vfdrv.ErrLostCompletion) || errs[1] != nil || r.HCA.Stats(1).Overruns.Load() != before+1 {
			t.Fatalf("%v, overruns %d", errs, r.HCA.Stats(1).Overruns.Load()-before)
		}
		allOK(t, "VF 0", nops(t, ds[0], 2))
		allOK(t, "VF 1 after", nops(t, ds[1], 2))
	})
	t.Run("eq_overrun", func(t *testing.T) {
		r, ds, log := eventRig(t, vfdrv.CompletionsEarly, nil)
		for _, d := range ds {
			if err := d.MapEQ(context.Background(), d.EQ(), 1<<mlx4.EventEQOverflow); err != nil {
				t.Fatal(err)
			}
		}
		addFault(t, r.PF, faultinj.Spec{Kind: "eq_overrun", VF: vfp(1), Args: map[string]string{"eqn": "4"}})
		n := 0
		for _, e := range log.of(1) {
			if e.Type == mlx4.EventEQOverflow && e.Object == 4 {
				n++
			}
		}
		for _, e := range log.of(0) {
			if e.Type == mlx4.EventEQOverflow {
				t.Fatal("VF 0 got EQ_OVERFLOW")
			}
		}
		if n != 1 {
			t.Fatalf("%d EQ_OVERFLOW EQEs to VF 1: %+v", n, log.of(1))
		}
		allOK(t, "VF 1 after", nops(t, ds[1], 2))
	})
}

// arm writes VF vf's EQ doorbell with its consumer index and the arm bit,
// as mlx4's eq_set_ci(eq, 1) does.
func arm(t *testing.T, r *mastertest.Rig, d *vfdrv.Driver, vf int) {
	t.Helper()
	q := d.EQ()
	if err := r.VFBARs[vf].Store32(mlx4.EQDoorbellOffset(q.EQN), q.Consumer()&mlx4.EQIndexMask|mlx4.EQ_DOORBELL_ARM); err != nil {
		t.Fatal(err)
	}
}

// TestFaultMSIXKinds: msix_drop leaves VF 1's next interrupt unraised (the
// EQE written); msix_spurious raises a vector with no EQE.
func TestFaultMSIXKinds(t *testing.T) {
	t.Run("msix_drop", func(t *testing.T) {
		irqs := &irqLog{}
		r, ds, log := eventRig(t, vfdrv.CompletionsEarly, irqs)
		addFault(t, r.PF, faultinj.Spec{Kind: "msix_drop", VF: vfp(1)})
		for k := 0; k < 2; k++ {
			for vf, d := range ds {
				arm(t, r, d, vf)
				allOK(t, "NOP", nops(t, d, 1))
			}
		}
		// The HCA counts a raise it made whether or not the fault let it
		// through (its arm and the VF's doorbell writes race, so how many
		// raises there were is the HCA's to say): VF 0 got every one, VF 1
		// every one but its first.
		// The VF sees its EQE before the poller has raised (and counted)
		// the interrupt after it: the counters are read on the poller,
		// after that iteration.
		var r0, r1 uint64
		if err := r.PF.Do(func() { r0, r1 = r.HCA.Stats(0).Interrupts.Load(), r.HCA.Stats(1).Interrupts.Load() }); err != nil {
			t.Fatal(err)
		}
		if got := uint64(len(irqs.of(0))); got != r0 || r0 == 0 {
			t.Fatalf("VF 0: %d interrupts of %d raised", got, r0)
		}
		if got := uint64(len(irqs.of(1))); r1 == 0 || got != r1-1 || len(log.of(1)) != 2 {
			t.Fatalf("VF 1: %d interrupts of %d raised for %d EQEs, want all but one", got, r1, len(log.of(1)))
		}
	})
	t.Run("msix_spurious", func(t *testing.T) {
		irqs := &irqLog{}
		r, _, log := eventRig(t, vfdrv.CompletionsEarly, irqs)
		n := len(log.of(1))
		addFault(t, r.PF, faultinj.Spec{Kind: "msix_spurious", VF: vfp(1), Args: map[string]string{"vector": "0"}})
		if got := irqs.of(1); len(got) != 1 || got[0] != 0 || len(irqs.of(0)) != 0 || len(log.of(1)) != n {
			t.Fatalf("raised %v / %v, EQEs %d → %d", irqs.of(0), got, n, len(log.of(1)))
		}
	})
}
