package ibsim

import (
	"fmt"

	"github.com/vhcrd/vhcrd/mad"
)

// Fabric is the link partner of the engine's ports: one switch, with some
// of the engine's ports cabled to switch ports. A directed-route SMP with a
// hop count above 0 travels its initial path across these cables (IBA
// 14.2.2); a LID-routed SMP reaches the switch's port 0 LID or another
// cabled engine port's LID.
type Fabric struct {
	Switch *mad.Switch
	// Cables maps an engine port (1..NumPorts) to the switch port
	// (1..Switch.NumPorts()) it is cabled to.
	Cables map[uint8]uint8
}

// validate checks the cables and brings their links up: the switch ports
// and the engine ports train to Init (a port already Init or above keeps
// its state), IBA 7.2.
func (f *Fabric) validate(e *mad.Engine) error {
	if f.Switch == nil {
		return fmt.Errorf("ibsim: fabric without a switch")
	}
	used := map[uint8]bool{}
	for hp, sp := range f.Cables {
		if hp < 1 || int(hp) > e.NumPorts() {
			return fmt.Errorf("ibsim: fabric: engine port %d of %d", hp, e.NumPorts())
		}
		if sp < 1 || int(sp) > f.Switch.NumPorts() || used[sp] {
			return fmt.Errorf("ibsim: fabric: switch port %d (of %d) missing or cabled twice", sp, f.Switch.NumPorts())
		}
		used[sp] = true
	}
	for hp, sp := range f.Cables {
		if err := f.Switch.SetLink(int(sp), true); err != nil {
			return err
		}
		pi, err := e.PortInfo(hp)
		if err != nil {
			return err
		}
		if pi.PortState == mad.PortDown && pi.PortPhysicalState != mad.PhysDisabled {
			if err := e.SetPortState(hp, mad.PortInit); err != nil {
				return err
			}
		}
	}
	return nil
}

// hcaPeer returns the engine port cabled to switch port sp (0: none).
func (f *Fabric) hcaPeer(sp uint8) uint8 {
	for hp, s := range f.Cables {
		if s == sp {
			return hp
		}
	}
	return 0
}

// node is a place on the fabric: the engine (sw false) or the switch.
type node struct {
	sw   bool
	port uint8 // the port the SMP arrived on
}

// directed walks a directed-route SMP with hop count hc > 0 from the
// engine's port `from` (the SM's port) along its initial path, as each
// node's SMI would (smi_handle_dr_smp_send/recv, C14-9): it records the
// arrival port of each hop in the return path and leaves the hop pointer at
// hc+1 for the SMA at the end. It reports where the SMP ends, or false when
// a node on the way would discard it (a CA that would have to forward, a
// port with no cable or with its link down, a bad first hop).
func (f *Fabric) directed(m *mad.MAD, from uint8) (node, bool) {
	hc := m.HopCount()
	if hc == 0 || hc >= mad.MaxHops || m.HopPointer() != 0 || m.Direction() ||
		m.DrSLID() != mad.LIDPermissive || m.DrDLID() != mad.LIDPermissive {
		return node{}, false
	}
	path := m[128 : 128+mad.MaxHops]
	ret := m[192 : 192+mad.MaxHops]
	// The source: a CA sends out of the port its initial path names,
	// which must be the port it sends on.
	if path[1] != from {
		return node{}, false
	}
	at := node{port: from}
	for i := 1; i <= int(hc); i++ {
		exit := path[i]
		var next node
		if !at.sw {
			if i > 1 {
				return node{}, false // a CA does not forward
			}
			sp, ok := f.Cables[exit]
			if !ok {
				return node{}, false
			}
			if pi, _ := f.Switch.PortInfo(int(sp)); pi.PortPhysicalState != mad.PhysLinkUp {
				return node{}, false
			}
			next = node{sw: true, port: sp}
		} else {
			if exit == 0 || int(exit) > f.Switch.NumPorts() {
				return node{}, false
			}
			pi, _ := f.Switch.PortInfo(int(exit))
			hp := f.hcaPeer(exit)
			if pi.PortPhysicalState != mad.PhysLinkUp || hp == 0 {
				return node{}, false
			}
			next = node{port: hp}
		}
		ret[i] = next.port
		at = next
	}
	m[6] = hc + 1
	return at, true
}
