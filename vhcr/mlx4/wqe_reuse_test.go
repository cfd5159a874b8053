package mlx4

import (
	"reflect"
	"testing"
)

// dirty sets every field of the value v points to non-zero, recursively,
// so that a field Decode forgets to reset shows.
func dirty(v reflect.Value) {
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(0x5a5a5a5a5a5a5a5a & (1<<(8*v.Type().Size()) - 1))
	case reflect.Int:
		v.SetInt(0x5a5a)
	case reflect.Array:
		for i := range v.Len() {
			dirty(v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			dirty(v.Field(i))
		}
	default:
		panic("dirty: " + v.Kind().String())
	}
}

// TestDecodeIntoUsedValue: Decode into a value a previous WQE filled (any
// bits in every field, every segment's Has flag set with it, as Decode
// sets them) gives what a fresh decode gives, but for the gather and
// scatter entries at and past NSGE, which nothing reads; and so does a
// chain of decodes of WQEs with different segments into one value.
func TestDecodeIntoUsedValue(t *testing.T) {
	var inl [40]byte
	sends := []struct {
		st uint8
		w  SendWQE
		in []byte
	}{
		{QP_ST_RC, SendWQE{Ctrl: WQECtrl{Opcode: OPCODE_SEND, SrcRBFlags: WQE_CTRL_CQ_UPDATE}, NSGE: 1, SGE: [MaxSGE]Gather{{ByteCount: 64, LKey: 0x1234, Addr: 0x1000}}}, nil},
		{QP_ST_RC, SendWQE{Ctrl: WQECtrl{Opcode: OPCODE_RDMA_WRITE}, HasRAddr: true, RAddr: RAddrSeg{RAddr: 0x2000, RKey: 9}, NSGE: 2,
			SGE: [MaxSGE]Gather{{ByteCount: 8, LKey: 1, Addr: 2}, {ByteCount: 16, LKey: 3, Addr: 4}}}, nil},
		{QP_ST_RC, SendWQE{Ctrl: WQECtrl{Opcode: OPCODE_ATOMIC_CS}, HasRAddr: true, HasAtomic: true, Atomic: AtomicSeg{SwapAdd: 1, Compare: 2}}, nil},
		{QP_ST_UD, SendWQE{Ctrl: WQECtrl{Opcode: OPCODE_SEND_IMM, Imm: 7}, HasDatagram: true,
			Datagram: DatagramSeg{AV: AV{PortPD: 1 << 24, DLID: 5, DGID: [16]byte{1, 2}}, DQPN: 0x48, QKey: 0x11}, NSGE: 1,
			SGE: [MaxSGE]Gather{{Inline: true, ByteCount: 40}}}, inl[:]},
		{QP_ST_RC, SendWQE{Ctrl: WQECtrl{Opcode: OPCODE_NOP}}, nil},
	}
	for i, c := range sends {
		var b [512]byte
		if _, err := EncodeSendWQE(b[:], &c.w, c.in); err != nil {
			t.Fatal(err)
		}
		want, werr := DecodeSendWQE(b[:], c.st)
		var got SendWQE
		dirty(reflect.ValueOf(&got).Elem())
		gerr := got.Decode(b[:], c.st)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("WQE %d: errors %v and %v", i, werr, gerr)
		}
		clear(got.SGE[got.NSGE:])
		if got != want {
			t.Fatalf("WQE %d: decoded into a used value\n%+v\nfresh\n%+v", i, got, want)
		}
	}
	// One value through every WQE above, in order and back: each decode
	// clears the segments the one before had.
	var chain SendWQE
	for _, i := range []int{0, 1, 2, 3, 4, 3, 2, 1, 0, 3, 0} {
		c := sends[i]
		var b [512]byte
		if _, err := EncodeSendWQE(b[:], &c.w, c.in); err != nil {
			t.Fatal(err)
		}
		want, werr := DecodeSendWQE(b[:], c.st)
		gerr := chain.Decode(b[:], c.st)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("WQE %d in the chain: errors %v and %v", i, werr, gerr)
		}
		got := chain
		clear(got.SGE[got.NSGE:])
		if got != want {
			t.Fatalf("WQE %d decoded after another\n%+v\nfresh\n%+v", i, got, want)
		}
	}
	var b [64]byte
	r := RecvWQE{NSGE: 2, SGE: [MaxSGE]Gather{{ByteCount: 64, LKey: 5, Addr: 6}, {ByteCount: 1, LKey: 7, Addr: 8}}}
	for _, srq := range []bool{false, true} {
		r.NextWQEIndex = 0
		if srq {
			r.NextWQEIndex = 3
		}
		if _, err := EncodeRecvWQE(b[:], &r, srq); err != nil {
			t.Fatal(err)
		}
		want, _ := DecodeRecvWQE(b[:], srq)
		var got RecvWQE
		dirty(reflect.ValueOf(&got).Elem())
		if err := got.Decode(b[:], srq); err != nil {
			t.Fatal(err)
		}
		clear(got.SGE[got.NSGE:])
		if got != want {
			t.Fatalf("receive WQE (srq %v) decoded into a used value\n%+v\nfresh\n%+v", srq, got, want)
		}
	}
}
