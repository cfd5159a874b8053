package mlx4

import (
	"bytes"
	"testing"
)

// FuzzDecodeSendWQE fuzzes the send WQE decoder on each transport: it
// never panics nor reads past the size field; what decodes re-encodes to
// a WQE of the same size that decodes to the same value.
func FuzzDecodeSendWQE(f *testing.F) {
	var b [128]byte
	w := SendWQE{Ctrl: WQECtrl{Opcode: OPCODE_RDMA_WRITE}, HasRAddr: true, NSGE: 1}
	n, _ := EncodeSendWQE(b[:], &w, nil)
	f.Add(b[:n], uint8(QP_ST_RC))
	f.Add(make([]byte, 64), uint8(QP_ST_UD))
	f.Fuzz(func(t *testing.T, in []byte, st uint8) {
		w, err := DecodeSendWQE(in, st)
		if err != nil {
			return
		}
		size := w.Bytes()
		if size == 0 || size > len(in) || w.NSGE > MaxSGE {
			t.Fatalf("decoded size %d of %d bytes, %d entries", size, len(in), w.NSGE)
		}
		if cut, err := DecodeSendWQE(in[:size], st); err != nil || cut != w {
			t.Fatalf("the WQE cut at its size decodes differently: %v", err)
		}
		var inline []byte
		if w.HasLSO {
			inline = append(inline, in[w.LSO.HdrOff:w.LSO.HdrOff+int(w.LSO.HdrSize)]...)
		}
		for _, g := range w.SGE[:w.NSGE] {
			if g.Inline {
				if g.Off+int(g.ByteCount) > size {
					t.Fatalf("inline data at %d+%d past the WQE's %d bytes", g.Off, g.ByteCount, size)
				}
				inline = append(inline, in[g.Off:g.Off+int(g.ByteCount)]...)
			}
		}
		out := make([]byte, size)
		n, err := EncodeSendWQE(out, &w, inline)
		if err != nil || n != size {
			t.Fatalf("re-encode: %d bytes, %v; the WQE had %d", n, err, size)
		}
		again, err := DecodeSendWQE(out, st)
		if err != nil || again != w {
			t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, again, w)
		}
	})
}

// FuzzDecodeRecvWQE fuzzes the receive WQE decoder (RQ and SRQ): what
// decodes re-encodes into the same stride and decodes the same.
func FuzzDecodeRecvWQE(f *testing.F) {
	var b [64]byte
	r := RecvWQE{NSGE: 1, SGE: [MaxSGE]Gather{{ByteCount: 4096, LKey: 1, Addr: 0x1000}}}
	_, _ = EncodeRecvWQE(b[:], &r, false)
	f.Add(b[:], false)
	f.Add(b[:], true)
	f.Fuzz(func(t *testing.T, in []byte, srq bool) {
		r, err := DecodeRecvWQE(in, srq)
		if err != nil {
			return
		}
		out := make([]byte, len(in))
		if _, err := EncodeRecvWQE(out, &r, srq); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		again, err := DecodeRecvWQE(out, srq)
		if err != nil || again != r {
			t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, again, r)
		}
	})
}

// FuzzDecodeCQE fuzzes the CQE decoder: every 32 bytes decode, and encode
// back to the same bytes but owner_sr_opcode's unused bit 5; Decode into a
// value holding another CQE (a poller's) gives the same CQE.
func FuzzDecodeCQE(f *testing.F) {
	b := EncodeCQE(CQE{VlanMyQPN: 0x48, ByteCnt: 64, Owner: true, Opcode: RECV_OPCODE_SEND})
	f.Add(b[:])
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := DecodeCQE(in)
		if err != nil {
			if len(in) >= CQESize {
				t.Fatalf("%d bytes: %v", len(in), err)
			}
			return
		}
		used := CQE{VlanMyQPN: ^uint32(0), ImmedRSSInvalid: 1, GMLPathRQPN: 2, SLVID: 3, RLID: 4, Status: 5, IPv6ExtMask: 6,
			BadFCSEnc: 7, ByteCnt: 8, WQEIndex: 9, Checksum: 10, Reserved: [3]byte{11, 12, 13}, Owner: true, IsSend: true, Opcode: 14}
		if err := used.Decode(in); err != nil || used != c {
			t.Fatalf("Decode into a used value: %+v, %v; DecodeCQE: %+v", used, err, c)
		}
		out := EncodeCQE(c)
		want := [CQESize]byte(in[:CQESize])
		want[CQEOwnerSROpcode] &^= 0x20
		if !bytes.Equal(out[:], want[:]) {
			t.Fatalf("re-encoded\n% x\nfrom\n% x", out, in[:CQESize])
		}
	})
}
