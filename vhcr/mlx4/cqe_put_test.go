package mlx4

import (
	"bytes"
	"errors"
	"testing"
)

// TestPutCQEGolden: PutCQE writes the literal bytes of TestCQEGolden's CQE
// (every field at its struct mlx4_cqe offset) over a dirty buffer, touches
// nothing past 32 bytes, and agrees with EncodeCQE on an error CQE.
func TestPutCQEGolden(t *testing.T) {
	c := CQE{VlanMyQPN: CQE_VLAN_PRESENT_MASK | 0x000048, ImmedRSSInvalid: 0x11223344, GMLPathRQPN: CQE_G_MASK | 5<<24 | 0x4849,
		SLVID: 3 << 12, RLID: 0x0017, Status: 0x1234, IPv6ExtMask: 0x56, BadFCSEnc: 0x78, ByteCnt: 4096,
		WQEIndex: 0xfffe, Checksum: 0xabcd, Reserved: [3]byte{1, 2, 3}, Owner: true, IsSend: true, Opcode: OPCODE_SEND}
	want := []byte{0x20, 0, 0, 0x48, 0x11, 0x22, 0x33, 0x44, 0x85, 0, 0x48, 0x49, 0x30, 0, 0, 0x17,
		0x12, 0x34, 0x56, 0x78, 0, 0, 0x10, 0, 0xff, 0xfe, 0xab, 0xcd, 1, 2, 3, 0xca}
	b := bytes.Repeat([]byte{0xee}, CQESize+1)
	if err := PutCQE(b, &c); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b[:CQESize], want) || b[CQESize] != 0xee {
		t.Fatalf("CQE\n% x\nwant\n% x ee", b, want)
	}
	e := CQE{VlanMyQPN: 0x99, WQEIndex: 7, IsSend: true}
	e.SetError(CQE_SYNDROME_WR_FLUSH_ERR, 0x32)
	if err := PutCQE(b, &e); err != nil {
		t.Fatal(err)
	}
	if eb := EncodeCQE(e); !bytes.Equal(b[:CQESize], eb[:]) || b[ErrCQESyndrome] != 0x05 || b[31] != 0x40|0x1e {
		t.Fatalf("error CQE % x, EncodeCQE % x", b[:CQESize], eb)
	}
	if err := PutCQE(b[:31], &c); !errors.Is(err, ErrShort) {
		t.Errorf("31 bytes: %v", err)
	}
}

// FuzzPutCQE: for every CQE a 32-byte pattern decodes to, PutCQE writes
// what EncodeCQE returns.
func FuzzPutCQE(f *testing.F) {
	b := EncodeCQE(CQE{VlanMyQPN: 0x48, ByteCnt: 64, Owner: true, Opcode: RECV_OPCODE_SEND})
	f.Add(b[:])
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := DecodeCQE(in)
		if err != nil {
			return
		}
		var out [CQESize]byte
		if err := PutCQE(out[:], &c); err != nil {
			t.Fatal(err)
		}
		if want := EncodeCQE(c); out != want {
			t.Fatalf("PutCQE\n% x\nEncodeCQE\n% x", out, want)
		}
	})
}
