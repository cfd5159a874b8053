package master_test

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/faultinj"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/master/trace"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Each kind's test arms a rule for VF 1 and shows the fault at the
// selected occurrence only, with VF 0 served as always throughout.

const statusMarker = 0xee // a status byte no PF writes: the vHCR left as the VF wrote it

func vfp(n int) *int { return &n }

// posted is a VHCR_POST's outcome as the VF sees it.
type posted struct {
	acked  bool
	sr     uint32
	status byte
	out    uint64 // the vHCR's out_param
	outbox []byte // the outbox page at 0x2000
}

// post writes op (in_mod, op_mod, in_param) into VF i's vHCR with a status
// byte that only a write-back replaces, posts it and scans once.
func (r stepRig) post(t *testing.T, i int, v mlx4.VHCR) posted {
	t.Helper()
	v.Token = mlx4.PollToken
	if v.OutParam == 0 && v.Op != mlx4.ALLOC_RES {
		v.OutParam = 2 * 4096
	}
	var img [mlx4.VHCRSize]byte
	v.Encode(&img)
	img[mlx4.OffStatus] = statusMarker
	r.SetVHCRImage(t, i, img)
	r.write(i, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
	r.scan()
	return r.outcome(t, i)
}

func (r stepRig) outcome(t *testing.T, i int) posted {
	t.Helper()
	img := r.VHCR(t, i)
	box := make([]byte, mlx4.MailboxSize)
	if _, err := r.DMA.ReadAt(box, r.VHCRAddr(i)+2*4096); err != nil {
		t.Fatal(err)
	}
	return posted{acked: r.acked(i), sr: r.SlaveRead(i).Load(), status: img[mlx4.OffStatus],
		out: binary.BigEndian.Uint64(img[mlx4.OffOutParam:]), outbox: box}
}

func (p posted) normal() bool {
	return p.acked && p.status == byte(mlx4.OK) && p.sr&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR == 0
}

func addFault(t *testing.T, pf *master.PF, s faultinj.Spec) faultinj.RuleStatus {
	t.Helper()
	st, err := pf.AddFault(s)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// hits is rule id's fault count.
func hits(t *testing.T, pf *master.PF, id int) uint64 {
	t.Helper()
	rs, err := pf.Faults()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.ID == id {
			return r.Hits
		}
	}
	t.Fatalf("no rule %d", id)
	return 0
}

func regOf(t *testing.T, r bar.Region, off int64) bar.Reg {
	t.Helper()
	g, err := bar.NewReg(r, off)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestFaultPostKinds: the kinds that act at a VHCR_POST, at the 2nd
// QUERY_FUNC_CAP (or ALLOC_RES) of VF 1.
func TestFaultPostKinds(t *testing.T) {
	qfc := mlx4.VHCR{Op: mlx4.QUERY_FUNC_CAP}
	alloc := mlx4.VHCR{Op: mlx4.ALLOC_RES, InMod: uint32(mlx4.RES_CQ), OpMod: uint8(mlx4.RES_OP_RESERVE_AND_MAP)}
	maxEQ, _ := faultinj.FieldByName("func_cap.max_eq")
	for _, tc := range []struct {
		kind  string
		cmd   mlx4.VHCR
		args  map[string]string
		check func(t *testing.T, r stepRig, p posted)
		after bool // VF 1's 3rd command is served as usual
	}{
		{kind: "status", cmd: qfc, args: map[string]string{"status": "BAD_PARAM"}, after: true,
			check: func(t *testing.T, r stepRig, p posted) {
				if !p.acked || p.status != byte(mlx4.BAD_PARAM) || r.PF.Counters().Refusal(1, refusal.Injected) != 1 {
					t.Fatalf("%+v, refusals %d", p, r.PF.Counters().Refusal(1, refusal.Injected))
				}
			}},
		{kind: "status", cmd: qfc, args: map[string]string{"status": "0x7e"}, after: true,
			check: func(t *testing.T, r stepRig, p posted) {
				if !p.acked || p.status != 0x7e {
					t.Fatalf("%+v", p)
				}
			}},
		{kind: "delay", cmd: qfc, args: map[string]string{"us": "1h"}, after: true,
			check: func(t *testing.T, r stepRig, p posted) {
				r.scan()
				if p := r.outcome(t, 1); p.acked || p.status != statusMarker {
					t.Fatalf("served before its deadline: %+v", p)
				}
				r.PF.ExpireFaultTimers()
				r.scan()
				if p := r.outcome(t, 1); !p.normal() {
					t.Fatalf("not served after its deadline: %+v", p)
				}
			}},
		{kind: "never", cmd: qfc, check: func(t *testing.T, r stepRig, p posted) {
			r.scan()
			if p := r.outcome(t, 1); p.acked || p.status != statusMarker || r.PF.FaultTimers() != 0 {
				t.Fatalf("%+v", p)
			}
		}},
		{kind: "toggle_never", cmd: qfc, check: func(t *testing.T, r stepRig, p posted) {
			if p.acked || p.status != byte(mlx4.OK) || binary.BigEndian.Uint32(p.outbox[mlx4.QUERY_FUNC_CAP_MAX_EQ_OFFSET:]) == 0 {
				t.Fatalf("want executed and written back, not acknowledged: %+v", p)
			}
		}},
		{kind: "toggle_twice", cmd: qfc, check: func(t *testing.T, r stepRig, p posted) {
			if p.acked || p.status != byte(mlx4.OK) {
				t.Fatalf("want written back and the toggle back where it was: %+v", p)
			}
		}},
		{kind: "no_writeback", cmd: qfc, after: true, check: func(t *testing.T, r stepRig, p posted) {
			if !p.acked || p.status != statusMarker {
				t.Fatalf("%+v", p)
			}
		}},
		{kind: "outbox_field", cmd: qfc, args: map[string]string{"field": "func_cap.max_eq", "value": "0xfffffff"}, after: true,
			check: func(t *testing.T, r stepRig, p posted) {
				if !p.normal() || maxEQ.Read(p.outbox) != 0xfffffff {
					t.Fatalf("max_eq %#x: %+v", maxEQ.Read(p.outbox), p)
				}
			}},
		{kind: "out_param", cmd: alloc, args: map[string]string{"value": "0x123456"}, after: true,
			check: func(t *testing.T, r stepRig, p posted) {
				if !p.normal() || p.out != 0x123456 {
					t.Fatalf("out %#x: %+v", p.out, p)
				}
			}},
		{kind: "flr_mid", cmd: qfc, args: map[string]string{"us": "1h"}, check: func(t *testing.T, r stepRig, p posted) {
			if p.acked || p.sr&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR == 0 || r.PF.State(1).LastCmd != mlx4.MLX4_COMM_CMD_FLR {
				t.Fatalf("%+v, %v", p, r.PF.State(1).LastCmd)
			}
			r.PF.ExpireFaultTimers()
			r.scan()
			if c := r.PF.State(1).LastCmd; c != mlx4.MLX4_COMM_CMD_RESET {
				t.Fatalf("after the FLR: %v", c)
			}
		}},
		{kind: "internal_err", cmd: qfc, after: true, check: func(t *testing.T, r stepRig, p posted) {
			if !p.acked || p.status != byte(mlx4.OK) || p.sr&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR == 0 || r.PF.Counters().Reset(1, master.ResetFault) != 0 {
				t.Fatalf("%+v", p)
			}
		}},
		{kind: "vf_reset", cmd: qfc, check: func(t *testing.T, r stepRig, p posted) {
			st := r.PF.State(1)
			if p.sr&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR == 0 || st.LastCmd != mlx4.MLX4_COMM_CMD_RESET || st.Active || r.PF.Counters().Reset(1, master.ResetFault) != 1 {
				t.Fatalf("%+v %+v", p, st)
			}
		}},
	} {
		t.Run(tc.kind+"/"+tc.cmd.Op.String(), func(t *testing.T) {
			r := newStepRig(t, 2)
			r.up(t, 0)
			r.up(t, 1)
			rule := addFault(t, r.PF, faultinj.Spec{Kind: tc.kind, VF: vfp(1), Op: tc.cmd.Op.String(), Nth: 2, Args: tc.args})
			n := 2
			if tc.after {
				n = 3
			}
			for k := 1; k <= n; k++ {
				if p := r.post(t, 0, tc.cmd); !p.normal() {
					t.Fatalf("VF 0's command %d: %+v", k, p)
				}
				p := r.post(t, 1, tc.cmd)
				if k == 2 {
					tc.check(t, r, p)
					continue
				}
				if tc.kind == "internal_err" && k > 2 {
					// Bit 17 stays until the function is reset: the driver's
					// catas poll finds it however busy the VF is.
					if !p.acked || p.status != byte(mlx4.OK) || p.sr&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR == 0 {
						t.Fatalf("VF 1's command %d after internal_err: %+v", k, p)
					}
					continue
				}
				if !p.normal() {
					t.Fatalf("VF 1's command %d: %+v", k, p)
				}
			}
			if p := r.post(t, 0, tc.cmd); !p.normal() {
				t.Fatalf("VF 0 after the fault: %+v", p)
			}
			if h := hits(t, r.PF, rule.ID); h != 1 {
				t.Fatalf("%d hits", h)
			}
		})
	}
}

// TestFaultCommKinds: the kinds that act at a comm command, at VF 1's
// 2nd RESET (or its first VHCR0/VHCR1).
func TestFaultCommKinds(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		comm  mlx4.CommCmd
		nth   uint64
		args  map[string]string
		check func(t *testing.T, r stepRig)
	}{
		{kind: "delay", comm: mlx4.MLX4_COMM_CMD_RESET, nth: 2, args: map[string]string{"us": "1h"}, check: func(t *testing.T, r stepRig) {
			if r.acked(1) {
				t.Fatal("acknowledged before its deadline")
			}
			r.PF.ExpireFaultTimers()
			r.scan()
			if !r.acked(1) || r.SlaveRead(1).Load()&0xffff != mlx4.CommVersion {
				t.Fatalf("after the deadline: %#x", r.SlaveRead(1).Load())
			}
		}},
		{kind: "never", comm: mlx4.MLX4_COMM_CMD_RESET, nth: 2, check: func(t *testing.T, r stepRig) {
			r.scan()
			if r.acked(1) {
				t.Fatal("acknowledged")
			}
		}},
		{kind: "reset_version", comm: mlx4.MLX4_COMM_CMD_RESET, nth: 2, check: func(t *testing.T, r stepRig) {
			sr := r.SlaveRead(1).Load()
			if !r.acked(1) || mlx4.CommIfRev(sr) != mlx4.CMD_CHAN_IF_REV+1 || r.PF.State(1).LastCmd != mlx4.MLX4_COMM_CMD_RESET {
				t.Fatalf("slave_read %#x", sr)
			}
		}},
		{kind: "toggle_never", comm: mlx4.MLX4_COMM_CMD_RESET, nth: 2, check: func(t *testing.T, r stepRig) {
			if r.acked(1) || r.PF.State(1).LastCmd != mlx4.MLX4_COMM_CMD_RESET || r.PF.State(1).Active {
				t.Fatal("want RESET done and not acknowledged")
			}
		}},
		{kind: "toggle_twice", comm: mlx4.MLX4_COMM_CMD_RESET, nth: 2, check: func(t *testing.T, r stepRig) {
			if r.acked(1) || r.PF.State(1).LastCmd != mlx4.MLX4_COMM_CMD_RESET {
				t.Fatal("want RESET done and the toggle back")
			}
		}},
		{kind: "internal_err", comm: mlx4.MLX4_COMM_CMD_RESET, nth: 2, check: func(t *testing.T, r stepRig) {
			sr := r.SlaveRead(1).Load()
			if !r.acked(1) || sr&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR == 0 || sr&0xffff != mlx4.CommVersion {
				t.Fatalf("slave_read %#x", sr)
			}
		}},
		{kind: "pf_offline", comm: mlx4.MLX4_COMM_CMD_RESET, nth: 2, args: map[string]string{"us": "1h"}, check: func(t *testing.T, r stepRig) {
			flags := regOf(t, r.VFBARs[1], mlx4.MLX4_COMM_CHAN_FLAGS)
			if r.acked(1) || flags.Load()&mlx4.CommFlagsOffline == 0 {
				t.Fatalf("acked %v, flags %#x", r.acked(1), flags.Load())
			}
			r.PF.ExpireFaultTimers()
			r.scan()
			if !r.acked(1) || flags.Load()&mlx4.CommFlagsOffline != 0 {
				t.Fatalf("after the offline time: acked %v, flags %#x", r.acked(1), flags.Load())
			}
		}},
		{kind: "flr_mid", comm: mlx4.MLX4_COMM_CMD_VHCR0, nth: 2, args: map[string]string{"us": "1h"}, check: func(t *testing.T, r stepRig) {
			if r.acked(1) || r.PF.State(1).LastCmd != mlx4.MLX4_COMM_CMD_FLR {
				t.Fatalf("%v", r.PF.State(1).LastCmd)
			}
			r.PF.ExpireFaultTimers()
			r.scan()
			if r.PF.State(1).LastCmd != mlx4.MLX4_COMM_CMD_RESET {
				t.Fatalf("after the FLR: %v", r.PF.State(1).LastCmd)
			}
		}},
		{kind: "vf_reset", comm: mlx4.MLX4_COMM_CMD_VHCR1, nth: 2, check: func(t *testing.T, r stepRig) {
			if r.SlaveRead(1).Load()&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR == 0 || r.PF.Counters().Reset(1, master.ResetFault) != 1 {
				t.Fatal("not reset")
			}
		}},
	} {
		t.Run(tc.kind+"/"+tc.comm.String(), func(t *testing.T) {
			r := newStepRig(t, 2)
			rule := addFault(t, r.PF, faultinj.Spec{Kind: tc.kind, VF: vfp(1), Comm: tc.comm.String(), Nth: tc.nth, Args: tc.args})
			r.up(t, 0)
			r.up(t, 1) // the first RESET, VHCR0, VHCR1: not selected
			r.up(t, 0)
			for _, c := range []mlx4.CommCmd{mlx4.MLX4_COMM_CMD_RESET, mlx4.MLX4_COMM_CMD_VHCR0, mlx4.MLX4_COMM_CMD_VHCR1} {
				r.write(1, c, 0)
				r.scan()
				if c == tc.comm {
					tc.check(t, r)
					break
				}
				if !r.acked(1) {
					t.Fatalf("VF 1's %v not acknowledged", c)
				}
			}
			r.up(t, 0)
			if p := r.post(t, 0, mlx4.VHCR{Op: mlx4.NOP}); !p.normal() {
				t.Fatalf("VF 0: %+v", p)
			}
			if h := hits(t, r.PF, rule.ID); h != 1 {
				t.Fatalf("%d hits", h)
			}
		})
	}
}

// TestFaultNowKinds: the kinds that fire when armed, on VF 1 alone.
func TestFaultNowKinds(t *testing.T) {
	t.Run("internal_err", func(t *testing.T) {
		r := newStepRig(t, 2)
		r.up(t, 0)
		r.up(t, 1)
		addFault(t, r.PF, faultinj.Spec{Kind: "internal_err", VF: vfp(1)})
		r.PF.StartFaults()
		if r.SlaveRead(1).Load()&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR == 0 || r.SlaveRead(0).Load()&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR != 0 {
			t.Fatalf("slave_read %#x, %#x", r.SlaveRead(0).Load(), r.SlaveRead(1).Load())
		}
		if !r.PF.State(1).Active {
			t.Fatal("the function was reset")
		}
	})
	t.Run("vf_reset", func(t *testing.T) {
		r := newStepRig(t, 2)
		r.up(t, 0)
		r.up(t, 1)
		addFault(t, r.PF, faultinj.Spec{Kind: "vf_reset", VF: vfp(1)})
		r.PF.StartFaults()
		if r.PF.State(1).Active || r.PF.Counters().Reset(1, master.ResetFault) != 1 || !r.PF.State(0).Active {
			t.Fatal("VF 1 not reset, or VF 0 reset")
		}
	})
	t.Run("pf_offline", func(t *testing.T) {
		r := newStepRig(t, 2)
		r.up(t, 0)
		r.up(t, 1)
		addFault(t, r.PF, faultinj.Spec{Kind: "pf_offline", VF: vfp(1), Args: map[string]string{"us": "1h"}})
		f0, f1 := regOf(t, r.VFBARs[0], mlx4.MLX4_COMM_CHAN_FLAGS), regOf(t, r.VFBARs[1], mlx4.MLX4_COMM_CHAN_FLAGS)
		for _, f := range []bar.Reg{f0, f1} {
			f.Store(f.Load() &^ mlx4.CommFlagsOffline) // as Run's start does
		}
		r.PF.StartFaults()
		if f1.Load()&mlx4.CommFlagsOffline == 0 || f0.Load()&mlx4.CommFlagsOffline != 0 {
			t.Fatalf("flags %#x, %#x", f0.Load(), f1.Load())
		}
		if p := r.post(t, 1, mlx4.VHCR{Op: mlx4.NOP}); p.acked {
			t.Fatal("VF 1 served while offline")
		}
		if p := r.post(t, 0, mlx4.VHCR{Op: mlx4.NOP}); !p.normal() {
			t.Fatalf("VF 0: %+v", p)
		}
		r.PF.ExpireFaultTimers()
		r.scan()
		if p := r.outcome(t, 1); !p.normal() || f1.Load()&mlx4.CommFlagsOffline != 0 {
			t.Fatalf("after the offline time: %+v, flags %#x", p, f1.Load())
		}
		if p := r.post(t, 1, mlx4.VHCR{Op: mlx4.NOP}); !p.normal() {
			t.Fatalf("VF 1 after: %+v", p)
		}
	})
	t.Run("no_vf_reset_cap", func(t *testing.T) {
		r := newStepRig(t, 2)
		rule := addFault(t, r.PF, faultinj.Spec{Kind: "no_vf_reset_cap", VF: vfp(1)})
		r.PF.StartFaults()
		c0, c1 := regOf(t, r.VFBARs[0], mlx4.MLX4_COMM_CHAN_CAPS), regOf(t, r.VFBARs[1], mlx4.MLX4_COMM_CHAN_CAPS)
		if c1.Load()&mlx4.CommCapsVFReset != 0 || c0.Load()&mlx4.CommCapsVFReset == 0 {
			t.Fatalf("caps %#x, %#x", c0.Load(), c1.Load())
		}
		if _, err := r.PF.ClearFaults(rule.ID); err != nil {
			t.Fatal(err)
		}
		if c1.Load()&mlx4.CommCapsVFReset == 0 {
			t.Fatal("the capability not restored by clear")
		}
	})
}

// TestFaultFlagsKinds: the FLAGS reset request of VF 1, VF 0's answered
// as always.
func TestFaultFlagsKinds(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		args  map[string]string
		check func(t *testing.T, r stepRig, acked func() bool)
	}{
		{kind: "flags_no_ack", check: func(t *testing.T, r stepRig, acked func() bool) {
			r.PF.CheckFlags()
			r.scan()
			if acked() || r.PF.Counters().Reset(1, master.ResetRequest) != 0 {
				t.Fatal("acknowledged")
			}
		}},
		{kind: "flags_late_ack", args: map[string]string{"us": "1h"}, check: func(t *testing.T, r stepRig, acked func() bool) {
			r.PF.CheckFlags()
			if acked() {
				t.Fatal("acknowledged before its deadline")
			}
			r.PF.ExpireFaultTimers()
			r.scan()
			if !acked() || r.PF.Counters().Reset(1, master.ResetRequest) != 1 {
				t.Fatal("not acknowledged and reset after its deadline")
			}
		}},
		{kind: "flags_ack_no_reset", check: func(t *testing.T, r stepRig, acked func() bool) {
			if !acked() || r.PF.Counters().Reset(1, master.ResetRequest) != 0 || !r.PF.State(1).Active {
				t.Fatal("want acknowledged without a reset")
			}
		}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			r := newStepRig(t, 2)
			r.up(t, 0)
			r.up(t, 1)
			rule := addFault(t, r.PF, faultinj.Spec{Kind: tc.kind, VF: vfp(1), Args: tc.args})
			f0, f1 := regOf(t, r.VFBARs[0], mlx4.MLX4_COMM_CHAN_FLAGS), regOf(t, r.VFBARs[1], mlx4.MLX4_COMM_CHAN_FLAGS)
			f0.Store(f0.Load() ^ mlx4.CommFlagsResetReq)
			f1.Store(f1.Load() ^ mlx4.CommFlagsResetReq)
			r.PF.CheckFlags()
			if g := f0.Load(); (g&mlx4.CommFlagsResetReq != 0) != (g&mlx4.CommFlagsResetAck != 0) || r.PF.Counters().Reset(0, master.ResetRequest) != 1 {
				t.Fatalf("VF 0's request: flags %#x", g)
			}
			tc.check(t, r, func() bool {
				g := f1.Load()
				return (g&mlx4.CommFlagsResetReq != 0) == (g&mlx4.CommFlagsResetAck != 0)
			})
			if h := hits(t, r.PF, rule.ID); h != 1 {
				t.Fatalf("%d hits", h)
			}
		})
	}
}

// TestFaultPortKinds: the port kinds change the port and post its events
// (counted against VFs without an EQ for them: the step rig's have none);
// guid_change reaches VF 1 alone, sm_lid_change no VF.
func TestFaultPortKinds(t *testing.T) {
	for _, tc := range []struct {
		kind   string
		args   map[string]string
		vf     *int
		events [2]uint64 // events to VF 0 and VF 1
		check  func(t *testing.T, r stepRig)
	}{
		{kind: "port_flap", args: map[string]string{"us": "1h", "count": "2"}, events: [2]uint64{1, 1}, check: func(t *testing.T, r stepRig) {
			if r.HCA.Cfg.Ports[0].State != "down" {
				t.Fatalf("port %s", r.HCA.Cfg.Ports[0].State)
			}
			for _, want := range []string{"active", "down", "active"} {
				r.PF.ExpireFaultTimers()
				r.scan()
				if r.HCA.Cfg.Ports[0].State != want {
					t.Fatalf("port %s, want %s", r.HCA.Cfg.Ports[0].State, want)
				}
			}
			if r.PF.FaultTimers() != 0 {
				t.Fatal("timers left after the last cycle")
			}
		}},
		{kind: "lid_change", args: map[string]string{"lid": "0x77"}, events: [2]uint64{1, 1}, check: func(t *testing.T, r stepRig) {
			if r.HCA.Cfg.Ports[0].LID != 0x77 {
				t.Fatal(r.HCA.Cfg.Ports[0].LID)
			}
		}},
		{kind: "sm_lid_change", args: map[string]string{"lid": "9"}, check: func(t *testing.T, r stepRig) {
			if r.HCA.Cfg.Ports[0].MasterSMLID != 9 {
				t.Fatal(r.HCA.Cfg.Ports[0].MasterSMLID)
			}
		}},
		{kind: "pkey_change", args: map[string]string{"index": "0", "pkey": "0x7fff"}, events: [2]uint64{1, 1}, check: func(t *testing.T, r stepRig) {
			if r.HCA.Cfg.Ports[0].PKeys[0] != 0x7fff {
				t.Fatal(r.HCA.Cfg.Ports[0].PKeys[0])
			}
		}},
		{kind: "guid_change", vf: vfp(1), args: map[string]string{"guid": "0x1234"}, events: [2]uint64{0, 1}},
		{kind: "client_rereg", events: [2]uint64{1, 1}},
		{kind: "gid_prefix_change", args: map[string]string{"prefix": "0xfe80000000000001"}, events: [2]uint64{1, 1}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			r := newStepRig(t, 2)
			r.up(t, 0)
			r.up(t, 1)
			addFault(t, r.PF, faultinj.Spec{Kind: tc.kind, VF: tc.vf, Args: tc.args})
			r.PF.StartFaults()
			for vf, want := range tc.events {
				if got := r.HCA.Stats(vf).NoEQ.Load(); got != want {
					t.Errorf("VF %d: %d events, want %d", vf, got, want)
				}
			}
			if tc.check != nil {
				tc.check(t, r)
			}
			if p := r.post(t, 0, mlx4.VHCR{Op: mlx4.NOP}); !p.normal() {
				t.Fatalf("VF 0: %+v", p)
			}
		})
	}
}

// TestFaultFastPathStepsAside: a rule armed at PointPost takes the fast
// path out of the way (the general path asks the rules); cleared, the
// fast path serves again.
func TestFaultFastPathStepsAside(t *testing.T) {
	r := newStepRig(t, 1)
	r.up(t, 0)
	r.post(t, 0, mlx4.VHCR{Op: mlx4.NOP}) // VHCR_POST after VHCR_POST from here
	rule := addFault(t, r.PF, faultinj.Spec{Kind: "status", Op: "QUERY_PORT", Every: true})
	r.vhcr(0, mlx4.NOP, 0)
	r.write(0, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
	if r.PF.PostFast(0) {
		t.Fatal("the fast path served with a post rule armed")
	}
	r.scan()
	if _, err := r.PF.ClearFaults(rule.ID); err != nil {
		t.Fatal(err)
	}
	r.write(0, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
	if !r.PF.PostFast(0) {
		t.Fatal("the fast path did not serve after the rule was cleared")
	}
}

// TestFaultReplay: the same rule and seed and the same commands give the
// same faults at the same commands, whatever another VF does in between.
func TestFaultReplay(t *testing.T) {
	run := func(otherVF int) []int {
		r := newStepRig(t, 2)
		r.up(t, 0)
		r.up(t, 1)
		addFault(t, r.PF, faultinj.Spec{Kind: "status", VF: vfp(1), Op: "NOP", Prob: 0.2, Seed: 5, Args: map[string]string{"status": "BAD_OP"}})
		var faulted []int
		for k := 0; k < 200; k++ {
			for j := 0; j < otherVF; j++ {
				r.post(t, 0, mlx4.VHCR{Op: mlx4.NOP})
			}
			if p := r.post(t, 1, mlx4.VHCR{Op: mlx4.NOP}); p.status == byte(mlx4.BAD_OP) {
				faulted = append(faulted, k)
			} else if !p.normal() {
				t.Fatalf("command %d: %+v", k, p)
			}
		}
		return faulted
	}
	a, b, c := run(0), run(0), run(3)
	if !slices.Equal(a, b) || !slices.Equal(a, c) {
		t.Fatalf("seed 5 faulted %v, then %v, then (VF 0 busy) %v", a, b, c)
	}
	if len(a) < 20 || len(a) > 60 {
		t.Fatalf("%d of 200 faulted at prob 0.2", len(a))
	}
}

// TestFaultTraced: a fault is a trace record, decoded in text and JSON.
func TestFaultTraced(t *testing.T) {
	ring, err := master.NewTrace(64)
	if err != nil {
		t.Fatal(err)
	}
	r := newStepRigWith(t, 2, mastertest.Options{Trace: ring})
	r.up(t, 1)
	rd := ring.NewReader()
	rule := addFault(t, r.PF, faultinj.Spec{Kind: "status", VF: vfp(1), Op: "QUERY_FUNC_CAP", Args: map[string]string{"status": "BAD_PARAM"}})
	r.post(t, 1, mlx4.VHCR{Op: mlx4.QUERY_FUNC_CAP})
	recs := make([]trace.Record, 16)
	n, _ := rd.Read(recs)
	clk := ring.Clock()
	var found *trace.Entry
	for _, rec := range recs[:n] {
		if rec.Kind == trace.KindFault {
			e := clk.EntryOf(&rec)
			found = &e
		}
	}
	if found == nil || found.Fault != "status" || found.VF != 1 || found.Rule != uint32(rule.ID) || found.Point != "post" || found.Opcode != "QUERY_FUNC_CAP" {
		t.Fatalf("%+v", found)
	}
	txt := string(trace.AppendText(nil, found))
	if !strings.Contains(txt, "vf1 FAULT status rule=1 at=post QUERY_FUNC_CAP") {
		t.Fatalf("text %q", txt)
	}
	line := trace.AppendJSON(nil, found)
	back, err := trace.ParseJSON(line)
	if err != nil || back != *found {
		t.Fatalf("JSON %s: %+v, %v", line, back, err)
	}
}

// TestFaultAllocatesNothing: VHCR_POST allocates nothing with rules
// armed that do not fire, nor with one that fires at every command.
func TestFaultAllocatesNothing(t *testing.T) {
	r := newStepRig(t, 2)
	r.up(t, 1)
	addFault(t, r.PF, faultinj.Spec{Kind: "delay", VF: vfp(0), Op: "NOP", Every: true})
	addFault(t, r.PF, faultinj.Spec{Kind: "status", VF: vfp(1), Op: "QUERY_PORT", Prob: 0.5, Seed: 3})
	addFault(t, r.PF, faultinj.Spec{Kind: "outbox_field", VF: vfp(1), Every: true, Args: map[string]string{"field": "func_cap.max_eq", "value": "1"}})
	for _, op := range []mlx4.Opcode{mlx4.NOP, mlx4.QUERY_FUNC_CAP} {
		r.vhcr(1, op, 2*4096)
		allocs := testing.AllocsPerRun(1000, func() {
			r.write(1, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
			r.scan()
		})
		if allocs != 0 {
			t.Errorf("%v: %v allocations per post", op, allocs)
		}
	}
}
