package master_test

import (
	"strconv"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
	"github.com/vhcrd/vhcrd/vhcr/master/trace"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// stepRig is a mastertest rig driven without its poller: the test writes
// registers and calls scan, so every assertion is about one deterministic
// scan.
type stepRig struct {
	*mastertest.Rig
	t testing.TB
}

func newStepRig(t testing.TB, n int) stepRig { return newStepRigWith(t, n, mastertest.Options{}) }

func newStepRigWith(t testing.TB, n int, o mastertest.Options) stepRig {
	return stepRig{mastertest.NewWith(t, n, o), t}
}

func (r stepRig) scan() bool { return r.PF.Scan() }

// up brings VF i to VHCR_EN with the vHCR at IOVA 0.
func (r stepRig) up(t testing.TB, i int) {
	t.Helper()
	for _, c := range []mlx4.CommCmd{mlx4.MLX4_COMM_CMD_RESET, mlx4.MLX4_COMM_CMD_VHCR0, mlx4.MLX4_COMM_CMD_VHCR1, mlx4.MLX4_COMM_CMD_VHCR2, mlx4.MLX4_COMM_CMD_VHCR_EN} {
		r.Write(i, c, 0)
		r.scan()
	}
	if st := r.PF.State(i); st.LastCmd != mlx4.MLX4_COMM_CMD_VHCR_EN || !st.Active {
		t.Fatalf("VF %d not up: %v", i, st.LastCmd)
	}
}

// vhcr writes a poll-mode vHCR image for op into VF i's page 0.
func (r stepRig) vhcr(i int, op mlx4.Opcode, out uint64) {
	r.SetVHCR(r.t, i, mlx4.VHCR{Op: op, OutParam: out, Token: mlx4.PollToken})
}

func (r stepRig) acked(i int) bool { return r.Acked(i) }

func (r stepRig) write(i int, cmd mlx4.CommCmd, param uint16) { r.Write(i, cmd, param) }

// TestRoundRobinFairness: when every VF has a command pending, one scan
// serves each exactly once, and a VF that floods cannot take a second turn
// before the others had theirs.
func TestRoundRobinFairness(t *testing.T) {
	const n = 5
	r := newStepRig(t, n)
	for i := 0; i < n; i++ {
		r.up(t, i)
		r.vhcr(i, mlx4.NOP, 0)
	}
	for round := 0; round < 20; round++ {
		for i := 0; i < n; i++ {
			r.write(i, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
		}
		if !r.scan() {
			t.Fatal("scan found no work")
		}
		for i := 0; i < n; i++ {
			if !r.acked(i) {
				t.Fatalf("round %d: VF %d not served in the scan that saw it", round, i)
			}
		}
	}
	// VF 0 re-posts at once after each acknowledgement; VF 4 posts once.
	// VF 4 is served in the first scan whatever the start position.
	for start := 0; start < n; start++ {
		r.PF.SetScanStart(start)
		r.write(0, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
		r.write(4, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
		r.scan()
		if !r.acked(4) || !r.acked(0) {
			t.Fatalf("start %d: VF 4 acked=%v VF 0 acked=%v after one scan", start, r.acked(4), r.acked(0))
		}
	}
	// The start position advances every scan.
	before := r.PF.ScanStart()
	r.scan()
	if r.PF.ScanStart() != (before+1)%n {
		t.Fatalf("scan start %d -> %d, want round-robin", before, r.PF.ScanStart())
	}
}

// TestPostAllocatesNothing: the whole VHCR_POST path, from the load of
// slave_write to the acknowledgement, allocates nothing.
func TestPostAllocatesNothing(t *testing.T) {
	t.Run("untraced", func(t *testing.T) { postAllocatesNothing(t, nil) })
	ring, err := master.NewTrace(64)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("traced", func(t *testing.T) { postAllocatesNothing(t, ring) })
}

func postAllocatesNothing(t *testing.T, ring *trace.Ring) {
	r := newStepRigWith(t, 2, mastertest.Options{Trace: ring})
	r.up(t, 1)
	for _, op := range []mlx4.Opcode{mlx4.NOP, mlx4.QUERY_FUNC_CAP, mlx4.INIT_HCA, mlx4.MAD_DEMUX, mlx4.MAD_IFC} {
		r.vhcr(1, op, 2*4096)
		allocs := testing.AllocsPerRun(1000, func() {
			r.write(1, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
			r.scan()
		})
		if allocs != 0 {
			t.Errorf("%v: %v allocations per post", op, allocs)
		}
		if !r.acked(1) {
			t.Fatalf("%v: not acknowledged", op)
		}
	}
}

// TestFLRDropsCommands: during an FLR a non-RESET command is dropped without
// acknowledgement and counted; RESET is acknowledged without the version.
func TestFLRDropsCommands(t *testing.T) {
	r := newStepRig(t, 2)
	r.up(t, 0)
	r.up(t, 1)
	if err := r.PF.BeginFLR(1); err != nil {
		t.Fatal(err)
	}
	r.vhcr(1, mlx4.NOP, 0)
	r.write(1, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
	r.scan()
	if r.acked(1) || r.PF.Counters().Dropped[1] != 1 {
		t.Fatalf("command during FLR: acked=%v dropped=%d", r.acked(1), r.PF.Counters().Dropped[1])
	}
	r.scan() // seen once, not again
	if r.PF.Counters().Dropped[1] != 1 {
		t.Fatalf("dropped counted %d times", r.PF.Counters().Dropped[1])
	}
	// VF 0 is untouched.
	r.vhcr(0, mlx4.NOP, 0)
	r.write(0, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
	r.scan()
	if !r.acked(0) {
		t.Fatal("VF 0 not served during VF 1's FLR")
	}
	// The VF gives up waiting, zeroes its registers and sends RESET.
	r.SlaveRead(1).Store(0)
	r.SlaveWrite(1).Store(0)
	r.SetToggle(1, 0)
	r.scan()
	r.write(1, mlx4.MLX4_COMM_CMD_RESET, 0)
	r.scan()
	if sr := r.SlaveRead(1).Load(); sr != mlx4.CommToggle {
		t.Fatalf("RESET during FLR acknowledged with %#x, want the toggle alone (no version)", sr)
	}
	if err := r.PF.EndFLR(1); err != nil {
		t.Fatal(err)
	}
	r.up(t, 1)
}

// BenchmarkPost measures the PF's whole VHCR_POST path for one command
// (detection, shadow copies, table lookup, execution, write-back,
// acknowledgement) on heap memory, in one goroutine. NOP/traced is NOP with
// the command trace as vhcrd serves it (a default-sized ring, recording
// always), to set against NOP (no ring) in the same run.
func BenchmarkPost(b *testing.B) {
	for _, tc := range []struct {
		op     mlx4.Opcode
		traced bool
	}{{mlx4.NOP, false}, {mlx4.NOP, true}, {mlx4.QUERY_FUNC_CAP, false}, {mlx4.INIT_HCA, false}} {
		name := tc.op.String()
		if tc.traced {
			name += "/traced"
		}
		b.Run(name, func(b *testing.B) {
			var o mastertest.Options
			if tc.traced {
				ring, err := master.NewTrace(0)
				if err != nil {
					b.Fatal(err)
				}
				o.Trace = ring
			}
			r := newStepRigWith(b, 8, o)
			r.up(b, 3)
			r.vhcr(3, tc.op, 2*4096)
			b.ReportAllocs()
			for b.Loop() {
				r.write(3, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
				r.scan()
			}
		})
	}
}

// BenchmarkIdleScan measures one scan of 8 and 126 idle VFs.
func BenchmarkIdleScan(b *testing.B) {
	for _, n := range []int{8, 126} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			r := newStepRig(b, n)
			b.ReportAllocs()
			for b.Loop() {
				r.scan()
			}
		})
	}
}

// TestWriteBackKeepsTheVFsWord: the PF writes the status into the vHCR's
// word at 0x1c and leaves the VF's flags and opcode as they were; the rest
// of the vHCR (in_param, in_modifier, token) is untouched.
func TestWriteBackKeepsTheVFsWord(t *testing.T) {
	r := newStepRig(t, 1)
	r.up(t, 0)
	var img [mlx4.VHCRSize]byte
	h := mlx4.VHCR{InParam: 0x1122334455667700, InMod: 0xabcdef01, OutParam: 0x2000, Token: 0x4242, Op: mlx4.INIT_HCA, OpMod: 3}
	h.Encode(&img)
	r.SetVHCRImage(t, 0, img)
	r.write(0, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
	r.scan()
	got := r.VHCR(t, 0)
	want := img
	want[mlx4.OffStatus] = byte(mlx4.BAD_PARAM)
	if got != want {
		t.Fatalf("vHCR after the PF's write-back:\n got % x\nwant % x", got, want)
	}
}

// TestUnmappedDMAWindow: with a DMA region that cannot be mapped, VHCR_POST
// copies through the window and writes back the status word and the
// immediate output the same way.
func TestUnmappedDMAWindow(t *testing.T) {
	r := newStepRigWith(t, 1, mastertest.Options{UnmappedDMA: true})
	r.up(t, 0)
	if st := r.PF.State(0); st.VHCRMapped || !st.VHCRBoxChecked {
		t.Fatalf("vHCR over a region that has no mapping: mapped %v, page checked %v", st.VHCRMapped, st.VHCRBoxChecked)
	}
	for _, tc := range []struct {
		op     mlx4.Opcode
		opMod  uint8
		status mlx4.Status
		imm    bool
	}{{mlx4.NOP, 0, mlx4.OK, false}, {mlx4.ALLOC_RES, 1, mlx4.OK, true}, {mlx4.INIT_HCA, 0, mlx4.BAD_PARAM, false}} {
		r.SetVHCR(t, 0, mlx4.VHCR{InParam: 0, InMod: 1, OutParam: 0xdead, Token: mlx4.PollToken, Op: tc.op, OpMod: tc.opMod}) // ALLOC_RES of a CQ
		r.write(0, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
		r.scan()
		got := r.VHCR(t, 0)
		var g hca.Cmd
		g.DecodeVHCR(mlx4.VHCRWords(&got))
		if status := mlx4.Status(got[mlx4.OffStatus]); !r.acked(0) || status != tc.status || g.Op != tc.op {
			t.Fatalf("%v: acked=%v status %v op %v", tc.op, r.acked(0), status, g.Op)
		}
		if tc.imm == (g.OutParam == 0xdead) {
			t.Errorf("%v: out_param %#x (immediate output written: %v)", tc.op, g.OutParam, tc.imm)
		}
	}
}

// TestFastPathMatchesGeneral: a command postFast takes is answered exactly
// as the general path answers it: same vHCR image after the write-back, same
// acknowledgement, same counters. Every opcode the table marks plain is
// posted with every op_modifier, once as the first VHCR_POST after VHCR_EN
// (which always takes the general path) and once after a NOP through
// postFast itself.
func TestFastPathMatchesGeneral(t *testing.T) {
	h := mlx4.VHCR{InParam: 0x0000000100000003, InMod: 0x10002, OutParam: 0x7, Token: mlx4.PollToken}
	plain := 0
	for _, e := range master.NewTable().Entries() {
		if !e.Plain() {
			continue
		}
		plain++
		for opMod := uint8(0); opMod < 16; opMod++ {
			h.Op, h.OpMod = e.Op, opMod
			var img [mlx4.VHCRSize]byte
			h.Encode(&img)

			g := newStepRig(t, 1)
			g.up(t, 0)
			gs0 := g.PF.Stats()
			g.SetVHCRImage(t, 0, img)
			g.write(0, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
			g.scan()

			f := newStepRig(t, 1)
			f.up(t, 0)
			f.vhcr(0, mlx4.NOP, 0)
			f.write(0, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
			f.scan()
			fs0 := f.PF.Stats()
			f.SetVHCRImage(t, 0, img)
			f.write(0, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
			legal := e.OpModOK(opMod)
			if took := f.PF.PostFast(0); took != legal {
				t.Fatalf("%v op_mod %d: postFast took it: %v, want %v", e.Op, opMod, took, legal)
			}
			if !legal {
				f.scan()
			}

			gi, fi := g.VHCR(t, 0), f.VHCR(t, 0)
			if gi != fi {
				t.Fatalf("%v op_mod %d: vHCR after the write-back\ngeneral % x\n  plain % x", e.Op, opMod, gi, fi)
			}
			if !g.acked(0) || !f.acked(0) {
				t.Fatalf("%v op_mod %d: not acknowledged (general %v, plain %v)", e.Op, opMod, g.acked(0), f.acked(0))
			}
			gs, fs := g.PF.Stats(), f.PF.Stats()
			for slot := 0; slot < master.NumStatusSlots; slot++ {
				if a, b := gs.Op(e.Index(), slot)-gs0.Op(e.Index(), slot), fs.Op(e.Index(), slot)-fs0.Op(e.Index(), slot); a != b {
					t.Fatalf("%v op_mod %d: status slot %d counted %d by the general path, %d by postFast", e.Op, opMod, slot, a, b)
				}
				if a, b := gs.VF(0, slot)-gs0.VF(0, slot), fs.VF(0, slot)-fs0.VF(0, slot); a != b {
					t.Fatalf("%v op_mod %d: VF 0 status slot %d counted %d by the general path, %d by postFast", e.Op, opMod, slot, a, b)
				}
			}
			for r := refusal.Reason(1); int(r) < refusal.NumReasons; r++ {
				if a, b := gs.Refusal(0, r)-gs0.Refusal(0, r), fs.Refusal(0, r)-fs0.Refusal(0, r); a != b {
					t.Fatalf("%v op_mod %d: refusal %v counted %d by the general path, %d by postFast", e.Op, opMod, r, a, b)
				}
			}
		}
	}
	if plain < 20 {
		t.Fatalf("only %d plain opcodes in the table", plain)
	}
}

// TestFastPathDeclines: postFast leaves every other command to the general
// path and changes nothing when it declines.
func TestFastPathDeclines(t *testing.T) {
	cases := []struct {
		name  string
		opts  mastertest.Options
		setup func(r stepRig)
	}{
		{"inbox", mastertest.Options{}, func(r stepRig) { r.vhcr(0, mlx4.SW2HW_CQ, 0) }},
		{"outbox", mastertest.Options{}, func(r stepRig) { r.vhcr(0, mlx4.QUERY_FUNC_CAP, 0x2000) }},
		{"EPERM", mastertest.Options{}, func(r stepRig) { r.vhcr(0, mlx4.MAD_DEMUX, 0) }},
		{"unknown opcode", mastertest.Options{}, func(r stepRig) { r.vhcr(0, mlx4.INIT_HCA, 0) }},
		{"illegal op_modifier", mastertest.Options{}, func(r stepRig) {
			r.SetVHCR(r.t, 0, mlx4.VHCR{Op: mlx4.ALLOC_RES, OpMod: 5, Token: mlx4.PollToken})
		}},
		{"e bit", mastertest.Options{}, func(r stepRig) {
			r.SetVHCR(r.t, 0, mlx4.VHCR{Op: mlx4.NOP, Flags: mlx4.FlagE, Token: 7})
		}},
		{"unmapped vHCR", mastertest.Options{UnmappedDMA: true}, func(r stepRig) { r.vhcr(0, mlx4.NOP, 0) }},
		{"slave_read rewritten", mastertest.Options{}, func(r stepRig) {
			r.vhcr(0, mlx4.NOP, 0)
			r.SlaveRead(0).Store(r.SlaveRead(0).Load() ^ mlx4.CommToggle)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newStepRigWith(t, 1, tc.opts)
			r.up(t, 0)
			r.vhcr(0, mlx4.NOP, 0)
			r.write(0, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
			r.scan()
			tc.setup(r)
			r.write(0, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
			before := r.VHCR(t, 0)
			sr, st, done := r.SlaveRead(0).Load(), r.PF.State(0), r.PF.Counters().Done
			if r.PF.PostFast(0) {
				t.Fatal("postFast took the command")
			}
			if r.VHCR(t, 0) != before || r.SlaveRead(0).Load() != sr || r.PF.State(0) != st || r.PF.Counters().Done != done {
				t.Fatal("postFast changed state while declining")
			}
		})
	}
}

// TestSlaveWriteReservedBitsIgnored: bits 30:24 of slave_write mean
// nothing, as in mlx4_master_comm_channel, which passes only bits 23:16
// (the command) and 15:0 (the parameter) to mlx4_master_do_cmd: a VF that
// sets them gets each command served as if they were clear, and no reset.
func TestSlaveWriteReservedBitsIgnored(t *testing.T) {
	r := newStepRig(t, 2)
	const reserved = 0x7f000000 // bits 30:24
	if reserved&mlx4.CommSlaveWriteValid != 0 || (reserved|mlx4.CommSlaveWriteValid) != 0xffffffff {
		t.Fatalf("bits 30:24 (%#x) are not exactly the bits outside SlaveWriteValid (%#x)", reserved, mlx4.CommSlaveWriteValid)
	}
	write := func(cmd mlx4.CommCmd, param uint16) {
		t.Helper()
		r.write(1, cmd, param)
		r.SlaveWrite(1).Store(r.SlaveWrite(1).Load() | reserved)
		if !r.scan() {
			t.Fatalf("%v with bits 30:24 set: no work found", cmd)
		}
		if !r.acked(1) {
			t.Fatalf("%v with bits 30:24 set: not acknowledged", cmd)
		}
		if sr := r.SlaveRead(1).Load(); sr&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR != 0 {
			t.Fatalf("%v with bits 30:24 set: reset with bit 17 (slave_read %#08x)", cmd, sr)
		}
	}
	write(mlx4.MLX4_COMM_CMD_RESET, 0)
	if sr := r.SlaveRead(1).Load(); sr&^mlx4.CommToggle != mlx4.CommVersion {
		t.Fatalf("RESET with bits 30:24 set: slave_read %#08x, want the version %#x", sr, mlx4.CommVersion)
	}
	for _, c := range []mlx4.CommCmd{mlx4.MLX4_COMM_CMD_VHCR0, mlx4.MLX4_COMM_CMD_VHCR1, mlx4.MLX4_COMM_CMD_VHCR2, mlx4.MLX4_COMM_CMD_VHCR_EN} {
		write(c, 0) // the vHCR at IOVA 0
	}
	if st := r.PF.State(1); st.LastCmd != mlx4.MLX4_COMM_CMD_VHCR_EN || !st.Active {
		t.Fatalf("after VHCR_EN with bits 30:24 set: %v active=%v", st.LastCmd, st.Active)
	}
	r.vhcr(1, mlx4.NOP, 0)
	write(mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
	if img := r.VHCR(t, 1); mlx4.Status(img[mlx4.OffStatus]) != mlx4.OK {
		t.Fatalf("NOP posted with bits 30:24 set: status %v", mlx4.Status(img[mlx4.OffStatus]))
	}
	for _, why := range master.ResetReasons() {
		if n := r.PF.Stats().Reset(1, why); n != 0 && why != master.ResetByVF {
			t.Errorf("VF 1 reset %d times for %v", n, why)
		}
	}
	if st := r.PF.State(1); st.LastCmd != mlx4.MLX4_COMM_CMD_VHCR_POST || !st.Active {
		t.Fatalf("after the NOP: %v active=%v", st.LastCmd, st.Active)
	}
}

// TestFLRTellsTheVF: an FLR of a VF whose driver is bound (the operator's
// `vhcrd vf flr N`) marks its slave_read with bit 17, its toggle kept, as
// mlx4_report_internal_err_comm_event marks a VF whose function is gone:
// Linux's VF reads it in its catas poll and at an unbind
// (mlx4_unregister_device), and resets itself without waiting for a
// command's timeout. A command it posts anyway is answered as
// mlx4_master_do_cmd answers a VF in reset: acknowledged with bit 17
// (reason sequence). Its RESET clears the mark. No other VF is marked.
func TestFLRTellsTheVF(t *testing.T) {
	r := newStepRig(t, 2)
	r.up(t, 0)
	r.up(t, 1)
	r.vhcr(1, mlx4.NOP, 0)
	r.write(1, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
	r.scan()
	before := r.SlaveRead(1).Load()
	if !r.acked(1) || before&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR != 0 {
		t.Fatalf("NOP before the FLR: acked %v, slave_read %#08x", r.acked(1), before)
	}
	if err := r.PF.FLR(1); err != nil {
		t.Fatal(err)
	}
	if got := r.SlaveRead(1).Load(); got != before|mlx4.COMM_CHAN_EVENT_INTERNAL_ERR {
		t.Fatalf("slave_read after the FLR %#08x, want %#08x (the toggle kept, bit 17)", got, before|mlx4.COMM_CHAN_EVENT_INTERNAL_ERR)
	}
	if got := r.SlaveRead(0).Load(); got&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR != 0 {
		t.Fatalf("VF 0's slave_read %#08x after VF 1's FLR", got)
	}
	// The driver's next command (an unbind's 2RST_QP) before it noticed.
	r.vhcr(1, mlx4.TWO_RST_QP, 0)
	r.write(1, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
	r.scan()
	if sr := r.SlaveRead(1).Load(); !r.acked(1) || sr&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR == 0 {
		t.Fatalf("a command after the FLR: acked %v, slave_read %#08x; want it acknowledged with bit 17", r.acked(1), sr)
	}
	if n := r.PF.Stats().Reset(1, master.ResetSequence); n != 1 {
		t.Errorf("resets for a command after the FLR: %d, want 1 (sequence)", n)
	}
	// mlx4_reset_slave's FLAGS handshake, then the restarted driver's RESET.
	f, err := r.VFBARs[1].Load32(mlx4.MLX4_COMM_CHAN_FLAGS)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.VFBARs[1].Store32(mlx4.MLX4_COMM_CHAN_FLAGS, f^mlx4.CommFlagsResetReq); err != nil {
		t.Fatal(err)
	}
	r.PF.CheckFlags()
	r.write(1, mlx4.MLX4_COMM_CMD_RESET, 0)
	r.scan()
	if sr := r.SlaveRead(1).Load(); !r.acked(1) || sr&^mlx4.CommToggle != mlx4.CommVersion {
		t.Fatalf("RESET after the FLR: slave_read %#08x, want the toggle and the version alone", sr)
	}
	r.up(t, 1)
	if st := r.PF.State(0); st.LastCmd != mlx4.MLX4_COMM_CMD_VHCR_EN || !st.Active {
		t.Fatalf("VF 0 after VF 1's FLR: %v active=%v", st.LastCmd, st.Active)
	}
}
