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

	"github.com/vhcrd/vhcrd/vhcr/eswitch"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// maxFSRulesPerVF bounds a VF's rules: mlx4 has no quota for them.
const maxFSRulesPerVF = 1024

// SetDeviceManagedSteering switches the model's steering mode (QUERY_DEV_CAP
// must then advertise it).
func (h *HCA) SetDeviceManagedSteering(on bool) { h.fw.dmfs = on }

// QP_FLOW_STEERING_ATTACH (mlx4_QP_FLOW_STEERING_ATTACH_wrapper): the port
// in the control segment must be the VF's (BAD_PARAM); the QP the VF's
// (INTERNAL_ERR unknown, BAD_OP another VF's); an Ethernet rule's
// destination MAC one the VF registered on that port unless multicast
// (BAD_PARAM); IPv4/TCP/UDP rules without L2 are accepted (mlx4 prepends
// the VF's MAC: it must have one on the port, else BAD_PARAM); IB rules
// accepted; other headers or a size outside the mailbox → BAD_PARAM, after
// the port and the QP (in mlx4's order). The rule holds its QP. out_param
// = the reg_id.
func (h *HCA) QP_FLOW_STEERING_ATTACH(c *Cmd) mlx4.Status {
	if !h.fw.dmfs {
		return c.Refuse(mlx4.INTERNAL_ERR, refusal.OpModifier)
	}
	b := c.Inbox
	phys, s := h.port(c, uint32(b[mlx4.NetTransCtrlPort]))
	if s != mlx4.OK {
		return s
	}
	qpn := binary.BigEndian.Uint32(b[mlx4.NetTransCtrlQPN:]) & mlx4.QPNMask // as mlx4: bit 23 names no QP
	qp, err := h.Res.Peek(c.VF, restrack.QP, uint64(qpn))
	if err != nil {
		return c.refuse(err)
	}
	// The model bounds the rule by the mailbox where mlx4 reads its
	// headers ("Corrupted mailbox": BAD_PARAM).
	size := int(c.InMod) * 4
	if c.InMod > mlx4.MailboxSize/4 || size < mlx4.NetTransCtrlSize+4 {
		return c.Refuse(mlx4.BAD_PARAM, refusal.InModifier)
	}
	hdr := b[mlx4.NetTransCtrlSize:]
	switch binary.BigEndian.Uint16(hdr[mlx4.RuleHwID:]) {
	case mlx4.NET_TRANS_RULE_ID_ETH:
		if size < mlx4.NetTransCtrlSize+mlx4.RuleHwEthDstMAC+6 {
			return c.Refuse(mlx4.BAD_PARAM, refusal.Context)
		}
		mac := eswitch.MAC(hdr[mlx4.RuleHwEthDstMAC:])
		if !eswitch.IsMulticast(mac) && !h.Res.HasMACValue(c.VF, phys, mac) {
			return c.Refuse(mlx4.BAD_PARAM, refusal.NotOwner)
		}
	case mlx4.NET_TRANS_RULE_ID_IPV4, mlx4.NET_TRANS_RULE_ID_TCP, mlx4.NET_TRANS_RULE_ID_UDP:
		// add_eth_header prepends a MAC the VF registered on the port;
		// without one the rule is BAD_PARAM.
		if !h.hasMACOn(c.VF, phys) {
			return c.Refuse(mlx4.BAD_PARAM, refusal.NotOwner)
		}
	case mlx4.NET_TRANS_RULE_ID_IB:
	default:
		return c.Refuse(mlx4.BAD_PARAM, refusal.Context)
	}
	if h.Res.Counts(c.VF)[restrack.FSRule] >= maxFSRulesPerVF {
		return c.Refuse(mlx4.EXCEED_LIM, refusal.Quota)
	}
	h.fw.nextRegID++
	id := h.fw.nextRegID
	if _, err := h.Res.AddFSRule(c.VF, id, qp); err != nil {
		return c.refuse(err)
	}
	c.OutParam = id
	return mlx4.OK
}

// hasMACOn reports whether vf registered any MAC on physical port phys.
func (h *HCA) hasMACOn(vf, phys int) bool {
	found := false
	h.Res.Walk(vf, func(o *restrack.Object) {
		found = found || (o.Type == restrack.MAC && int(o.Port) == phys)
	})
	return found
}

// QP_FLOW_STEERING_DETACH removes the VF's rule in_param (INTERNAL_ERR
// unknown, BAD_OP another VF's) and releases its QP.
func (h *HCA) QP_FLOW_STEERING_DETACH(c *Cmd) mlx4.Status {
	if !h.fw.dmfs {
		return c.Refuse(mlx4.INTERNAL_ERR, refusal.OpModifier)
	}
	if err := h.Res.RemoveFSRule(c.VF, c.InParam); err != nil {
		return c.refuse(err)
	}
	return mlx4.OK
}
