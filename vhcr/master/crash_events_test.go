package master_test

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr"
	"github.com/vhcrd/vhcrd/vhcr/internal/crashpoint"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/restrack"
	"github.com/vhcrd/vhcrd/vhcr/vfdrv"
	"github.com/vhcrd/vhcrd/vhcr/vhcrtest"
)

// TestKillWithEvents: an 'e' command (ALLOC_RES of a CQ) with the PF killed
// at each point of its path, in both completion modes, completes once after
// the restart: exactly one completion EQE with the right token, exactly
// one CQ, and (mlx4's way) the status and CQ number written back with the
// toggle. The seed's way acknowledges before executing; a command
// accepted so and killed before it committed is executed by the restarted
// PF from its journaled shadow.
func TestKillWithEvents(t *testing.T) {
	for _, mode := range []struct {
		name  string
		token uint16
		comp  vfdrv.Completions
	}{{"seed", 0x1234, vfdrv.CompletionsSeed}, {"mlx4", mlx4.PollToken, vfdrv.CompletionsMlx4}} {
		for _, point := range []string{crashpoint.PostAccepted, crashpoint.PostExecuting, crashpoint.PostWrittenBack, crashpoint.CommitTorn} {
			t.Run(mode.name+"/"+point, func(t *testing.T) {
				r := vhcrtest.NewWith(t, 2, vhcrtest.Options{State: true})
				r.Start(t)
				d, err := vfdrv.New(r.InitVF(t, 1), vfdrv.Options{BAR: r.BAR, Layout: r.Layout, Completions: mode.comp})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := d.EnableEvents(context.Background(), 4, 7); err != nil {
					t.Fatal(err)
				}
				r.Stop(t)
				r.Rebuild(t) // a clean restart: the EQ is still there
				sr := stepRig{r, t}
				eqn := r.HCA.EventEQ(1, mlx4.EventCmd)
				p0, ok := r.HCA.EQProd(1, eqn)
				if !ok {
					t.Fatalf("no command EQ after the clean restart (event EQ %d)", eqn)
				}
				tok0 := r.PF.CmdToken(1)
				r.SetToggle(1, r.SlaveWrite(1).Load()>>31)
				r.SetVHCR(t, 1, mlx4.VHCR{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.CQ), OpMod: 1, Token: mode.token, Flags: mlx4.FlagE})
				r.Write(1, vhcr.CommVHCRPost, 0)
				if !crashScan(t, sr, point, 1) {
					t.Fatalf("no kill at %s", point)
				}
				r.Rebuild(t)
				sr.scan()
				sr.scan()
				if !r.Acked(1) || r.SlaveRead(1).Load()&vhcr.InternalErrBit != 0 {
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
				// Accepted the seed's way and not committed: executed by the
				// restarted PF; committed and not acknowledged (mlx4's way):
				// delivered again without executing.
				seedAccepted := mode.comp == vfdrv.CompletionsSeed && (point == crashpoint.PostAccepted || point == crashpoint.PostExecuting)
				mlx4Committed := mode.comp == vfdrv.CompletionsMlx4 && point == crashpoint.PostWrittenBack
				if (resumed == 1) != seedAccepted || (redelivered == 1) != mlx4Committed {
					t.Fatalf("resumed %d, redelivered %d", resumed, redelivered)
				}
				if got := binary.BigEndian.Uint16(eqe[mlx4.EQECmdToken:]); got != want || eqe[mlx4.EQEType] != mlx4.EventCmd {
					t.Fatalf("EQE type %#x token %#x, want %#x", eqe[mlx4.EQEType], got, want)
				}
			})
		}
	}
}

// readEQE reads EQE number idx of VF vf's EQ eqn from the VF's memory.
func readEQE(t *testing.T, r *vhcrtest.Rig, vf, eqn int, idx uint32) [mlx4.EQESize]byte {
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

// TestKillSeedAcceptedThenNextPosted: a command accepted the seed's way and
// killed before it ran, after which the VF posted its next command while
// the PF was down: the restarted PF executes the first from its journal
// and serves the second; two completion EQEs with their own tokens.
func TestKillSeedAcceptedThenNextPosted(t *testing.T) {
	r := vhcrtest.NewWith(t, 2, vhcrtest.Options{State: true})
	r.Start(t)
	d, err := vfdrv.New(r.InitVF(t, 1), vfdrv.Options{BAR: r.BAR, Layout: r.Layout, Completions: vfdrv.CompletionsSeed})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.EnableEvents(context.Background(), 4, 7); err != nil {
		t.Fatal(err)
	}
	r.Stop(t)
	r.Rebuild(t)
	sr := stepRig{r, t}
	eqn := r.HCA.EventEQ(1, mlx4.EventCmd)
	p0, _ := r.HCA.EQProd(1, eqn)
	r.SetToggle(1, r.SlaveWrite(1).Load()>>31)
	r.SetVHCR(t, 1, mlx4.VHCR{Op: mlx4.ALLOC_RES, InMod: uint32(restrack.CQ), OpMod: 1, Token: 0x111, Flags: mlx4.FlagE})
	r.Write(1, vhcr.CommVHCRPost, 0)
	if !crashScan(t, sr, crashpoint.PostAccepted, 1) {
		t.Fatal("no kill")
	}
	if !r.Acked(1) {
		t.Fatal("the seed's way acknowledges before executing")
	}
	r.SetVHCR(t, 1, mlx4.VHCR{Op: mlx4.NOP, Token: 0x222, Flags: mlx4.FlagE})
	r.Write(1, vhcr.CommVHCRPost, 0)
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
