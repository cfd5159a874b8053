package mlx4

import (
	"bytes"
	"testing"
)

func TestEQERoundTrip(t *testing.T) {
	for _, e := range []EQE{
		{Type: EventCmd, Token: 0xbeef, Status: 4, OutParam: 0x0102030405060708, SlaveID: 3},
		{Type: EventCQError, Object: 0x123456, Status: 1, Owner: true},
		{Type: EventPortChange, Subtype: PORT_CHANGE_SUBTYPE_ACTIVE, Port: 2},
		{Type: EventCommEst, Object: 0xabcdef},
		{Type: EventPortMngChg, Subtype: DEV_PMC_SUBTYPE_PORT_INFO, Port: 1, ChangedAttr: EQ_PORT_INFO_LID_CHANGE_MASK},
		{Type: EventPortMngChg, Subtype: DEV_PMC_SUBTYPE_GUID_INFO, Port: 2},
	} {
		b := EncodeEQE(e)
		got, err := DecodeEQE(b[:])
		if err != nil {
			t.Fatal(err)
		}
		got.Raw = [EQESize]byte{}
		if got != e {
			t.Errorf("round trip %+v → %+v", e, got)
		}
	}
	if _, err := DecodeEQE(make([]byte, 31)); err == nil {
		t.Fatal("31-byte EQE decoded")
	}
}

// Every kind of EQE the PF posts, byte for byte at struct mlx4_eqe's
// offsets (literal here, as in layout_test.go).
func TestEQEGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		e    EQE
		want [EQESize]byte
	}{
		{"CMD", EQE{Type: EventCmd, Token: 0x1234, Status: 0x06, OutParam: 0xa1a2a3a4a5a6a7a8},
			[EQESize]byte{0x01: 0x0a, 0x06: 0x12, 0x07: 0x34, 0x0f: 0x06, 0x10: 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8}},
		// event.port_change.port: the port in bits 31:28 of the BE32 at 0x0c.
		{"PORT_CHANGE down port 2", EQE{Type: EventPortChange, Subtype: PORT_CHANGE_SUBTYPE_DOWN, Port: 2},
			[EQESize]byte{0x01: 0x09, 0x03: 1, 0x0c: 0x20}},
		{"PORT_CHANGE active port 1", EQE{Type: EventPortChange, Subtype: PORT_CHANGE_SUBTYPE_ACTIVE, Port: 1},
			[EQESize]byte{0x01: 0x09, 0x03: 4, 0x0c: 0x10}},
		// port_mgmt_change: reserved[3], port at 0x07, params at 0x08;
		// port_info: mstr_sm_lid, port_lid, changed_attr BE32 at 0x0c.
		{"PORT_MNG_CHG PORT_INFO", EQE{Type: EventPortMngChg, Subtype: DEV_PMC_SUBTYPE_PORT_INFO, Port: 2,
			ChangedAttr: EQ_PORT_INFO_LID_CHANGE_MASK | EQ_PORT_INFO_CLIENT_REREG_MASK},
			[EQESize]byte{0x01: 0x1d, 0x03: 0x15, 0x07: 2, 0x0f: 0x0c}},
		{"PORT_MNG_CHG PKEY_TABLE", EQE{Type: EventPortMngChg, Subtype: DEV_PMC_SUBTYPE_PKEY_TABLE, Port: 1},
			[EQESize]byte{0x01: 0x1d, 0x03: 0x16, 0x07: 1}},
		{"PORT_MNG_CHG GUID_INFO", EQE{Type: EventPortMngChg, Subtype: DEV_PMC_SUBTYPE_GUID_INFO, Port: 1},
			[EQESize]byte{0x01: 0x1d, 0x03: 0x14, 0x07: 1}},
		// The object number is the low 24 bits of the BE32 at 0x04.
		{"QP COMM_EST", EQE{Type: EventCommEst, Object: 0xff123456},
			[EQESize]byte{0x01: 0x02, 0x05: 0x12, 0x06: 0x34, 0x07: 0x56}},
		{"CQ_ERROR", EQE{Type: EventCQError, Object: 0x000042, Status: 1},
			[EQESize]byte{0x01: 0x04, 0x07: 0x42, 0x0f: 1}},
		{"owner, slave_id", EQE{Type: EventSRQLimit, Object: 7, SlaveID: 3, Owner: true},
			[EQESize]byte{0x01: 0x14, 0x07: 7, 0x1c: 3, 0x1f: 0x80}},
	} {
		if got := EncodeEQE(c.e); got != c.want {
			t.Errorf("%s:\n% x\nwant\n% x", c.name, got, c.want)
		}
	}
	// CompletionEQE is EncodeEQE's CMD case.
	var e [EQESize]byte
	for i := range e {
		e[i] = 0xa5
	}
	CompletionEQE(&e, 0x1234, 0x06, 0xa1a2a3a4a5a6a7a8)
	if want := EncodeEQE(EQE{Type: EventCmd, Token: 0x1234, Status: 0x06, OutParam: 0xa1a2a3a4a5a6a7a8}); e != want {
		t.Errorf("CompletionEQE\n% x\nEncodeEQE\n% x", e, want)
	}
}

// FuzzDecodeEQE: every 32-byte image decodes, the header fields are the
// bytes at their offsets, and re-encoding the decoded fields is stable.
func FuzzDecodeEQE(f *testing.F) {
	for _, e := range []EQE{
		{Type: EventCmd, Token: 1, OutParam: 42},
		{Type: EventCQError, Object: 7, Status: 1, Owner: true},
		{Type: EventPortChange, Subtype: PORT_CHANGE_SUBTYPE_DOWN, Port: 1},
		{Type: EventPortMngChg, Subtype: DEV_PMC_SUBTYPE_PORT_INFO, Port: 1, ChangedAttr: EQ_PORT_INFO_CLIENT_REREG_MASK},
	} {
		b := EncodeEQE(e)
		f.Add(b[:])
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		e, err := DecodeEQE(in)
		if len(in) < EQESize {
			if err == nil {
				t.Fatalf("%d bytes decoded", len(in))
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(e.Raw[:], in[:EQESize]) || e.Type != in[1] || e.Subtype != in[3] || e.SlaveID != in[0x1c] ||
			e.Owner != (in[0x1f]&0x80 != 0) {
			t.Fatalf("decode %x: %+v", in[:EQESize], e)
		}
		b := EncodeEQE(e)
		again, _ := DecodeEQE(b[:])
		again.Raw, e.Raw = [EQESize]byte{}, [EQESize]byte{}
		if again != e {
			t.Fatalf("re-encode %+v → %+v", e, again)
		}
	})
}
