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
//
// The stages: the VFs' alias GUIDs the SM set, the port's state (with a
// PORT_CHANGE on an Active edge), the VFs' MAD views, then each VF's
// PORT_MNG_CHG events (PortInfo attributes, P_Key table, GUID table).
func (h *HCA) PortMgmtChange(c *mad.PortChange) (int, error) {
	phys := int(c.Port)
	if phys < 1 || phys > len(h.Cfg.Ports) {
		return 0, fmt.Errorf("hca: no port %d", phys)
	}
	var t eqeTally
	if c.What&mad.ChangeGUIDs != 0 && h.mad != nil {
		h.adoptAliasGUIDs(c, phys)
	}
	if c.What&mad.ChangeState != 0 && int(c.State) < len(madStateNames) && c.State != mad.PortNoChange {
		h.portStateChanged(c.State, phys, &t)
	}
	if h.mad != nil {
		for vf := range h.madViews {
			h.refreshMADView(vf)
		}
	}
	if c.What&(mad.ChangeState|mad.ChangeLID|mad.ChangeSMLID|mad.ChangeClientRereg) != 0 {
		h.registerAliasGUIDs(phys) // aliasguid.go: only once Active with an SM
	}
	attr := portInfoChangedAttr(c.What)
	for vf := range h.Funcs {
		if vport := h.vfPort(vf, phys); vport != 0 {
			h.postPortMgmtEvents(c, vf, phys, vport, attr, &t)
		}
	}
	return t.n, t.first
}

// eqeTally counts the EQEs posted and keeps the first error other than a
// VF without an EQ for the event.
type eqeTally struct {
	n     int
	first error
}

func (t *eqeTally) note(k int, err error) {
	t.n += k
	if err != nil && !errors.Is(err, ErrNoEQ) && t.first == nil {
		t.first = err
	}
}

// adoptAliasGUIDs takes the GUIDs the SM set in the VFs' slots of the
// port's GUID table (mlx4: slave s owns GUID index s; VF vf is slave vf+1).
func (h *HCA) adoptAliasGUIDs(c *mad.PortChange, phys int) {
	for vf := range h.Funcs {
		slot := vf + 1
		if slot >= 64 || c.GUIDs&(1<<slot) == 0 || !h.hasPort(vf, phys) {
			continue
		}
		if g, ok := h.mad.GUID(uint8(phys), slot); ok {
			h.Funcs[vf].PortGUID[phys] = g
		}
	}
}

// portStateChanged records the port's new state and, when it becomes or
// stops being Active, sends the VFs a PORT_CHANGE (subtype ACTIVE or
// DOWN).
func (h *HCA) portStateChanged(st mad.PortState, phys int, t *eqeTally) {
	was := h.Cfg.Ports[phys-1].State == "active"
	h.Cfg.Ports[phys-1].State = madStateNames[st]
	if now := st == mad.PortActive; now != was {
		sub := uint8(mlx4.PORT_CHANGE_SUBTYPE_DOWN)
		if now {
			sub = mlx4.PORT_CHANGE_SUBTYPE_ACTIVE
		}
		t.note(h.PortChange(phys, sub))
	}
}

// portInfoChangedAttr is a PORT_INFO event's changed_attr for the changes.
func portInfoChangedAttr(what mad.ChangeFlags) uint32 {
	var attr uint32
	if what&mad.ChangeLID != 0 {
		attr |= mlx4.EQ_PORT_INFO_LID_CHANGE_MASK
	}
	if what&mad.ChangeGIDPrefix != 0 {
		attr |= mlx4.EQ_PORT_INFO_GID_PFX_CHANGE_MASK
	}
	if what&mad.ChangeClientRereg != 0 {
		attr |= mlx4.EQ_PORT_INFO_CLIENT_REREG_MASK
	}
	return attr
}

// postPortMgmtEvents posts VF vf's PORT_MNG_CHG events for the change on
// its port vport: PORT_INFO with the changed attributes, PKEY_TABLE if an
// entry its P_Key map reaches changed, GUID_INFO if its GUID slot did.
func (h *HCA) postPortMgmtEvents(c *mad.PortChange, vf, phys, vport int, attr uint32, t *eqeTally) {
	if attr != 0 {
		t.note(h.postCount(vf, mlx4.EQE{Subtype: mlx4.DEV_PMC_SUBTYPE_PORT_INFO, Port: vport, ChangedAttr: attr}))
	}
	if c.What&mad.ChangePKeys != 0 {
		for _, idx := range h.Funcs[vf].PKeyMap[phys] {
			if c.PKeyChanged(idx) {
				t.note(h.postCount(vf, mlx4.EQE{Subtype: mlx4.DEV_PMC_SUBTYPE_PKEY_TABLE, Port: vport}))
				break
			}
		}
	}
	if slot := vf + 1; c.What&mad.ChangeGUIDs != 0 && slot < 64 && c.GUIDs&(1<<slot) != 0 {
		t.note(h.postCount(vf, mlx4.EQE{Subtype: mlx4.DEV_PMC_SUBTYPE_GUID_INFO, Port: vport}))
	}
}

// postCount posts the PORT_MNG_CHG event e to VF vf and counts it.
func (h *HCA) postCount(vf int, e mlx4.EQE) (int, error) {
	e.Type = mlx4.EventPortMngChg
	b := mlx4.EncodeEQE(e)
	if err := h.PostEQE(vf, e.Type, &b); err != nil {
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
