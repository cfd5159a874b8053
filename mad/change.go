package mad

import "fmt"

// PortChange says what an SM's Set changed on one port: what mlx4's PF
// snoops from the SMPs it passes to its firmware (smp_snoop) and turns into
// events for its VFs.
type PortChange struct {
	Port  uint8
	What  ChangeFlags
	State PortState // the port's state after the change
	// PKeys has bit i set for each physical P_Key index i whose entry
	// changed; GUIDs bit i for each GUIDInfo index i.
	PKeys [MaxPartitionCap / 64]uint64
	GUIDs uint64
}

// ChangeFlags are the kinds of change.
type ChangeFlags uint16

// Change kinds. ChangeState is a PortState change; the others follow
// mlx4's PORT_INFO changed_attr bits and its P_Key and GUID table events.
const (
	ChangeState ChangeFlags = 1 << iota
	ChangeLID
	ChangeSMLID
	ChangeSMSL
	ChangeGIDPrefix
	ChangeClientRereg
	ChangePKeys
	ChangeGUIDs
)

// Merge adds o's changes to c (same port); State becomes o's.
func (c *PortChange) Merge(o *PortChange) {
	c.Port, c.State = o.Port, o.State
	c.What |= o.What
	for i := range c.PKeys {
		c.PKeys[i] |= o.PKeys[i]
	}
	c.GUIDs |= o.GUIDs
}

// PKeyChanged reports whether physical P_Key index i changed.
func (c *PortChange) PKeyChanged(i int) bool {
	return i >= 0 && i < MaxPartitionCap && c.PKeys[i/64]&(1<<(i%64)) != 0
}

// PortObserver is told of every port change an SMP made. It is called
// without engine locks held, from the goroutine that called ProcessMAD; it
// must not call back into the engine's ProcessMAD synchronously from a
// goroutine the engine's caller waits on.
type PortObserver func(c *PortChange)

// Observe installs the port observer (nil: none). Call it before the
// engine serves MADs.
func (e *Engine) Observe(o PortObserver) {
	e.mu.Lock()
	e.observer = o
	e.mu.Unlock()
}

// portChanged records a change of port p for the observer (under e.mu).
func (e *Engine) portChanged(p *port, what ChangeFlags) *PortChange {
	c := &e.changes[p.num-1]
	c.Port, c.State = p.num, p.pi.PortState
	c.What |= what
	e.changed |= 1 << (p.num - 1)
	return c
}

// notify hands the recorded changes to the observer (without e.mu).
func (e *Engine) notify() {
	e.mu.Lock()
	obs, mask := e.observer, e.changed
	var out [MaxPorts]PortChange
	for i := range e.changes {
		if mask&(1<<i) != 0 {
			out[i] = e.changes[i]
			e.changes[i] = PortChange{}
		}
	}
	e.changed = 0
	e.mu.Unlock()
	if obs == nil {
		return
	}
	for i := range out {
		if mask&(1<<i) != 0 {
			obs(&out[i])
		}
	}
}

// GUID returns GUIDInfo entry idx of a port (false beyond GUIDCap).
func (e *Engine) GUID(portNum uint8, idx int) (uint64, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if portNum < 1 || int(portNum) > len(e.ports) || idx < 0 || idx >= int(e.ports[portNum-1].pi.GUIDCap) {
		return 0, false
	}
	return e.ports[portNum-1].guids[idx], true
}

var changeNames = [...]string{"state", "lid", "sm_lid", "sm_sl", "gid_prefix", "client_rereg", "pkeys", "guids"}

// String names the changes, "|"-separated.
func (f ChangeFlags) String() string {
	s := ""
	for i, n := range changeNames {
		if f&(1<<i) != 0 {
			if s != "" {
				s += "|"
			}
			s += n
		}
	}
	return s
}

// String is the state's PortInfo name.
func (s PortState) String() string {
	switch s {
	case PortNoChange:
		return "NoChange"
	case PortDown:
		return "Down"
	case PortInit:
		return "Init"
	case PortArmed:
		return "Armed"
	case PortActive:
		return "Active"
	}
	return fmt.Sprintf("PortState(%d)", uint8(s))
}
