package master_test

import (
	"context"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/master/trace"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
)

// traceLines reads every record of r as text lines without the time column.
func traceLines(t *testing.T, r *trace.Ring) []string {
	t.Helper()
	rd := r.NewReaderFromStart()
	clk := r.Clock()
	recs := make([]trace.Record, r.Records())
	n, lost := rd.Read(recs)
	if lost != 0 {
		t.Fatalf("%d records lost", lost)
	}
	var out []string
	for i := range recs[:n] {
		e := clk.EntryOf(&recs[i])
		line := strings.TrimSuffix(string(trace.AppendText(nil, &e)), "\n")
		_, rest, _ := strings.Cut(line, " ")
		if e.Kind == "post" && e.Timed {
			rest = rest[:strings.LastIndex(rest, "  ")] // the latency, sampled
		}
		out = append(out, rest)
	}
	return out
}

func diffLines(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("trace:\n%s\n\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestTraceOfASession: a VF's bring-up, a command completed by EQE, a
// QP reservation, a MAD_IFC, a refused command, an FLR and a comm violation
// leave exactly this trace, in order, with names and decoded fields; the
// ring records with no reader attached (a flight recorder), and a reader
// made afterwards finds it all.
func TestTraceOfASession(t *testing.T) {
	ring, err := master.NewTrace(1024)
	if err != nil {
		t.Fatal(err)
	}
	r := mastertest.NewWith(t, 2, mastertest.Options{Trace: ring})
	r.Start(t)
	ctx := context.Background()
	v := r.InitVF(t, 1)
	d, err := vfdrv.New(v, vfdrv.Options{BAR: r.VFBARs[1], MaxInFlight: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.EnableEvents(ctx, 2, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Do(ctx, &vfclient.Request{Op: mlx4.NOP, InMod: 5}); err != nil {
		t.Fatal(err)
	}
	if err := d.UseEvents(false); err != nil {
		t.Fatal(err)
	}
	if res, err := v.Post(ctx, &vfclient.Request{Op: mlx4.ALLOC_RES, InMod: uint32(mlx4.RES_QP),
		OpMod: uint8(mlx4.RES_OP_RESERVE), InParam: 1<<32 | 1}); err != nil || res.Status != mlx4.OK {
		t.Fatalf("ALLOC_RES: %v %v", res.Status, err)
	}
	var smp [256]byte // SubnGet(NodeInfo), LID-routed
	copy(smp[:], []byte{1, 0x01, 1, 0x01})
	smp[16], smp[17] = 0x00, 0x11
	if _, err := v.Post(ctx, &vfclient.Request{Op: mlx4.MAD_IFC, OpMod: 1, InMod: 1, In: smp[:]}); err != nil {
		t.Fatal(err)
	}
	if res, err := v.Post(ctx, &vfclient.Request{Op: mlx4.MAD_DEMUX, InParam: 0x1234}); err != nil || res.Status != mlx4.BAD_OP {
		t.Fatalf("MAD_DEMUX: %v %v", res.Status, err)
	}
	if err := r.PF.FLR(1); err != nil {
		t.Fatal(err)
	}
	r.Stop(t)
	want := []string{
		"vf1 COMM RESET toggle=1",
		"vf1 RESET reason=vf_reset",
		"vf1 COMM VHCR0 toggle=0 param=0x0",
		"vf1 COMM VHCR1 toggle=1 param=0x0",
		"vf1 COMM VHCR2 toggle=0 param=0x0",
		"vf1 COMM VHCR_EN toggle=1 param=0x0",
		// vfdrv.EnableEvents: an MTT, its entry, the EQ, the event map
		"vf1 POST  ALLOC_RES RES_MTT RES_OP_RESERVE_AND_MAP op_mod=1 in_mod=0x5 in=0x0 out=0x40 tok=0xffff poll  OK",
		"vf1 POST  WRITE_MTT op_mod=0 in_mod=0x1 in=0x1000 out=0x0 tok=0xffff poll  OK",
		"vf1 POST  SW2HW_EQ op_mod=0 in_mod=0x2 in=0x1000 out=0x0 tok=0xffff poll  OK",
		"vf1 POST  MAP_EQ op_mod=0 in_mod=0x2 in=0x201f06be out=0x0 tok=0xffff poll  OK",
		// completed by an EQE, recorded after the command
		"vf1 POST  NOP op_mod=0 in_mod=0x5 in=0x0 out=0x0 tok=0x1 event  OK",
		"vf1 EQE CMD type=0x0a eq=2 tok=0x1",
		"vf1 POST  ALLOC_RES RES_QP RES_OP_RESERVE qpn=0x848 op_mod=0 in_mod=0x0 in=0x100000001 out=0x848 tok=0xffff poll  OK",
		// the rig has no MAD engine; the request is decoded all the same
		"vf1 POST  MAD_IFC port=1 SUBN_LID_ROUTED GET NODE_INFO attr_mod=0x0 op_mod=1 in_mod=0x1 in=0x1000 out=0x2000 tok=0xffff poll  INTERNAL_ERR reason=not_modelled",
		"vf1 POST  MAD_DEMUX op_mod=0 in_mod=0x0 in=0x1234 out=0x0 tok=0xffff poll  BAD_OP reason=privileged",
		"vf1 FLR begin",
		"vf1 RESET reason=flr",
		"vf1 FLR end",
	}
	diffLines(t, traceLines(t, ring), want)
}

// TestTraceOfViolationsAndRestart: comm commands out of sequence, and a PF
// restart that adopts the channels (a NOP is served across it).
func TestTraceOfViolationsAndRestart(t *testing.T) {
	ring, err := master.NewTrace(64)
	if err != nil {
		t.Fatal(err)
	}
	r := newStepRigWith(t, 2, mastertest.Options{Trace: ring})
	r.write(0, mlx4.MLX4_COMM_CMD_VHCR1, 7) // not after VHCR0
	r.scan()
	r.up(t, 1)
	r.vhcr(1, mlx4.NOP, 0)
	r.write(1, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
	r.scan()
	r.Rebuild(t) // a PF restart: VF 1 is adopted, VF 0 (reset) too
	r.write(1, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
	r.scan()
	r.write(1, mlx4.MLX4_COMM_CMD_VHCR2, 0) // VHCR2 after VHCR_POST
	r.scan()
	want := []string{
		"vf0 COMM VHCR1 toggle=1 param=0x7",
		"vf0 RESET reason=sequence",
		"vf1 COMM RESET toggle=1",
		"vf1 RESET reason=vf_reset",
		"vf1 COMM VHCR0 toggle=0 param=0x0",
		"vf1 COMM VHCR1 toggle=1 param=0x0",
		"vf1 COMM VHCR2 toggle=0 param=0x0",
		"vf1 COMM VHCR_EN toggle=1 param=0x0",
		"vf1 POST  NOP op_mod=0 in_mod=0x0 in=0x0 out=0x0 tok=0xffff poll  OK",
		"vf0 RESTART adopted",
		"vf1 RESTART adopted",
		"vf1 POST  NOP op_mod=0 in_mod=0x0 in=0x0 out=0x0 tok=0xffff poll  OK",
		"vf1 COMM VHCR2 toggle=0 param=0x0",
		"vf1 RESET reason=sequence",
	}
	diffLines(t, traceLines(t, ring), want)
}
