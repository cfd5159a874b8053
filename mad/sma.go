package mad

// sma handles classes 0x01 and 0x81 as the SMA of an end node (a CA).
func (e *Engine) sma(flags Flags, p *port, wc *WC, in, out *MAD) Result {
	dr := in.MgmtClass() == ClassSubnDirected
	hc := in.HopCount()
	if dr {
		if in.Direction() {
			// A returning SMP: a response to an SMP this node sent; the
			// SM's business, not the SMA's.
			return Success
		}
		// process_mad sees a DR SMP after the SMI: at its end node the
		// hop pointer is HopCount+1 (C14-9:4). Hop counts run 0..63
		// (C14-6); a CA discards a DR SMP whose DrDLID asks to be
		// LID-routed beyond it. SMIRecv does the SMI step for callers
		// that receive DR SMPs off the wire.
		if hc >= MaxHops || int(in.HopPointer()) != int(hc)+1 || in.DrDLID() != LIDPermissive {
			return Failure
		}
	}
	method := in.Method()
	switch method {
	case MethodGet, MethodSet, MethodTrapRepress:
	case MethodTrap, MethodReport:
		return Success // for an SM on this port
	default:
		if method&MethodResp != 0 {
			return Success
		}
		respond(in, out)
		return e.smaReply(p, in, out, StatusUnsupportedMethod)
	}
	if in.AttrID() == AttrSMInfo && method != MethodTrapRepress {
		// SMInfo is implemented by SMs; like mlx4, leave it to the SM agent.
		return Success
	}
	ok, hide := e.checkMKey(flags, p, wc, in)
	if !ok {
		return Success | Consumed
	}
	if method == MethodTrapRepress {
		// Never answered (mthca/mlx4: SUCCESS|CONSUMED).
		e.repress(p, ClassSubnLID, in.TID())
		return Success | Consumed
	}
	respond(in, out)
	if in.ClassVersion() != 1 {
		return e.smaReply(p, in, out, StatusBadVersion)
	}
	return e.smaReply(p, in, out, e.smaAttr(p, in, out, hide, flags&IgnoreMKey != 0))
}

// smaReply finishes an SMP response that respond began: the status and,
// for a DR SMP, the D bit. The hop pointer is left for the SMI (SMISend),
// as Linux's SMI layer does after process_mad.
func (e *Engine) smaReply(p *port, in, out *MAD, status uint16) Result {
	if in.MgmtClass() == ClassSubnDirected {
		status |= StatusDirection
	}
	out.SetStatus(status)
	return Success | Reply
}

// SMIRecv applies the subnet management interface's receive rules for a
// directed-route SMP arriving at this end node (a CA) on port, as Linux's
// smi_handle_dr_smp_recv does before process_mad (IBA 14.2.2.2): an
// outgoing SMP (D clear) at the end of its path gets its return path entry
// recorded and its hop pointer advanced; one already advanced passes; any
// other hop pointer, a hop count above 63 or a DrDLID other than the
// permissive LID means discard (false). A returning SMP (D set) passes:
// this node originated it. Other classes pass unchanged.
func SMIRecv(m *MAD, port uint8) bool {
	if m.MgmtClass() != ClassSubnDirected {
		return true
	}
	hp, hc := m.HopPointer(), m.HopCount()
	if hc >= MaxHops {
		return false
	}
	if m.Direction() {
		return true
	}
	if m.DrDLID() != LIDPermissive {
		return false
	}
	switch {
	case hp == hc:
		if hc > 0 {
			m[offReturnPath+int(hc)] = port
		}
		m[6] = hp + 1
		return true
	case int(hp) == int(hc)+1:
		return true
	}
	return false
}

// SMISend applies the send rules to a DR SMP response leaving this end
// node (smi_handle_dr_smp_send with the D bit set, C14-13:1 and :3): the
// hop pointer steps back from HopCount+1. It reports false when the
// response must be discarded.
func SMISend(m *MAD) bool {
	if m.MgmtClass() != ClassSubnDirected || !m.Direction() {
		return true
	}
	hp, hc := m.HopPointer(), m.HopCount()
	switch {
	case hc >= MaxHops:
		return false
	case hc > 0 && int(hp) == int(hc)+1:
		m[6] = hp - 1
		return true
	case hc == 0 && hp == 1:
		m[6] = 0
		return m.DrSLID() == LIDPermissive
	}
	return false
}

// checkMKey is qib's check_mkey (ib-mad.md §3.2). It returns whether the SMP
// may be processed and whether PortInfo's M_Key must read as 0.
func (e *Engine) checkMKey(flags Flags, p *port, wc *WC, in *MAD) (ok, hide bool) {
	if p.mkeyLease.running && p.mkeyLease.expired(e.now()) {
		p.pi.MKeyProtectBits = 0
	}
	if flags&IgnoreMKey != 0 {
		// A local query (MAD_IFC, the ibsim server's own Gets) carries no
		// key: it neither stops nor starts the lease.
		return true, false
	}
	if p.pi.MKey == 0 || p.pi.MKey == in.MKey() {
		// Only an SMP with the right M_Key stops a running lease.
		p.mkeyLease.running = false
		return true, false
	}
	if in.Method() == MethodGet && p.pi.MKeyProtectBits < 2 {
		return true, p.pi.MKeyProtectBits == 1
	}
	satInc16(&p.pi.MKeyViolations)
	e.counters.keyViol[CKeyM].Add(1)
	e.logViolation("m_key", p, wc, nil, in) // SMPs carry no GRH
	p.mkeyLease.start(e.now(), p.pi.MKeyLeasePeriod)
	e.trap256(p, wc, in)
	return false, false
}

func (e *Engine) encodePortInfo(tp, arrival *port, data []byte, hideMKey bool) {
	pi := tp.pi
	pi.LocalPortNum = arrival.num
	if hideMKey {
		pi.MKey = 0
	}
	_ = pi.Encode(data)
}

func validUnicast(lid uint16) bool { return lid != 0 && lid < LIDMulticastBase }

// setPortInfo applies a SubnSet(PortInfo). Read-only components are ignored
// (they keep their values); an invalid value in a writable component fails
// the whole Set with StatusInvalidField and changes nothing.
func (e *Engine) setPortInfo(p *port, src []byte) uint16 {
	var np PortInfo
	if np.Decode(src) != nil {
		return StatusInvalidField
	}
	c := p.pi
	if !validUnicast(np.LID) || !validUnicast(np.MasterSMLID) {
		return StatusInvalidField
	}
	c.MKey, c.GIDPrefix, c.LID, c.MasterSMLID = np.MKey, np.GIDPrefix, np.LID, np.MasterSMLID
	c.MKeyLeasePeriod = np.MKeyLeasePeriod
	if !enable(&c.LinkWidthEnabled, np.LinkWidthEnabled, c.LinkWidthSupported, 0xFF) {
		return StatusInvalidField
	}
	if st := portStateSet(&c, np.PortState, np.PortPhysicalState); st != 0 {
		return st
	}
	switch np.LinkDownDefaultState {
	case 0:
	case 1, 2:
		c.LinkDownDefaultState = np.LinkDownDefaultState
	default:
		return StatusInvalidField
	}
	c.MKeyProtectBits, c.LMC = np.MKeyProtectBits, np.LMC
	if !enable(&c.LinkSpeedEnabled, np.LinkSpeedEnabled, c.LinkSpeedSupported, 0xF) {
		return StatusInvalidField
	}
	if np.NeighborMTU == 0 || np.NeighborMTU > c.MTUCap {
		return StatusInvalidField
	}
	c.NeighborMTU, c.MasterSMSL = np.NeighborMTU, np.MasterSMSL
	c.VLHighLimit, c.InitType = np.VLHighLimit, np.InitType
	switch v := np.OperationalVLs; {
	case v == 0:
	case v > c.VLCap:
		return StatusInvalidField
	default:
		c.OperationalVLs = v
	}
	c.VLStallCount, c.HOQLife = np.VLStallCount, np.HOQLife
	c.PartitionEnforcementIn, c.PartitionEnforcementOut = np.PartitionEnforcementIn, np.PartitionEnforcementOut
	c.FilterRawInbound, c.FilterRawOutbound = np.FilterRawInbound, np.FilterRawOutbound
	c.MKeyViolations, c.PKeyViolations, c.QKeyViolations = np.MKeyViolations, np.PKeyViolations, np.QKeyViolations
	c.MulticastPKeyTrapSuppress, c.SubnetTimeOut = np.MulticastPKeyTrapSuppress, np.SubnetTimeOut
	c.LocalPhyErrors, c.OverrunErrors = np.LocalPhyErrors, np.OverrunErrors
	if !enable(&c.LinkSpeedExtEnabled, np.LinkSpeedExtEnabled, c.LinkSpeedExtSupported, 0x1F) {
		return StatusInvalidField
	}
	// ClientReregister is an event, not state: it reads back as 0.
	if c.MKeyLeasePeriod == 0 {
		p.mkeyLease.running = false
	}
	old := p.pi
	p.pi = c
	e.publishRoute(p)
	var what ChangeFlags
	if old.PortState != c.PortState {
		what |= ChangeState
	}
	if old.LID != c.LID {
		what |= ChangeLID
	}
	if old.MasterSMLID != c.MasterSMLID {
		what |= ChangeSMLID
	}
	if old.MasterSMSL != c.MasterSMSL {
		what |= ChangeSMSL
	}
	if old.GIDPrefix != c.GIDPrefix {
		what |= ChangeGIDPrefix
	}
	if np.ClientReregister {
		what |= ChangeClientRereg
	}
	if what != 0 {
		e.portChanged(p, what)
	}
	return 0
}
