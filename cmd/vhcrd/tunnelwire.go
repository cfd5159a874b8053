package main

import (
	"github.com/vhcrd/vhcrd/mad"
	"github.com/vhcrd/vhcrd/mad/ibsim"
	"github.com/vhcrd/vhcrd/vhcr/hca"
)

// tunnelWire carries the MADs the PF's tunnel sends for the VFs (hca.MADWire)
// onto the ibsim server's port: the port's own agents, the fabric and the
// SM client (OpenSM's SA). The poller hands a MAD over without blocking; a
// goroutine does the routing, whose socket writes are system calls the
// poller must not make. A response given at once and the SM's later
// responses (the server's Options.Tunnel) come back through
// hca.HCA.ReceiveMAD. Other ports stay the HCA's own (localWire).
type tunnelWire struct {
	h    *hca.HCA
	srv  *ibsim.Server
	port uint8
	ch   chan hca.WireMAD
}

// tunnelQueue bounds the MADs in flight towards the server: a VF flooding
// the SA loses its excess, counted as the tunnel's queue drops.
const tunnelQueue = 64

func newTunnelWire(h *hca.HCA, port uint8) *tunnelWire {
	return &tunnelWire{h: h, port: port, ch: make(chan hca.WireMAD, tunnelQueue)}
}

// SendMAD implements hca.MADWire.
func (w *tunnelWire) SendMAD(port uint8, m *hca.WireMAD) bool {
	if port != w.port || w.srv == nil {
		return false
	}
	select {
	case w.ch <- *m:
	default:
		w.h.TunnelStats().Drops[hca.TunDropQueue].Add(1)
	}
	return true
}

// receive is the server's Options.Tunnel: a MAD that reached a port's QP1
// for a VF (a client's response, a CM MAD).
func (w *tunnelWire) receive(port uint8, wc *mad.WC, m *mad.MAD) { w.h.ReceiveMAD(port, wc, nil, m) }

// run routes the queued MADs until done is closed.
func (w *tunnelWire) run(done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case m := <-w.ch:
			a := ibsim.TunnelAddr{DLID: m.DLID, SLIDBits: m.SLIDBits, SQP: m.SQP, DQP: m.DQPN,
				SL: m.SL, PKeyIndex: m.PKeyIndex, QKey: m.QKey}
			if m.HasGRH {
				a.GRH = &m.GRH
			}
			out, from, ok := w.srv.SendTunnel(a, &m.MAD)
			if !ok {
				continue // forwarded (its response comes through receive) or lost
			}
			wc := mad.WC{SLID: from, SrcQP: m.DQPN, SL: m.SL, PKeyIndex: m.PKeyIndex, QPN: m.SQP}
			var g *mad.GRH
			if m.HasGRH { // the agent answers a request with a GRH with one
				r := m.GRH.Reply()
				g, wc.GRHPresent = &r, true
			}
			w.h.ReceiveMAD(w.port, &wc, g, &out)
		}
	}
}
