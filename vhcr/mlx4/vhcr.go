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

// DecodeVHCR decodes a 32-byte vHCR image. Every bit pattern decodes; the
// reserved words are ignored, as the master ignores them.
func DecodeVHCR(b *[VHCRSize]byte) VHCR {
	opw := binary.BigEndian.Uint16(b[OffOpcode:])
	return VHCR{
		InParam:  binary.BigEndian.Uint64(b[OffInParam:]),
		InMod:    binary.BigEndian.Uint32(b[OffInMod:]),
		OutParam: binary.BigEndian.Uint64(b[OffOutParam:]),
		Token:    binary.BigEndian.Uint16(b[OffToken:]),
		Status:   Status(b[OffStatus]),
		Flags:    b[OffFlags],
		Op:       Opcode(opw & 0xfff),
		OpMod:    uint8(opw >> 12),
	}
}

// Encode writes v into a 32-byte image, zeroing the reserved fields.
func (v *VHCR) Encode(b *[VHCRSize]byte) {
	*b = [VHCRSize]byte{}
	binary.BigEndian.PutUint64(b[OffInParam:], v.InParam)
	binary.BigEndian.PutUint32(b[OffInMod:], v.InMod)
	binary.BigEndian.PutUint64(b[OffOutParam:], v.OutParam)
	binary.BigEndian.PutUint16(b[OffToken:], v.Token)
	b[OffStatus] = byte(v.Status)
	b[OffFlags] = v.Flags
	binary.BigEndian.PutUint16(b[OffOpcode:], uint16(v.Op)&0xfff|uint16(v.OpMod&0xf)<<12)
}
