package master_test

import (
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/faultinj"
	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// FuzzCommChannel drives VF 1's comm page with arbitrary slave_write words,
// slave_read rewrites and vHCR images, and checks what must hold whatever a
// VF does: no panic, VF 1's state is one of the machine's states, an active
// VF has a valid vHCR address, and VF 0 — which posts a NOP between every
// step — is always served and never reset.
//
// Input: a sequence of 9-byte steps: kind, word (4), and 4 bytes that seed
// the vHCR image (opcode, op_mod, flags, in_param page). Kinds 0xf8-0xff
// arm a fault that leaves VF 1's next comm command (even kinds) or post
// (odd) unanswered: never, toggle_never, toggle_twice (bits 2:1; 3 is
// never); the others store the word in slave_write (kind%3 == 0), zero
// both registers (1) or store it in slave_read (2).
func FuzzCommChannel(f *testing.F) {
	up := []byte{}
	for i, c := range []mlx4.CommCmd{mlx4.MLX4_COMM_CMD_RESET, mlx4.MLX4_COMM_CMD_VHCR0, mlx4.MLX4_COMM_CMD_VHCR1, mlx4.MLX4_COMM_CMD_VHCR2, mlx4.MLX4_COMM_CMD_VHCR_EN, mlx4.MLX4_COMM_CMD_VHCR_POST, mlx4.MLX4_COMM_CMD_VHCR_POST} {
		w := mlx4.CommWord(uint32(i+1)&1, c, 0)
		up = append(up, 0, byte(w>>24), byte(w>>16), byte(w>>8), byte(w), 0x00, 0x31, 0, 0)
	}
	f.Add(up)
	f.Add(append(append([]byte{}, up...), 0, 0x80, 0x07, 0, 0, 0, 0, 0, 0))             // unknown comm command 7
	f.Add(append(append([]byte{}, up...), 1, 0, 0, 0, 0, 0, 0, 0, 0))                   // zero the registers
	f.Add(append(append([]byte{}, up...), 0, 0x00, 0x05, 0, 0x55, 0x0f, 0x0a, 0x40, 3)) // POST without a flip
	// toggle_never (and never) at a RESET with toggle 1, then the driver's
	// sync_toggles: slave_read 0, slave_write 0, RESET with toggle 1
	// again; scanned between the two zeros, or after both.
	post0 := []byte{0, 0x00, 0x05, 0, 0, 0x00, 0x31, 0, 0} // VF 1's next post, toggle 0
	reset1 := []byte{0, 0x80, 0, 0, 0, 0x00, 0x31, 0, 0}
	for _, kind := range []byte{0xfa, 0xf8} {
		arm := []byte{kind, 0, 0, 0, 0, 0x00, 0x31, 0, 0}
		seq := append(append(append(append([]byte{}, up...), post0...), arm...), reset1...)
		f.Add(append(append(append(append([]byte{}, seq...), 2, 0, 0, 0, 0, 0x00, 0x31, 0, 0), 0, 0, 0, 0, 0, 0x00, 0x31, 0, 0), reset1...))
		f.Add(append(append(append([]byte{}, seq...), 1, 0, 0, 0, 0, 0x00, 0x31, 0, 0), reset1...))
	}
	// toggle_never at a post with toggle 1, then sync_toggles and RESET.
	arm := []byte{0xfb, 0, 0, 0, 0, 0x00, 0x31, 0, 0}
	seq := append(append(append([]byte{}, up...), post0...), arm...)
	seq = append(seq, 0, 0x80, 0x05, 0, 0, 0x00, 0x31, 0, 0)
	f.Add(append(append(append(append([]byte{}, seq...), 2, 0, 0, 0, 0, 0x00, 0x31, 0, 0), 0, 0, 0, 0, 0, 0x00, 0x31, 0, 0), reset1...))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := newStepRig(t, 2)
		r.up(t, 0)
		r.vhcr(0, mlx4.NOP, 0)
		win := r.Layout.Window
		for len(in) >= 9 {
			kind, w, seed := in[0], binary.BigEndian.Uint32(in[1:5]), in[5:9]
			in = in[9:]
			// The vHCR image VF 1 leaves in its page 0.
			h := mlx4.VHCR{Op: mlx4.Opcode(binary.BigEndian.Uint16(seed[0:2]) & 0xfff), OpMod: seed[0] >> 4, Flags: seed[2],
				InParam: uint64(seed[3]) * 0x1000, OutParam: uint64(seed[3]^1) * 0x1000, Token: mlx4.PollToken}
			r.SetVHCR(t, 1, h)
			switch {
			case kind >= 0xf8:
				spec := faultinj.Spec{Kind: [4]string{"never", "toggle_never", "toggle_twice", "never"}[kind>>1&3], VF: vfp(1), Nth: 1}
				if kind&1 == 0 {
					spec.Comm = "any"
				} else {
					spec.Op = "any"
				}
				addFault(t, r.PF, spec)
			case kind%3 == 0:
				r.SlaveWrite(1).Store(w)
			case kind%3 == 1:
				r.SlaveWrite(1).Store(0)
				r.SlaveRead(1).Store(0)
			default:
				r.SlaveRead(1).Store(w)
			}
			r.write(0, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
			r.scan()
			if !r.acked(0) {
				t.Fatal("VF 0 was not served")
			}
			st := r.PF.State(1)
			switch st.LastCmd {
			case mlx4.MLX4_COMM_CMD_RESET, mlx4.MLX4_COMM_CMD_VHCR0, mlx4.MLX4_COMM_CMD_VHCR1, mlx4.MLX4_COMM_CMD_VHCR2:
				if st.Active {
					t.Fatalf("VF 1 active in %v", st.LastCmd)
				}
			case mlx4.MLX4_COMM_CMD_VHCR_EN, mlx4.MLX4_COMM_CMD_VHCR_POST:
				if !st.Active || st.VHCR&0xfff != 0 || st.VHCR+mlx4.VHCRSize > uint64(win) || !st.VHCRMapped {
					t.Fatalf("VF 1 in %v with vHCR %#x active=%v mapped=%v", st.LastCmd, st.VHCR, st.Active, st.VHCRMapped)
				}
			default:
				t.Fatalf("VF 1 in state %v", st.LastCmd)
			}
		}
		for _, why := range master.ResetReasons() {
			if why != master.ResetByVF && r.PF.Counters().Reset(0, why) != 0 {
				t.Fatalf("VF 0 reset for %v by VF 1's input", why)
			}
		}
	})
}

// FuzzSavedState gives a restarted PF an arbitrary saved record for VF 1,
// arbitrary comm registers and a PF_GEN moved by an arbitrary amount, and
// checks: no panic; VF 1 is restored into a state of the machine (an active
// one with a mapped vHCR) or reset with bit 17 and its own toggle, never
// with its registers zeroed; VF 0, whose record is intact, keeps serving
// unless the generation moved.
//
// Input: the 16 record bytes, slave_write, slave_read, and a PF_GEN delta.
func FuzzSavedState(f *testing.F) {
	f.Add(make([]byte, 28))
	f.Add([]byte{0x80, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0x80, 0x05, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0x80, 0, 1, 4, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0x04, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 28 {
			return
		}
		r := newStepRig(t, 2)
		r.up(t, 0)
		r.up(t, 1)
		base := wire.HdrVFRecord(1)
		if _, err := r.BAR.WriteAt(in[:16], base); err != nil {
			t.Fatal(err)
		}
		sw, sr := binary.BigEndian.Uint32(in[16:]), binary.BigEndian.Uint32(in[20:])
		r.SlaveWrite(1).Store(sw)
		r.SlaveRead(1).Store(sr)
		delta := binary.BigEndian.Uint32(in[24:])
		g, _ := r.BAR.Load32(wire.HdrPFGen)
		_ = r.BAR.Store32(wire.HdrPFGen, g+delta)
		r.Rebuild(t)
		st := r.PF.State(1)
		got := r.SlaveRead(1).Load()
		switch {
		case got == sr: // restored, or never used
			switch st.LastCmd {
			case mlx4.MLX4_COMM_CMD_RESET, mlx4.MLX4_COMM_CMD_VHCR0, mlx4.MLX4_COMM_CMD_VHCR1, mlx4.MLX4_COMM_CMD_VHCR2:
				if st.Active {
					t.Fatalf("restored active in %v", st.LastCmd)
				}
			case mlx4.MLX4_COMM_CMD_VHCR_EN, mlx4.MLX4_COMM_CMD_VHCR_POST:
				if !st.Active || !st.VHCRMapped {
					t.Fatalf("restored %v with vHCR %#x unmapped", st.LastCmd, st.VHCR)
				}
			default:
				t.Fatalf("restored in state %v", st.LastCmd)
			}
		case got == sw&mlx4.CommToggle|mlx4.COMM_CHAN_EVENT_INTERNAL_ERR:
			if st.LastCmd != mlx4.MLX4_COMM_CMD_RESET || st.Active {
				t.Fatalf("told bit 17 but left in %v active=%v", st.LastCmd, st.Active)
			}
		default:
			t.Fatalf("slave_read %#08x after the restart (was %#08x, slave_write %#08x)", got, sr, sw)
		}
		if delta != 0 && delta != ^uint32(0) {
			return // VF 0's record is from another generation too
		}
		r.vhcr(0, mlx4.NOP, 0)
		r.write(0, mlx4.MLX4_COMM_CMD_VHCR_POST, 0)
		r.scan()
		if !r.acked(0) || r.SlaveRead(0).Load()&mlx4.COMM_CHAN_EVENT_INTERNAL_ERR != 0 {
			t.Fatalf("VF 0 not served after the restart: slave_read %#08x", r.SlaveRead(0).Load())
		}
	})
}
