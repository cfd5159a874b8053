package vfclient_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// pfFiles writes the control file of a PF with two VFs (DMA in the BAR) at
// dir/bar, in PF_STATE st, and returns its path and mapping.
func pfFiles(t *testing.T, st uint32) (string, *bar.File) {
	t.Helper()
	l, err := wire.NewLayout(2, 64<<10, true, 0x40000, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bar")
	f, _, err := bar.CreateFile(path, l.ControlSize())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := l.Write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Store32(wire.HdrPFState, st); err != nil {
		t.Fatal(err)
	}
	if err := f.Store32(wire.HdrPFGen, 5); err != nil {
		t.Fatal(err)
	}
	return path, f
}

// No process holds the claim: a header still SERVING is a PF that was
// killed (ErrPFDead), a stopped one is ErrNoPF; both at once.
func TestAttachServingWithoutAnOwner(t *testing.T) {
	path, _ := pfFiles(t, wire.PFStateServing)
	_, err := vfclient.AttachServing(context.Background(), path)
	if !errors.Is(err, vfclient.ErrPFDead) || !strings.Contains(err.Error(), "PF_GEN 5 (killed or crashed") {
		t.Fatalf("SERVING, no owner: %v, want ErrPFDead", err)
	}
	if err := vfclient.CheckPF(path); !errors.Is(err, vfclient.ErrPFDead) {
		t.Fatalf("CheckPF: %v, want ErrPFDead", err)
	}
	path, _ = pfFiles(t, wire.PFStateStopped)
	_, err = vfclient.AttachServing(context.Background(), path)
	if !errors.Is(err, vfclient.ErrNoPF) || errors.Is(err, vfclient.ErrPFDead) {
		t.Fatalf("STOPPED, no owner: %v, want ErrNoPF", err)
	}
	if err := vfclient.CheckPF(path); !errors.Is(err, vfclient.ErrNoPF) {
		t.Fatalf("CheckPF: %v, want ErrNoPF", err)
	}
	if _, err := vfclient.AttachServing(context.Background(), filepath.Join(t.TempDir(), "none")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("no file: %v", err)
	}
}

// A PF that holds the claim and has not written SERVING (nor, at first,
// its header) is starting: AttachServing waits for it, and its ctx ends
// the wait with an error that says so.
func TestAttachServingWaitsForAStartingPF(t *testing.T) {
	path, f := pfFiles(t, wire.PFStateStopped)
	o, err := bar.Own(path)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := vfclient.AttachServing(ctx, path); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "was starting") {
		t.Fatalf("claimed, STOPPED, ctx done: %v", err)
	}
	if err := vfclient.CheckPF(path); err != nil {
		t.Fatalf("CheckPF of a claimed file: %v", err)
	}
	// The new PF has not written its header yet.
	if err := f.Store32(wire.HdrMagic, 0); err != nil {
		t.Fatal(err)
	}
	type result struct {
		a   *vfclient.Attachment
		err error
	}
	done := make(chan result, 1)
	go func() {
		a, err := vfclient.AttachServing(context.Background(), path)
		done <- result{a, err}
	}()
	l, _ := wire.NewLayout(2, 64<<10, true, 0x40000, 0, "")
	if err := l.Write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Store32(wire.HdrPFState, wire.PFStateServing); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("a PF that started: %v", r.err)
	}
	defer r.a.Close()
	if err := r.a.PFAlive(); err != nil {
		t.Fatalf("PFAlive while the claim is held: %v", err)
	}
	if r.a.Layout.NumVFs != 2 {
		t.Fatalf("layout %+v", r.a.Layout)
	}
	// The PF dies: the claim goes, PFAlive says so.
	_ = o.Release()
	if err := r.a.PFAlive(); !errors.Is(err, vfclient.ErrPFDead) {
		t.Fatalf("PFAlive after the claim went: %v, want ErrPFDead", err)
	}
}

// A command waiting on a PF that died ends with PFAlive's error instead of
// waiting out the timeouts.
func TestPostEndsWhenThePFDies(t *testing.T) {
	path, _ := pfFiles(t, wire.PFStateServing)
	o, err := bar.Own(path)
	if err != nil {
		t.Fatal(err)
	}
	a, err := vfclient.AttachServing(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	vfBAR, err := bar.NewMem("vf0", a.Layout.VFBARSize)
	if err != nil {
		t.Fatal(err)
	}
	a.VFBARs[0] = vfBAR
	v, err := a.VF(0)
	if err != nil {
		t.Fatal(err)
	}
	v.PFAlive = a.PFAlive
	_ = o.Release() // nobody will answer
	_, err = v.Post(context.Background(), &vfclient.Request{Op: mlx4.NOP})
	if !errors.Is(err, vfclient.ErrPFDead) {
		t.Fatalf("Post to a dead PF: %v, want ErrPFDead", err)
	}
}

// A PF that maps the control file as device memory (vfio or sysfs, inside a
// guest whose BAR the file backs) holds no claim on it and writes the
// header without HdrFlagOwnerClaim: a tool on the host reads no holder as
// nothing, attaches to a SERVING header and reports a stopped one at once.
func TestAttachServingToAGuestPF(t *testing.T) {
	for _, st := range []uint32{wire.PFStateServing, wire.PFStateStopped} {
		path, f := pfFiles(t, st)
		flags, err := f.Load32(wire.HdrFlags)
		if err != nil {
			t.Fatal(err)
		}
		if flags&wire.HdrFlagOwnerClaim == 0 {
			t.Fatalf("a header written through a file has flags %#x, want HdrFlagOwnerClaim", flags)
		}
		if err := f.Store32(wire.HdrFlags, flags&^wire.HdrFlagOwnerClaim); err != nil {
			t.Fatal(err)
		}
		if err := vfclient.CheckPF(path); err != nil {
			t.Errorf("PF_STATE %s, no claim to test: CheckPF %v, want nil", vfclient.PFStateName(st), err)
		}
		a, err := vfclient.AttachServing(context.Background(), path)
		if st == wire.PFStateServing {
			if err != nil {
				t.Fatalf("SERVING guest PF: %v", err)
			}
			if err := a.PFAlive(); err != nil {
				t.Errorf("PFAlive of a guest PF: %v", err)
			}
			a.Close()
		} else if !errors.Is(err, vfclient.ErrNoPF) || errors.Is(err, vfclient.ErrPFDead) {
			t.Errorf("STOPPED guest PF: %v, want ErrNoPF at once", err)
		}
	}
}
