package hca

import (
	"encoding/binary"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// The Ethernet link of the model's ports: 40GBASE-CR4, capable of
// 10GBASE-CR too.
const (
	ethProtoModel     = 1<<mlx4.LINK_MODE_40GBASE_CR4 | 1<<mlx4.LINK_MODE_10GBASE_CR
	ethProtoOperModel = 1 << mlx4.LINK_MODE_40GBASE_CR4
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
func (h *HCA) ACCESS_REG(c *Cmd) mlx4.Status {
	in, out := c.Inbox[:], c.Outbox[:]
	method := in[mlx4.AccessRegMethod] & mlx4.ACCESS_REG_METHOD_MASK
	if method == mlx4.ACCESS_REG_WRITE {
		return c.Refuse(mlx4.BAD_OP, refusal.Privileged)
	}
	copy(out[:mlx4.ACCESS_REG_HEADER_SIZE], in)
	out[mlx4.AccessRegStatus] &^= mlx4.ACCESS_REG_STATUS_MASK
	status := h.accessReg(c.VF, method, binary.BigEndian.Uint16(in[mlx4.AccessRegRegID:]), in, out)
	out[mlx4.AccessRegStatus] |= status
	return mlx4.OK
}

func (h *HCA) accessReg(vf int, method uint8, id uint16, in, out []byte) uint8 {
	tlv := binary.BigEndian.Uint16(in[mlx4.AccessRegConstant1:])
	switch {
	case tlv>>11 != mlx4.AccessRegTLVOperation || tlv&mlx4.ACCESS_REG_LEN_MASK != mlx4.AccessRegTLVLen:
		return mlx4.RegStatusBadParameter
	case in[mlx4.AccessRegConstant2] != mlx4.AccessRegClassRegister:
		return mlx4.RegStatusClassNotSupported
	case id != mlx4.REG_ID_PTYS:
		return mlx4.RegStatusNotSupported
	case method != mlx4.ACCESS_REG_QUERY:
		return mlx4.RegStatusMethodNotSupported
	}
	phys := h.PhysPort(vf, uint32(in[mlx4.ACCESS_REG_HEADER_SIZE+mlx4.PTYSLocalPort]))
	if phys == 0 {
		return mlx4.RegStatusBadParameter
	}
	p := mlx4.PTYS{LocalPort: byte(phys)}
	up := h.VFLinkUp(vf, phys)
	if h.Cfg.Ports[phys-1].LinkLayer == "eth" {
		p.ProtoMask = mlx4.PTYS_EN
		p.EthProtoCap, p.EthProtoAdmin = ethProtoModel, ethProtoModel
		if up {
			p.EthProtoOper = ethProtoOperModel
		}
	} else {
		p.ProtoMask = mlx4.PTYS_IB
		l := h.ibLink(phys)
		p.IBWidthCap = ptysWidth(l.widthSupported)
		p.IBSpeedCap = ptysSpeed(l.speedSupported, l.speedExtSupported)
		p.IBWidthAdmin = ptysWidth(l.widthEnabled)
		extEnabled := l.speedExtEnabled // 5 bits; LinkSpeedExtDisabled, LinkSpeedExtAllSupported
		switch {
		case extEnabled == mad.LinkSpeedExtAllSupported:
			extEnabled = l.speedExtSupported
		case extEnabled >= 0x10: // reserved values and LinkSpeedExtDisabled
			extEnabled = 0
		}
		p.IBSpeedAdmin = ptysSpeed(l.speedEnabled, extEnabled)
		if up {
			p.IBWidthOper = ptysWidth(l.widthActive)
			p.IBSpeedOper = ptysSpeed(l.speedActive, l.speedExtActive)
		}
	}
	p.Encode(out[mlx4.ACCESS_REG_HEADER_SIZE:])
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
	const widths, speeds = mad.LinkWidth1X | mad.LinkWidth4X, mad.LinkSpeedSDR | mad.LinkSpeedDDR | mad.LinkSpeedQDR
	return ibLinkInfo{widthSupported: widths, widthEnabled: widths, widthActive: mad.LinkWidth4X,
		speedSupported: speeds, speedEnabled: speeds, speedActive: mad.LinkSpeedQDR}
}

// ptysWidth converts a PortInfo link width mask (mad.LinkWidth*) to the
// PTYS one (mlx4.PTYS_IB_WIDTH_*: 1X, 2X, 4X, 8X, 12X in bits 0..4).
func ptysWidth(w uint8) uint16 {
	var out uint16
	for _, m := range [...]struct {
		pi   uint8
		ptys uint16
	}{{mad.LinkWidth1X, mlx4.PTYS_IB_WIDTH_1X}, {mad.LinkWidth2X, mlx4.PTYS_IB_WIDTH_2X}, {mad.LinkWidth4X, mlx4.PTYS_IB_WIDTH_4X},
		{mad.LinkWidth8X, mlx4.PTYS_IB_WIDTH_8X}, {mad.LinkWidth12X, mlx4.PTYS_IB_WIDTH_12X}} {
		if w&m.pi != 0 {
			out |= m.ptys
		}
	}
	return out
}

// ptysSpeed converts PortInfo's LinkSpeed (mad.LinkSpeedSDR, DDR, QDR) and
// LinkSpeedExt (mad.LinkSpeedExtFDR, EDR) masks to the PTYS one
// (mlx4.PTYS_IB_SPEED_*: SDR, DDR, QDR, FDR10, FDR, EDR in bits 0..5; FDR10
// is not in PortInfo).
func ptysSpeed(s, ext uint8) uint16 {
	var out uint16
	for _, m := range [...]struct {
		pi, ext uint8
		ptys    uint16
	}{{mad.LinkSpeedSDR, 0, mlx4.PTYS_IB_SPEED_SDR}, {mad.LinkSpeedDDR, 0, mlx4.PTYS_IB_SPEED_DDR}, {mad.LinkSpeedQDR, 0, mlx4.PTYS_IB_SPEED_QDR},
		{0, mad.LinkSpeedExtFDR, mlx4.PTYS_IB_SPEED_FDR}, {0, mad.LinkSpeedExtEDR, mlx4.PTYS_IB_SPEED_EDR}} {
		if s&m.pi != 0 || ext&m.ext != 0 {
			out |= m.ptys
		}
	}
	return out
}
