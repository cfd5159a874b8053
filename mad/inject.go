package mad

import "fmt"

// Injection is a change an SM's Set would make on a port, made directly
// by the PF's fault injection (vhcr/faultinj): the flags say which of the
// values apply.
type Injection struct {
	What      ChangeFlags // ChangeLID, ChangeSMLID, ChangePKeys, ChangeGUIDs, ChangeGIDPrefix, ChangeClientRereg
	LID       uint16
	SMLID     uint16
	PKeyIndex int
	PKey      uint16
	GUIDIndex int
	GUID      uint64
	GIDPrefix uint64
}

// Inject applies in to port portNum as the SM's Sets would, and returns
// the change for the caller to deliver (vhcr/hca's PortMgmtChange); the
// engine's observers are not told (the caller is the one that would
// deliver it).
func (e *Engine) Inject(portNum uint8, in Injection) (PortChange, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if portNum < 1 || int(portNum) > len(e.ports) {
		return PortChange{}, fmt.Errorf("mad: port %d of %d: %w", portNum, len(e.ports), ErrInvalid)
	}
	p := &e.ports[portNum-1]
	defer e.publishRoute(p) // an error past the first field leaves those before it applied
	c := PortChange{Port: portNum, What: in.What, State: PortNoChange}
	if in.What&ChangeLID != 0 {
		p.pi.LID = in.LID
	}
	if in.What&ChangeSMLID != 0 {
		p.pi.MasterSMLID = in.SMLID
	}
	if in.What&ChangeGIDPrefix != 0 {
		p.pi.GIDPrefix = in.GIDPrefix
	}
	if in.What&ChangePKeys != 0 {
		if in.PKeyIndex < 0 || in.PKeyIndex >= e.pcap {
			return PortChange{}, fmt.Errorf("mad: P_Key index %d of %d: %w", in.PKeyIndex, e.pcap, ErrInvalid)
		}
		p.pkeys[in.PKeyIndex] = in.PKey
		c.PKeys[in.PKeyIndex/64] |= 1 << (in.PKeyIndex % 64)
	}
	if in.What&ChangeGUIDs != 0 {
		if in.GUIDIndex < 0 || in.GUIDIndex >= MaxGUIDCap || in.GUIDIndex >= 64 {
			return PortChange{}, fmt.Errorf("mad: GUID index %d: %w", in.GUIDIndex, ErrInvalid)
		}
		p.guids[in.GUIDIndex] = in.GUID
		c.GUIDs |= 1 << in.GUIDIndex
	}
	return c, nil
}
