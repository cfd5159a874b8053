package hca

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// ErrVportResources is returned by ActivateVF when a port's VLAN or MAC
// table has no room for a VF's VST VLAN or spoof-checked MAC (mlx4 then
// resets the VF).
var ErrVportResources = errors.New("hca: no VLAN or MAC table entry for the VF's vport")

// VportState is a VF's operational vport state on one physical port
// (struct mlx4_vport_oper_state): what mlx4_master_activate_admin_state
// registered when the VF enabled its vHCR.
type VportState struct {
	Active  bool
	VST     bool // default_vlan != MLX4_VGT
	VLAN    int
	QoS     int
	Spoof   bool
	VLANIdx int    // index of the VST VLAN in the port's VLAN table, -1 none
	MACIdx  int    // index of the VF's MAC in the port's MAC table, -1 none
	MAC     uint64 // the admin MAC when activated (vfadmin.go), 0 = default
}

// ActivateVF is mlx4_master_activate_admin_state, run when VF vf enables
// its vHCR: on each of its Ethernet ports, VST registers the VLAN in the
// port's VLAN table and spoof check registers the VF's MAC in the port's
// MAC table. Nothing is registered twice: an active VF is left as it is.
// With no room in a table it undoes what it did and returns
// ErrVportResources.
func (h *HCA) ActivateVF(vf int) error {
	if vf < 0 || vf >= len(h.fw.vfs) {
		return fmt.Errorf("hca: VF %d outside 0..%d", vf, len(h.fw.vfs)-1)
	}
	fn := &h.Funcs[vf]
	for _, phys := range fn.Ports {
		op := &h.fw.vfs[vf].Vport[phys-1]
		if op.Active {
			continue
		}
		*op = VportState{Active: true, VLANIdx: -1, MACIdx: -1, MAC: h.fw.vfs[vf].AdminMAC[phys-1]}
		if !h.isEth(phys) {
			continue
		}
		tables := &h.fw.ports[phys-1]
		if fn.VST != nil {
			op.VST, op.VLAN, op.QoS = true, fn.VST.VLAN, fn.VST.QoS
			if op.VLANIdx = register(tables.VLAN[:], uint64(op.VLAN)); op.VLANIdx < 0 {
				h.DeactivateVF(vf)
				return fmt.Errorf("%w: VLAN %d on port %d", ErrVportResources, fn.VST.VLAN, phys)
			}
		}
		if fn.SpoofCheck {
			op.Spoof = true
			if op.MACIdx = register(tables.MAC[:], h.VFMAC(vf, phys)); op.MACIdx < 0 {
				h.DeactivateVF(vf)
				return fmt.Errorf("%w: MAC on port %d", ErrVportResources, phys)
			}
		}
	}
	return nil
}

// DeactivateVF is mlx4_master_deactivate_admin_state: the VST VLAN and the
// spoof-checked MAC are unregistered. ResetFunction runs it.
func (h *HCA) DeactivateVF(vf int) {
	if vf < 0 || vf >= len(h.fw.vfs) {
		return
	}
	for i := range h.fw.vfs[vf].Vport {
		op := &h.fw.vfs[vf].Vport[i]
		if op.Active {
			unregister(h.fw.ports[i].VLAN[:], op.VLANIdx)
			unregister(h.fw.ports[i].MAC[:], op.MACIdx)
		}
		*op = VportState{VLANIdx: -1, MACIdx: -1}
	}
}

// qpcPriCounter is pri_path.counter_index in the modify-QP mailbox.
const qpcPriCounter = mlx4.QPMailboxPriPath + mlx4.PathCounterIndex

// handleCounter is handle_counter, the start of update_vport_qp_param, for
// every VF: a QP's counter is the VF's own or the sink (the last index,
// nobody's). At INIT2RTR (assign) a sink is replaced by the VF's counter on
// the QP's port, reserving one if it has none; with no counter left the
// sink stays, as in mlx4. A counter the VF does not own is BAD_PARAM
// (-EINVAL). mlx4 checks at INIT2RTR only; the model checks every
// transition's context, since it keeps each one.
func (h *HCA) handleCounter(c *Cmd, phys int, assign bool) mlx4.Status {
	sink := uint64(h.Cfg.Resources.Counters - 1)
	idx := uint64(c.Inbox[qpcPriCounter])
	if idx != sink {
		if _, err := h.Res.Peek(c.VF, restrack.Counter, idx); err != nil {
			if errors.Is(err, restrack.ErrNotFound) {
				return c.Refuse(mlx4.BAD_PARAM, refusal.NotFound)
			}
			return c.Refuse(mlx4.BAD_PARAM, refusal.NotOwner)
		}
		if h.fw.counterPort[idx] == 0 {
			h.fw.counterPort[idx] = phys
		}
		return mlx4.OK
	}
	if !assign {
		return mlx4.OK
	}
	found := int64(-1)
	h.Res.Walk(c.VF, func(o *restrack.Object) {
		if found < 0 && o.Type == restrack.Counter && h.fw.counterPort[o.ID] == phys {
			found = int64(o.ID)
		}
	})
	if found < 0 {
		n, err := h.Res.Alloc(c.VF, restrack.Counter)
		if err != nil {
			return mlx4.OK // none left for the VF: the QP counts into the sink
		}
		found = int64(n)
		h.fw.counterPort[uint64(n)] = phys
	}
	c.Inbox[qpcPriCounter] = byte(found)
	return mlx4.OK
}

// updateVportQP is update_vport_qp_param: for a QP on a port where the VF
// is in VST, VLAN stripping is forced for UD and raw Ethernet QPs, the
// vlan_control blocks what VST forbids (everything while the VF's link is
// forced down), the VLAN index, the force bits and the priority are set;
// with spoof check the source MAC is forced to the VF's. Reserved QPs
// (special, proxy, tunnel) are left alone, spoof check included, as in
// mlx4. It rewrites the shadow inbox of a modify-QP command whose primary
// path is on physical port phys.
func (h *HCA) updateVportQP(c *Cmd, phys int, st uint8) {
	op := &h.fw.vfs[c.VF].Vport[phys-1]
	b := c.Inbox[mlx4.QPMailboxContext:mlx4.QPMailboxSize] // the context
	pri := b[mlx4.QPCPriPath:][:mlx4.QPPathSize]
	if op.VST {
		if c.InMod&qpnMask < uint32(h.Res.Config().Reserved[restrack.QP]) {
			return
		}
		if st == mlx4.QP_ST_UD || st == mlx4.QP_ST_MLX && h.isEth(phys) {
			o := c.Inbox[mlx4.QPMailboxOptPar:]
			binary.BigEndian.PutUint32(o, binary.BigEndian.Uint32(o)|mlx4.QP_OPTPAR_VLAN_STRIPPING)
			p3 := b[mlx4.QPCParam3:]
			binary.BigEndian.PutUint32(p3, binary.BigEndian.Uint32(p3)&^mlx4.STRIP_VLAN)
		}
		ctrl := pri[mlx4.PathVLANControl] & mlx4.CTRL_ETH_SRC_CHECK_IF_COUNTER
		switch {
		case h.Funcs[c.VF].LinkState == "down":
			ctrl |= mlx4.VLAN_CTRL_ETH_TX_BLOCK_TAGGED | mlx4.VLAN_CTRL_ETH_TX_BLOCK_PRIO | mlx4.VLAN_CTRL_ETH_TX_BLOCK_UNTAG |
				mlx4.VLAN_CTRL_ETH_RX_BLOCK_PRIO | mlx4.VLAN_CTRL_ETH_RX_BLOCK_UNTAG | mlx4.VLAN_CTRL_ETH_RX_BLOCK_TAGGED
		case op.VLAN != 0:
			ctrl |= mlx4.VLAN_CTRL_ETH_TX_BLOCK_TAGGED | mlx4.VLAN_CTRL_ETH_RX_BLOCK_PRIO | mlx4.VLAN_CTRL_ETH_RX_BLOCK_UNTAG
		default: // priority tagged
			ctrl |= mlx4.VLAN_CTRL_ETH_TX_BLOCK_TAGGED | mlx4.VLAN_CTRL_ETH_RX_BLOCK_TAGGED
		}
		pri[mlx4.PathVLANControl] = ctrl
		pri[mlx4.PathFVLRx] |= mlx4.FVL_RX_FORCE_ETH_VLAN
		pri[mlx4.PathVLANIndex] = byte(op.VLANIdx)
		pri[mlx4.PathFL] |= mlx4.FL_CV | mlx4.FL_ETH_HIDE_CQE_VLAN
		pri[mlx4.PathFEUP] |= mlx4.FEUP_FORCE_ETH_UP | mlx4.FVL_FORCE_ETH_VLAN
		pri[mlx4.PathSchedQueue] = pri[mlx4.PathSchedQueue]&^mlx4.SchedQueueUPMask | byte(op.QoS)<<3
		b[mlx4.QPCQoSVport] = mlx4.VPP_DEFAULT_VPORT // no vport QoS configured
	}
	if op.Spoof {
		pri[mlx4.PathFEUP] |= mlx4.FSM_FORCE_ETH_SRC_MAC
		pri[mlx4.PathGRHMyLMC] = pri[mlx4.PathGRHMyLMC]&mlx4.GRHMyLMCGRH + byte(op.MACIdx)
	}
}
