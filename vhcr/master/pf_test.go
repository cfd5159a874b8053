package master_test

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

var ctx = context.Background()

func post(t *testing.T, v *vfclient.VF, r vfclient.Request) vfclient.Response {
	t.Helper()
	resp, err := v.Post(ctx, &r)
	if err != nil {
		t.Fatalf("VF %d %v: %v", v.Index, r.Op, err)
	}
	return resp
}

func TestBringUpAndQueries(t *testing.T) {
	r := mastertest.New(t, 4)
	r.Start(t)
	v := r.InitVF(t, 3)

	if got := post(t, v, vfclient.Request{Op: mlx4.NOP}); got.Status != mlx4.OK {
		t.Fatalf("NOP: %v", got.Status)
	}
	fw := post(t, v, vfclient.Request{Op: mlx4.QUERY_FW})
	if fw.Status != mlx4.OK {
		t.Fatalf("QUERY_FW: %v", fw.Status)
	}
	ver := binary.BigEndian.Uint64(fw.Out[0:])
	if maj, sub, min := ver>>32&0xffff, ver>>16&0xffff, ver&0xffff; maj != 2 || min != 42 || sub != 5000 {
		t.Errorf("QUERY_FW version %d.%d.%d, want 2.42.5000", maj, min, sub)
	}
	if fw.Out[0x09] != 0xff {
		t.Errorf("QUERY_FW PPF id %#x, want 0xff for a VF", fw.Out[0x09])
	}
	for i := 0x0a; i < 0x100; i++ {
		if fw.Out[i] != 0 {
			t.Fatalf("QUERY_FW byte %#x = %#x; the VF view is zero past the version", i, fw.Out[i])
		}
	}
	fc := post(t, v, vfclient.Request{Op: mlx4.QUERY_FUNC_CAP})
	if fc.Status != mlx4.OK || fc.Out[0]&0x10 == 0 || fc.Out[1] != 2 {
		t.Fatalf("QUERY_FUNC_CAP general: %v flags %#x ports %d", fc.Status, fc.Out[0], fc.Out[1])
	}
	if q := binary.BigEndian.Uint32(fc.Out[0x50:]); q != uint32(r.HCA.Quota(3, "qp")) || q == 0 {
		t.Errorf("QP quota %d, want %d", q, r.HCA.Quota(3, "qp"))
	}
	pc := post(t, v, vfclient.Request{Op: mlx4.QUERY_FUNC_CAP, OpMod: 1, InMod: 2})
	if pc.Status != mlx4.OK || pc.Out[3] != 2 {
		t.Fatalf("QUERY_FUNC_CAP port 2: %v phys port %d", pc.Status, pc.Out[3])
	}
	qp0proxy := binary.BigEndian.Uint32(pc.Out[0x14:])
	if qp1 := binary.BigEndian.Uint32(pc.Out[0x1c:]); qp1 != qp0proxy+2 {
		t.Errorf("QP1 proxy %#x is not QP0 proxy %#x + 2", qp1, qp0proxy)
	}
	qport := post(t, v, vfclient.Request{Op: mlx4.QUERY_PORT, InMod: 1})
	if qport.Status != mlx4.OK || qport.Out[0]&0x80 == 0 {
		t.Fatalf("QUERY_PORT: %v type %#x (link up expected)", qport.Status, qport.Out[0])
	}
	if n := binary.BigEndian.Uint16(qport.Out[0x0c:]); n != 3 {
		t.Errorf("QUERY_PORT P_Key table length %d, want VF 3's 3 virtual entries", n)
	}
	dc := post(t, v, vfclient.Request{Op: mlx4.QUERY_DEV_CAP})
	if dc.Status != mlx4.OK || dc.Out[0x13] != 17 || dc.Out[0x37]&0xf != 2 || dc.Out[0x4c] != 0 {
		t.Fatalf("QUERY_DEV_CAP: %v log_qps %d ports %d bf %#x", dc.Status, dc.Out[0x13], dc.Out[0x37]&0xf, dc.Out[0x4c])
	}
}

func TestOpcodeStatuses(t *testing.T) {
	r := mastertest.New(t, 2)
	r.Start(t)
	v := r.InitVF(t, 0)
	for _, tc := range []struct {
		op     mlx4.Opcode
		opMod  uint8
		inMod  uint32
		want   mlx4.Status
		reason refusal.Reason
	}{
		// Absent from mlx4's table: BAD_PARAM, not BAD_OP.
		{mlx4.INIT_HCA, 0, 0, mlx4.BAD_PARAM, refusal.UnknownOpcode},
		{mlx4.CLOSE_HCA, 0, 0, mlx4.BAD_PARAM, refusal.UnknownOpcode},
		{mlx4.ACCESS_DDR, 0, 0, mlx4.BAD_PARAM, refusal.UnknownOpcode},
		{mlx4.GEN_EQE, 0, 0, mlx4.BAD_PARAM, refusal.UnknownOpcode},
		{mlx4.ARM_COMM_CHANNEL, 0, 0, mlx4.BAD_PARAM, refusal.UnknownOpcode},
		{mlx4.SENSE_PORT, 0, 0, mlx4.BAD_PARAM, refusal.UnknownOpcode},
		{mlx4.MAP_FA, 0, 0, mlx4.BAD_PARAM, refusal.UnknownOpcode},
		{0x7ff, 0, 0, mlx4.BAD_PARAM, refusal.UnknownOpcode},
		// EPERM rows: BAD_OP.
		{mlx4.GET_OP_REQ, 0, 0, mlx4.BAD_OP, refusal.Privileged},
		{mlx4.ALLOCATE_VPP, 0, 0, mlx4.BAD_OP, refusal.Privileged},
		{mlx4.SET_VPORT_QOS, 0, 0, mlx4.BAD_OP, refusal.Privileged},
		{mlx4.MAD_DEMUX, 0, 0, mlx4.BAD_OP, refusal.Privileged},
		{mlx4.CONGESTION_CTRL, 0, 0, mlx4.BAD_OP, refusal.Privileged},
		{mlx4.FLOW_STEERING_IB_UC_QP_RANGE, 0, 0, mlx4.BAD_OP, refusal.Privileged},
		{mlx4.VIRT_PORT_MAP, 0, 0, mlx4.BAD_OP, refusal.Privileged},
		// Modifiers.
		{mlx4.QUERY_FUNC_CAP, 2, 0, mlx4.BAD_PARAM, refusal.OpModifier},
		{mlx4.QUERY_FUNC_CAP, 1, 3, mlx4.BAD_PARAM, refusal.Port},
		{mlx4.QUERY_PORT, 0, 0x101, mlx4.BAD_PARAM, refusal.InModifier},
		{mlx4.QUERY_PORT, 0, 0, mlx4.BAD_PARAM, refusal.Port},
		{mlx4.QUERY_FW, 1, 0, mlx4.BAD_PARAM, refusal.OpModifier},
	} {
		before := r.PF.Stats().Refusal(0, tc.reason)
		got := post(t, v, vfclient.Request{Op: tc.op, OpMod: tc.opMod, InMod: tc.inMod})
		if got.Status != tc.want {
			t.Errorf("%v op_mod %d in_mod %#x: status %v, want %v", tc.op, tc.opMod, tc.inMod, got.Status, tc.want)
		}
		if after := r.PF.Stats().Refusal(0, tc.reason); after != before+1 {
			t.Errorf("%v: refusal counter %v went %d -> %d", tc.op, tc.reason, before, after)
		}
	}
	// Command failures never reset the VF.
	if got := post(t, v, vfclient.Request{Op: mlx4.NOP}); got.Status != mlx4.OK {
		t.Fatalf("NOP after refusals: %v", got.Status)
	}
}

// rawPost writes a vHCR image into VF v's page 0 and posts, bypassing the
// library's own address choices.
func rawPost(t *testing.T, v *vfclient.VF, h mlx4.VHCR) uint32 {
	t.Helper()
	var img [mlx4.VHCRSize]byte
	h.Encode(&img)
	copy(v.Memory(), img[:])
	if err := v.Comm(ctx, mlx4.MLX4_COMM_CMD_VHCR_POST, 0, v.Timeouts.Post); err != nil && !errors.Is(err, vfclient.ErrInternal) {
		t.Fatalf("post: %v", err)
	}
	return v.SlaveRead()
}

func TestMailboxAddresses(t *testing.T) {
	r := mastertest.New(t, 2)
	r.Start(t)
	v := r.InitVF(t, 1)
	other := r.InitVF(t, 0)

	// Inbox outside the window: INTERNAL_ERR, the VF is not reset.
	sr := rawPost(t, v, vfclient.Request2VHCR(mlx4.SET_PORT, mastertest.Window, 0))
	if sr&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR != 0 {
		t.Fatalf("inbox fault reset the VF (slave_read %#x)", sr)
	}
	if st := mlx4.Status(v.Memory()[mlx4.OffStatus]); st != mlx4.INTERNAL_ERR {
		t.Errorf("inbox outside the window: %v, want INTERNAL_ERR", st)
	}
	// Inbox not 4 KiB aligned after masking the low byte: INTERNAL_ERR.
	rawPost(t, v, vfclient.Request2VHCR(mlx4.SET_PORT, 0x1800, 0))
	if st := mlx4.Status(v.Memory()[mlx4.OffStatus]); st != mlx4.INTERNAL_ERR {
		t.Errorf("unaligned inbox: %v, want INTERNAL_ERR", st)
	}
	if got := post(t, v, vfclient.Request{Op: mlx4.NOP}); got.Status != mlx4.OK {
		t.Fatalf("NOP after inbox faults: %v", got.Status)
	}
	// Outbox outside the window: a DMA failure, the VF is reset with bit 17.
	sr = rawPost(t, v, vfclient.Request2VHCR(mlx4.QUERY_FW, 0, 1<<40))
	if sr&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR == 0 {
		t.Fatalf("outbox fault did not reset the VF (slave_read %#x)", sr)
	}
	if n := r.PF.Stats().Reset(1, master.ResetDMA); n != 1 {
		t.Errorf("DMA resets %d, want 1", n)
	}
	if in, _ := r.PF.Info(1); in.LastCmd != mlx4.MLX4_COMM_CMD_RESET || in.Active {
		t.Errorf("after the outbox fault VF 1 is %v active=%v, want RESET", in.LastCmd, in.Active)
	}
	// The other VF is untouched.
	if got := post(t, other, vfclient.Request{Op: mlx4.QUERY_FW}); got.Status != mlx4.OK {
		t.Fatalf("VF 0 after VF 1's reset: %v", got.Status)
	}
	// And VF 1 comes back through RESET.
	if err := v.Init(ctx); err != nil {
		t.Fatalf("re-init: %v", err)
	}
	if got := post(t, v, vfclient.Request{Op: mlx4.NOP}); got.Status != mlx4.OK {
		t.Fatalf("NOP after re-init: %v", got.Status)
	}
}

func TestProtocolViolationsResetOnlyThatVF(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reason master.ResetReason
		do     func(v *vfclient.VF) error
	}{
		{"VHCR_POST before VHCR_EN", master.ResetSequence, func(v *vfclient.VF) error {
			if err := v.Reset(ctx); err != nil {
				return err
			}
			return v.Comm(ctx, mlx4.MLX4_COMM_CMD_VHCR_POST, 0, v.Timeouts.Comm)
		}},
		{"VHCR1 before VHCR0", master.ResetSequence, func(v *vfclient.VF) error {
			if err := v.Reset(ctx); err != nil {
				return err
			}
			return v.Comm(ctx, mlx4.MLX4_COMM_CMD_VHCR1, 0, v.Timeouts.Comm)
		}},
		{"unknown comm command", master.ResetUnknownCmd, func(v *vfclient.VF) error {
			return v.Comm(ctx, 7, 0, v.Timeouts.Comm)
		}},
		{"vHCR outside the window", master.ResetVHCRAddress, func(v *vfclient.VF) error {
			if err := v.Reset(ctx); err != nil {
				return err
			}
			for _, c := range []mlx4.CommCmd{mlx4.MLX4_COMM_CMD_VHCR0, mlx4.MLX4_COMM_CMD_VHCR1, mlx4.MLX4_COMM_CMD_VHCR2} {
				if err := v.Comm(ctx, c, 0, v.Timeouts.Comm); err != nil {
					return err
				}
			}
			return v.Comm(ctx, mlx4.MLX4_COMM_CMD_VHCR_EN, 0, v.Timeouts.Comm) // address 0 is fine...
		}},
		{"vHCR not 4 KiB aligned", master.ResetVHCRAddress, func(v *vfclient.VF) error {
			if err := v.Reset(ctx); err != nil {
				return err
			}
			for _, c := range []mlx4.CommCmd{mlx4.MLX4_COMM_CMD_VHCR0, mlx4.MLX4_COMM_CMD_VHCR1, mlx4.MLX4_COMM_CMD_VHCR2} {
				if err := v.Comm(ctx, c, 0, v.Timeouts.Comm); err != nil {
					return err
				}
			}
			return v.Comm(ctx, mlx4.MLX4_COMM_CMD_VHCR_EN, 0x0800, v.Timeouts.Comm)
		}},
		{"vHCR beyond the window", master.ResetVHCRAddress, func(v *vfclient.VF) error {
			if err := v.Reset(ctx); err != nil {
				return err
			}
			for _, c := range []mlx4.CommCmd{mlx4.MLX4_COMM_CMD_VHCR0, mlx4.MLX4_COMM_CMD_VHCR1} {
				if err := v.Comm(ctx, c, 0, v.Timeouts.Comm); err != nil {
					return err
				}
			}
			if err := v.Comm(ctx, mlx4.MLX4_COMM_CMD_VHCR2, 0x1, v.Timeouts.Comm); err != nil { // 0x10000 = the window size
				return err
			}
			return v.Comm(ctx, mlx4.MLX4_COMM_CMD_VHCR_EN, 0, v.Timeouts.Comm)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mastertest.New(t, 3)
			r.Start(t)
			bystander := r.InitVF(t, 0)
			v := r.VF(t, 2)
			if err := v.SyncToggles(ctx); err != nil {
				t.Fatal(err)
			}
			if err := v.WaitOnline(ctx); err != nil {
				t.Fatal(err)
			}
			err := tc.do(v)
			wantReset := tc.name != "vHCR outside the window"
			if wantReset && !errors.Is(err, vfclient.ErrInternal) {
				t.Fatalf("got %v, want the bit-17 reset (ErrInternal)", err)
			}
			if !wantReset && err != nil {
				t.Fatalf("a vHCR at IOVA 0 is legal: %v", err)
			}
			if wantReset {
				if n := r.PF.Stats().Reset(2, tc.reason); n != 1 {
					t.Errorf("resets for %v: %d, want 1", tc.reason, n)
				}
				if in, _ := r.PF.Info(2); in.LastCmd != mlx4.MLX4_COMM_CMD_RESET || in.Active {
					t.Errorf("VF 2 state %v active=%v after the violation", in.LastCmd, in.Active)
				}
			}
			for i := 0; i < 3; i++ {
				if got := post(t, bystander, vfclient.Request{Op: mlx4.NOP}); got.Status != mlx4.OK {
					t.Fatalf("bystander VF: %v", got.Status)
				}
			}
			if n := r.PF.Stats().Reset(0, tc.reason); n != 0 {
				t.Errorf("bystander VF was reset %d times", n)
			}
		})
	}
}

func TestWrongToggle(t *testing.T) {
	r := mastertest.New(t, 2)
	r.Start(t)
	v := r.InitVF(t, 1)
	bystander := r.InitVF(t, 0)
	// Rewrite slave_write with the command of a NOP post but without
	// flipping the toggle: what a VF that flipped twice leaves behind.
	sr := v.SlaveRead()
	word := mlx4.CommWord(sr>>mlx4.CommToggleShift, mlx4.MLX4_COMM_CMD_VHCR_POST, 0x55)
	if err := r.VFBARs[1].Store32(mlx4.CommSlaveWrite, word); err != nil {
		t.Fatal(err)
	}
	// The PF answers with bit 17 and the unchanged toggle.
	waitReset(t, r, 1, master.ResetToggle, 1, "the rewritten slave_write")
	if got := v.SlaveRead(); got != sr&mlx4.CommToggle|mlx4.COMM_CHAN_EVENT_INTERNAL_ERR {
		t.Errorf("slave_read %#08x, want toggle %d with bit 17", got, sr>>mlx4.CommToggleShift)
	}
	if got := post(t, bystander, vfclient.Request{Op: mlx4.NOP}); got.Status != mlx4.OK {
		t.Fatalf("bystander: %v", got.Status)
	}
}

func TestZeroedRegistersResync(t *testing.T) {
	r := mastertest.New(t, 2)
	r.Start(t)
	v := r.InitVF(t, 0)
	// Init flips the toggle 5 times; two NOPs leave it at 1, so zeroing
	// the registers contradicts the PF's acknowledged toggle.
	post(t, v, vfclient.Request{Op: mlx4.NOP})
	post(t, v, vfclient.Request{Op: mlx4.NOP})
	if v.SlaveRead()>>mlx4.CommToggleShift != 1 {
		t.Fatalf("toggle %d, want 1", v.SlaveRead()>>mlx4.CommToggleShift)
	}
	page := r.VFBARs[0]
	_ = page.Store32(mlx4.CommSlaveRead, 0)
	_ = page.Store32(mlx4.CommSlaveWrite, 0)
	// The VF's driver reloads: sync_toggles adopts 0, RESET, VHCR setup.
	v2 := r.VF(t, 0)
	if err := v2.Init(ctx); err != nil {
		t.Fatalf("init after zeroing: %v", err)
	}
	if got := post(t, v2, vfclient.Request{Op: mlx4.NOP}); got.Status != mlx4.OK {
		t.Fatalf("NOP after zeroing: %v", got.Status)
	}
	if r.PF.Stats().Resyncs[0] == 0 {
		t.Error("no resync counted")
	}
	if r.PF.Stats().Reset(0, master.ResetToggle) != 0 {
		t.Error("zeroing was treated as a toggle violation")
	}
}

func TestPostAndNeverLookAgain(t *testing.T) {
	r := mastertest.New(t, 3)
	r.Start(t)
	quiet := r.InitVF(t, 1)
	busy := r.InitVF(t, 2)
	// VF 1 posts QUERY_FW and walks away: no wait, never reads.
	var img [mlx4.VHCRSize]byte
	h := vfclient.Request2VHCR(mlx4.QUERY_FW, 0, 2*4096)
	h.Encode(&img)
	copy(quiet.Memory(), img[:])
	if err := quiet.Comm(ctx, mlx4.MLX4_COMM_CMD_VHCR_POST, 0, 0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if got := post(t, busy, vfclient.Request{Op: mlx4.QUERY_FUNC_CAP}); got.Status != mlx4.OK {
			t.Fatalf("VF 2 command %d: %v", i, got.Status)
		}
	}
	// The abandoned command was executed once and completed.
	if n := r.PF.Stats().Op(r.PF.Table().Lookup(mlx4.QUERY_FW).Index(), 0); n != 1 {
		t.Errorf("VF 1 QUERY_FW executed %d times, want 1", n)
	}
}

func TestResetRequestHandshake(t *testing.T) {
	r := mastertest.New(t, 2)
	r.Start(t)
	v := r.InitVF(t, 1)
	if err := v.RequestReset(ctx); err != nil {
		t.Fatalf("reset request: %v", err)
	}
	if n := r.PF.Stats().Reset(1, master.ResetRequest); n != 1 {
		t.Errorf("reset-request resets: %d", n)
	}
	if in, _ := r.PF.Info(1); in.LastCmd != mlx4.MLX4_COMM_CMD_RESET {
		t.Errorf("after the handshake VF 1 is in %v", in.LastCmd)
	}
	if err := v.Init(ctx); err != nil {
		t.Fatalf("init after the handshake: %v", err)
	}
}

func TestFLR(t *testing.T) {
	r := mastertest.New(t, 2)
	r.Start(t)
	v := r.InitVF(t, 1)
	if err := r.PF.BeginFLR(1); err != nil {
		t.Fatal(err)
	}
	// A command during FLR is dropped: no acknowledgement.
	before := v.SlaveRead()
	var img [mlx4.VHCRSize]byte
	h := vfclient.Request2VHCR(mlx4.NOP, 0, 0)
	h.Encode(&img)
	copy(v.Memory(), img[:])
	if err := v.Comm(ctx, mlx4.MLX4_COMM_CMD_VHCR_POST, 0, 0); err != nil {
		t.Fatal(err)
	}
	for r.PF.Stats().Dropped[1] == 0 {
		if _, err := r.PF.Info(1); err != nil {
			t.Fatal(err)
		}
	}
	if got := v.SlaveRead(); got != before {
		t.Fatalf("a command during FLR was acknowledged: slave_read %#x -> %#x", before, got)
	}
	if err := r.PF.EndFLR(1); err != nil {
		t.Fatal(err)
	}
	// The VF's next driver instance zeroes the stuck channel and starts over.
	page := r.VFBARs[1]
	_ = page.Store32(mlx4.CommSlaveRead, 0)
	_ = page.Store32(mlx4.CommSlaveWrite, 0)
	v2 := r.InitVF(t, 1)
	if got := post(t, v2, vfclient.Request{Op: mlx4.NOP}); got.Status != mlx4.OK {
		t.Fatalf("NOP after FLR: %v", got.Status)
	}
	if n := r.PF.Stats().Reset(1, master.ResetFLR); n != 1 {
		t.Errorf("FLR resets %d", n)
	}
}

func TestPFRestartKeepsChannels(t *testing.T) {
	r := mastertest.New(t, 2)
	r.Start(t)
	v := r.InitVF(t, 1)
	post(t, v, vfclient.Request{Op: mlx4.NOP})
	r.Stop(t)
	// While the PF is down the VF posts; the command must run exactly once
	// after the restart, without the VF re-initialising.
	var img [mlx4.VHCRSize]byte
	h := vfclient.Request2VHCR(mlx4.QUERY_FW, 0, 2*4096)
	h.Encode(&img)
	copy(v.Memory(), img[:])
	if err := v.Comm(ctx, mlx4.MLX4_COMM_CMD_VHCR_POST, 0, 0); err != nil {
		t.Fatal(err)
	}
	r.Rebuild(t)
	r.Start(t)
	if err := v.WaitAck(ctx); err != nil {
		t.Fatalf("the command posted while the PF was down: %v", err)
	}
	if st := mlx4.Status(v.Memory()[mlx4.OffStatus]); st != mlx4.OK {
		t.Fatalf("QUERY_FW across the restart: %v", st)
	}
	if got := post(t, v, vfclient.Request{Op: mlx4.NOP}); got.Status != mlx4.OK {
		t.Fatalf("NOP after restart: %v", got.Status)
	}
	idx := r.PF.Table().Lookup(mlx4.QUERY_FW).Index()
	if n := r.PF.Stats().Op(idx, 0); n != 1 {
		t.Errorf("QUERY_FW posted across the restart ran %d times, want 1", n)
	}
}

func TestEventBitWithoutEQIsRefused(t *testing.T) {
	r := mastertest.New(t, 1)
	r.Start(t)
	v := r.InitVF(t, 0)
	got := post(t, v, vfclient.Request{Op: mlx4.NOP, Event: true, Token: 7})
	if got.Status != mlx4.BAD_SYS_STATE {
		t.Fatalf("'e' without an EQ: %v, want BAD_SYS_STATE", got.Status)
	}
	if n := r.PF.Stats().Refusal(0, refusal.EventsNoEQ); n != 1 {
		t.Errorf("refusals %d", n)
	}
}

// TestSpinPoll: SpinPoll returns the register's value as soon as its toggle
// matches, and after its polls without a match reports false with the last
// value read.
func TestSpinPoll(t *testing.T) {
	m, _ := bar.NewMem("regs", 8)
	g, err := bar.NewReg(m, 4)
	if err != nil {
		t.Fatal(err)
	}
	g.Store(0x0101)
	if r, ok := vfclient.SpinPoll(g, 1, 3); ok || r != 0x0101 {
		t.Fatalf("toggle 0 polled for 1: got %#x, %v", r, ok)
	}
	g.Store(mlx4.CommToggle | 0x0101)
	if r, ok := vfclient.SpinPoll(g, 1, 3); !ok || r != mlx4.CommToggle|0x0101 {
		t.Fatalf("toggle 1 polled for 1: got %#x, %v", r, ok)
	}
	if _, ok := vfclient.SpinPoll(g, 1, 0); ok {
		t.Fatal("zero polls matched")
	}
}

// TestAccessRegThroughTheChannel: a VF reads PTYS through its comm channel
// (inbox and outbox through its DMA window) and is refused a write.
func TestAccessRegThroughTheChannel(t *testing.T) {
	r := mastertest.New(t, 2)
	r.Start(t)
	v := r.InitVF(t, 1)
	in := make([]byte, 0x14+0x34)
	binary.BigEndian.PutUint16(in[0:], 0x1<<11|0x4) // operation TLV
	binary.BigEndian.PutUint16(in[4:], mlx4.REG_ID_PTYS)
	in[6], in[7] = mlx4.ACCESS_REG_QUERY, 1
	in[0x14+1] = 2 // VF port 2
	got := post(t, v, vfclient.Request{Op: mlx4.ACCESS_REG, In: in})
	if got.Status != mlx4.OK || got.Out == nil {
		t.Fatalf("PTYS query: %v", got.Status)
	}
	if st, port := got.Out[2]&0x7f, got.Out[0x14+1]; st != mlx4.RegStatusOK || port != 2 {
		t.Fatalf("PTYS reply: register status %#x, local_port %d", st, port)
	}
	in[6] = mlx4.ACCESS_REG_WRITE
	if got := post(t, v, vfclient.Request{Op: mlx4.ACCESS_REG, In: in}); got.Status != mlx4.BAD_OP {
		t.Fatalf("PTYS write: %v, want BAD_OP", got.Status)
	}
}

// TestNewRejectsSmallBAR: a fixed-size BAR (a device) that cannot hold the
// VFs is refused with bar.ErrTooSmall.
func TestNewRejectsSmallBAR(t *testing.T) {
	l, _ := wire.NewLayout(8, 64<<10, true, 0, 0, "")
	small, _ := bar.NewMem("bar", 0x10000)
	_, err := master.New(master.Options{BAR: small, DMA: small, Layout: l})
	if !errors.Is(err, bar.ErrTooSmall) {
		t.Fatalf("PF over a too-small BAR: %v", err)
	}
}
