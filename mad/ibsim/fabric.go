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
	// Peers are other channel adapters on the switch: switch port → an
	// engine cabled by its port 1. The SM manages them like the served
	// engine; no client sits on them.
	Peers map[uint8]*mad.Engine
	// LID, if set, makes the fabric start as a subnet an SM has swept:
	// the switch has this LID and, as its master SM LID, the served port's;
	// its forwarding table routes the LIDs (with their LMC aliases) of
	// every cabled port that has one, and the switch ports facing Active
	// ports are Active. 0: a fresh switch (ports Init, no LID, empty
	// table), as before any SM ran.
	LID uint16

	cabled *mad.Engine // the engine Cable connected, nil until then
}

// Cable connects engine e's ports to the fabric once, before any server
// listens (validate: the links up, a sweep with a LID); port is the port an
// ibsim server would serve, whose master SM LID the swept switch takes. A
// daemon that routes its data path through the switch cables it at start
// whether or not it serves the ibsim protocol; Listen with this Fabric and
// engine then finds it cabled and leaves it as it is.
func (f *Fabric) Cable(e *mad.Engine, port uint8) error {
	if f.cabled != nil {
		return fmt.Errorf("ibsim: fabric already cabled")
	}
	if err := f.validate(e, port); err != nil {
		return err
	}
	f.cabled = e
	return nil
}

// validate checks the cables and brings their links up: the switch ports
// and the engine ports train to Init (a port already Init or above keeps
// its state), IBA 7.2. With a LID it then leaves the switch as a sweep
// would (see Fabric.LID); port is the served engine port.
//
// The stages: the cables (checkCables), the peers' cables checked and
// their links brought up (linkPeers), the served engine's links
// (linkCables), then with a LID the sweep (sweep).
func (f *Fabric) validate(e *mad.Engine, port uint8) error {
	if f.Switch == nil {
		return fmt.Errorf("ibsim: fabric without a switch")
	}
	used, err := f.checkCables(e)
	if err != nil {
		return err
	}
	if err := f.linkPeers(e, used); err != nil {
		return err
	}
	if err := f.linkCables(e); err != nil {
		return err
	}
	if f.LID == 0 {
		return nil
	}
	return f.sweep(e, port)
}

// checkCables checks the served engine's cables: an engine port it has to
// a switch port no other cable uses. It returns the switch ports used.
func (f *Fabric) checkCables(e *mad.Engine) (map[uint8]bool, error) {
	used := map[uint8]bool{}
	for hp, sp := range f.Cables {
		if hp < 1 || int(hp) > e.NumPorts() {
			return nil, fmt.Errorf("ibsim: fabric: engine port %d of %d", hp, e.NumPorts())
		}
		if sp < 1 || int(sp) > f.Switch.NumPorts() || used[sp] {
			return nil, fmt.Errorf("ibsim: fabric: switch port %d (of %d) missing or cabled twice", sp, f.Switch.NumPorts())
		}
		used[sp] = true
	}
	return used, nil
}

// linkPeers checks each peer's cable (a switch port of its own) and brings
// its link up, on both ends, peer by peer.
func (f *Fabric) linkPeers(e *mad.Engine, used map[uint8]bool) error {
	for sp, pe := range f.Peers {
		if pe == nil || pe == e || sp < 1 || int(sp) > f.Switch.NumPorts() || used[sp] {
			return fmt.Errorf("ibsim: fabric: peer on switch port %d (of %d): missing, the served engine, or cabled twice", sp, f.Switch.NumPorts())
		}
		used[sp] = true
		if err := f.Switch.SetLink(int(sp), true); err != nil {
			return err
		}
		if err := linkUp(pe, 1); err != nil {
			return err
		}
	}
	return nil
}

// linkCables brings the served engine's cabled links up, on both ends.
func (f *Fabric) linkCables(e *mad.Engine) error {
	for hp, sp := range f.Cables {
		if err := f.Switch.SetLink(int(sp), true); err != nil {
			return err
		}
		if err := linkUp(e, hp); err != nil {
			return err
		}
	}
	return nil
}

// sweep leaves the switch as an SM's sweep would: its LID, a route to
// every cabled port's LIDs, the ports facing Active ports Active, the
// served port's master SM LID.
func (f *Fabric) sweep(e *mad.Engine, port uint8) error {
	w := mad.Swept{LID: f.LID, Routes: map[uint16]uint8{f.LID: 0}}
	for hp, sp := range f.Cables {
		if err := facing(&w, e, hp, sp); err != nil {
			return err
		}
	}
	for sp, pe := range f.Peers {
		if err := facing(&w, pe, 1, sp); err != nil {
			return err
		}
	}
	if pi, err := e.PortInfo(port); err == nil {
		w.SMLID = pi.MasterSMLID
	}
	return f.Switch.Configure(w)
}

// facing adds to w what switch port sp sees of the engine port it faces:
// routes for the port's LID and its LMC aliases (a LID two ports claim is
// an error), Active if the port is.
func facing(w *mad.Swept, pe *mad.Engine, port, sp uint8) error {
	pi, err := pe.PortInfo(port)
	if err != nil {
		return err
	}
	if pi.LID == 0 {
		return nil
	}
	for l := pi.LID; l < pi.LID+1<<pi.LMC; l++ {
		if o, dup := w.Routes[l]; dup {
			return fmt.Errorf("ibsim: fabric: LID %d on switch port %d and %d", l, o, sp)
		}
		w.Routes[l] = sp
	}
	if pi.PortState == mad.PortActive {
		w.Active = append(w.Active, int(sp))
	}
	return nil
}

// linkUp trains a cabled engine port that is Down (and not Disabled) to
// Init.
func linkUp(e *mad.Engine, port uint8) error {
	pi, err := e.PortInfo(port)
	if err != nil {
		return err
	}
	if pi.PortState == mad.PortDown && pi.PortPhysicalState != mad.PhysDisabled {
		return e.SetPortState(port, mad.PortInit)
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

// node is a place on the fabric: the served engine, a peer engine or the
// switch.
type node struct {
	sw   bool
	peer *mad.Engine // a peer CA (port is then 1)
	port uint8       // the port the SMP arrived on
}

// hop is a MAD's way through the switch: the external port it entered by
// (0: it never reached the switch) and the one it left by (0: it ended at
// port 0, the switch's agents; 0xFF: the switch had no route).
// hop is the switch ports a MAD entered and left by; sent: the switch
// sent it out of out (a CA there may still drop it).
type hop struct {
	in, out uint8
	sent    bool
}

// caPeer returns the CA node behind switch port sp, if one is cabled there.
func (f *Fabric) caPeer(sp uint8) (node, *mad.Engine, bool) {
	if hp := f.hcaPeer(sp); hp != 0 {
		return node{port: hp}, nil, true
	}
	if pe := f.Peers[sp]; pe != nil {
		return node{peer: pe, port: 1}, pe, true
	}
	return node{}, nil, false
}

// directed walks a directed-route SMP with hop count hc > 0 from the
// engine's port `from` (the SM's port) along its initial path, as each
// node's SMI would (smi_handle_dr_smp_send/recv, C14-9): it records the
// arrival port of each hop in the return path and leaves the hop pointer at
// hc+1 for the SMA at the end. It reports where the SMP ends and the switch
// ports it entered and left by (x.out 0: it ended at the switch), or false
// when a node on the way would discard it (a CA that would have to forward,
// a port with no cable or with its link down, a bad first hop).
func (f *Fabric) directed(m *mad.MAD, from uint8) (at node, x hop, ok bool) {
	hc := m.HopCount()
	if hc == 0 || hc >= mad.MaxHops || m.HopPointer() != 0 || m.Direction() ||
		m.DrSLID() != mad.LIDPermissive || m.DrDLID() != mad.LIDPermissive {
		return node{}, hop{}, false
	}
	path := m[128 : 128+mad.MaxHops]
	ret := m[192 : 192+mad.MaxHops]
	// The source: a CA sends out of the port its initial path names,
	// which must be the port it sends on.
	if path[1] != from {
		return node{}, hop{}, false
	}
	at = node{port: from}
	for i := 1; i <= int(hc); i++ {
		exit := path[i]
		var next node
		if !at.sw {
			if i > 1 {
				return node{}, hop{}, false // a CA does not forward
			}
			sp, ok := f.Cables[exit]
			if !ok {
				return node{}, hop{}, false
			}
			if pi, _ := f.Switch.PortInfo(int(sp)); pi.PortPhysicalState != mad.PhysLinkUp {
				return node{}, hop{}, false
			}
			next = node{sw: true, port: sp}
			x.in = sp
		} else {
			if exit == 0 || int(exit) > f.Switch.NumPorts() {
				return node{}, hop{}, false
			}
			pi, _ := f.Switch.PortInfo(int(exit))
			n, _, ok := f.caPeer(exit)
			if pi.PortPhysicalState != mad.PhysLinkUp || !ok {
				return node{}, hop{}, false
			}
			next = n
			x.out = exit
		}
		ret[i] = next.port
		at = next
	}
	m[6] = hc + 1
	return at, x, true
}
