package master_test

import (
	"context"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
)

// Info reports a VF's last refused command: opcode, status, the reason the
// PF recorded and the toggle of the slave_write that posted it (what vfctl
// prints after a non-OK status). An OK command leaves it; another VF's
// refusal is not this VF's.
func TestInfoLastRefusal(t *testing.T) {
	r := mastertest.New(t, 2)
	r.Start(t)
	v := r.InitVF(t, 0)
	w := r.InitVF(t, 1)
	ctx := context.Background()
	in, err := r.PF.Info(0)
	if err != nil || in.Refused != (master.Refusal{}) {
		t.Fatalf("before any refusal: %+v, %v", in.Refused, err)
	}
	post := func(vf *vfclient.VF, op mlx4.Opcode, opMod uint8) mlx4.Status {
		t.Helper()
		resp, err := vf.Post(ctx, &vfclient.Request{Op: op, OpMod: opMod})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Status
	}
	if s := post(v, mlx4.MAD_DEMUX, 0); s != mlx4.BAD_OP {
		t.Fatalf("MAD_DEMUX: %v", s)
	}
	want := master.Refusal{Op: mlx4.MAD_DEMUX, Status: mlx4.BAD_OP, Reason: refusal.Privileged, Toggle: v.SlaveRead() >> 31}
	if in, _ := r.PF.Info(0); in.Refused != want {
		t.Fatalf("after MAD_DEMUX: %+v, want %+v", in.Refused, want)
	}
	if s := post(v, mlx4.NOP, 0); s != mlx4.OK {
		t.Fatalf("NOP: %v", s)
	}
	if in, _ := r.PF.Info(0); in.Refused != want {
		t.Fatalf("an OK command changed the last refusal: %+v, want %+v", in.Refused, want)
	}
	if s := post(w, mlx4.Opcode(0xfff), 0); s != mlx4.BAD_PARAM {
		t.Fatalf("opcode 0xfff: %v", s)
	}
	if in, _ := r.PF.Info(0); in.Refused != want {
		t.Fatalf("VF 1's refusal is VF 0's: %+v", in.Refused)
	}
	want1 := master.Refusal{Op: mlx4.Opcode(0xfff), Status: mlx4.BAD_PARAM, Reason: refusal.UnknownOpcode, Toggle: w.SlaveRead() >> 31}
	if in, _ := r.PF.Info(1); in.Refused != want1 {
		t.Fatalf("VF 1: %+v, want %+v", in.Refused, want1)
	}
	// The next refusals of VF 0 replace the last: two in a row carry the
	// two toggles.
	if s := post(v, mlx4.QUERY_FUNC_CAP, 9); s != mlx4.BAD_PARAM {
		t.Fatalf("QUERY_FUNC_CAP op_mod 9: %v", s)
	}
	first, _ := r.PF.Info(0)
	if s := post(v, mlx4.QUERY_FUNC_CAP, 9); s != mlx4.BAD_PARAM {
		t.Fatalf("QUERY_FUNC_CAP op_mod 9: %v", s)
	}
	second, _ := r.PF.Info(0)
	if first.Refused.Reason != refusal.OpModifier || first.Refused.Op != mlx4.QUERY_FUNC_CAP ||
		second.Refused.Toggle != v.SlaveRead()>>mlx4.CommToggleShift || first.Refused.Toggle == second.Refused.Toggle {
		t.Errorf("two refusals in a row: %+v then %+v (slave_read toggle %d)", first.Refused, second.Refused, v.SlaveRead()>>mlx4.CommToggleShift)
	}
}
