package hca

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/vhcrd/vhcrd/mad"
)

// Forwarder is what the data path needs of the switch the HCA's IB ports
// are cabled to (mad.Switch is one): its linear forwarding table, as the
// SM (OpenSM's LinearForwardingTable Sets) or the configuration's swept
// subnet programmed it, and which of its external ports are Active. Both
// are called on the poller for every packet that crosses the switch,
// concurrently with the SM's Sets on other goroutines: they must be
// lock-free and allocation-free (mad.Switch reads atomics).
type Forwarder interface {
	// Forward is the output port for a unicast DLID: an external port,
	// 0 (the switch's own port 0) or 0xFF (no route).
	Forward(dlid uint16) uint8
	// PortActive reports whether an external port is Active.
	PortActive(port int) bool
	// MulticastPorts is the multicast forwarding table's port mask for a
	// multicast LID (bit p: out of port p).
	MulticastPorts(mlid uint16) uint64
	// Count counts pkts packets of words 4-byte words that entered the
	// switch at external port in and left it at out (0: not counted on
	// that side), in its port counters (its PMA's PortCounters).
	Count(in, out uint8, pkts, words uint64, multicast bool)
	// CountDrop counts a packet that entered at in and went no further:
	// out 0xFF no route, another port not Active.
	CountDrop(in, out uint8, words uint64)
}

// pktSize is a message on a link: its packets and their 4-byte words
// (mad.PacketWords), for the ports' counters. A MAD's (mad) agent end is
// counted by that port's engine as it processes the MAD and its reply: the
// request's arrival, the reply's sending.
type pktSize struct {
	pkts, words uint64
	mad         bool
}

func wireSize(n, mtu, once, each uint64) pktSize {
	p, w := mad.PacketWords(n, mtu, once, each)
	return pktSize{pkts: p, words: w}
}

// ErrFabric is a SetFabric refused.
var ErrFabric = errors.New("hca: bad fabric")

// fabricLink is the HCA's cabling to the switch, fixed at start.
type fabricLink struct {
	sw    Forwarder
	cable []uint8 // by physical port 1..n: the switch port cabled there, 0 none
}

// SetFabric cables the HCA's IB ports to switch sw: cables maps a physical
// port (1..len(Cfg.Ports), IB) to the switch's external port it is cabled
// to, each switch port once. From then on a packet between two different
// ports crosses the switch (route.go). Call it before the poller runs;
// without it the HCA has no switch and its ports reach each other
// directly, by LID.
func (h *HCA) SetFabric(sw Forwarder, cables map[uint8]uint8) error {
	if sw == nil {
		return fmt.Errorf("%w: no switch", ErrFabric)
	}
	cable := make([]uint8, len(h.Cfg.Ports)+1)
	used := map[uint8]bool{}
	for hp, sp := range cables {
		switch {
		case hp < 1 || int(hp) > len(h.Cfg.Ports):
			return fmt.Errorf("%w: port %d of %d", ErrFabric, hp, len(h.Cfg.Ports))
		case h.Cfg.Ports[hp-1].LinkLayer == "eth":
			return fmt.Errorf("%w: port %d is Ethernet", ErrFabric, hp)
		case sp == 0 || sp == 0xFF || used[sp]:
			return fmt.Errorf("%w: switch port %d for port %d: none, or cabled twice", ErrFabric, sp, hp)
		}
		used[sp] = true
		cable[hp] = sp
	}
	h.fab = fabricLink{sw: sw, cable: cable}
	return nil
}

// crossSwitch is the arrival port of a message of size sz from port from
// to dlid through the switch: from's cable, the ingress switch port
// Active, the LFT's egress port Active and cabled to a port of this HCA (a
// peer CA there runs no data path: the message is lost to the model).
// What enters the switch is counted in its port counters: crossed, or
// dropped there (no route, the egress port not Active; one to the
// switch's own LID reaches no data QP).
func (h *HCA) crossSwitch(from int, dlid uint16, sz pktSize) int {
	f := &h.fab
	in := f.cable[from]
	if in == 0 || !f.sw.PortActive(int(in)) {
		return 0
	}
	out := f.sw.Forward(dlid)
	switch {
	case out == 0:
		f.sw.Count(in, 0, sz.pkts, sz.words, false)
		return 0
	case out == 0xFF || !f.sw.PortActive(int(out)):
		f.sw.CountDrop(in, out, sz.words)
		return 0
	}
	f.sw.Count(in, out, sz.pkts, sz.words, false)
	for p := 1; p < len(f.cable); p++ {
		if f.cable[p] == out {
			return p
		}
	}
	return 0
}

// countPort counts a message sent (xmit) or received on HCA port p in the
// port's PMA counters (mad.Engine.CountData), if the HCA has its engine.
func (h *HCA) countPort(p int, xmit bool, sz pktSize, multicast bool) {
	if h.mad != nil {
		h.mad.CountData(uint8(p), xmit, sz.pkts, sz.words, multicast)
	}
}

// countBack counts a response (an ACK or NAK, a READ response, an atomic
// acknowledgement, a MAD's reply) from port from back to port to: both
// ports' counters (but a MAD agent's, sz.mad) and the switch's.
func (h *HCA) countBack(from, to int, sz pktSize) {
	if from == to {
		return
	}
	if !sz.mad {
		h.countPort(from, true, sz, false)
	}
	h.countPort(to, false, sz, false)
	if f := &h.fab; f.sw != nil {
		f.sw.Count(f.cable[from], f.cable[to], sz.pkts, sz.words, false)
	}
}

// countMulticast counts a multicast packet sent on port from to mlid: sent
// by from, received by every other IB port of the HCA it reaches
// (multicastReaches), and in the switch's counters received at from's
// switch port and sent out of every other Active port the MFT names.
func (h *HCA) countMulticast(from int, mlid uint16, sz pktSize) {
	h.countPort(from, true, sz, true)
	for p := 1; p <= len(h.Cfg.Ports); p++ {
		if v := h.portView(p); p != from && v.active && !v.eth && h.multicastReaches(from, p, mlid) {
			h.countPort(p, false, sz, true)
		}
	}
	f := &h.fab
	if f.sw == nil {
		return
	}
	in := f.cable[from]
	if in == 0 || !f.sw.PortActive(int(in)) {
		return
	}
	f.sw.Count(in, 0, sz.pkts, sz.words, true)
	for m := f.sw.MulticastPorts(mlid) &^ (1<<in | 1); m != 0; m &= m - 1 {
		if out := bits.TrailingZeros64(m); f.sw.PortActive(out) {
			f.sw.Count(0, uint8(out), sz.pkts, sz.words, true)
		}
	}
}

// multicastReaches reports whether a multicast packet for mlid sent on
// port from reaches port to of this HCA. The sending port's own QPs get it
// inside the HCA; another port only through the switch: the ingress
// switch port Active, the MFT's mask for mlid naming the egress switch
// port cabled to port to (never the ingress one: a switch does not send a
// packet back where it came from), that port Active. Without a switch the
// ports reach each other directly.
func (h *HCA) multicastReaches(from, to int, mlid uint16) bool {
	f := &h.fab
	if from == to || f.sw == nil {
		return true
	}
	in, out := f.cable[from], f.cable[to]
	if in == 0 || out == 0 || in == out || !f.sw.PortActive(int(in)) || !f.sw.PortActive(int(out)) {
		return false
	}
	return f.sw.MulticastPorts(mlid)&(1<<out) != 0
}
