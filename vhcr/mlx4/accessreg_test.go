package mlx4

import (
	"encoding/binary"
	"testing"
)

// TestAccessRegPTYS: the inbox carries the operation TLV as
// mlx4_ACCESS_PTYS_REG builds it, and the decoder reads the register from
// the data that follows the header.
func TestAccessRegPTYS(t *testing.T) {
	var b [MailboxSize]byte
	b[AccessRegData+PTYSEthProtoCap] = 0xff // cleared by the encoder
	EncodeAccessRegPTYS(&b, AccessRegQuery, 2, PTYSProtoIB)
	if got := binary.BigEndian.Uint16(b[AccessRegTLV:]); got != 1<<11|4 {
		t.Errorf("TLV %#x", got)
	}
	if binary.BigEndian.Uint16(b[AccessRegID:]) != RegIDPTYS || b[AccessRegMethod] != AccessRegQuery || b[AccessRegClass] != AccessRegClassRA {
		t.Errorf("header % x", b[:AccessRegData])
	}
	if got := binary.BigEndian.Uint16(b[AccessRegLen:]); got != 0x3<<12|(PTYSSize/4+1) {
		t.Errorf("len_const %#x", got)
	}
	b[AccessRegStatus] = 0x80 | RegStatusNotSupported // bit 7 is not status
	binary.BigEndian.PutUint16(b[AccessRegData+PTYSIBWidthOper:], 0x4)
	binary.BigEndian.PutUint32(b[AccessRegData+PTYSEthProtoAdm:], 0x40)
	st, p := DecodeAccessRegPTYS(&b)
	want := PTYS{LocalPort: 2, ProtoMask: PTYSProtoIB, IBWidthOper: 0x4, EthProtoAdmin: 0x40}
	if st != RegStatusNotSupported || p != want {
		t.Errorf("decoded status %#x %+v, want %#x %+v", st, p, RegStatusNotSupported, want)
	}
}
