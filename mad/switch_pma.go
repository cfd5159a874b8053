package mad

import "sync/atomic"

// The switch's Performance Management agent (port 0's GSI, class 0x04) and
// the port counters it reports: what crossed each external port. The data
// path (hca's fabric routing) and the ibsim fabric's MAD routing count a
// packet as it crosses (Count, CountDrop) with atomic adds, lock-free and
// allocation-free, concurrently with the PMA's Gets and Sets.

// swCPICaps is the switch PMA's ClassPortInfo CapabilityMask: AllPortSelect
// (PortSelect 0xFF sums every external port) and the extended counters.
const swCPICaps = PMACapAllPortSelect | PMACapExtWidth

// linkCounters are one port's traffic counters, 64-bit, lock-free (a
// switch port's, and what the data path adds to an HCA port's MAD counts):
// the 32-bit and 16-bit PortCounters fields saturate when read.
type linkCounters struct {
	xmitData, rcvData, xmitPkts, rcvPkts atomic.Uint64 // data in 4-byte words, LRH to ICRC
	ucXmit, ucRcv, mcXmit, mcRcv         atomic.Uint64
	xmitDiscards                         atomic.Uint64 // the egress port was not Active
	relayErrors                          atomic.Uint64 // no route for the DLID (PortRcvSwitchRelayErrors)
}

// add adds c's counters into pc (a snapshot, or a sum for AllPortSelect).
func (c *linkCounters) add(pc *pmaCounters) {
	pc.xmitData += c.xmitData.Load()
	pc.rcvData += c.rcvData.Load()
	pc.xmitPkts += c.xmitPkts.Load()
	pc.rcvPkts += c.rcvPkts.Load()
	pc.ucXmitPkts += c.ucXmit.Load()
	pc.ucRcvPkts += c.ucRcv.Load()
	pc.mcXmitPkts += c.mcXmit.Load()
	pc.mcRcvPkts += c.mcRcv.Load()
	pc.xmitDiscards += c.xmitDiscards.Load()
	pc.rcvSwitchRelay += c.relayErrors.Load()
}

// clear resets the counters a Set's CounterSelect names: PortCounters' bit
// order (ib_pma.h: bit 5 PortRcvSwitchRelayErrors, 6 PortXmitDiscards,
// 12-15 data and packets) or PortCountersExtended's (bits 0-7).
func (c *linkCounters) clear(ext bool, cs uint16) {
	var f [16]*atomic.Uint64
	if ext {
		f = [16]*atomic.Uint64{&c.xmitData, &c.rcvData, &c.xmitPkts, &c.rcvPkts, &c.ucXmit, &c.ucRcv, &c.mcXmit, &c.mcRcv}
	} else {
		f[5], f[6], f[12], f[13], f[14], f[15] = &c.relayErrors, &c.xmitDiscards, &c.xmitData, &c.rcvData, &c.xmitPkts, &c.rcvPkts
	}
	for i, p := range f {
		if p != nil && cs&(1<<i) != 0 {
			p.Store(0)
		}
	}
}

// PacketWords is what a message of n payload bytes is on the wire, in
// packets of at most mtu payload bytes (0: one packet): the packets and
// their 4-byte words from LRH to ICRC (PortXmitData's unit, VCRC not
// included), with once bytes of headers the message carries once (RETH,
// DETH, ImmDt, ...) and each bytes more in every packet (a GRH). The
// payload is padded to 4 bytes; a multiple-of-4 MTU pads only the last
// packet.
func PacketWords(n, mtu, once, each uint64) (pkts, words uint64) {
	pkts = 1
	if mtu > 0 && n > mtu {
		pkts = (n + mtu - 1) / mtu
	}
	return pkts, (pkts*(LRHSize+BTHSize+ICRCSize+each) + once + (n+3)&^3) / 4
}

// Count counts pkts packets of words 4-byte words (LRH to ICRC, IBA
// 16.1.3.5's unit) that entered external port in and left by external port
// out; out 0 is the switch's own port 0 (its agents), which has no
// counters. Ports out of range are ignored. Lock-free: the data path calls
// it for every message that crosses the switch.
func (s *Switch) Count(in, out uint8, pkts, words uint64, multicast bool) {
	if c := s.counters(in); c != nil {
		c.count(false, pkts, words, multicast)
	}
	if c := s.counters(out); c != nil {
		c.count(true, pkts, words, multicast)
	}
}

// count adds pkts packets of words words sent (xmit) or received, unicast
// or multicast.
func (c *linkCounters) count(xmit bool, pkts, words uint64, multicast bool) {
	pk, data, cast := &c.rcvPkts, &c.rcvData, &c.ucRcv
	switch {
	case xmit && multicast:
		pk, data, cast = &c.xmitPkts, &c.xmitData, &c.mcXmit
	case xmit:
		pk, data, cast = &c.xmitPkts, &c.xmitData, &c.ucXmit
	case multicast:
		cast = &c.mcRcv
	}
	pk.Add(pkts)
	data.Add(words)
	cast.Add(pkts)
}

// CountDrop counts a packet that entered external port in (received there)
// and went no further: out 0xFF (or 0) is no route, a relay error at in;
// another out is a discard there (the port not Active).
func (s *Switch) CountDrop(in, out uint8, words uint64) {
	if c := s.counters(in); c != nil {
		c.rcvPkts.Add(1)
		c.rcvData.Add(words)
		c.ucRcv.Add(1)
		if s.counters(out) == nil {
			c.relayErrors.Add(1)
		}
	}
	if c := s.counters(out); c != nil {
		c.xmitDiscards.Add(1)
	}
}

func (s *Switch) counters(p uint8) *linkCounters {
	if p == 0 || int(p) >= len(s.pc) {
		return nil
	}
	return &s.pc[p]
}

// ProcessGMP answers a GMP that reached the switch's port 0 QP1: its PMA's
// ClassPortInfo, PortCounters and PortCountersExtended (PortSelect 1 to
// NumPorts, or 0xFF for all of them summed; a Set clears what
// CounterSelect names). Other classes have no agent here (Failure: the
// MAD is dropped). It returns the response and Success|Reply, as
// ProcessSMP does.
func (s *Switch) ProcessGMP(in *MAD) (out MAD, res Result) {
	if in.BaseVersion() != 1 || in.MgmtClass() != ClassPerfMgt {
		return out, Failure
	}
	if r, ok := gsRequest(in, &out); !ok {
		return out, r
	}
	respond(in, &out)
	s.mu.Lock()
	defer s.mu.Unlock()
	out.SetStatus(s.pmaAttr(in, &out))
	return out, Success | Reply
}

func (s *Switch) pmaAttr(in, out *MAD) uint16 {
	set := in.Method() == MethodSet
	src := in[offGSData:]
	data := out.GSData()
	id := in.AttrID()
	switch id {
	case AttrClassPortInfo:
		return setGetClassPortInfo(&s.pmaCPI, set, src, data)
	case AttrPortCounters, AttrPortCountersExtended:
	default:
		return StatusUnsupportedAttr
	}
	sel, cs, ext := src[1], be.Uint16(src[2:]), id == AttrPortCountersExtended
	lo, hi := int(sel), int(sel)
	if sel == 0xFF {
		lo, hi = 1, len(s.pc)-1
	}
	if lo < 1 || hi >= len(s.pc) {
		clear(data)
		return StatusInvalidField // port 0 has no counters
	}
	var pc pmaCounters
	for p := lo; p <= hi; p++ {
		if set {
			s.pc[p].clear(ext, cs)
		}
		s.pc[p].add(&pc)
	}
	encodeCounters(data, ext, sel, cs, src[18], &pc)
	return 0
}
