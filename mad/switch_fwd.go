package mad

import "sync/atomic"

// swFwd is the switch's forwarding state as the data path reads it: the
// linear forwarding table, LinearFDBTop and which external ports are
// Active, each readable without the switch's lock. The SMA's handlers
// (OpenSM's Sets, on the ibsim server's goroutines) and Configure write it
// under s.mu; the HCA's data path (the poller) reads it with atomic loads
// only, so a lookup is a table load, allocation- and lock-free. The LFT is
// the only copy of the table; LinearFDBTop and the port states are
// published here from SwitchInfo and PortInfo at every change.
type swFwd struct {
	lft    [switchLFTCap / 4]atomic.Uint32 // 4 entries a word: LID l in byte l%4
	top    atomic.Uint32                   // SwitchInfo.LinearFDBTop
	active atomic.Uint64                   // bit p: external port p is Active
}

// entry is LID lid's LFT entry (lid < switchLFTCap).
func (f *swFwd) entry(lid uint16) uint8 {
	return uint8(f.lft[lid/4].Load() >> (8 * (lid % 4)))
}

// setEntry writes LID lid's entry. The caller holds s.mu: writers do not
// race each other, and a reader sees the word before or after.
func (f *swFwd) setEntry(lid uint16, port uint8) {
	w := &f.lft[lid/4]
	sh := 8 * (lid % 4)
	w.Store(w.Load()&^(0xFF<<sh) | uint32(port)<<sh)
}

// publishPorts republishes the external ports' Active bits (under s.mu,
// after any change of a port's state).
func (s *Switch) publishPorts() {
	var m uint64
	for p := 1; p < len(s.ports); p++ {
		if s.ports[p].pi.PortState == PortActive {
			m |= 1 << p
		}
	}
	s.fwd.active.Store(m)
}

// Forward returns the LFT's output port for a unicast LID (0xFF: none, as
// for a LID above LinearFDBTop; 0: the switch's own port 0). It takes no
// lock and allocates nothing: the data path calls it for every packet
// that crosses the switch, concurrently with the SM's Sets.
func (s *Switch) Forward(lid uint16) uint8 {
	if lid >= switchLFTCap || uint32(lid) > s.fwd.top.Load() {
		return 0xFF
	}
	return s.fwd.entry(lid)
}

// PortActive reports whether external port port (1..NumPorts) is Active:
// the only state in which it passes data packets (IBA 7.2). Lock-free, as
// Forward.
func (s *Switch) PortActive(port int) bool {
	return port >= 1 && port < len(s.ports) && s.fwd.active.Load()&(1<<port) != 0
}

// MulticastPorts returns the MFT's port mask for a multicast LID (bit p:
// the switch replicates the packet out of port p; IBA 14.2.5.12), 0 for a
// LID outside the table. Lock-free, as Forward: the entries are atomics
// the SM's Sets store under the switch's lock. MulticastFDBTop is not
// applied: an entry the SM never wrote is an empty mask.
func (s *Switch) MulticastPorts(mlid uint16) uint64 {
	if mlid < LIDMulticastBase || int(mlid-LIDMulticastBase) >= switchMFTCap {
		return 0
	}
	return s.mft[mlid-LIDMulticastBase].Load()
}
