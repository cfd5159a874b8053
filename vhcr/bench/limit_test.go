package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// startLimitHere runs the limit responder of mode for posts VHCR_POSTs in
// a goroutine (the same function bench-peer runs as a process) and returns
// VF 0 brought up against it by the VF client, and the responder's result.
func startLimitHere(t *testing.T, mode string, posts int) (*vfclient.VF, <-chan error) {
	t.Helper()
	ctrl := filepath.Join(t.TempDir(), "bar")
	done := make(chan error, 1)
	go func() { done <- limit(mode, ctrl, posts) }()
	var a *vfclient.Attachment
	for a == nil {
		x, err := vfclient.AttachFile(ctrl)
		switch {
		case err == nil && x.PFState() == wire.PFStateServing:
			a = x
		case x != nil:
			x.Close()
		}
		select {
		case err := <-done:
			t.Fatalf("responder returned before serving: %v", err)
		default:
		}
		if a == nil {
			time.Sleep(time.Millisecond) // polling for the responder's files, not for a result
		}
	}
	t.Cleanup(func() { a.Close() })
	vf, err := a.VF(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := vf.Init(ctx); err != nil { // RESET answered with the version, VHCR0..VHCR_EN acknowledged
		t.Fatalf("%s responder: VF bring-up: %v", mode, err)
	}
	return vf, done
}

// TestLimitMinimum: the protocol-minimum responder completes a NOP with
// status OK, reads the vHCR (another opcode gets BAD_PARAM), writes the
// status word with the VF's flags and opcode kept, answers every post
// with slave_read's toggle equal to slave_write's, and returns after its
// posts.
func TestLimitMinimum(t *testing.T) {
	vf, done := startLimitHere(t, LimitMinimum, 3)
	ctx := context.Background()
	for i, tc := range []struct {
		op   mlx4.Opcode
		want mlx4.Status
	}{{mlx4.NOP, mlx4.OK}, {mlx4.QUERY_FW, mlx4.BAD_PARAM}, {mlx4.NOP, mlx4.OK}} {
		before := vf.SlaveRead() >> 31
		resp, err := vf.Post(ctx, &vfclient.Request{Op: tc.op})
		if err != nil {
			t.Fatalf("post %d (%v): %v", i, tc.op, err)
		}
		if resp.Status != tc.want {
			t.Errorf("post %d (%v): status %v, want %v", i, tc.op, resp.Status, tc.want)
		}
		if after := vf.SlaveRead() >> 31; after == before {
			t.Errorf("post %d: slave_read's toggle stayed %d", i, after)
		}
		vh := vf.Memory()[vfclient.VFPageVHCR*bar.PageSize:]
		w := binary.BigEndian.Uint32(vh[mlx4.OffStatus:])
		want := mlx4.StatusWord(tc.want, mlx4.Word3(mlx4.PollToken, 0, 0, tc.op))
		if w != want {
			t.Errorf("post %d: status word %#08x, want %#08x", i, w, want)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("responder after its posts: %v", err)
	}
}

// TestLimitToggle: the toggle-only responder acknowledges each post
// without reading the vHCR: the VF finds the status it wrote (OK), for a
// NOP and for an opcode the minimum responder refuses alike.
func TestLimitToggle(t *testing.T) {
	vf, done := startLimitHere(t, LimitToggle, 2)
	for i, op := range []mlx4.Opcode{mlx4.NOP, mlx4.QUERY_FW} {
		before := vf.SlaveRead() >> 31
		resp, err := vf.Post(context.Background(), &vfclient.Request{Op: op})
		if err != nil {
			t.Fatalf("post %d (%v): %v", i, op, err)
		}
		if resp.Status != mlx4.OK {
			t.Errorf("post %d (%v): status %v, want the VF's own OK", i, op, resp.Status)
		}
		if after := vf.SlaveRead() >> 31; after == before {
			t.Errorf("post %d: slave_read's toggle stayed %d", i, after)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("responder after its posts: %v", err)
	}
}

// TestLimitGivesUp: a responder whose VF stops posting returns errNoPost
// instead of spinning for ever; an unknown mode is refused.
func TestLimitGivesUp(t *testing.T) {
	f, _, err := bar.CreateFile(filepath.Join(t.TempDir(), "regs"), bar.PageSize)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sw, _ := bar.NewReg(f, mlx4.CommSlaveWrite)
	sr, _ := bar.NewReg(f, mlx4.CommSlaveRead)
	if err := respond(true, sw, sr, make([]byte, bar.PageSize), 1, time.Nanosecond); !errors.Is(err, errNoPost) {
		t.Errorf("idle responder: %v, want errNoPost", err)
	}
	if err := limit("copy", filepath.Join(t.TempDir(), "bar"), 1); err == nil {
		t.Error("mode copy accepted")
	}
}

// TestAttachServingSeesTheProcessExit: a peer that exits before it serves
// is reported as such (errPeerExited), not waited for until the start-up
// deadline, and its exit status is still the caller's to collect.
func TestAttachServingSeesTheProcessExit(t *testing.T) {
	cmd := exec.Command("sh", "-c", "exit 3")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sh: %v", err)
	}
	_, err := attachServing(filepath.Join(t.TempDir(), "never"), cmd)
	if !errors.Is(err, errPeerExited) {
		t.Fatalf("attachServing: %v, want errPeerExited", err)
	}
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("Wait after attachServing: %v, want exit status 3", err)
	}
}
