package mad

import "time"

// trapInterval is 4.096 µs × 2^SubnetTimeOut.
func trapInterval(sto uint8) time.Duration {
	return time.Duration(4096) << (sto & 0x1F)
}

func (p *port) gid() (g [16]byte) {
	be.PutUint64(g[0:], p.pi.GIDPrefix)
	be.PutUint64(g[8:], p.guids[0])
	return g
}

func (e *Engine) securityNotice(p *port, num uint16) Notice {
	// IBA 13.4.8.2: for a Trap, Toggle and Count are 0 (they count
	// Notices in a Notice queue, which this port does not keep).
	return Notice{
		IsGeneric: true,
		Type:      NoticeSecurity,
		Producer:  uint32(e.node.NodeType),
		TrapNum:   num,
		IssuerLID: p.pi.LID,
		IssuerGID: p.gid(),
	}
}

// trap256 builds Bad M_Key from the offending SMP (ib-mad.md §3.3). LIDADDR
// is the requester's SLID, which only the WC knows.
func (e *Engine) trap256(p *port, wc *WC, in *MAD) {
	if wc == nil {
		e.counters.suppressed[CSuppressNoWC].Add(1)
		return
	}
	d := Trap256{
		LIDAddr: wc.SLID,
		Method:  in.Method(),
		AttrID:  in.AttrID(),
		AttrMod: in.AttrMod(),
		MKey:    in.MKey(),
	}
	if in.MgmtClass() == ClassSubnDirected {
		d.DRSLID = in.DrSLID()
		d.DRNotice = true
		hc := in.HopCount() & 0x3F
		if hc > 30 {
			hc = 30
			d.DRPathTruncated = true
		}
		d.DRHopCount = hc
		// As qib: the return path bytes from index 0.
		copy(d.DRReturnPath[:hc], in[offReturnPath:])
	}
	n := e.securityNotice(p, TrapBadMKey)
	_ = d.Encode(n.Details[:])
	e.sendSMTrap(p, &n)
}

// trapBadKey builds trap 257 (Bad P_Key) or 258 (Bad Q_Key) for a GSI MAD.
func (e *Engine) trapBadKey(p *port, wc *WC, grh *GRH, num uint16, key uint32) {
	d := Trap257{
		LIDAddr1: wc.SLID,
		LIDAddr2: p.pi.LID | uint16(wc.DLIDPathBits)&(1<<p.pi.LMC-1),
		Key:      key,
		SL:       wc.SL & 0xF,
		QP1:      wc.SrcQP & 0xFFFFFF,
		QP2:      orDefault(wc.QPN, 1) & 0xFFFFFF,
	}
	if wc.GRHPresent {
		if grh == nil {
			e.counters.suppressed[CSuppressNoGRH].Add(1)
			return
		}
		d.GIDAddr1, d.GIDAddr2 = grh.SGID, grh.DGID
	}
	n := e.securityNotice(p, num)
	_ = d.Encode(n.Details[:])
	e.sendSMTrap(p, &n)
}

// trap259 builds Bad B_Key from the WC and GRH (the seed's example).
func (e *Engine) trap259(p *port, wc *WC, grh *GRH, in *MAD) {
	if wc == nil {
		e.counters.suppressed[CSuppressNoWC].Add(1)
		return
	}
	d := Trap259BKey{
		LIDAddr: wc.SLID,
		Method:  in.Method(),
		AttrID:  in.AttrID(),
		AttrMod: in.AttrMod(),
		QP:      wc.SrcQP & 0xFFFFFF,
		BKey:    in.BKey(),
	}
	if wc.GRHPresent {
		if grh == nil {
			e.counters.suppressed[CSuppressNoGRH].Add(1)
			return
		}
		d.GIDAddr = grh.SGID
	}
	n := e.securityNotice(p, TrapBadBKey)
	_ = d.Encode(n.Details[:])
	c := &p.bmCPI
	t := Trap{
		Number: TrapBadBKey, Class: ClassBM,
		DLID: c.TrapLID, SL: c.TrapSL, SrcQP: 1, DestQP: c.TrapQP, QKey: c.TrapQKey, PKey: c.TrapPKey,
	}
	e.newTID(&t.MAD, ClassBM)
	_ = n.EncodeGS(t.MAD[offGSData:])
	e.enqueue(p, &t)
}

func (e *Engine) newTID(m *MAD, class uint8) {
	e.tid++
	m[0], m[1], m[2], m[3] = 1, class, 1, MethodTrap
	be.PutUint64(m[8:], e.tid)
	be.PutUint16(m[16:], AttrNotice)
}

// sendSMTrap sends an SMP-class trap: LID-routed SubnTrap(Notice) on QP0
// to MasterSMLID/MasterSMSL, M_Key 0 (o14-1).
func (e *Engine) sendSMTrap(p *port, n *Notice) {
	t := Trap{
		Number: n.TrapNum, Class: ClassSubnLID,
		DLID: p.pi.MasterSMLID, SL: p.pi.MasterSMSL, PKey: DefaultPKey,
	}
	e.newTID(&t.MAD, ClassSubnLID)
	_ = n.Encode(t.MAD[offSMPData:])
	e.enqueue(p, &t)
}

// enqueue sends a new trap and keeps it for resending until TrapRepress.
func (e *Engine) enqueue(p *port, t *Trap) {
	switch {
	case p.pi.PortState != PortActive:
		e.counters.suppressed[CSuppressPortNotActive].Add(1)
		return
	case t.DLID == 0:
		e.counters.suppressed[CSuppressNoDestination].Add(1)
		return
	}
	now := e.now()
	if p.haveLastNew && now.Sub(p.lastNew) < trapInterval(p.pi.SubnetTimeOut) {
		e.counters.suppressed[CSuppressRateLimited].Add(1)
		return
	}
	slot := -1
	for i := range p.pending {
		if !p.pending[i].used {
			slot = i
			break
		}
	}
	if slot < 0 || e.nout == len(e.outbox) {
		e.counters.suppressed[CSuppressQueueFull].Add(1)
		return
	}
	t.Port, t.SLID, t.Repeat = p.num, p.pi.LID, 0
	p.pending[slot] = pendingTrap{used: true, sends: 1, last: now, t: *t}
	p.lastNew, p.haveLastNew = now, true
	e.transmit(p, t)
	e.counters.trapsSent[trapLabel(t.Number)].Add(1)
}

func (e *Engine) transmit(p *port, t *Trap) {
	e.outbox[e.nout] = *t
	e.nout++
	p.pc.xmitPkts++
	p.pc.ucXmitPkts++
	p.pc.xmitData += MADWords
}

// repress ends the pending trap of the class family with this TID.
func (e *Engine) repress(p *port, class uint8, tid uint64) {
	for i := range p.pending {
		pt := &p.pending[i]
		if pt.used && pt.t.Class == class && pt.t.MAD.TID() == tid {
			pt.used = false
			e.counters.repressed.Add(1)
			return
		}
	}
}

// PendingTraps returns the number of traps awaiting TrapRepress.
func (e *Engine) PendingTraps() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for i := range e.ports {
		for j := range e.ports[i].pending {
			if e.ports[i].pending[j].used {
				n++
			}
		}
	}
	return n
}

// PollTraps resends every unrepressed trap whose port's SubnetTimeOut
// interval has passed since its last transmission, and drops those that
// have been resent the maximum number of times. The daemon calls it
// periodically; it returns the number of traps sent.
func (e *Engine) PollTraps() int {
	e.mu.Lock()
	now := e.now()
	sent := 0
	for i := range e.ports {
		p := &e.ports[i]
		iv := trapInterval(p.pi.SubnetTimeOut)
		for j := range p.pending {
			pt := &p.pending[j]
			if !pt.used || now.Sub(pt.last) < iv {
				continue
			}
			if pt.sends > e.maxRepeat {
				pt.used = false
				e.counters.expired.Add(1)
				continue
			}
			pt.t.Repeat = pt.sends
			pt.sends++
			pt.last = now
			if p.pi.PortState != PortActive || e.nout == len(e.outbox) {
				continue
			}
			e.transmit(p, &pt.t)
			e.counters.trapsRep[trapLabel(pt.t.Number)].Add(1)
			sent++
		}
	}
	e.mu.Unlock()
	e.flush()
	return sent
}

// flush hands the outbox to the sink without holding the engine lock.
func (e *Engine) flush() {
	var buf [4]Trap
	for {
		e.mu.Lock()
		n := copy(buf[:], e.outbox[:e.nout])
		copy(e.outbox[:], e.outbox[n:e.nout])
		e.nout -= n
		e.mu.Unlock()
		if n == 0 {
			return
		}
		if e.sink != nil {
			for i := range n {
				e.sink.SendTrap(buf[i])
			}
		}
	}
}
