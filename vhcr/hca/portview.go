package hca

// The ports as routing sees them, per packet. With a MAD engine (the SM's
// PortInfo and P_KeyTable Sets, which OpenSM makes from the fabric
// server's goroutine while the poller runs the data path) the engine's
// published view (mad.Engine.Route: an immutable snapshot replaced at each
// change, read with one atomic load) is the port's state, LID, LMC, GID
// prefix and P_Key table; without one, the configuration's. Neither takes
// a lock nor copies PortInfo on a packet's path.

import "github.com/vhcrd/vhcrd/mad"

// portNow is what routing needs of physical port phys now.
func (h *HCA) portNow(phys int) portView {
	if phys < 1 || phys > len(h.Cfg.Ports) {
		return portView{}
	}
	p := &h.Cfg.Ports[phys-1]
	if h.mad != nil {
		if r := h.mad.Route(uint8(phys)); r != nil {
			return portView{active: r.State == mad.PortActive, eth: p.LinkLayer == "eth", lid: r.LID, lmc: r.LMC, prefix: r.GIDPrefix}
		}
	}
	return portView{active: p.State == "active", eth: p.LinkLayer == "eth", lid: p.LID, lmc: p.LMC, prefix: uint64(p.GIDPrefix)}
}

// pkeyNow is entry idx of physical port phys's P_Key table (0: none).
func (h *HCA) pkeyNow(phys int, idx uint8) uint16 {
	if h.mad != nil {
		if r := h.mad.Route(uint8(phys)); r != nil {
			return r.PKeys[idx]
		}
		return 0
	}
	if phys < 1 || phys > len(h.Cfg.Ports) || int(idx) >= len(h.Cfg.Ports[phys-1].PKeys) {
		return 0
	}
	return uint16(h.Cfg.Ports[phys-1].PKeys[idx])
}
