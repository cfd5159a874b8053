package hca

// Device-managed flow steering.
//
//	opcode                   in_modifier / in_param
//	QP_FLOW_STEERING_ATTACH  rule size in dwords; inbox = ctrl + headers; out_param = reg_id
//	QP_FLOW_STEERING_DETACH  in_param = reg_id
//
// mlx4 answers both with -EOPNOTSUPP (INTERNAL_ERR) unless the device runs
// device-managed steering; the model runs B0 steering (QUERY_DEV_CAP does
// not advertise DMFS) until SetDeviceManagedSteering(true).

import (
	"encoding/binary"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/restrack"
)

// Rule layout (struct mlx4_net_trans_rule_hw_ctrl, then _rule_hw headers).
const (
	fsCtrlPort      = 7  // VF port
	fsCtrlQPN       = 8  // BE32, 23:0
	fsCtrlSize      = 16 // first header follows
	fsHdrID         = 2  // BE16 hardware header id
	fsEthDstMAC     = 10 // within the Ethernet header
	fsIDEth         = 0xe001
	fsIDIPv4        = 0xe002
	fsIDIPv6        = 0xe003
	fsIDTCP         = 0xe004
	fsIDIB          = 0xe005
	fsIDUDP         = 0xe006
	maxFSRulesPerVF = 1024 // mlx4 has no quota for rules; the model bounds them
)

// SetDeviceManagedSteering switches the model's steering mode (QUERY_DEV_CAP
// must then advertise it).
func (h *HCA) SetDeviceManagedSteering(on bool) { h.fw.dmfs = on }

// QP_FLOW_STEERING_ATTACH (mlx4_QP_FLOW_STEERING_ATTACH_wrapper): the port
// in the control segment must be the VF's (BAD_PARAM); the QP the VF's
// (INTERNAL_ERR unknown, BAD_OP another VF's); an Ethernet rule's
// destination MAC one the VF registered on that port unless multicast
// (BAD_PARAM); IPv4/TCP/UDP rules without L2 are accepted (mlx4 prepends
// the VF's MAC); IB rules accepted; other headers or a size outside the
// mailbox → BAD_PARAM. The rule holds its QP. out_param = the reg_id.
func (h *HCA) QP_FLOW_STEERING_ATTACH(c *mlx4.Cmd) mlx4.Status {
	if !h.fw.dmfs {
		return c.Refuse(mlx4.INTERNAL_ERR, mlx4.ReasonOpModifier)
	}
	size := int(c.InMod) * 4
	if c.InMod > mlx4.MailboxSize/4 || size < fsCtrlSize+4 {
		return c.Refuse(mlx4.BAD_PARAM, mlx4.ReasonInModifier)
	}
	b := c.Inbox
	phys, s := h.port(c, uint32(b[fsCtrlPort]))
	if s != mlx4.OK {
		return s
	}
	qpn := binary.BigEndian.Uint32(b[fsCtrlQPN:]) & 0xffffff
	qp, err := h.Res.Peek(c.VF, restrack.QP, uint64(qpn&qpnMask))
	if err != nil {
		return restrack.Refuse(c, err)
	}
	hdr := b[fsCtrlSize:]
	switch binary.BigEndian.Uint16(hdr[fsHdrID:]) {
	case fsIDEth:
		if size < fsCtrlSize+fsEthDstMAC+6 {
			return c.Refuse(mlx4.BAD_PARAM, mlx4.ReasonContext)
		}
		dst := hdr[fsEthDstMAC : fsEthDstMAC+6]
		mac := uint64(dst[0])<<40 | uint64(dst[1])<<32 | uint64(dst[2])<<24 | uint64(dst[3])<<16 | uint64(dst[4])<<8 | uint64(dst[5])
		if dst[0]&1 == 0 && !h.Res.HasMACValue(c.VF, phys, mac) {
			return c.Refuse(mlx4.BAD_PARAM, mlx4.ReasonNotOwner)
		}
	case fsIDIB, fsIDIPv4, fsIDTCP, fsIDUDP:
	default:
		return c.Refuse(mlx4.BAD_PARAM, mlx4.ReasonContext)
	}
	if h.Res.Counts(c.VF)[restrack.FSRule] >= maxFSRulesPerVF {
		return c.Refuse(mlx4.EXCEED_LIM, mlx4.ReasonQuota)
	}
	h.fw.nextRegID++
	id := h.fw.nextRegID
	if _, err := h.Res.AddFSRule(c.VF, id, qp); err != nil {
		return restrack.Refuse(c, err)
	}
	c.OutParam = id
	return mlx4.OK
}

// QP_FLOW_STEERING_DETACH removes the VF's rule in_param (INTERNAL_ERR
// unknown, BAD_OP another VF's) and releases its QP.
func (h *HCA) QP_FLOW_STEERING_DETACH(c *mlx4.Cmd) mlx4.Status {
	if !h.fw.dmfs {
		return c.Refuse(mlx4.INTERNAL_ERR, mlx4.ReasonOpModifier)
	}
	if err := h.Res.RemoveFSRule(c.VF, c.InParam); err != nil {
		return restrack.Refuse(c, err)
	}
	return mlx4.OK
}
