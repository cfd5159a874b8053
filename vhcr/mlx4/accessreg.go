package mlx4

import "encoding/binary"

// ACCESS_REG's mailbox is struct mlx4_access_reg (fw.c): the operation TLV
// of the PRM's register access (type 1, length 4 dwords; class 1) and then
// the register's data. The firmware answers in the outbox with the same
// header, its status byte set, and the register data.
const (
	AccessRegTLV     = 0x00 // BE16 constant1: TLV type (15:11) | length in dwords (10:0)
	AccessRegStatus  = 0x02 // u8 status (6:0), the register access status below
	AccessRegID      = 0x04 // BE16 register id
	AccessRegMethod  = 0x06 // u8 method (6:0)
	AccessRegClass   = 0x07 // u8 constant2: class, 1 = register access
	AccessRegLen     = 0x10 // BE16 len_const: data length in dwords + 1 (10:0) | 0x3 << 12
	AccessRegData    = 0x14 // MLX4_ACCESS_REG_HEADER_SIZE
	AccessRegTLVOp   = 1    // operation TLV
	AccessRegTLVLen  = 4
	AccessRegClassRA = 1
	AccessRegMask    = 0x7f // MLX4_ACCESS_REG_{STATUS,METHOD}_MASK

	// Methods (enum mlx4_access_reg_method).
	AccessRegQuery = 0x1
	AccessRegWrite = 0x2

	// RegIDPTYS is the Port Type and Speed register (MLX4_REG_ID_PTYS), the
	// one register a VF's driver reads (mlx4_en's ethtool link settings).
	RegIDPTYS = 0x5004
)

// Register access statuses of the operation TLV (the PRM's; mlxsw calls
// them MLXSW_EMAD_OP_TLV_STATUS_*). mlx4_ACCESS_REG returns a non-zero one
// to its caller as the error.
const (
	RegStatusOK                 = 0x0
	RegStatusNotSupported       = 0x4 // REGISTER_NOT_SUPPORTED
	RegStatusClassNotSupported  = 0x5
	RegStatusMethodNotSupported = 0x6
	RegStatusBadParameter       = 0x7
)

// struct mlx4_ptys_reg, offsets in the register data (from AccessRegData).
const (
	PTYSFlags        = 0x00 // u8: AN_DISABLE_CAP (bit 5), AN_DISABLE_ADMIN (bit 6)
	PTYSLocalPort    = 0x01
	PTYSProtoMask    = 0x03 // MLX4_PTYS_IB (1 << 0), MLX4_PTYS_EN (1 << 2)
	PTYSEthProtoCap  = 0x0c // BE32
	PTYSIBWidthCap   = 0x10 // BE16
	PTYSIBSpeedCap   = 0x12 // BE16
	PTYSEthProtoAdm  = 0x18
	PTYSIBWidthAdm   = 0x1c
	PTYSIBSpeedAdm   = 0x1e
	PTYSEthProtoOper = 0x24
	PTYSIBWidthOper  = 0x28
	PTYSIBSpeedOper  = 0x2a
	PTYSEthProtoLP   = 0x30
	PTYSSize         = 0x34

	PTYSProtoIB = 1 << 0
	PTYSProtoEN = 1 << 2
)

// PTYS is struct mlx4_ptys_reg, decoded. InfiniBand widths and speeds are
// in the PTYS encodings (1X, 2X, 4X, 8X, 12X in bits 0..4; SDR, DDR, QDR, FDR10, FDR, EDR in bits 0..5); Ethernet protocols are
// masks of enum mlx4_link_mode bits.
type PTYS struct {
	LocalPort, ProtoMask                     uint8
	EthProtoCap, EthProtoAdmin, EthProtoOper uint32
	IBWidthCap, IBWidthAdmin, IBWidthOper    uint16
	IBSpeedCap, IBSpeedAdmin, IBSpeedOper    uint16
}

// EncodeAccessRegPTYS writes ACCESS_REG's inbox for a PTYS access as
// mlx4_ACCESS_PTYS_REG builds it: the operation TLV header for method and
// the register with local_port and proto_mask (MLX4_PTYS_IB 1, _EN 4).
func EncodeAccessRegPTYS(in *[MailboxSize]byte, method, port, proto uint8) {
	clear(in[:AccessRegData+PTYSSize])
	binary.BigEndian.PutUint16(in[AccessRegTLV:], AccessRegTLVOp<<11|AccessRegTLVLen)
	binary.BigEndian.PutUint16(in[AccessRegID:], RegIDPTYS)
	in[AccessRegMethod] = method & AccessRegMask
	in[AccessRegClass] = AccessRegClassRA
	binary.BigEndian.PutUint16(in[AccessRegLen:], (PTYSSize/4+1)&0x7ff|0x3<<12)
	in[AccessRegData+PTYSLocalPort] = port
	in[AccessRegData+PTYSProtoMask] = proto
}

// DecodeAccessRegPTYS reads ACCESS_REG's outbox: the register access
// status and the PTYS register.
func DecodeAccessRegPTYS(out *[MailboxSize]byte) (status uint8, p PTYS) {
	r := out[AccessRegData:]
	return out[AccessRegStatus] & AccessRegMask, PTYS{
		LocalPort: r[PTYSLocalPort], ProtoMask: r[PTYSProtoMask],
		EthProtoCap:   binary.BigEndian.Uint32(r[PTYSEthProtoCap:]),
		EthProtoAdmin: binary.BigEndian.Uint32(r[PTYSEthProtoAdm:]),
		EthProtoOper:  binary.BigEndian.Uint32(r[PTYSEthProtoOper:]),
		IBWidthCap:    binary.BigEndian.Uint16(r[PTYSIBWidthCap:]),
		IBWidthAdmin:  binary.BigEndian.Uint16(r[PTYSIBWidthAdm:]),
		IBWidthOper:   binary.BigEndian.Uint16(r[PTYSIBWidthOper:]),
		IBSpeedCap:    binary.BigEndian.Uint16(r[PTYSIBSpeedCap:]),
		IBSpeedAdmin:  binary.BigEndian.Uint16(r[PTYSIBSpeedAdm:]),
		IBSpeedOper:   binary.BigEndian.Uint16(r[PTYSIBSpeedOper:]),
	}
}

// PTYSWidths and PTYSSpeeds name the InfiniBand bits of PTYS, bit 0 first.
var (
	PTYSWidths = []string{"1X", "2X", "4X", "8X", "12X"}
	PTYSSpeeds = []string{"SDR", "DDR", "QDR", "FDR10", "FDR", "EDR"}
)
