package mlx4

// ACCESS_REG mailbox: drivers/net/ethernet/mellanox/mlx4/fw.c
// struct mlx4_access_reg (packed): the PRM's operation TLV, then the
// register's data from ACCESS_REG_HEADER_SIZE. The firmware answers in the
// outbox with the same header, its status byte set, and the register.
const (
	AccessRegConstant1     = 0x00 // BE16: TLV type 15:11 (1, operation) | length in dwords 10:0 (4)
	AccessRegStatus        = 0x02 // 6:0 the register access status (RegStatus*)
	AccessRegRegID         = 0x04 // BE16 (enum mlx4_reg_id)
	AccessRegMethod        = 0x06 // 6:0 (enum mlx4_access_reg_method)
	AccessRegConstant2     = 0x07 // the class: 1, register access
	AccessRegLenConst      = 0x10 // BE16: data length in dwords + 1 (10:0) | 0x3 << 12
	ACCESS_REG_HEADER_SIZE = 0x14 // MLX4_ACCESS_REG_HEADER_SIZE: reg_data

	AccessRegTLVOperation  = 0x1 // constant1 15:11
	AccessRegTLVLen        = 0x4 // constant1 10:0
	AccessRegClassRegister = 0x1 // constant2
	ACCESS_REG_STATUS_MASK = 0x7f
	ACCESS_REG_METHOD_MASK = 0x7f
	ACCESS_REG_LEN_MASK    = 0x7ff

	ACCESS_REG_QUERY = 0x1 // enum mlx4_access_reg_method
	ACCESS_REG_WRITE = 0x2
	REG_ID_PTYS      = 0x5004 // enum mlx4_reg_id: port type and speed
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

// PTYS register offsets in the register data: include/linux/mlx4/device.h
// struct mlx4_ptys_reg (packed, big-endian fields).
const (
	PTYSFlags         = 0x00 // AN_DISABLE_CAP bit 5, AN_DISABLE_ADMIN bit 6
	PTYSLocalPort     = 0x01
	PTYSProtoMask     = 0x03 // PTYS_IB | PTYS_EN
	PTYSEthProtoCap   = 0x0c // BE32, enum mlx4_link_mode bits
	PTYSIBWidthCap    = 0x10 // BE16
	PTYSIBSpeedCap    = 0x12 // BE16
	PTYSEthProtoAdmin = 0x18
	PTYSIBWidthAdmin  = 0x1c
	PTYSIBSpeedAdmin  = 0x1e
	PTYSEthProtoOper  = 0x24
	PTYSIBWidthOper   = 0x28
	PTYSIBSpeedOper   = 0x2a
	PTYSEthProtoLPAdv = 0x30
	PTYSRegSize       = 0x34

	PTYS_IB = 1 << 0 // MLX4_PTYS_IB
	PTYS_EN = 1 << 2 // MLX4_PTYS_EN

	// The InfiniBand width and speed bits of ib_proto_cap/admin/oper
	// (PRM, PTYS register; PTYSWidths and PTYSSpeeds name them).
	PTYS_IB_WIDTH_1X    = 1 << 0
	PTYS_IB_WIDTH_2X    = 1 << 1
	PTYS_IB_WIDTH_4X    = 1 << 2
	PTYS_IB_WIDTH_8X    = 1 << 3
	PTYS_IB_WIDTH_12X   = 1 << 4
	PTYS_IB_SPEED_SDR   = 1 << 0
	PTYS_IB_SPEED_DDR   = 1 << 1
	PTYS_IB_SPEED_QDR   = 1 << 2
	PTYS_IB_SPEED_FDR10 = 1 << 3
	PTYS_IB_SPEED_FDR   = 1 << 4
	PTYS_IB_SPEED_EDR   = 1 << 5

	// Ethernet link modes (include/linux/mlx4/device.h enum mlx4_link_mode,
	// MLX4_40GBASE_CR4 and MLX4_10GBASE_CR): bit numbers of the protocol
	// masks.
	LINK_MODE_40GBASE_CR4 = 6
	LINK_MODE_10GBASE_CR  = 12
)

// PTYSWidths and PTYSSpeeds name the InfiniBand bits of PTYS, bit 0 first.
var (
	PTYSWidths = []string{"1X", "2X", "4X", "8X", "12X"}
	PTYSSpeeds = []string{"SDR", "DDR", "QDR", "FDR10", "FDR", "EDR"}
)

// PTYS is struct mlx4_ptys_reg. InfiniBand widths and speeds are PTYS
// masks (PTYSWidths, PTYSSpeeds); Ethernet protocols are masks of
// enum mlx4_link_mode bits.
type PTYS struct {
	LocalPort, ProtoMask                     uint8
	EthProtoCap, EthProtoAdmin, EthProtoOper uint32
	IBWidthCap, IBWidthAdmin, IBWidthOper    uint16
	IBSpeedCap, IBSpeedAdmin, IBSpeedOper    uint16
}

// Encode writes the register into r[:PTYSRegSize], zeroing the rest.
func (p PTYS) Encode(r []byte) {
	r = r[:PTYSRegSize]
	clear(r)
	r[PTYSLocalPort], r[PTYSProtoMask] = p.LocalPort, p.ProtoMask
	put32(r, PTYSEthProtoCap, p.EthProtoCap)
	put32(r, PTYSEthProtoAdmin, p.EthProtoAdmin)
	put32(r, PTYSEthProtoOper, p.EthProtoOper)
	put16(r, PTYSIBWidthCap, p.IBWidthCap)
	put16(r, PTYSIBWidthAdmin, p.IBWidthAdmin)
	put16(r, PTYSIBWidthOper, p.IBWidthOper)
	put16(r, PTYSIBSpeedCap, p.IBSpeedCap)
	put16(r, PTYSIBSpeedAdmin, p.IBSpeedAdmin)
	put16(r, PTYSIBSpeedOper, p.IBSpeedOper)
}

// DecodePTYS reads the register. Every bit pattern decodes; fewer than
// PTYSRegSize bytes is ErrShort.
func DecodePTYS(r []byte) (PTYS, error) {
	if len(r) < PTYSRegSize {
		return PTYS{}, shortErr("PTYS register", len(r), PTYSRegSize)
	}
	return PTYS{
		LocalPort: r[PTYSLocalPort], ProtoMask: r[PTYSProtoMask],
		EthProtoCap:   get32(r, PTYSEthProtoCap),
		EthProtoAdmin: get32(r, PTYSEthProtoAdmin),
		EthProtoOper:  get32(r, PTYSEthProtoOper),
		IBWidthCap:    get16(r, PTYSIBWidthCap),
		IBWidthAdmin:  get16(r, PTYSIBWidthAdmin),
		IBWidthOper:   get16(r, PTYSIBWidthOper),
		IBSpeedCap:    get16(r, PTYSIBSpeedCap),
		IBSpeedAdmin:  get16(r, PTYSIBSpeedAdmin),
		IBSpeedOper:   get16(r, PTYSIBSpeedOper),
	}, nil
}

// EncodeAccessRegPTYS writes ACCESS_REG's inbox for a PTYS access as
// mlx4_ACCESS_PTYS_REG builds it: the operation TLV header for method and
// the register with local_port and proto_mask (PTYS_IB, PTYS_EN).
func EncodeAccessRegPTYS(in *[MailboxSize]byte, method, port, proto uint8) {
	clear(in[:ACCESS_REG_HEADER_SIZE])
	put16(in[:], AccessRegConstant1, AccessRegTLVOperation<<11|AccessRegTLVLen)
	put16(in[:], AccessRegRegID, REG_ID_PTYS)
	in[AccessRegMethod] = method & ACCESS_REG_METHOD_MASK
	in[AccessRegConstant2] = AccessRegClassRegister
	put16(in[:], AccessRegLenConst, (PTYSRegSize/4+1)&ACCESS_REG_LEN_MASK|0x3<<12)
	PTYS{LocalPort: port, ProtoMask: proto}.Encode(in[ACCESS_REG_HEADER_SIZE:])
}

// DecodeAccessRegPTYS reads ACCESS_REG's outbox: the register access
// status and the PTYS register. Every bit pattern decodes.
func DecodeAccessRegPTYS(out *[MailboxSize]byte) (status uint8, p PTYS) {
	p, _ = DecodePTYS(out[ACCESS_REG_HEADER_SIZE:]) // a mailbox holds the register
	return out[AccessRegStatus] & ACCESS_REG_STATUS_MASK, p
}
