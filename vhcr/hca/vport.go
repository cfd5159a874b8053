package hca

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/restrack"
)

// ErrVportResources is returned by ActivateVF when a port's VLAN or MAC
// table has no room for a VF's VST VLAN or spoof-checked MAC (mlx4 then
// resets the VF).
var ErrVportResources = errors.New("hca: no VLAN or MAC table entry for the VF's vport")

// vportOper is a VF's operational vport state on one physical port
// (struct mlx4_vport_oper_state): what mlx4_master_activate_admin_state
// registered when the VF enabled its vHCR.
type vportOper struct {
	active  bool
	vst     bool // default_vlan != MLX4_VGT
	vlan    int
	qos     int
	spoof   bool
	vlanIdx int // index of the VST VLAN in the port's VLAN table, -1 none
	macIdx  int // index of the VF's MAC in the port's MAC table, -1 none
}

// QP path bits the vport enforcement sets (include/linux/mlx4/qp.h).
const (
	flCV              = 1 << 6 // fl: MLX4_FL_CV
	flHideCQEVLAN     = 1 << 2 // fl: MLX4_FL_ETH_HIDE_CQE_VLAN
	ctrlIfCounter     = 1 << 7 // vlan_control: MLX4_CTRL_ETH_SRC_CHECK_IF_COUNTER (preserved)
	vlanTxBlockTagged = 1 << 6 // vlan_control: MLX4_VLAN_CTRL_ETH_TX_BLOCK_TAGGED
	vlanTxBlockPrio   = 1 << 5
	vlanTxBlockUntag  = 1 << 4
	vlanRxBlockTagged = 1 << 2
	vlanRxBlockPrio   = 1 << 1
	vlanRxBlockUntag  = 1 << 0
	feupForceUP       = 1 << 6 // feup: MLX4_FEUP_FORCE_ETH_UP
	feupForceSrcMAC   = 1 << 5 // feup: MLX4_FSM_FORCE_ETH_SRC_MAC
	feupForceVLAN     = 1 << 3 // feup: MLX4_FVL_FORCE_ETH_VLAN
	fvlRxForceVLAN    = 1 << 0 // fvl_rx: MLX4_FVL_RX_FORCE_ETH_VLAN
	optVLANStripping  = 1 << 21
	param3StripVLAN   = 1 << 30

	// Modify-QP mailbox offsets of the primary path's VLAN fields.
	qpcPriFL         = qpcPriPath + 0
	qpcPriVLANCtrl   = qpcPriPath + 1
	qpcPriVLANIndex  = qpcSched + 1
	qpcPriFEUP       = qpcSched + 2
	qpcPriFVLRx      = qpcSched + 3
	qpcQoSVport      = 8 + 0xbf
	qpcParam3        = 8 + 0xc0
	vportSchedUPMask = 0x38 // sched_queue bits 5:3: the 802.1p priority
)

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
		op := &h.fw.vfs[vf].vport[phys-1]
		if op.active {
			continue
		}
		*op = vportOper{active: true, vlanIdx: -1, macIdx: -1}
		if !h.isEth(phys) {
			continue
		}
		tables := &h.fw.ports[phys-1]
		if fn.VST != nil {
			op.vst, op.vlan, op.qos = true, fn.VST.VLAN, fn.VST.QoS
			if op.vlanIdx = register(tables.vlan[:], uint64(op.vlan)); op.vlanIdx < 0 {
				h.DeactivateVF(vf)
				return fmt.Errorf("%w: VLAN %d on port %d", ErrVportResources, fn.VST.VLAN, phys)
			}
		}
		if fn.SpoofCheck {
			op.spoof = true
			if op.macIdx = register(tables.mac[:], h.VFMAC(vf, phys)); op.macIdx < 0 {
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
	for i := range h.fw.vfs[vf].vport {
		op := &h.fw.vfs[vf].vport[i]
		if op.active {
			unregister(h.fw.ports[i].vlan[:], op.vlanIdx)
			unregister(h.fw.ports[i].mac[:], op.macIdx)
		}
		*op = vportOper{vlanIdx: -1, macIdx: -1}
	}
}

// qpcPriCounter is pri_path.counter_index in the modify-QP mailbox.
const qpcPriCounter = qpcPriPath + 4

// handleCounter is handle_counter, the start of update_vport_qp_param, for
// every VF: a QP's counter is the VF's own or the sink (the last index,
// nobody's). At INIT2RTR (assign) a sink is replaced by the VF's counter on
// the QP's port, reserving one if it has none; with no counter left the
// sink stays, as in mlx4. A counter the VF does not own is BAD_PARAM
// (-EINVAL). mlx4 checks at INIT2RTR only; the model checks every
// transition's context, since it keeps each one.
func (h *HCA) handleCounter(c *mlx4.Cmd, phys int, assign bool) mlx4.Status {
	sink := uint64(h.Cfg.Resources.Counters - 1)
	idx := uint64(c.Inbox[qpcPriCounter])
	if idx != sink {
		if _, err := h.Res.Peek(c.VF, restrack.Counter, idx); err != nil {
			if errors.Is(err, restrack.ErrNotFound) {
				return c.Refuse(mlx4.BAD_PARAM, mlx4.ReasonNotFound)
			}
			return c.Refuse(mlx4.BAD_PARAM, mlx4.ReasonNotOwner)
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
func (h *HCA) updateVportQP(c *mlx4.Cmd, phys int, st uint8) {
	op := &h.fw.vfs[c.VF].vport[phys-1]
	b := c.Inbox
	if op.vst {
		if c.InMod&qpnMask < uint32(h.Res.Config().Reserved[restrack.QP]) {
			return
		}
		if st == stUD || st == stMLX && h.isEth(phys) {
			binary.BigEndian.PutUint32(b[qpcOptpar:], binary.BigEndian.Uint32(b[qpcOptpar:])|optVLANStripping)
			binary.BigEndian.PutUint32(b[qpcParam3:], binary.BigEndian.Uint32(b[qpcParam3:])&^param3StripVLAN)
		}
		ctrl := b[qpcPriVLANCtrl] & ctrlIfCounter
		switch {
		case h.Funcs[c.VF].LinkState == "down":
			ctrl |= vlanTxBlockTagged | vlanTxBlockPrio | vlanTxBlockUntag | vlanRxBlockPrio | vlanRxBlockUntag | vlanRxBlockTagged
		case op.vlan != 0:
			ctrl |= vlanTxBlockTagged | vlanRxBlockPrio | vlanRxBlockUntag
		default: // priority tagged
			ctrl |= vlanTxBlockTagged | vlanRxBlockTagged
		}
		b[qpcPriVLANCtrl] = ctrl
		b[qpcPriFVLRx] |= fvlRxForceVLAN
		b[qpcPriVLANIndex] = byte(op.vlanIdx)
		b[qpcPriFL] |= flCV | flHideCQEVLAN
		b[qpcPriFEUP] |= feupForceUP | feupForceVLAN
		b[qpcSched] = b[qpcSched]&^vportSchedUPMask | byte(op.qos)<<3
		b[qpcQoSVport] = 0 // MLX4_VPP_DEFAULT_VPORT: no vport QoS configured
	}
	if op.spoof {
		b[qpcPriFEUP] |= feupForceSrcMAC
		b[qpcGRHMyLMC] = b[qpcGRHMyLMC]&0x80 + byte(op.macIdx)
	}
}
