package mlx4

import "encoding/binary"

// Sizes of the command interface.
const (
	VHCRSize    = 32   // struct mlx4_vhcr_cmd
	MailboxSize = 4096 // MLX4_MAILBOX_SIZE; in/out mailboxes are 4 KiB aligned
	InboxMask   = ^uint64(0xff)
	PollToken   = 0xffff // CMD_POLL_TOKEN
)

// Byte offsets in the vHCR (struct mlx4_vhcr_cmd, big-endian).
const (
	OffInParam  = 0x00 // BE64 immediate input or inbox address
	OffInMod    = 0x08 // BE32
	OffOutParam = 0x10 // BE64 immediate output or outbox address
	OffToken    = 0x18 // BE16
	OffStatus   = 0x1c // u8
	OffFlags    = 0x1d // u8: bit 6 = e
	OffOpcode   = 0x1e // BE16: 15:12 op_modifier, 11:0 opcode
)

// FlagE is the 'e' bit of the vHCR flags byte: completion by event.
const FlagE = 0x40

// VHCR is a decoded vHCR image.
type VHCR struct {
	InParam  uint64
	InMod    uint32
	OutParam uint64
	Token    uint16
	Status   Status
	Flags    uint8
	Op       Opcode
	OpMod    uint8 // 4 bits
}

// EBit reports whether completion is requested by event.
func (v *VHCR) EBit() bool { return v.Flags&FlagE != 0 }

// VHCRWords loads a 32-byte vHCR image as its four big-endian 64-bit words,
// the shadow the master keeps in registers and decodes with
// DecodeVHCR: in_param; in_modifier and a reserved word; out_param;
// token, reserved, status, flags, op_modifier and opcode.
func VHCRWords(b *[VHCRSize]byte) (w0, w1, w2, w3 uint64) {
	return binary.BigEndian.Uint64(b[0:]), binary.BigEndian.Uint64(b[8:]),
		binary.BigEndian.Uint64(b[16:]), binary.BigEndian.Uint64(b[24:])
}

// DecodeVHCR decodes the four words of a vHCR image (VHCRWords): in_param,
// in_modifier, out_param, the token (bits 63..48 of word 3), the 'e' bit of
// the flags (23..16), op_modifier (15..12) and the opcode (11..0). Every bit
// pattern decodes; the reserved fields and the status byte (31..24) are
// ignored, as the master ignores them. This is the one decoder of the vHCR,
// the one the master calls (through its command's DecodeVHCR) for every
// VHCR_POST; it inlines, so that the words stay in registers.
func DecodeVHCR(w0, w1, w2, w3 uint64) (inParam uint64, inMod uint32, outParam uint64, token uint16, e bool, opMod uint8, op Opcode) {
	return w0, uint32(w1 >> 32), w2, uint16(w3 >> 48), uint8(w3>>16)&FlagE != 0, uint8(w3>>12) & 0xf, Opcode(w3 & OpcodeMask)
}

// PutVHCRWords stores the four big-endian 64-bit words of a vHCR image
// (VHCRWords' inverse): in_param; in_modifier (word 1's high half, the
// reserved low half as given); out_param; word 3 (Word3). A VF writes its
// vHCR this way: four whole stores, where field by field the compiler emits
// byte stores.
func PutVHCRWords(b *[VHCRSize]byte, w0, w1, w2, w3 uint64) {
	binary.BigEndian.PutUint64(b[OffInParam:], w0)
	binary.BigEndian.PutUint64(b[OffInMod:], w1)
	binary.BigEndian.PutUint64(b[OffOutParam:], w2)
	binary.BigEndian.PutUint64(b[OffToken:], w3)
}

// Word1 composes word 1 of a vHCR image: in_modifier, the reserved word
// zero.
func Word1(inMod uint32) uint64 { return uint64(inMod) << 32 }

// Word3 composes word 3 of a vHCR image as a VF writes it, status zero:
// the token, the flags, op_modifier and opcode (DecodeVHCR's inverse).
func Word3(token uint16, flags uint8, opMod uint8, op Opcode) uint64 {
	return uint64(token)<<48 | uint64(flags)<<16 | uint64(opMod&0xf)<<12 | uint64(op)&OpcodeMask
}

// StatusWord is the low 32 bits of word 3 that the master writes back at
// OffStatus: status in 31..24 and the flags, op_modifier and opcode the VF
// wrote (w3 is the word as the master read it).
func StatusWord(s Status, w3 uint64) uint32 { return uint32(s)<<24 | uint32(w3)&0x00ffffff }

// Encode writes v into a 32-byte image, zeroing the reserved fields.
func (v *VHCR) Encode(b *[VHCRSize]byte) {
	*b = [VHCRSize]byte{}
	binary.BigEndian.PutUint64(b[OffInParam:], v.InParam)
	binary.BigEndian.PutUint32(b[OffInMod:], v.InMod)
	binary.BigEndian.PutUint64(b[OffOutParam:], v.OutParam)
	binary.BigEndian.PutUint16(b[OffToken:], v.Token)
	b[OffStatus] = byte(v.Status)
	b[OffFlags] = v.Flags
	binary.BigEndian.PutUint16(b[OffOpcode:], uint16(v.Op)&OpcodeMask|uint16(v.OpMod&0xf)<<12)
}
