package master_test

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/internal/crashpoint"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
)

// TestKillWithEvents: an 'e' command (ALLOC_RES of a CQ) with the PF killed
// at each point of its path, in both completion modes, completes once after
// the restart: exactly one completion EQE with the right token, exactly
// one CQ, and (mlx4's way) the status and CQ number written back with the
// toggle. the early way acknowledges before executing; a command
// accepted so and killed before it committed is executed by the restarted
// PF from its journaled shadow.
func TestKillWithEvents(t *testing.T) {
	for _, mode := range []struct {
		name  string
		token uint16
		comp  vfdrv.Completions
	}{{"early", 0x1234, vfdrv.CompletionsEarly}, {"mlx4", mlx4.PollToken, vfdrv.CompletionsMlx4}} {
		for _, point := range []string{crashpoint.PostAccepted, crashpoint.PostExecuting, crashpoint.PostWrittenBack, crashpoint.CommitTorn} {
			t.Run(mode.name+"/"+point, func(t *testing.T) {
				r, sr, eqn := eventsRestarted(t, mode.comp)
				p0, ok := r.HCA.EQProd(1, eqn)
				if !ok {
					t.Fatalf("no command EQ after the clean restart (event EQ %d)", eqn)
				}
				tok0 := r.PF.CmdToken(1)
				r.SetToggle(1, r.SlaveWrite(1).Load()>>mlx4.CommToggleShift)
				r.SetVHCR(t, 1, mlx4.VHCR{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.CQ), OpMod: 1, Token: mode.token, Flags: mlx4.FlagE})
				r.Write(1, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
				if !crashScan(t, sr, point, 1) {
					t.Fatalf("no kill at %s", point)
				}
				r.Rebuild(t)
				sr.scan()
				sr.scan()
				if !r.Acked(1) || r.SlaveRead(1).Load()&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR != 0 {
					t.Fatalf("after the restart: acked=%v slave_read %#x", r.Acked(1), r.SlaveRead(1).Load())
				}
				if n := r.HCA.Res.Counts(1)[restrack.CQ]; n != 1 {
					t.Fatalf("VF 1 owns %d CQs, want 1", n)
				}
				p1, _ := r.HCA.EQProd(1, eqn)
				if p1 != p0+1 {
					t.Fatalf("%d completion EQEs, want 1", p1-p0)
				}
				eqe := readEQE(t, r, 1, eqn, p0)
				want := mode.token
				if mode.comp == vfdrv.CompletionsMlx4 {
					want = tok0 + 1
					if st, out := result(sr); st != mlx4.OK {
						t.Fatalf("vHCR status %v", st)
					} else if _, err := r.HCA.Res.Peek(1, restrack.CQ, out&0xffffff); err != nil {
						t.Fatalf("CQ %#x written back: %v", out, err)
					}
				}
				_, redelivered, resumed := r.PF.PersistCounters()
				// Accepted the early way and not committed: executed by the
				// restarted PF; committed and not acknowledged (mlx4's way):
				// delivered again without executing.
				earlyAccepted := mode.comp == vfdrv.CompletionsEarly && (point == crashpoint.PostAccepted || point == crashpoint.PostExecuting)
				mlx4Committed := mode.comp == vfdrv.CompletionsMlx4 && point == crashpoint.PostWrittenBack
				if (resumed == 1) != earlyAccepted || (redelivered == 1) != mlx4Committed {
					t.Fatalf("resumed %d, redelivered %d", resumed, redelivered)
				}
				if got := binary.BigEndian.Uint16(eqe[mlx4.EQECmdToken:]); got != want || eqe[mlx4.EQEType] != mlx4.EventCmd {
					t.Fatalf("EQE type %#x token %#x, want %#x", eqe[mlx4.EQEType], got, want)
				}
			})
		}
	}
}

// eventsRestarted: VF 1 of a two-VF rig with a state file enables events
// (its driver completing as comp says) and the PF restarts cleanly; the
// rig is left stopped for stepping, with the command EQ's number.
func eventsRestarted(t *testing.T, comp vfdrv.Completions) (*mastertest.Rig, stepRig, int) {
	t.Helper()
	r := mastertest.NewWith(t, 2, mastertest.Options{State: true})
	r.Start(t)
	d, err := vfdrv.New(r.InitVF(t, 1), vfdrv.Options{BAR: r.VFBARs[1], Completions: comp})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.EnableEvents(context.Background(), 4, 7); err != nil {
		t.Fatal(err)
	}
	r.Stop(t)
	r.Rebuild(t) // a clean restart: the EQ is still there
	return r, stepRig{r, t}, r.HCA.EventEQ(1, mlx4.EventCmd)
}

// readEQE reads EQE number idx of VF vf's EQ eqn from the VF's memory.
func readEQE(t *testing.T, r *mastertest.Rig, vf, eqn int, idx uint32) [mlx4.EQESize]byte {
	t.Helper()
	for _, e := range r.HCA.Image().EQs {
		if e.VF != vf || e.EQN != eqn {
			continue
		}
		off := uint64(idx&(e.Nent-1)) * mlx4.EQESize
		iova := e.Pages[off>>e.PageShift] + off&(1<<e.PageShift-1)
		var b [mlx4.EQESize]byte
		if _, err := r.DMA.ReadAt(b[:], r.Layout.DMABase+int64(vf)*r.Layout.Window+int64(iova)); err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Fatalf("VF %d has no EQ %d", vf, eqn)
	return [mlx4.EQESize]byte{}
}

// TestKillEarlyAcceptedThenNextPosted: a command accepted the early way and
// killed before it ran, after which the VF posted its next command while
// the PF was down: the restarted PF executes the first from its journal
// and serves the second; two completion EQEs with their own tokens.
func TestKillEarlyAcceptedThenNextPosted(t *testing.T) {
	r, sr, eqn := eventsRestarted(t, vfdrv.CompletionsEarly)
	p0, _ := r.HCA.EQProd(1, eqn)
	r.SetToggle(1, r.SlaveWrite(1).Load()>>mlx4.CommToggleShift)
	r.SetVHCR(t, 1, mlx4.VHCR{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.CQ), OpMod: 1, Token: 0x111, Flags: mlx4.FlagE})
	r.Write(1, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
	if !crashScan(t, sr, crashpoint.PostAccepted, 1) {
		t.Fatal("no kill")
	}
	if !r.Acked(1) {
		t.Fatal("the early way acknowledges before executing")
	}
	r.SetVHCR(t, 1, mlx4.VHCR{Op: mlx4.NOP, Token: 0x222, Flags: mlx4.FlagE})
	r.Write(1, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
	r.Rebuild(t)
	sr.scan()
	if n := r.HCA.Res.Counts(1)[restrack.CQ]; n != 1 {
		t.Fatalf("VF 1 owns %d CQs, want 1", n)
	}
	p1, _ := r.HCA.EQProd(1, eqn)
	if p1 != p0+2 {
		t.Fatalf("%d completion EQEs, want 2", p1-p0)
	}
	for k, want := range []uint16{0x111, 0x222} {
		eqe := readEQE(t, r, 1, eqn, p0+uint32(k))
		if got := binary.BigEndian.Uint16(eqe[mlx4.EQECmdToken:]); got != want {
			t.Fatalf("EQE %d token %#x, want %#x", k, got, want)
		}
	}
}

// TestKillsAtRandomWithEvents: one VF completing the early way and one
// mlx4's way allocate and free CQs with the 'e' bit while the PF is killed
// at a random point of about one command in four. Every command gets
// exactly one completion EQE (the VF's token, or mlx4's counter with no
// gap), and the tracker matches the ledger of completed commands.
func TestKillsAtRandomWithEvents(t *testing.T) {
	r := mastertest.NewWith(t, 3, mastertest.Options{State: true})
	r.Start(t)
	modes := map[int]vfdrv.Completions{1: vfdrv.CompletionsEarly, 2: vfdrv.CompletionsMlx4}
	for vf, m := range modes {
		d, err := vfdrv.New(r.InitVF(t, vf), vfdrv.Options{BAR: r.VFBARs[vf], Completions: m})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.EnableEvents(context.Background(), 4, 7); err != nil {
			t.Fatal(err)
		}
	}
	r.Stop(t)
	r.Rebuild(t)
	sr := stepRig{r, t}
	type vfLedger struct {
		eqn   int
		cons  uint32 // EQEs consumed
		token uint16 // the last mlx4 token seen
		cqs   map[uint64]bool
	}
	led := map[int]*vfLedger{}
	for vf := range modes {
		r.SetToggle(vf, r.SlaveWrite(vf).Load()>>mlx4.CommToggleShift)
		eqn := r.HCA.EventEQ(vf, mlx4.EventCmd)
		p, _ := r.HCA.EQProd(vf, eqn)
		led[vf] = &vfLedger{eqn: eqn, cons: p, token: r.PF.CmdToken(vf), cqs: map[uint64]bool{}}
	}
	rng := rand.New(rand.NewPCG(7, 7))
	points := []string{crashpoint.PostAccepted, crashpoint.PostExecuting, crashpoint.PostWrittenBack, crashpoint.CommitTorn}
	kills := 0
	for step := 0; step < 300; step++ {
		vf := 1 + rng.IntN(2)
		l := led[vf]
		token := uint16(0x100 + step)
		if modes[vf] == vfdrv.CompletionsMlx4 {
			token = mlx4.PollToken
		}
		h := mlx4.VHCR{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.CQ), OpMod: 1, Token: token, Flags: mlx4.FlagE}
		var freed uint64
		if len(l.cqs) > 0 && rng.IntN(2) == 0 {
			for id := range l.cqs {
				freed = id
				break
			}
			h = mlx4.VHCR{Op: mlx4.FREE_RES, InMod: uint32(restrack.CQ), OpMod: 1, InParam: freed, Token: token, Flags: mlx4.FlagE}
		}
		r.SetVHCR(t, vf, h)
		r.Write(vf, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
		if rng.IntN(4) == 0 && crashScan(t, sr, points[rng.IntN(len(points))], 1) {
			kills++
			r.Rebuild(t)
		}
		for k := 0; k < 3 && !r.Acked(vf); k++ {
			sr.scan()
		}
		prod, _ := r.HCA.EQProd(vf, l.eqn)
		if !r.Acked(vf) || prod != (l.cons+1)&mlx4.EQIndexMask {
			t.Fatalf("step %d: VF %d %v: acked=%v, %d EQEs, want 1", step, vf, h.Op, r.Acked(vf), prod-l.cons)
		}
		eqe := readEQE(t, r, vf, l.eqn, l.cons)
		l.cons = prod
		if err := r.VFBARs[vf].Store32(mlx4.EQDoorbellOffset(l.eqn), l.cons); err != nil {
			t.Fatal(err)
		}
		got := binary.BigEndian.Uint16(eqe[mlx4.EQECmdToken:])
		status, out := mlx4.Status(eqe[0x0f]), binary.BigEndian.Uint64(eqe[0x10:])
		if modes[vf] == vfdrv.CompletionsMlx4 {
			if got != l.token+1 {
				t.Fatalf("step %d: VF %d token %d, want %d", step, vf, got, l.token+1)
			}
			l.token = got
			img := r.VHCR(t, vf)
			status, out = mlx4.Status(img[mlx4.OffStatus]), binary.BigEndian.Uint64(img[mlx4.OffOutParam:])
		} else if got != token {
			t.Fatalf("step %d: VF %d token %#x, want %#x", step, vf, got, token)
		}
		if status != mlx4.OK {
			t.Fatalf("step %d: VF %d %v: %v", step, vf, h.Op, status)
		}
		if h.Op == mlx4.ALLOC_RES {
			if l.cqs[out&0xffffff] {
				t.Fatalf("step %d: CQ %#x handed out twice", step, out)
			}
			l.cqs[out&0xffffff] = true
		} else {
			delete(l.cqs, freed)
		}
		for v, lv := range led {
			if n := r.HCA.Res.Counts(v)[restrack.CQ]; n != len(lv.cqs) {
				t.Fatalf("step %d: VF %d has %d CQs, the ledger %d", step, v, n, len(lv.cqs))
			}
		}
	}
	if kills < 30 {
		t.Fatalf("only %d kills", kills)
	}
	t.Logf("%d kills over 300 'e' commands; one completion each, every object kept", kills)
}
