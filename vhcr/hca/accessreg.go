package hca

import (
	"encoding/binary"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// ACCESS_REG's mailbox is struct mlx4_access_reg (fw.c): the operation TLV
// of the PRM's register access (type 1, length 4 dwords; class 1) and then
// the register's data. The firmware answers in the outbox with the same
// header, its status byte set, and the register data.
const (
	accessRegTLV     = 0x00 // BE16 constant1: TLV type (15:11) | length in dwords (10:0)
	accessRegStatus  = 0x02 // u8 status (6:0), the register access status below
	accessRegID      = 0x04 // BE16 register id
	accessRegMethod  = 0x06 // u8 method (6:0)
	accessRegClass   = 0x07 // u8 constant2: class, 1 = register access
	accessRegLen     = 0x10 // BE16 len_const: data length in dwords + 1 (10:0) | 0x3 << 12
	accessRegData    = 0x14 // MLX4_ACCESS_REG_HEADER_SIZE
	accessRegTLVOp   = 1    // operation TLV
	accessRegTLVLen  = 4
	accessRegClassRA = 1
	accessRegMask    = 0x7f // MLX4_ACCESS_REG_{STATUS,METHOD}_MASK

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

// struct mlx4_ptys_reg, offsets in the register data.
const (
	ptysFlags        = 0x00 // u8: AN_DISABLE_CAP (bit 5), AN_DISABLE_ADMIN (bit 6)
	ptysLocalPort    = 0x01
	ptysProtoMask    = 0x03 // MLX4_PTYS_IB (1 << 0), MLX4_PTYS_EN (1 << 2)
	ptysEthProtoCap  = 0x0c // BE32
	ptysIBWidthCap   = 0x10 // BE16
	ptysIBSpeedCap   = 0x12 // BE16
	ptysEthProtoAdm  = 0x18
	ptysIBWidthAdm   = 0x1c
	ptysIBSpeedAdm   = 0x1e
	ptysEthProtoOper = 0x24
	ptysIBWidthOper  = 0x28
	ptysIBSpeedOper  = 0x2a
	ptysEthProtoLP   = 0x30
	ptysSize         = 0x34

	ptysProtoIB = 1 << 0
	ptysProtoEN = 1 << 2
)

// Ethernet link modes of the PTYS protocol masks (enum mlx4_link_mode, bit
// numbers): the model's Ethernet ports are 40GBASE-CR4 capable of 10GBASE-CR.
const (
	linkMode10GBaseCR  = 12
	linkMode40GBaseCR4 = 6
	ethProtoModel      = 1<<linkMode40GBaseCR4 | 1<<linkMode10GBaseCR
	ethProtoOperModel  = 1 << linkMode40GBaseCR4
)

// ACCESS_REG runs mlx4_ACCESS_REG_wrapper and the firmware behind it for a
// VF: a write is refused (EPERM: BAD_OP), PTYS's local_port is taken as the
// VF's port and converted to the physical one (mlx4_slave_convert_port),
// and the firmware's part is modelled for PTYS queries. The command itself
// succeeds whenever the firmware answers; what the firmware thought of the
// request is the register access status in the outbox: unknown registers
// REGISTER_NOT_SUPPORTED, other methods METHOD_NOT_SUPPORTED, a class other
// than register access CLASS_NOT_SUPPORTED, a malformed TLV or a port the
// VF does not have BAD_PARAMETER.
func (h *HCA) ACCESS_REG(c *mlx4.Cmd) mlx4.Status {
	in, out := c.Inbox[:], c.Outbox[:]
	method := in[accessRegMethod] & accessRegMask
	if method == AccessRegWrite {
		return c.Refuse(mlx4.BAD_OP, mlx4.ReasonPrivileged)
	}
	copy(out[:accessRegData], in[:accessRegData])
	out[accessRegStatus] &^= accessRegMask
	status := h.accessReg(c.VF, method, binary.BigEndian.Uint16(in[accessRegID:]), in, out)
	out[accessRegStatus] |= status
	return mlx4.OK
}

func (h *HCA) accessReg(vf int, method uint8, id uint16, in, out []byte) uint8 {
	tlv := binary.BigEndian.Uint16(in[accessRegTLV:])
	switch {
	case tlv>>11 != accessRegTLVOp || tlv&0x7ff != accessRegTLVLen:
		return RegStatusBadParameter
	case in[accessRegClass] != accessRegClassRA:
		return RegStatusClassNotSupported
	case id != RegIDPTYS:
		return RegStatusNotSupported
	case method != AccessRegQuery:
		return RegStatusMethodNotSupported
	}
	req, reg := in[accessRegData:], out[accessRegData:accessRegData+ptysSize]
	phys := h.PhysPort(vf, uint32(req[ptysLocalPort]))
	if phys == 0 {
		return RegStatusBadParameter
	}
	clear(reg)
	reg[ptysLocalPort] = byte(phys)
	up := h.VFLinkUp(vf, phys)
	if h.Cfg.Ports[phys-1].LinkLayer == "eth" {
		reg[ptysProtoMask] = ptysProtoEN
		binary.BigEndian.PutUint32(reg[ptysEthProtoCap:], ethProtoModel)
		binary.BigEndian.PutUint32(reg[ptysEthProtoAdm:], ethProtoModel)
		if up {
			binary.BigEndian.PutUint32(reg[ptysEthProtoOper:], ethProtoOperModel)
		}
		return RegStatusOK
	}
	reg[ptysProtoMask] = ptysProtoIB
	l := h.ibLink(phys)
	binary.BigEndian.PutUint16(reg[ptysIBWidthCap:], ptysWidth(l.widthSupported))
	binary.BigEndian.PutUint16(reg[ptysIBSpeedCap:], ptysSpeed(l.speedSupported, l.speedExtSupported))
	binary.BigEndian.PutUint16(reg[ptysIBWidthAdm:], ptysWidth(l.widthEnabled))
	extEnabled := l.speedExtEnabled // 5 bits: 0x1E disabled, 0x1F all supported
	switch {
	case extEnabled == 0x1f:
		extEnabled = l.speedExtSupported
	case extEnabled >= 0x10:
		extEnabled = 0
	}
	binary.BigEndian.PutUint16(reg[ptysIBSpeedAdm:], ptysSpeed(l.speedEnabled, extEnabled))
	if up {
		binary.BigEndian.PutUint16(reg[ptysIBWidthOper:], ptysWidth(l.widthActive))
		binary.BigEndian.PutUint16(reg[ptysIBSpeedOper:], ptysSpeed(l.speedActive, l.speedExtActive))
	}
	return RegStatusOK
}

// ibLinkInfo is what PTYS reports of an InfiniBand port, in PortInfo's
// encodings.
type ibLinkInfo struct {
	widthSupported, widthEnabled, widthActive          uint8
	speedSupported, speedEnabled, speedActive          uint8
	speedExtSupported, speedExtEnabled, speedExtActive uint8
}

// ibLink reads the link from the MAD engine's PortInfo, so that PTYS and
// SubnGet(PortInfo) agree; without an engine, the engine's defaults (4X
// of 1X|4X, QDR of SDR|DDR|QDR).
func (h *HCA) ibLink(phys int) ibLinkInfo {
	if h.mad != nil {
		if pi, err := h.mad.PortInfo(uint8(phys)); err == nil {
			return ibLinkInfo{pi.LinkWidthSupported, pi.LinkWidthEnabled, pi.LinkWidthActive,
				pi.LinkSpeedSupported, pi.LinkSpeedEnabled, pi.LinkSpeedActive,
				pi.LinkSpeedExtSupported, pi.LinkSpeedExtEnabled, pi.LinkSpeedExtActive}
		}
	}
	return ibLinkInfo{widthSupported: 0x3, widthEnabled: 0x3, widthActive: 0x2,
		speedSupported: 0x7, speedEnabled: 0x7, speedActive: 0x4}
}

// ptysWidth converts a PortInfo link width mask (1X 0x1, 4X 0x2, 8X 0x4,
// 12X 0x8, 2X 0x10) to the PTYS one (1X, 2X, 4X, 8X, 12X in bits 0..4).
func ptysWidth(w uint8) uint16 {
	var out uint16
	for _, m := range [...]struct {
		pi   uint8
		ptys uint16
	}{{0x1, 1 << 0}, {0x10, 1 << 1}, {0x2, 1 << 2}, {0x4, 1 << 3}, {0x8, 1 << 4}} {
		if w&m.pi != 0 {
			out |= m.ptys
		}
	}
	return out
}

// ptysSpeed converts PortInfo's LinkSpeed (SDR 0x1, DDR 0x2, QDR 0x4) and
// LinkSpeedExt (FDR 0x1, EDR 0x2) masks to the PTYS one (SDR, DDR, QDR,
// FDR10, FDR, EDR in bits 0..5; FDR10 is not in PortInfo).
func ptysSpeed(s, ext uint8) uint16 {
	return uint16(s&0x7) | uint16(ext&0x3)<<4
}

// PTYS is struct mlx4_ptys_reg, decoded. InfiniBand widths and speeds are
// in the PTYS encodings (ptysWidth, ptysSpeed); Ethernet protocols are
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
func EncodeAccessRegPTYS(in *[mlx4.MailboxSize]byte, method, port, proto uint8) {
	clear(in[:accessRegData+ptysSize])
	binary.BigEndian.PutUint16(in[accessRegTLV:], accessRegTLVOp<<11|accessRegTLVLen)
	binary.BigEndian.PutUint16(in[accessRegID:], RegIDPTYS)
	in[accessRegMethod] = method & accessRegMask
	in[accessRegClass] = accessRegClassRA
	binary.BigEndian.PutUint16(in[accessRegLen:], (ptysSize/4+1)&0x7ff|0x3<<12)
	in[accessRegData+ptysLocalPort] = port
	in[accessRegData+ptysProtoMask] = proto
}

// DecodeAccessRegPTYS reads ACCESS_REG's outbox: the register access
// status and the PTYS register.
func DecodeAccessRegPTYS(out *[mlx4.MailboxSize]byte) (status uint8, p PTYS) {
	r := out[accessRegData:]
	return out[accessRegStatus] & accessRegMask, PTYS{
		LocalPort: r[ptysLocalPort], ProtoMask: r[ptysProtoMask],
		EthProtoCap:   binary.BigEndian.Uint32(r[ptysEthProtoCap:]),
		EthProtoAdmin: binary.BigEndian.Uint32(r[ptysEthProtoAdm:]),
		EthProtoOper:  binary.BigEndian.Uint32(r[ptysEthProtoOper:]),
		IBWidthCap:    binary.BigEndian.Uint16(r[ptysIBWidthCap:]),
		IBWidthAdmin:  binary.BigEndian.Uint16(r[ptysIBWidthAdm:]),
		IBWidthOper:   binary.BigEndian.Uint16(r[ptysIBWidthOper:]),
		IBSpeedCap:    binary.BigEndian.Uint16(r[ptysIBSpeedCap:]),
		IBSpeedAdmin:  binary.BigEndian.Uint16(r[ptysIBSpeedAdm:]),
		IBSpeedOper:   binary.BigEndian.Uint16(r[ptysIBSpeedOper:]),
	}
}

// PTYSWidths and PTYSSpeeds name the InfiniBand bits of PTYS, bit 0 first.
var (
	PTYSWidths = []string{"1X", "2X", "4X", "8X", "12X"}
	PTYSSpeeds = []string{"SDR", "DDR", "QDR", "FDR10", "FDR", "EDR"}
)
