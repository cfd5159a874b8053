package mad

// KeyViolation is the receive-side P_Key or Q_Key check of a data packet
// the HCA dropped (a UD datagram whose P_Key does not match the receiving
// QP's, or whose Q_Key is not its Q_Key): the port's violation counter
// (PortInfo P_KeyViolations or Q_KeyViolations) and, as for a MAD that
// fails the same check (gsiKeysOK), trap 257 (Bad P_Key, num TrapBadPKey)
// or 258 (Bad Q_Key, TrapBadQKey) to the SM, built from the packet's work
// completion wc (SLID, source QP, SL, DLID path bits, the GRH bit; QPN is
// the receiving QP) and its GRH grh (needed when wc says one was present;
// nil otherwise). key is the offending P_Key or Q_Key. A nil wc, an
// unknown port or another trap number does nothing.
func (e *Engine) KeyViolation(port uint8, num uint16, key uint32, wc *WC, grh *GRH) {
	if wc == nil || port < 1 || int(port) > len(e.ports) || (num != TrapBadPKey && num != TrapBadQKey) {
		return
	}
	e.mu.Lock()
	p := &e.ports[port-1]
	if num == TrapBadPKey {
		satInc16(&p.pi.PKeyViolations)
		e.counters.keyViol[CKeyP].Add(1)
	} else {
		satInc16(&p.pi.QKeyViolations)
		e.counters.keyViol[CKeyQ].Add(1)
	}
	e.trapBadKey(p, wc, grh, num, key)
	pending := e.nout
	e.mu.Unlock()
	if pending > 0 {
		e.flush()
	}
}
