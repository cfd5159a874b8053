package hca

import (
	"bytes"
	"encoding/binary"

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

// gidSlice is VF vf's slice of physical port phys's RoCE GID table: its
// first index and its length. Linux numbers a VF's GIDs by its place among
// the slaves on the port (slave_gid, after those exclusive to the other
// ports, which Linux numbers first); the model takes the VF's place among
// the VFs that have the port, which is the same under Linux's numbering
// and never overlaps under any. The first (112 mod n) of n VFs get one GID
// more.
func (h *HCA) gidSlice(vf, phys int) (base, n int) {
	vfs, place := 0, 0
	for i := range h.Funcs {
		for _, p := range h.Funcs[i].Ports {
			if p == phys {
				vfs++
				if i <= vf {
					place = vfs
				}
			}
		}
	}
	if place == 0 || vfs == 0 {
		return 0, 0
	}
	gids := mlx4.ROCE_MAX_GIDS - mlx4.ROCE_PF_GIDS
	if place <= gids%vfs {
		return mlx4.ROCE_PF_GIDS + (gids/vfs+1)*(place-1), gids/vfs + 1
	}
	return mlx4.ROCE_PF_GIDS + gids%vfs + gids/vfs*(place-1), gids / vfs
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
