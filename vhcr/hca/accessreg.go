package hca

import (
	"encoding/binary"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
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
	method := in[mlx4.AccessRegMethod] & mlx4.AccessRegMask
	if method == mlx4.AccessRegWrite {
		return c.Refuse(mlx4.BAD_OP, mlx4.ReasonPrivileged)
	}
	copy(out[:mlx4.AccessRegData], in[:mlx4.AccessRegData])
	out[mlx4.AccessRegStatus] &^= mlx4.AccessRegMask
	status := h.accessReg(c.VF, method, binary.BigEndian.Uint16(in[mlx4.AccessRegID:]), in, out)
	out[mlx4.AccessRegStatus] |= status
	return mlx4.OK
}

func (h *HCA) accessReg(vf int, method uint8, id uint16, in, out []byte) uint8 {
	tlv := binary.BigEndian.Uint16(in[mlx4.AccessRegTLV:])
	switch {
	case tlv>>11 != mlx4.AccessRegTLVOp || tlv&0x7ff != mlx4.AccessRegTLVLen:
		return mlx4.RegStatusBadParameter
	case in[mlx4.AccessRegClass] != mlx4.AccessRegClassRA:
		return mlx4.RegStatusClassNotSupported
	case id != mlx4.RegIDPTYS:
		return mlx4.RegStatusNotSupported
	case method != mlx4.AccessRegQuery:
		return mlx4.RegStatusMethodNotSupported
	}
	req, reg := in[mlx4.AccessRegData:], out[mlx4.AccessRegData:mlx4.AccessRegData+mlx4.PTYSSize]
	phys := h.PhysPort(vf, uint32(req[mlx4.PTYSLocalPort]))
	if phys == 0 {
		return mlx4.RegStatusBadParameter
	}
	clear(reg)
	reg[mlx4.PTYSLocalPort] = byte(phys)
	up := h.VFLinkUp(vf, phys)
	if h.Cfg.Ports[phys-1].LinkLayer == "eth" {
		reg[mlx4.PTYSProtoMask] = mlx4.PTYSProtoEN
		binary.BigEndian.PutUint32(reg[mlx4.PTYSEthProtoCap:], ethProtoModel)
		binary.BigEndian.PutUint32(reg[mlx4.PTYSEthProtoAdm:], ethProtoModel)
		if up {
			binary.BigEndian.PutUint32(reg[mlx4.PTYSEthProtoOper:], ethProtoOperModel)
		}
		return mlx4.RegStatusOK
	}
	reg[mlx4.PTYSProtoMask] = mlx4.PTYSProtoIB
	l := h.ibLink(phys)
	binary.BigEndian.PutUint16(reg[mlx4.PTYSIBWidthCap:], ptysWidth(l.widthSupported))
	binary.BigEndian.PutUint16(reg[mlx4.PTYSIBSpeedCap:], ptysSpeed(l.speedSupported, l.speedExtSupported))
	binary.BigEndian.PutUint16(reg[mlx4.PTYSIBWidthAdm:], ptysWidth(l.widthEnabled))
	extEnabled := l.speedExtEnabled // 5 bits: 0x1E disabled, 0x1F all supported
	switch {
	case extEnabled == 0x1f:
		extEnabled = l.speedExtSupported
	case extEnabled >= 0x10:
		extEnabled = 0
	}
	binary.BigEndian.PutUint16(reg[mlx4.PTYSIBSpeedAdm:], ptysSpeed(l.speedEnabled, extEnabled))
	if up {
		binary.BigEndian.PutUint16(reg[mlx4.PTYSIBWidthOper:], ptysWidth(l.widthActive))
		binary.BigEndian.PutUint16(reg[mlx4.PTYSIBSpeedOper:], ptysSpeed(l.speedActive, l.speedExtActive))
	}
	return mlx4.RegStatusOK
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
