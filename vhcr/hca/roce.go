package hca

import (
	"bytes"
	"encoding/binary"
	"slices"

	"github.com/vhcrd/vhcrd/vhcr/eswitch"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// RoCE's GID table. An Ethernet port has one table of
// mlx4.ROCE_MAX_GIDS GIDs (PortState.RoCEGIDs): the PF's first
// mlx4.ROCE_PF_GIDS, the VFs on the port sharing the rest in slices
// (mlx4_get_slave_num_gids, mlx4_get_base_gid_ix). A VF writes its slice
// with SET_PORT's GID_TABLE (mlx4_ib's update_gids from the netdev's
// addresses: roce_gid_mgmt); its QP contexts name GIDs by index in its
// slice, which update_gid rewrites to the table's (qp.go pathRewrite).

// gidRange is a VF's slice of a port's RoCE GID table.
type gidRange struct{ base, n uint8 }

// gidSlices computes every VF's slice of each physical port's RoCE GID
// table (New, once: the VFs' ports are the configuration's). Linux numbers
// a VF's GIDs by its place among the slaves on the port (slave_gid, after
// those exclusive to the other ports, which Linux numbers first); the
// model takes the VF's place among the VFs that have the port, which is
// the same under Linux's numbering and never overlaps under any. The
// first (112 mod n) of n VFs get one GID more.
func (h *HCA) gidSlices() {
	h.gids = make([][2]gidRange, len(h.Funcs))
	for phys := 1; phys <= 2; phys++ {
		vfs := 0
		for i := range h.Funcs {
			if slices.Contains(h.Funcs[i].Ports, phys) {
				vfs++
			}
		}
		place := 0
		for i := range h.Funcs {
			if !slices.Contains(h.Funcs[i].Ports, phys) {
				continue
			}
			place++
			gids := mlx4.ROCE_MAX_GIDS - mlx4.ROCE_PF_GIDS
			r := gidRange{uint8(mlx4.ROCE_PF_GIDS + gids%vfs + gids/vfs*(place-1)), uint8(gids / vfs)}
			if place <= gids%vfs {
				r = gidRange{uint8(mlx4.ROCE_PF_GIDS + (gids/vfs+1)*(place-1)), uint8(gids/vfs + 1)}
			}
			h.gids[i][phys-1] = r
		}
	}
}

// gidSlice is VF vf's slice of physical port phys's RoCE GID table: its
// first index and its length (0: the VF lacks the port, or is past the
// table's 112).
func (h *HCA) gidSlice(vf, phys int) (base, n int) {
	if vf < 0 || vf >= len(h.gids) || phys < 1 || phys > 2 {
		return 0, 0
	}
	r := h.gids[vf][phys-1]
	return int(r.base), int(r.n)
}

// numGIDs is VF vf's GID count on physical port phys (QUERY_PORT's
// cur_max_gid): its RoCE slice on Ethernet, 1 on IB.
func (h *HCA) numGIDs(vf, phys int) int {
	if h.isEth(phys) {
		_, n := h.gidSlice(vf, phys)
		return max(n, 1)
	}
	return 1
}

// RoCEGID returns entry i of physical port phys's RoCE GID table (the
// zero GID: empty).
func (h *HCA) RoCEGID(phys, i int) (g [16]byte) {
	if phys >= 1 && phys <= len(h.fw.ports) && i >= 0 && i < mlx4.ROCE_MAX_GIDS {
		g = h.fw.ports[phys-1].RoCEGIDs[i]
	}
	return g
}

// SET_PORT is mlx4_SET_PORT_wrapper and mlx4_common_set_port for a VF: the
// port converted (BAD_PARAM if it is not the VF's). With a non-zero
// op_modifier (Ethernet) only GENERAL (the VF's MTU and pause, which the
// model's port does not change) and GID_TABLE pass, any other type is
// BAD_PARAM (EINVAL); GID_TABLE is the VF's RoCE GIDs (setGIDs). With op
// modifier 0 (IB) a capability mask with IsSM or DevMgmt is BAD_PARAM; the
// rest (the mask Linux aggregates over the functions, the Q_Key violation
// counter's reset) the model leaves as its port has them.
func (h *HCA) SET_PORT(c *Cmd) mlx4.Status {
	phys, s := h.port(c, c.InMod&mlx4.PortInModMask)
	if s != mlx4.OK {
		return s
	}
	if c.OpMod != 0 {
		switch c.InMod >> mlx4.SetPortTypeShift {
		case mlx4.SET_PORT_GENERAL:
			return mlx4.OK
		case mlx4.SET_PORT_GID_TABLE:
			return h.setGIDs(c, phys)
		}
		return c.Refuse(mlx4.BAD_PARAM, refusal.Privileged)
	}
	capMask := binary.BigEndian.Uint32(c.Inbox[mlx4.SetPortIBCapMaskOffset:])
	if capMask&(mlx4.PORT_CAP_IS_SM|mlx4.PORT_CAP_DEV_MGMT_SUP) != 0 {
		return c.Refuse(mlx4.BAD_PARAM, refusal.Privileged)
	}
	return mlx4.OK
}

// setGIDs is SET_PORT's GID_TABLE from VF c.VF: the mailbox's first n
// entries (n the VF's slice) are its GIDs. Two equal non-zero entries, or
// one equal to a GID another function has in the port's table, is
// BAD_PARAM (EINVAL) and changes nothing; else the slice is replaced.
func (h *HCA) setGIDs(c *Cmd, phys int) mlx4.Status {
	if !h.isEth(phys) {
		return c.Refuse(mlx4.BAD_PARAM, refusal.Port) // the firmware's: no RoCE table on an IB port
	}
	base, n := h.gidSlice(c.VF, phys) // n 0: a VF past the table's 112 has none, and sets none
	var zero [mlx4.ROCE_GID_ENTRY_SIZE]byte
	entry := func(i int) []byte {
		return c.Inbox[i*mlx4.ROCE_GID_ENTRY_SIZE : (i+1)*mlx4.ROCE_GID_ENTRY_SIZE]
	}
	t := &h.fw.ports[phys-1].RoCEGIDs
	for i := range n {
		g := entry(i)
		if bytes.Equal(g, zero[:]) {
			continue
		}
		for j := i + 1; j < n; j++ {
			if bytes.Equal(entry(j), g) {
				return c.Refuse(mlx4.BAD_PARAM, refusal.GID)
			}
		}
		for k := range t {
			if (k < base || k >= base+n) && bytes.Equal(t[k][:], g) {
				return c.Refuse(mlx4.BAD_PARAM, refusal.GID)
			}
		}
	}
	for i := range n {
		copy(t[base+i][:], entry(i))
	}
	return mlx4.OK
}

// gidsResetVF empties VF vf's slices of its Ethernet ports' GID tables
// (mlx4_reset_roce_gids, at the slave's cleanup).
func (h *HCA) gidsResetVF(vf int) {
	for _, phys := range h.Funcs[vf].Ports {
		if !h.isEth(phys) {
			continue
		}
		base, n := h.gidSlice(vf, phys)
		clear(h.fw.ports[phys-1].RoCEGIDs[base : base+n])
	}
}

// RoCE on the data path. An RC, UC or UD QP on an Ethernet port sends
// RoCE v1 (the only version a VF is told of: SR-IOV hides v2): each packet
// an Ethernet frame to a destination MAC, with a GRH whose source GID is
// the port table's entry at the QP's mgid_index (an RC path's, after
// update_gid added the VF's base; a UD QP's forced base, update_gid's
// 0x80) and whose destination GID is the path's or the address vector's.
// The port's switch takes it, as it takes mlx4_en's frames, to the VF of
// the port that has the MAC registered (its MAC table entries: mlx4_en's
// and mlx4_ib's ALLOC_RES of RES_MAC) and there to the QP the BTH names;
// the packet must carry one of that VF's GIDs (its slice of the table)
// and a VLAN its QP takes (a VST VF's forced VLAN, or the VLAN of an RC
// path's VLAN GID), and both VFs' links must be up. Anything else is lost
// on the wire, as on any port: RC retries after its ACK timeout, UD is
// dropped and counted.

// roceTag is the VLAN a RoCE packet carries: a VST VF's forced one (the PF
// forced it into every non-reserved QP's path), else an RC path's VLAN
// (feup's FVL_FORCE_ETH_VLAN over vlan_index: mlx4_ib's VLAN GIDs) or a
// UD datagram segment's (port_pd's VLAN bit).
type roceTag struct {
	tagged bool
	vid    uint16
}

// txTag is qp's packet's tag; ud is the datagram segment's VLAN (TCI) and
// whether its address vector says it is valid.
func txTag(w *wq, udVLAN uint16, udValid bool) roceTag {
	if w.eth.FEUP&mlx4.FVL_FORCE_ETH_VLAN != 0 && !w.eth.NoVLAN {
		return roceTag{true, w.eth.VLAN}
	}
	if udValid {
		return roceTag{true, eswitch.VID(udVLAN)}
	}
	return roceTag{}
}

// takes reports whether QP dq's VLAN policy takes a packet tagged t: a
// forced VLAN (VST's receive force, or an RC path's) only that VLAN's; a
// UD QP without one any; any other QP only untagged packets.
func (dw *wq) takes(t roceTag) bool {
	p := &dw.eth
	if p.FVLRx&mlx4.FVL_RX_FORCE_ETH_VLAN != 0 || p.FEUP&mlx4.FVL_FORCE_ETH_VLAN != 0 {
		return !p.NoVLAN && t.tagged && t.vid == p.VLAN
	}
	return dw.st == mlx4.QP_ST_UD || !t.tagged
}

// hasGID reports whether g is one of VF vf's GIDs on physical port phys.
func (h *HCA) hasGID(vf, phys int, g *[16]byte) bool {
	if *g == ([16]byte{}) {
		return false
	}
	base, n := h.gidSlice(vf, phys)
	t := &h.fw.ports[phys-1].RoCEGIDs
	for i := base; i < base+n; i++ {
		if t[i] == *g {
			return true
		}
	}
	return false
}

// roceRoute finds the QP a RoCE packet of qp arrives at: the QP dqpn of
// service type st on qp's port, if its VF has MAC dmac and GID dgid there
// and its QP takes the tag; both VFs' links must be up. routeDown: the
// sender's link is down; routeNoPort: no VF of the port takes the frame
// (on a wire it would leave by the uplink; the model builds no RoCE
// frames, so it is lost); routeNoQP: no such QP there.
func (h *HCA) roceRoute(qp *qpObj, dmac uint64, dgid *[16]byte, t roceTag, dqpn uint32, st uint8) (*qpObj, routeRes) {
	w, phys := qp.wq, qp.Port
	if h.dp != nil {
		h.dp.srcLID = 0 // no LIDs on Ethernet: the CQE's rlid is 0
	}
	if !h.VFLinkUp(w.vf, phys) {
		return nil, routeDown
	}
	dq := h.routeQP(phys, dqpn)
	if dq == nil || dq.wq.st != st {
		return nil, routeNoQP
	}
	dv := dq.wq.vf
	if !h.Res.HasMACValue(dv, phys, dmac) || !h.VFLinkUp(dv, phys) || !h.hasGID(dv, phys, dgid) || !dq.wq.takes(t) {
		return nil, routeNoPort
	}
	return dq, routeOK
}
