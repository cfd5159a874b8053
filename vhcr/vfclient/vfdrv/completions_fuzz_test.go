package vfdrv

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

// FuzzCompletions posts raw vHCRs (any token, 'e' bit or not, a command
// that succeeds with an immediate output, one that fails, a NOP) under each
// completion mode and checks the PF's answer to each: without the 'e' bit
// the status written back and no EQE; with it exactly one command EQE, which
// for mlx4's way (mode mlx4, or auto and token 0xffff) carries the next
// count, status 0 and out_param 0 with the status and output in the vHCR,
// and for the early way echoes the token with the status (and the output)
// and leaves the vHCR's status as the VF wrote it. The VF is never reset
// (VHCR_POST would fail with bit 17).
//
// Input: the mode (mod 3: auto, mlx4, seed), then 3-byte steps: kind
// (bit 0: 'e'; bits 2:1: NOP, ALLOC_RES of a CQ, FREE_RES of a CQ never
// allocated) and a BE16 token.
func FuzzCompletions(f *testing.F) {
	f.Add(uint8(0), []byte{1, 0xff, 0xff, 1, 0, 1, 3, 0xff, 0xff, 3, 0, 7, 5, 0xff, 0xff, 5, 0, 9, 0, 0, 0})
	f.Add(uint8(1), []byte{1, 0, 1, 3, 0, 2, 5, 0xff, 0xff, 2, 0, 0})
	f.Add(uint8(2), []byte{1, 0xff, 0xff, 3, 0xff, 0xff, 1, 0, 4})
	f.Fuzz(func(t *testing.T, mode uint8, steps []byte) {
		modes := [...]string{"auto", "mlx4", "early"}
		r := mastertest.New(t, 1)
		r.Config.VFs.Default.Completions = modes[mode%3]
		r.Rebuild(t)
		r.Start(t)
		d := newDriver(t, r, 0, Options{})
		ctx := context.Background()
		q, err := d.EnableEvents(ctx, 1, 5) // 32 entries, the doorbell read by the PF
		ok(t, "EnableEvents", err)
		ok(t, "UseEvents", d.UseEvents(false))
		vh := d.mem[vfclient.VFPageVHCR*bar.PageSize : vfclient.VFPageVHCR*bar.PageSize+mlx4.VHCRSize]
		var count uint16
		for n := 0; len(steps) >= 3 && n < 64; n++ {
			kind, token := steps[0], binary.BigEndian.Uint16(steps[1:3])
			steps = steps[3:]
			e := kind&1 != 0
			req := [...]vfclient.Request{
				{Op: mlx4.NOP},
				{Op: mlx4.ALLOC_RES, InMod: ResCQ, OpMod: opReserveAndMap},
				{Op: mlx4.FREE_RES, InMod: ResCQ, OpMod: opReserveAndMap, InParam: 0xfffff},
				{Op: mlx4.NOP},
			}[kind>>1&3]
			var flags uint8
			if e {
				flags = mlx4.FlagE
			}
			binary.BigEndian.PutUint64(vh[mlx4.OffInParam:], req.InParam)
			binary.BigEndian.PutUint32(vh[mlx4.OffInMod:], req.InMod)
			binary.BigEndian.PutUint64(vh[mlx4.OffOutParam:], 0)
			binary.BigEndian.PutUint64(vh[mlx4.OffToken:], mlx4.Word3(token, flags, req.OpMod, req.Op))
			ok(t, "VHCR_POST", d.VF.Comm(ctx, mlx4.MLX4_COMM_CMD_VHCR_POST, 0, d.VF.Timeouts.Post))
			ok(t, "barrier", r.PF.Do(func() {})) // the post, EQE included, is complete
			status, out := mlx4.Status(vh[mlx4.OffStatus]), binary.BigEndian.Uint64(vh[mlx4.OffOutParam:])
			eqe, got := q.ring.next()
			if next, more := q.ring.next(); more {
				t.Fatalf("step %d: a second EQE %+v", n, next)
			}
			q.ringDoorbell(true)
			if !e {
				if got {
					t.Fatalf("step %d: EQE %+v for a command without the 'e' bit", n, eqe)
				}
				if (req.Op == mlx4.FREE_RES) == (status == mlx4.OK) {
					t.Fatalf("step %d: %v status %v", n, req.Op, status)
				}
				continue
			}
			if !got || eqe.Type != mlx4.EventCmd {
				t.Fatalf("step %d: no command EQE (%+v)", n, eqe)
			}
			if mode%3 == 1 || mode%3 == 0 && token == mlx4.PollToken {
				count++
				if eqe.Token != count || eqe.Status != 0 || eqe.OutParam != 0 {
					t.Fatalf("step %d: mlx4's way: EQE %+v, want token %d, status 0, out_param 0", n, eqe, count)
				}
				if (req.Op == mlx4.FREE_RES) == (status == mlx4.OK) || req.Op == mlx4.ALLOC_RES && out == 0 {
					t.Fatalf("step %d: mlx4's way: vHCR status %v out %#x for %v", n, status, out, req.Op)
				}
			} else {
				if eqe.Token != token || (req.Op == mlx4.FREE_RES) == (eqe.Status == 0) || req.Op == mlx4.ALLOC_RES && eqe.OutParam == 0 {
					t.Fatalf("step %d: the early way: EQE %+v for token %d, %v", n, eqe, token, req.Op)
				}
				if status != mlx4.OK {
					t.Fatalf("step %d: the early way wrote status %v into the vHCR", n, status)
				}
			}
		}
	})
}
