package master_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

// startRig is a step rig with VF 0 up and its VF library side open: the
// VF's Start and Poll against the PF, one deterministic scan at a time.
func startRig(t *testing.T) (stepRig, *vfclient.VF) {
	t.Helper()
	r := newStepRig(t, 1)
	r.up(t, 0)
	v := r.VF(t, 0)
	if err := v.SyncToggles(t.Context()); err != nil {
		t.Fatal(err)
	}
	return r, v
}

// TestStartPoll: Start posts without waiting, Poll answers false until the
// PF has served the command and then returns what Post would have, once.
func TestStartPoll(t *testing.T) {
	r, v := startRig(t)
	if _, _, err := v.Poll(); !errors.Is(err, vfclient.ErrNotStarted) {
		t.Fatalf("Poll before Start: %v, want vfclient.ErrNotStarted", err)
	}
	if err := v.Start(&vfclient.Request{Op: mlx4.NOP}); err != nil {
		t.Fatal(err)
	}
	if _, done, err := v.Poll(); done || err != nil {
		t.Fatalf("Poll before the PF scanned: done=%v err=%v", done, err)
	}
	if err := v.Start(&vfclient.Request{Op: mlx4.NOP}); !errors.Is(err, vfclient.ErrBusy) {
		t.Fatalf("second Start while in flight: %v, want vfclient.ErrBusy", err)
	}
	r.scan()
	resp, done, err := v.Poll()
	if !done || err != nil || resp.Status != mlx4.OK || resp.Out != nil {
		t.Fatalf("NOP: done=%v err=%v status=%v out=%v", done, err, resp.Status, resp.Out != nil)
	}
	if _, _, err := v.Poll(); !errors.Is(err, vfclient.ErrNotStarted) {
		t.Fatalf("Poll after completion: %v, want vfclient.ErrNotStarted", err)
	}

	// An opcode with an outbox: the Response points at the outbox page.
	if err := v.Start(&vfclient.Request{Op: mlx4.QUERY_FW}); err != nil {
		t.Fatal(err)
	}
	r.scan()
	resp, done, err = v.Poll()
	if !done || err != nil || resp.Status != mlx4.OK || resp.Out == nil {
		t.Fatalf("QUERY_FW: done=%v err=%v status=%v", done, err, resp.Status)
	}
	if ver := binary.BigEndian.Uint64(resp.Out[0:]); ver>>32&0xffff != 2 {
		t.Fatalf("QUERY_FW version %#x, want major 2", ver)
	}

	// A bad status is in the Response, not an error.
	if err := v.Start(&vfclient.Request{Op: 0xfff}); err != nil {
		t.Fatal(err)
	}
	r.scan()
	if resp, done, err = v.Poll(); !done || err != nil || resp.Status == mlx4.OK {
		t.Fatalf("unknown opcode: done=%v err=%v status=%v", done, err, resp.Status)
	}
}

// TestPollInternalError: an acknowledgement with the internal-error bit
// completes the command with ErrInternal.
func TestPollInternalError(t *testing.T) {
	r, v := startRig(t)
	if err := v.Start(&vfclient.Request{Op: mlx4.NOP}); err != nil {
		t.Fatal(err)
	}
	// The PF's answer to a violation: its toggle with bit 17.
	r.SlaveRead(0).Store(r.SlaveWrite(0).Load()&mlx4.CommToggle | mlx4.COMM_CHAN_EVENT_INTERNAL_ERR)
	if _, done, err := v.Poll(); !done || !errors.Is(err, vfclient.ErrInternal) {
		t.Fatalf("done=%v err=%v, want vfclient.ErrInternal", done, err)
	}
}

// TestStartPollAllocatesNothing: a command posted with Start and collected
// with Poll allocates nothing on the VF side.
func TestStartPollAllocatesNothing(t *testing.T) {
	r, v := startRig(t)
	req := vfclient.Request{Op: mlx4.NOP}
	allocs := testing.AllocsPerRun(1000, func() {
		if err := v.Start(&req); err != nil {
			t.Fatal(err)
		}
		r.scan()
		if _, done, err := v.Poll(); !done || err != nil {
			t.Fatalf("done=%v err=%v", done, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per command", allocs)
	}
}
