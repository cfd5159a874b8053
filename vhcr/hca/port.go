package hca

// Port, Ethernet-filter, counter and miscellaneous executors.
//
//	opcode           in_modifier / in_param
//	INIT_PORT        VF port
//	CLOSE_PORT       VF port
//	SET_PORT         VF port in 7:0
//	HW_HEALTH_CHECK  -
//	CONF_SPECIAL_QP  -
//	INFORM_FLR_DONE  -
//	CONFIG_DEV       op_modifier must be 1 (get)
//	PROMISC          in_param: QPN 31:0, VF port 63:62; in_modifier steer type
//	SET_VLAN_FLTR    VF port in 7:0; inbox 128 BE32 VLAN bitmap
//	SET_MCAST_FLTR   VF port in 7:0
//	QUERY_IF_STAT    counter index in 15:0
//	DUMP_ETH_STATS   VF port in 7:0
//
// QP_FLOW_STEERING_ATTACH and _DETACH are in fs.go.

import (
	"encoding/binary"

	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// port converts in_modifier[7:0] to a physical port or refuses BAD_PARAM.
func (h *HCA) port(c *Cmd, vport uint32) (int, mlx4.Status) {
	phys := h.PhysPort(c.VF, vport)
	if phys == 0 {
		return 0, c.Refuse(mlx4.BAD_PARAM, refusal.Port)
	}
	return phys, mlx4.OK
}

// INIT_PORT opens the VF's port (mlx4_INIT_PORT_wrapper: port converted,
// BAD_PARAM if the VF has no such port; opening twice is OK).
func (h *HCA) INIT_PORT(c *Cmd) mlx4.Status {
	phys, s := h.port(c, c.InMod)
	if s != mlx4.OK {
		return s
	}
	h.fw.vfs[c.VF].PortOpen[phys-1] = true
	return mlx4.OK
}

// CLOSE_PORT closes the VF's port (closing a closed port is OK).
func (h *HCA) CLOSE_PORT(c *Cmd) mlx4.Status {
	phys, s := h.port(c, c.InMod)
	if s != mlx4.OK {
		return s
	}
	h.fw.vfs[c.VF].PortOpen[phys-1] = false
	return mlx4.OK
}

// PortOpen reports whether VF vf has done INIT_PORT on physical port phys.
func (h *HCA) PortOpen(vf, phys int) bool {
	if vf < 0 || vf >= len(h.fw.vfs) || phys < 1 || phys > 2 {
		return false
	}
	return h.fw.vfs[vf].PortOpen[phys-1]
}

// HW_HEALTH_CHECK is native in mlx4; the model's hardware is healthy.
func (h *HCA) HW_HEALTH_CHECK(c *Cmd) mlx4.Status { return mlx4.OK }

// CONF_SPECIAL_QP is native in mlx4 (only the PF's demux should use it);
// the model answers OK and changes nothing, so a VF cannot reconfigure the
// device's special QPs.
func (h *HCA) CONF_SPECIAL_QP(c *Cmd) mlx4.Status { return mlx4.OK }

// INFORM_FLR_DONE is native in mlx4; from a VF the model answers OK and
// changes nothing (FLR completion is the PF's own business).
func (h *HCA) INFORM_FLR_DONE(c *Cmd) mlx4.Status { return mlx4.OK }

// CONFIG_DEV: only op_modifier 1 (get) is allowed (else BAD_OP); the answer
// is all zero (no VXLAN port, default checksum handling).
func (h *HCA) CONFIG_DEV(c *Cmd) mlx4.Status {
	if c.OpMod != 1 {
		return c.Refuse(mlx4.BAD_OP, refusal.OpModifier)
	}
	return mlx4.OK
}

// PROMISC adds (op_modifier ≠ 0) or removes a promiscuous QP
// (mlx4_PROMISC_wrapper): the port (in_param 63:62) must be the VF's
// (BAD_PARAM); unicast steering (in_modifier 0) is a no-op in
// multi-function mode. Stricter than Linux: the QP must be the VF's.
func (h *HCA) PROMISC(c *Cmd) mlx4.Status {
	phys, s := h.port(c, uint32(c.InParam>>62))
	if s != mlx4.OK {
		return s
	}
	if c.InMod == 0 {
		return mlx4.OK
	}
	qpn := uint64(lo32(c.InParam) & qpnMask)
	if _, err := h.Res.Peek(c.VF, restrack.QP, qpn); err != nil {
		return c.refuse(err)
	}
	h.fw.vfs[c.VF].Promisc[phys-1] = c.OpMod != 0
	return mlx4.OK
}

// SET_VLAN_FLTR records the VF's VLAN filter for its port.
func (h *HCA) SET_VLAN_FLTR(c *Cmd) mlx4.Status {
	phys, s := h.port(c, c.InMod&mlx4.PortInModMask)
	if s != mlx4.OK {
		return s
	}
	f := &h.fw.vfs[c.VF].VLANFltr[phys-1]
	for i := range f {
		f[i] = binary.BigEndian.Uint32(c.Inbox[4*i:])
	}
	return mlx4.OK
}

// SET_MCAST_FLTR records the VF's multicast filter mode for its port.
func (h *HCA) SET_MCAST_FLTR(c *Cmd) mlx4.Status {
	phys, s := h.port(c, c.InMod&mlx4.PortInModMask)
	if s != mlx4.OK {
		return s
	}
	h.fw.vfs[c.VF].McastOn[phys-1] = c.OpMod != 0
	return mlx4.OK
}

// QUERY_IF_STAT returns a counter (all zero in the model): the counter
// (in_modifier 15:0) must be the VF's (INTERNAL_ERR unknown, BAD_OP
// another VF's).
func (h *HCA) QUERY_IF_STAT(c *Cmd) mlx4.Status {
	if _, err := h.Res.Peek(c.VF, restrack.Counter, uint64(c.InMod&mlx4.CounterInModMask)); err != nil {
		return c.refuse(err)
	}
	return mlx4.OK
}

// DUMP_ETH_STATS: mlx4 answers a VF OK with an empty outbox; the model
// also requires the port to be the VF's (BAD_PARAM).
func (h *HCA) DUMP_ETH_STATS(c *Cmd) mlx4.Status {
	_, s := h.port(c, c.InMod&mlx4.PortInModMask)
	return s
}
