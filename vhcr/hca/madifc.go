package hca

// MAD_IFC (0x24) and the mapping of the configuration
// onto the MAD engine (package mad).

import (
	"errors"
	"fmt"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// MADNode maps the configuration onto the MAD engine's node: GUIDs,
// description, IDs and every port's LID, keys, P_Key table and SM address.
func MADNode(c *config.Config) mad.NodeConfig {
	n := mad.NodeConfig{
		NodeGUID:        uint64(c.Device.NodeGUID),
		SystemImageGUID: uint64(c.Device.SysImageGUID),
		Description:     c.Device.NodeDescription,
		DeviceID:        uint16(c.Device.DeviceID),
		Revision:        uint32(c.Device.Revision),
		VendorID:        uint32(c.Device.VendorID),
	}
	maxPKeys := 0
	for _, p := range c.Ports {
		maxPKeys = max(maxPKeys, len(p.PKeys))
	}
	n.PartitionCap = uint16((maxPKeys + 31) / 32 * 32)
	for i, p := range c.Ports {
		portNum := i + 1
		pc := mad.PortConfig{
			LID: p.LID, LMC: p.LMC, GIDPrefix: uint64(p.GIDPrefix), PortGUID: uint64(p.PortGUID),
			State: mad.PortState(p.StateValue()), CapabilityMask: uint32(p.CapabilityMask),
			MKey: uint64(p.MKey), MKeyProtect: p.MKeyProtect, MKeyLeasePeriod: p.MKeyLeasePeriod,
			MasterSMLID: p.MasterSMLID, MasterSMSL: p.MasterSMSL, SubnetTimeOut: p.SubnetTimeout,
			BKey: uint64(p.BKey), BKeyProtect: p.BKeyProtect, BKeyLeasePeriod: p.BKeyLeasePeriod,
			QKey: uint32(p.QKey),
		}
		for _, k := range p.PKeys {
			pc.PKeys = append(pc.PKeys, uint16(k))
		}
		// GUIDInfo holds the VFs' alias GUIDs: slave s (VF s-1) owns index
		// s, as on mlx4's PF; an SM may set them.
		for vf := 0; vf < mad.MaxGUIDCap-1 && vf < config.MaxVFs; vf++ {
			pc.GUIDs = append(pc.GUIDs, c.Function(vf).PortGUID[portNum])
		}
		// GS traps go to the master SM on QP1 unless configured otherwise.
		if p.MasterSMLID != 0 {
			pc.PMATrap = mad.TrapAddress{LID: p.MasterSMLID, QP: 1, SL: p.MasterSMSL}
			pc.BMTrap = pc.PMATrap
		}
		n.Ports = append(n.Ports, pc)
	}
	return n
}

// vfCapMaskClear are the capability bits a VF never sees (it is not an SM,
// and it cannot be one).
const vfCapMaskClear = 1<<1 | 1<<10 // IsSM, IsSMdisabled

// AttachMAD connects the MAD engine: MAD_IFC then runs on it with each VF's
// paravirtualised view (its ports, virtual P_Key tables, GUIDs, port state
// and capability mask).
func (h *HCA) AttachMAD(e *mad.Engine) error {
	if e.NumPorts() != len(h.Cfg.Ports) {
		return fmt.Errorf("hca: MAD engine has %d ports, the configuration %d", e.NumPorts(), len(h.Cfg.Ports))
	}
	h.mad = e
	h.madViews = make([]mad.StaticVF, h.NumVFs)
	for vf := range h.madViews {
		h.refreshMADView(vf)
	}
	return nil
}

// MADRecorder records MAD_IFC commands that carry a work completion: MADs
// that arrived over the link (the daemon's --capture). Request is called
// before the engine runs, so that traps the MAD raises follow it; Reply
// after, with the response. Both run on the poller.
type MADRecorder interface {
	Request(port uint8, wc *mad.WC, grh *mad.GRH, in *mad.MAD)
	Reply(port uint8, out *mad.MAD)
}

// SetMADRecorder installs r (nil: none).
func (h *HCA) SetMADRecorder(r MADRecorder) { h.madRec = r }

// MADEngine is the attached engine, or nil.
func (h *HCA) MADEngine() *mad.Engine { return h.mad }

func (h *HCA) refreshMADView(vf int) {
	fn := &h.Funcs[vf]
	v := mad.StaticVF{Node: fn.NodeGUID, SMI: fn.SMI}
	for _, phys := range fn.Ports {
		p := &h.Cfg.Ports[phys-1]
		vp := mad.VFPort{Phys: uint8(phys), State: mad.PortDown, CapMask: uint32(p.CapabilityMask) &^ vfCapMaskClear,
			GUID: fn.PortGUID[phys]}
		if h.VFLinkUp(vf, phys) {
			vp.State = mad.PortActive
		}
		for _, idx := range fn.PKeyMap[phys] {
			vp.PKeyMap = append(vp.PKeyMap, uint16(idx))
		}
		v.Ports = append(v.Ports, vp)
	}
	h.madViews[vf] = v
}

// MAD_IFC hands the MAD (and, with op_modifier bit 2, the work completion
// and GRH after it) to the MAD engine under the VF policy of mlx4's
// MAD_IFC wrapper: LID-routed Gets of P_KeyTable, PortInfo, GUIDInfo and
// NodeInfo are answered with the VF's paravirtualised view; every Set,
// every network-view MAD_IFC and every other MAD is refused with BAD_OP.
func (h *HCA) MAD_IFC(c *Cmd) mlx4.Status {
	if h.mad == nil {
		return c.Refuse(mlx4.INTERNAL_ERR, refusal.NotModelled)
	}
	out := (*mad.MAD)(c.Outbox[:mad.Size])
	recorded := false
	var phys uint8
	if h.madRec != nil {
		in := &h.madScratch
		if mad.DecodeMADIFCInbox(c.OpMod, c.InMod, c.Inbox[:], in) == nil && in.HasWC {
			if p := h.PhysPort(c.VF, uint32(in.Port)); p != 0 {
				phys, recorded = uint8(p), true
				var grh *mad.GRH
				if in.HasGRH {
					grh = &in.GRH
				}
				h.madRec.Request(phys, &in.WC, grh, &in.MAD)
			}
		}
	}
	r := h.mad.ProcessMADIFC(&h.madViews[c.VF], c.OpMod, c.InMod, c.Inbox[:], out)
	if recorded && r == mad.IFCOK {
		h.madRec.Reply(phys, out)
	}
	return madIFCStatus(c, r)
}

// madIFCStatus is the status mlx4's master returns a VF for a MAD_IFC
// outcome. A MAD the firmware does not answer is BAD_PKT, which the master
// turns into -EINVAL and the VF sees as BAD_PARAM, like a malformed inbox.
func madIFCStatus(c *Cmd, r mad.IFCResult) mlx4.Status {
	switch r {
	case mad.IFCOK:
		return mlx4.OK
	case mad.IFCRefused:
		return c.Refuse(mlx4.BAD_OP, refusal.MAD)
	case mad.IFCNoReply:
		// Consumed without a reply: a B_Key (or other key) violation,
		// whose trap the engine sent, or a TrapRepress.
		return c.Refuse(mlx4.BAD_PARAM, refusal.MADDropped)
	}
	return c.Refuse(mlx4.BAD_PARAM, refusal.Context)
}

// QUERY_HCA answers the HCA's initialisation parameters a VF reads in
// mlx4_slave_cap: version 2, the table sizes (log2), 32-byte EQEs and CQEs,
// 4 KiB UAR pages. Base addresses of the PF's ICM tables are not a VF's
// business and read as zero.
func (h *HCA) QUERY_HCA(c *Cmd) mlx4.Status {
	r := &h.Cfg.Resources
	o := c.Outbox[:]
	o[mlx4.INIT_HCA_VERSION_OFFSET] = mlx4.INIT_HCA_VERSION
	o[mlx4.INIT_HCA_CACHELINE_SZ_OFFSET] = 2<<5 | 1<<4 // 64-byte cache lines, flags from INIT_HCA
	o[mlx4.INIT_HCA_LOG_QP_OFFSET] = r.LogQPs
	o[mlx4.INIT_HCA_LOG_SRQ_OFFSET] = r.LogSRQs
	o[mlx4.INIT_HCA_LOG_CQ_OFFSET] = r.LogCQs
	o[mlx4.INIT_HCA_EQE_CQE_OFFSETS] = 0
	o[mlx4.INIT_HCA_LOG_EQ_OFFSET] = r.LogEQs
	// 16 responder resources per QP: what Linux's PF gives INIT_HCA
	// (mlx4_make_profile: the default profile's rdmarc_per_qp, 1 << 4).
	o[mlx4.INIT_HCA_LOG_RD_OFFSET] = 4
	o[mlx4.INIT_HCA_LOG_MC_ENTRY_SZ_OFFSET] = 9
	o[mlx4.INIT_HCA_LOG_MC_HASH_SZ_OFFSET] = 12
	o[mlx4.INIT_HCA_LOG_MC_TABLE_SZ_OFFSET] = 13
	// B0 steering, which the model runs (hca/fs.go): mlx4_en in the VF
	// then steers its MACs and broadcast with QP_ATTACH (hca/eth.go); in
	// A0 it would leave them to the MAC table's QP ranges.
	o[mlx4.INIT_HCA_UC_STEERING_OFFSET] = mlx4.INIT_HCA_UC_STEERING_B0
	o[mlx4.INIT_HCA_LOG_MPT_SZ_OFFSET] = r.LogMPTs
	o[mlx4.INIT_HCA_LOG_UAR_SZ_OFFSET] = 3
	o[mlx4.INIT_HCA_UAR_PAGE_SZ_OFFSET] = 0 // 4 KiB: PAGE_SHIFT - 12
	return mlx4.OK
}

// SetPortState is an operator's link change on physical port phys ("down"
// or "active"): the model's port state (what QUERY_PORT and MAD_IFC show
// the VFs), the MAD engine's PortInfo, and a PORT_CHANGE event (DOWN or
// ACTIVE) to every VF with that port and the "auto" link policy.
// It returns how many VFs got the event. Runs on the poller.
func (h *HCA) SetPortState(phys int, state string) (int, error) {
	if phys < 1 || phys > len(h.Cfg.Ports) {
		return 0, fmt.Errorf("hca: no port %d", phys)
	}
	var sub uint8
	var ms mad.PortState
	switch state {
	case "down":
		sub, ms = mlx4.PORT_CHANGE_SUBTYPE_DOWN, mad.PortDown
	case "active":
		sub, ms = mlx4.PORT_CHANGE_SUBTYPE_ACTIVE, mad.PortActive
	default:
		return 0, fmt.Errorf("hca: port state %q: want down or active", state)
	}
	h.Cfg.Ports[phys-1].State = state
	if h.mad != nil {
		if err := h.mad.SetPortState(uint8(phys), ms); err != nil {
			return 0, err
		}
		for vf := range h.madViews {
			h.refreshMADView(vf)
		}
	}
	n, err := h.PortChange(phys, sub)
	if errors.Is(err, ErrNoEQ) {
		err = nil // VFs without an EQ for port events just miss them (counted)
	}
	return n, err
}
