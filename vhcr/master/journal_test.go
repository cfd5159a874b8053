package master_test

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/internal/crashpoint"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// pointSeen is a named point as the VF's memory stood when the PF passed
// it.
type pointSeen struct {
	point     string
	wroteBack bool // the vHCR's status byte is the PF's
	acked     bool // slave_read holds the post's toggle
}

// notWritten is the status byte the VF leaves in its vHCR, which no
// command's write-back gives.
const notWritten = mlx4.Status(0xff)

// postPoints posts the command setup gives (after a NOP, so that the
// channel record no longer changes) for VF 1 of a rig with or without a
// state file, and returns the post-* points it passed and the torn moments
// of records.
func postPoints(t *testing.T, state, fast bool, setup func(v benchVF) (mlx4.VHCR, []byte)) (seen []pointSeen, torn int) {
	r := newStepRigWith(t, 2, mastertest.Options{State: state})
	r.up(t, 1)
	v := benchVF{r: r, b: t, pf: new(time.Duration)}
	v.post(mlx4.VHCR{Op: mlx4.NOP}, nil)
	h, in := setup(v)
	if in != nil {
		var page [mlx4.MailboxSize]byte
		copy(page[:], in)
		if _, err := r.DMA.WriteAt(page[:], r.VHCRAddr(1)+benchInbox); err != nil {
			t.Fatal(err)
		}
		h.InParam = benchInbox
	}
	h.Token, h.Status = mlx4.PollToken, notWritten
	r.SetVHCR(t, 1, h)
	r.PF.OnPoint(func(at string) {
		if at == crashpoint.CommitTorn {
			torn++
			return
		}
		img := r.VHCR(t, 1)
		seen = append(seen, pointSeen{at, mlx4.Status(img[mlx4.OffStatus]) != notWritten, r.Acked(1)})
	})
	r.write(1, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
	if fast {
		if !r.PF.PostFast(1) {
			t.Fatalf("state file %v: %v did not take the fast path", state, h.Op)
		}
	} else {
		if r.PF.PostFast(1) {
			t.Fatalf("state file %v: %v took the fast path", state, h.Op)
		}
		r.scan()
	}
	r.PF.OnPoint(nil)
	if img := r.VHCR(t, 1); !r.Acked(1) || mlx4.Status(img[mlx4.OffStatus]) != mlx4.OK {
		t.Fatalf("state file %v: %v not acknowledged with OK (%v)", state, h.Op, mlx4.Status(img[mlx4.OffStatus]))
	}
	return seen, torn
}

// TestJournalsSameCalls: the post path calls the no-op journal (no state
// file) and the state file's journal the same way, on the fast path and
// the general one: it passes the same named points in the same order, at
// the same moments relative to what the VF sees (nothing written back nor
// acknowledged at post-accepted and post-executing; the status in the
// vHCR and the toggle not yet written at post-written-back). Only the
// state file's journal writes records, and only for a command that may
// change the model: its intent and its result, each with its torn moment.
func TestJournalsSameCalls(t *testing.T) {
	want := []pointSeen{{crashpoint.PostAccepted, false, false}, {crashpoint.PostExecuting, false, false}, {crashpoint.PostWrittenBack, true, false}}
	for _, c := range []struct {
		name    string
		fast    bool // the fast path takes it
		setup   func(v benchVF) (mlx4.VHCR, []byte)
		records int // records the state file's journal writes
	}{
		{"NOP, fast path, read-only", true, func(benchVF) (mlx4.VHCR, []byte) { return mlx4.VHCR{Op: mlx4.NOP}, nil }, 0},
		{"ALLOC_RES CQ, fast path, journaled", true, func(benchVF) (mlx4.VHCR, []byte) {
			return mlx4.VHCR{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.CQ), OpMod: 1}, nil
		}, 1},
		{"QUERY_FUNC_CAP, outbox, read-only", false, func(benchVF) (mlx4.VHCR, []byte) {
			return mlx4.VHCR{Op: mlx4.QUERY_FUNC_CAP, OutParam: benchOutbox}, nil
		}, 0},
		{"WRITE_MTT, inbox, journaled", false, func(v benchVF) (mlx4.VHCR, []byte) {
			m := v.post(mlx4.VHCR{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.MTT), OpMod: 1}, nil)
			in := make([]byte, 24)
			binary.BigEndian.PutUint64(in, m)
			binary.BigEndian.PutUint64(in[16:], 0x9000|1)
			return mlx4.VHCR{Op: mlx4.WRITE_MTT, InMod: 1}, in
		}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, state := range []bool{false, true} {
				seen, torn := postPoints(t, state, c.fast, c.setup)
				if !slices.Equal(seen, want) {
					t.Errorf("state file %v: points %+v, want %+v", state, seen, want)
				}
				records := 0
				if state {
					records = c.records
				}
				if torn != 2*records {
					t.Errorf("state file %v: %d torn moments of records, want %d (intent and result of %d records)", state, torn, 2*records, records)
				}
			}
		})
	}
}
