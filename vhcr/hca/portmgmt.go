package hca

// Port management events: what an SM's Sets change on a physical port
// (the MAD engine's PortObserver) reaches the VFs as mlx4's PF delivers it.
//
//	change                  mlx4 PF (mad.c smp_snoop, cmd.c)      EQE to
//	port Active / not       PORT_CHANGE up (4) / down (1)        VFs with the port, link policy auto
//	LID                     PORT_MNG_CHG PORT_INFO, LID_CHANGE    every VF with the port
//	GID prefix              PORT_MNG_CHG PORT_INFO, GID_PFX       every VF with the port
//	client reregister       PORT_MNG_CHG PORT_INFO, CLIENT_REREG  every VF with the port
//	P_Key entries           PORT_MNG_CHG PKEY_TABLE               VFs whose virtual table maps one
//	alias GUID (index vf+1) PORT_MNG_CHG GUID_INFO                the VF owning the slot
//
// An SM LID or SL change updates only the PF's own SM address (update_sm_ah);
// the VFs read the new SM LID with MAD_IFC. The port number in each EQE is
// the VF's own.

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

var madStateNames = [...]string{mad.PortDown: "down", mad.PortInit: "init", mad.PortArmed: "armed", mad.PortActive: "active"}

// PortMgmtChange delivers one port's changes to the VFs (see the table
// above) and refreshes what their QUERY_PORT and MAD_IFC show. It returns
// how many EQEs were posted. VFs without an EQ for the event miss it
// (counted). Runs on the poller.
func (h *HCA) PortMgmtChange(c *mad.PortChange) (int, error) {
	phys := int(c.Port)
	if phys < 1 || phys > len(h.Cfg.Ports) {
		return 0, fmt.Errorf("hca: no port %d", phys)
	}
	n := 0
	var first error
	note := func(k int, err error) {
		n += k
		if err != nil && !errors.Is(err, ErrNoEQ) && first == nil {
			first = err
		}
	}
	if c.What&mad.ChangeGUIDs != 0 && h.mad != nil {
		for vf := range h.Funcs {
			slot := vf + 1 // mlx4: slave s owns GUID index s; VF vf is slave vf+1
			if slot >= 64 || c.GUIDs&(1<<slot) == 0 || !h.hasPort(vf, phys) {
				continue
			}
			if g, ok := h.mad.GUID(uint8(phys), slot); ok {
				h.Funcs[vf].PortGUID[phys] = g
			}
		}
	}
	if c.What&mad.ChangeState != 0 && int(c.State) < len(madStateNames) && c.State != mad.PortNoChange {
		was := h.Cfg.Ports[phys-1].State == "active"
		h.Cfg.Ports[phys-1].State = madStateNames[c.State]
		if now := c.State == mad.PortActive; now != was {
			sub := uint8(1)
			if now {
				sub = 4
			}
			note(h.PortChange(phys, sub))
		}
	}
	if h.mad != nil {
		for vf := range h.madViews {
			h.refreshMADView(vf)
		}
	}
	var attr uint32
	if c.What&mad.ChangeLID != 0 {
		attr |= mlx4.EQ_PORT_INFO_LID_CHANGE_MASK
	}
	if c.What&mad.ChangeGIDPrefix != 0 {
		attr |= mlx4.EQ_PORT_INFO_GID_PFX_CHANGE_MASK
	}
	if c.What&mad.ChangeClientRereg != 0 {
		attr |= mlx4.EQ_PORT_INFO_CLIENT_REREG_MASK
	}
	for vf := range h.Funcs {
		vport := h.vfPort(vf, phys)
		if vport == 0 {
			continue
		}
		if attr != 0 {
			var e [mlx4.EQESize]byte
			e[mlx4.EQESubtype], e[mlx4.EQEPortMngChgPort] = mlx4.DEV_PMC_SUBTYPE_PORT_INFO, byte(vport)
			binary.BigEndian.PutUint32(e[mlx4.EQEPortMngChgChangedAttr:], attr)
			note(h.postCount(vf, &e))
		}
		if c.What&mad.ChangePKeys != 0 {
			for _, idx := range h.Funcs[vf].PKeyMap[phys] {
				if c.PKeyChanged(idx) {
					var e [mlx4.EQESize]byte
					e[mlx4.EQESubtype], e[mlx4.EQEPortMngChgPort] = mlx4.DEV_PMC_SUBTYPE_PKEY_TABLE, byte(vport)
					note(h.postCount(vf, &e))
					break
				}
			}
		}
		if slot := vf + 1; c.What&mad.ChangeGUIDs != 0 && slot < 64 && c.GUIDs&(1<<slot) != 0 {
			var e [mlx4.EQESize]byte
			e[mlx4.EQESubtype], e[mlx4.EQEPortMngChgPort] = mlx4.DEV_PMC_SUBTYPE_GUID_INFO, byte(vport)
			note(h.postCount(vf, &e))
		}
	}
	return n, first
}

func (h *HCA) postCount(vf int, e *[mlx4.EQESize]byte) (int, error) {
	if err := h.PostEQE(vf, mlx4.EventPortMngChg, e); err != nil {
		return 0, err
	}
	return 1, nil
}

// vfPort is the VF's own number of physical port phys (0: not its port).
func (h *HCA) vfPort(vf, phys int) int {
	for i, p := range h.Funcs[vf].Ports {
		if p == phys {
			return i + 1
		}
	}
	return 0
}

func (h *HCA) hasPort(vf, phys int) bool { return h.vfPort(vf, phys) != 0 }
