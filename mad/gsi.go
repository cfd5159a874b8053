package mad

// gsiKeysOK applies the GSI receive checks (ib-mad.md §3.5) to a QP1 MAD:
// the packet's P_Key (the port's entry at wc.PKeyIndex) must be a valid
// entry, and its Q_Key, when known, must be the GSI Q_Key. A violation
// counts, raises trap 257 or 258 and drops the MAD. A nil WC (a locally
// generated MAD) skips the checks.
func (e *Engine) gsiKeysOK(p *port, wc *WC, grh *GRH) bool {
	if wc == nil {
		return true
	}
	var key uint16
	idx := int(wc.PKeyIndex)
	if idx < e.pcap {
		key = p.pkeys[idx]
	}
	if key&0x7FFF == 0 {
		satInc16(&p.pi.PKeyViolations)
		e.counters.keyViol[CKeyP].Add(1)
		e.trapBadKey(p, wc, grh, TrapBadPKey, uint32(key))
		return false
	}
	if wc.QKeyValid && wc.QKey != p.qkey {
		satInc16(&p.pi.QKeyViolations)
		e.counters.keyViol[CKeyQ].Add(1)
		e.trapBadKey(p, wc, grh, TrapBadQKey, wc.QKey)
		return false
	}
	return true
}

// gsRequest sorts a GS method: it returns ok when the engine should
// process it, or the result to return at once.
func gsRequest(in, out *MAD) (Result, bool) {
	switch m := in.Method(); {
	case m == MethodGet || m == MethodSet:
	case m&MethodResp != 0 || m == MethodTrap || m == MethodReport:
		return Success, false // responses and traps are for other agents
	case m == MethodTrapRepress:
		return Success | Consumed, false
	default:
		return replyStatus(in, out, StatusUnsupportedMethod), false
	}
	if in.ClassVersion() != 1 {
		return replyStatus(in, out, StatusBadVersion), false
	}
	return 0, true
}

// pma is the Performance Management agent.
func (e *Engine) pma(p *port, in, out *MAD) Result {
	if r, ok := gsRequest(in, out); !ok {
		return r
	}
	respond(in, out)
	out.SetStatus(e.pmaAttr(p, in, out))
	return Success | Reply
}

func (e *Engine) pmaAttr(p *port, in, out *MAD) uint16 {
	set := in.Method() == MethodSet
	src := in[offGSData:]
	data := out.GSData()
	switch in.AttrID() {
	case AttrClassPortInfo:
		return setGetClassPortInfo(&p.pmaCPI, set, src, data)
	case AttrPortCounters, AttrPortCountersExtended:
		sel := src[1]
		if sel == 0 || int(sel) > len(e.ports) {
			return StatusInvalidField // no AllPortSelect (0xFF) support
		}
		sp := &e.ports[sel-1]
		cs := be.Uint16(src[2:])
		ext := in.AttrID() == AttrPortCountersExtended
		if set {
			sp.data.clear(ext, cs)
			if ext {
				clearPortCountersExt(&sp.pc, cs)
			} else {
				clearPortCounters(&sp.pc, cs, src[18])
			}
		}
		c := sp.counters()
		encodeCounters(data, ext, sel, cs, src[18], &c)
		return 0
	}
	return StatusUnsupportedAttr
}

func sat(v uint64, limit uint64) uint64 { return min(v, limit) }

// encodeCounters writes c into data as the PortCounters or, ext,
// PortCountersExtended a Get of PortSelect sel with CounterSelect cs (and
// CounterSelect2 cs2) answers.
func encodeCounters(data []byte, ext bool, sel uint8, cs uint16, cs2 uint8, c *pmaCounters) {
	clear(data)
	if ext {
		x := portCountersExt(c)
		x.PortSelect, x.CounterSelect = sel, cs
		_ = x.Encode(data)
		return
	}
	pc := portCounters(c)
	pc.PortSelect, pc.CounterSelect, pc.CounterSelect2 = sel, cs, cs2
	_ = pc.Encode(data)
}

// portCountersExt is c in PortCountersExtended's 64-bit fields.
func portCountersExt(c *pmaCounters) PortCountersExtended {
	return PortCountersExtended{
		PortXmitData: c.xmitData, PortRcvData: c.rcvData, PortXmitPkts: c.xmitPkts, PortRcvPkts: c.rcvPkts,
		PortUnicastXmitPkts: c.ucXmitPkts, PortUnicastRcvPkts: c.ucRcvPkts,
		PortMulticastXmitPkts: c.mcXmitPkts, PortMulticastRcvPkts: c.mcRcvPkts,
	}
}

func portCounters(c *pmaCounters) PortCounters {
	return PortCounters{
		SymbolErrorCounter:           uint16(sat(c.symbolErr, 0xFFFF)),
		LinkErrorRecoveryCounter:     uint8(sat(c.linkErrRecovery, 0xFF)),
		LinkDownedCounter:            uint8(sat(c.linkDowned, 0xFF)),
		PortRcvErrors:                uint16(sat(c.rcvErr, 0xFFFF)),
		PortRcvRemotePhysicalErrors:  uint16(sat(c.rcvRemotePhys, 0xFFFF)),
		PortRcvSwitchRelayErrors:     uint16(sat(c.rcvSwitchRelay, 0xFFFF)),
		PortXmitDiscards:             uint16(sat(c.xmitDiscards, 0xFFFF)),
		PortXmitConstraintErrors:     uint8(sat(c.xmitConstraint, 0xFF)),
		PortRcvConstraintErrors:      uint8(sat(c.rcvConstraint, 0xFF)),
		LocalLinkIntegrityErrors:     uint8(sat(c.localLinkIntegrity, 0xF)),
		ExcessiveBufferOverrunErrors: uint8(sat(c.bufOverrun, 0xF)),
		QP1Dropped:                   uint16(sat(c.qp1Dropped, 0xFFFF)),
		VL15Dropped:                  uint16(sat(c.vl15Dropped, 0xFFFF)),
		PortXmitData:                 uint32(sat(c.xmitData, 0xFFFFFFFF)),
		PortRcvData:                  uint32(sat(c.rcvData, 0xFFFFFFFF)),
		PortXmitPkts:                 uint32(sat(c.xmitPkts, 0xFFFFFFFF)),
		PortRcvPkts:                  uint32(sat(c.rcvPkts, 0xFFFFFFFF)),
		PortXmitWait:                 uint32(sat(c.xmitWait, 0xFFFFFFFF)),
	}
}

// clearPortCounters resets the counters CounterSelect names (bit order of
// ib_pma.h); CounterSelect2 non-zero also resets PortXmitWait (as ibsim).
// The 64-bit extended counters share storage with the 32-bit ones, so
// clearing PortXmitData clears both views.
func clearPortCounters(c *pmaCounters, cs uint16, cs2 uint8) {
	fields := [16]*uint64{
		&c.symbolErr, &c.linkErrRecovery, &c.linkDowned, &c.rcvErr,
		&c.rcvRemotePhys, &c.rcvSwitchRelay, &c.xmitDiscards, &c.xmitConstraint,
		&c.rcvConstraint, &c.localLinkIntegrity, &c.bufOverrun, &c.vl15Dropped,
		&c.xmitData, &c.rcvData, &c.xmitPkts, &c.rcvPkts,
	}
	for i, f := range fields {
		if cs&(1<<i) != 0 {
			*f = 0
		}
	}
	if cs2 != 0 {
		c.xmitWait, c.qp1Dropped = 0, 0
	}
}

func clearPortCountersExt(c *pmaCounters, cs uint16) {
	fields := [8]*uint64{
		&c.xmitData, &c.rcvData, &c.xmitPkts, &c.rcvPkts,
		&c.ucXmitPkts, &c.ucRcvPkts, &c.mcXmitPkts, &c.mcRcvPkts,
	}
	for i, f := range fields {
		if cs&(1<<i) != 0 {
			*f = 0
		}
	}
}

// setGetClassPortInfo answers Get and Set of a class's ClassPortInfo. A Set
// writes only the Trap* components (the rest is read-only); a TrapLID
// without TrapQP, or a TrapQ_Key without bit 31, is invalid.
func setGetClassPortInfo(c *ClassPortInfo, set bool, src, data []byte) uint16 {
	if set {
		var n ClassPortInfo
		_ = n.Decode(src)
		switch {
		case n.TrapLID >= LIDMulticastBase, n.TrapLID != 0 && n.TrapQP == 0,
			n.TrapLID != 0 && n.TrapQKey&0x80000000 == 0:
			clear(data)
			_ = c.Encode(data)
			return StatusInvalidField
		}
		c.TrapGID, c.TrapTC, c.TrapSL, c.TrapFL = n.TrapGID, n.TrapTC, n.TrapSL, n.TrapFL
		c.TrapLID, c.TrapPKey, c.TrapHL, c.TrapQP, c.TrapQKey = n.TrapLID, n.TrapPKey, n.TrapHL, n.TrapQP, n.TrapQKey
	}
	clear(data)
	_ = c.Encode(data)
	return 0
}

// bma is the Baseboard Management agent with the B_Key check of ib-mad.md
// §4 (opa-ff's flow; lease expiry clears the protect bit).
func (e *Engine) bma(flags Flags, p *port, wc *WC, grh *GRH, in, out *MAD) Result {
	m := in.Method()
	if m&MethodResp != 0 || m == MethodTrap {
		return Success
	}
	if p.bkeyLease.running && p.bkeyLease.expired(e.now()) {
		p.bkey.BKeyProtectBit = false
	}
	keyOK := flags&IgnoreBKey != 0 || p.bkey.BKey == 0 || in.BKey() == p.bkey.BKey
	hide := false
	if keyOK {
		p.bkeyLease.running = false
	} else if m == MethodGet {
		// Without the protect bit anyone may read; with it the Get is
		// answered with the B_Key field zeroed.
		hide = p.bkey.BKeyProtectBit
	} else {
		satInc16(&p.bkey.BKeyViolations)
		e.counters.keyViol[CKeyB].Add(1)
		e.logViolation("b_key", p, wc, grh, in)
		p.bkeyLease.start(e.now(), p.bkey.BKeyLeasePeriod)
		e.trap259(p, wc, grh, in)
		return Success | Consumed
	}
	switch m {
	case MethodTrapRepress:
		e.repress(p, ClassBM, in.TID())
		return Success | Consumed
	case MethodSend:
		// VPD and module commands: not modelled. Answer as a Send
		// response (AttrMod bit 0) with "attribute not supported".
		respond(in, out)
		out[3] = MethodSend
		be.PutUint32(out[20:], in.AttrMod()|1)
		out.SetStatus(StatusUnsupportedAttr)
		return Success | Reply
	}
	if r, ok := gsRequest(in, out); !ok {
		return r
	}
	respond(in, out)
	src := in[offGSData:]
	data := out.GSData()
	var st uint16
	switch in.AttrID() {
	case AttrClassPortInfo:
		st = setGetClassPortInfo(&p.bmCPI, m == MethodSet, src, data)
	case AttrBKeyInfo:
		if m == MethodSet {
			var k BKeyInfo
			_ = k.Decode(src)
			p.bkey.BKey, p.bkey.BKeyProtectBit, p.bkey.BKeyLeasePeriod = k.BKey, k.BKeyProtectBit, k.BKeyLeasePeriod
			if k.BKeyLeasePeriod == 0 {
				p.bkeyLease.running = false
			}
		}
		k := p.bkey
		if hide {
			k.BKey = 0
		}
		clear(data)
		_ = k.Encode(data)
	default:
		st = StatusUnsupportedAttr
	}
	out.SetStatus(st)
	return Success | Reply
}
