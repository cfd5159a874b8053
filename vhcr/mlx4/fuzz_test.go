package mlx4

import (
	"encoding/binary"
	"testing"
)

// FuzzDecodeVHCR fuzzes the master's vHCR decoder (VHCRWords, then
// DecodeVHCR): every 32-byte image decodes; each field is the one at
// its offset of struct mlx4_vhcr_cmd; encoding the decoded fields and
// decoding again gives the same command (reserved fields and status are
// dropped); the status word written back keeps the VF's flags and opcode.
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
		img := (*[VHCRSize]byte)(in)
		var c VHCR
		var e bool
		w0, w1, w2, w3 := VHCRWords(img)
		c.InParam, c.InMod, c.OutParam, c.Token, e, c.OpMod, c.Op = DecodeVHCR(w0, w1, w2, w3)
		opw := binary.BigEndian.Uint16(img[OffOpcode:])
		if c.InParam != binary.BigEndian.Uint64(img[OffInParam:]) || c.InMod != binary.BigEndian.Uint32(img[OffInMod:]) ||
			c.OutParam != binary.BigEndian.Uint64(img[OffOutParam:]) || c.Token != binary.BigEndian.Uint16(img[OffToken:]) ||
			e != (img[OffFlags]&FlagE != 0) || c.Op != Opcode(opw&0xfff) || c.OpMod != uint8(opw>>12) {
			t.Fatalf("decoded %+v from % x", c, img[:])
		}
		if e {
			c.Flags = FlagE
		}
		var again [VHCRSize]byte
		c.Encode(&again)
		var d VHCR
		var de bool
		d.InParam, d.InMod, d.OutParam, d.Token, de, d.OpMod, d.Op = DecodeVHCR(VHCRWords(&again))
		if de {
			d.Flags = FlagE
		}
		if d != c {
			t.Fatalf("round trip: %+v != %+v", d, c)
		}
		if got := Word3(c.Token, img[OffFlags], c.OpMod, c.Op); got>>48 != w3>>48 || got>>24&0xffffff != 0 || got&0xffffff != w3&0xffffff {
			t.Fatalf("Word3 %#x, image's word 3 %#x", got, w3)
		}
		var wb [4]byte
		binary.BigEndian.PutUint32(wb[:], StatusWord(BAD_PARAM, w3))
		if wb[0] != byte(BAD_PARAM) || wb[1] != img[OffFlags] || binary.BigEndian.Uint16(wb[2:]) != opw {
			t.Fatalf("status word % x from % x", wb, img[OffStatus:])
		}
	})
}
