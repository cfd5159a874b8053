package mlx4

import "testing"

// FuzzDecodeVHCR: every 32-byte image decodes; encoding the decoded form and
// decoding again gives the same command (the reserved words are dropped).
func FuzzDecodeVHCR(f *testing.F) {
	seed := VHCR{InParam: 0x1000, InMod: 3, OutParam: 0x2000, Token: PollToken, Flags: FlagE, Op: QUERY_FUNC_CAP, OpMod: 1}
	var b [VHCRSize]byte
	seed.Encode(&b)
	f.Add(b[:])
	f.Add(make([]byte, VHCRSize))
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < VHCRSize {
			return
		}
		var img [VHCRSize]byte
		copy(img[:], in)
		v := DecodeVHCR(&img)
		if v.Op > 0xfff || v.OpMod > 0xf {
			t.Fatalf("decoded opcode %#x op_mod %#x out of range", v.Op, v.OpMod)
		}
		var again [VHCRSize]byte
		v.Encode(&again)
		if w := DecodeVHCR(&again); w != v {
			t.Fatalf("round trip: %+v != %+v", w, v)
		}
	})
}
