package mad

// PortRoute is what a data path needs of a port to route packets and check
// their partitions: the port's state, its LID and LMC, its GID prefix and
// its P_Key table. The engine publishes a new one, immutable, whenever one
// of these may have changed (an SM's Set of PortInfo or P_KeyTable,
// SetPortState, Inject); Route reads the current one with one atomic load,
// so a data path that routes every packet does not take the engine's lock
// or copy PortInfo per packet.
type PortRoute struct {
	State     PortState
	LID       uint16
	LMC       uint8 // 0..7
	GIDPrefix uint64
	// PKeys is the physical P_Key table; entries at or past the partition
	// capacity are 0 (what PKey returns for them).
	PKeys [MaxPartitionCap]uint16
}

// Route returns port portNum's current routing view (nil for no such
// port). The value is never modified: a change publishes a new one. Safe
// for concurrent use with every other method.
func (e *Engine) Route(portNum uint8) *PortRoute {
	if portNum < 1 || int(portNum) > len(e.routes) {
		return nil
	}
	return e.routes[portNum-1].Load()
}

// publishRoute publishes port p's routing view (under e.mu, or before the
// engine is shared). Not on a packet's path: it allocates.
func (e *Engine) publishRoute(p *port) {
	r := &PortRoute{State: p.pi.PortState, LID: p.pi.LID, LMC: p.pi.LMC & 7, GIDPrefix: p.pi.GIDPrefix}
	copy(r.PKeys[:e.pcap], p.pkeys[:e.pcap])
	e.routes[p.num-1].Store(r)
}
