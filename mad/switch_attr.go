package mad

// The switch's attributes, one row each, as the SMA's (sma_attr.go): the
// attribute modifier's rule and the Get and Set handlers. attr runs the
// checks every attribute shares in front of them, in this order:
//
//  1. an attribute without a row is StatusUnsupportedAttr;
//  2. a Set of an attribute without a Set handler is StatusUnsupportedAttr;
//  3. the row's modifier rule, whose status (InvalidField; Unsupported for
//     NodeDescription) is the answer;
//  4. the Set handler, whose failure is the answer (the Get handler does
//     not run);
//  5. the Get handler, which encodes the attribute as it now stands.
//
// Port 0's M_Key has been checked before (ProcessSMP), for every attribute
// alike.

// swReq is the SMP a switch attribute handler works on. It lives in the
// Switch (under s.mu) with copies of the request's and the response's data
// fields, so the MADs stay on ProcessSMP's stack.
type swReq struct {
	arrival uint8
	set     bool
	hide    bool // PortInfo's M_Key reads as 0
	mod     uint32
	n       uint32 // the highest port number
	src     [smpDataSize]byte
	data    [smpDataSize]byte
}

// swRow is one row of the switch's attribute table.
type swRow struct {
	id  uint16
	mod func(r *swReq) uint16 // the modifier's range: 0 or the status refusing it
	get func(s *Switch, r *swReq)
	set func(s *Switch, r *swReq) uint16 // nil: SubnSet is unsupported
}

var swAttrs = [...]swRow{
	{id: AttrNodeDescription, mod: swModZeroUnsupported, get: (*Switch).getNodeDescription},
	{id: AttrNodeInfo, mod: swModAny, get: (*Switch).getNodeInfo},
	{id: AttrSwitchInfo, mod: swModAny, get: (*Switch).getSwitchInfo, set: (*Switch).setSwitchInfo},
	{id: AttrPortInfo, mod: swModPort, get: (*Switch).getPortInfo, set: (*Switch).setPortInfo},
	{id: AttrPKeyTable, mod: swModZero, get: (*Switch).getPKeyTable, set: (*Switch).setPKeyTable},
	{id: AttrSLtoVLTable, mod: swModSLtoVL, get: (*Switch).getSLtoVL, set: (*Switch).setSLtoVL},
	{id: AttrVLArbTable, mod: swModVLArb, get: (*Switch).getVLArb, set: (*Switch).setVLArb},
	{id: AttrLinearFwdTable, mod: swModLFTBlock, get: (*Switch).getLFT, set: (*Switch).setLFT},
	{id: AttrMulticastFwdTable, mod: swModMFTBlock, get: (*Switch).getMFT, set: (*Switch).setMFT},
}

func swRowFor(id uint16) *swRow {
	for i := range swAttrs {
		if swAttrs[i].id == id {
			return &swAttrs[i]
		}
	}
	return nil
}

// attr answers a SubnGet or SubnSet of an attribute into out's data field
// and returns the status.
func (s *Switch) attr(arrival uint8, in, out *MAD, hide bool) uint16 {
	r := &s.smp
	*r = swReq{arrival: arrival, set: in.Method() == MethodSet, hide: hide, mod: in.AttrMod(), n: uint32(len(s.ports) - 1)}
	r.src = *(*[smpDataSize]byte)(in[offSMPData:])
	r.data = *(*[smpDataSize]byte)(out[offSMPData:])
	st := s.dispatch(r, in.AttrID())
	*(*[smpDataSize]byte)(out[offSMPData:]) = r.data
	return st
}

// dispatch is the shared early path in front of an attribute's handlers.
func (s *Switch) dispatch(r *swReq, id uint16) uint16 {
	a := swRowFor(id)
	if a == nil || r.set && a.set == nil {
		return StatusUnsupportedAttr
	}
	if st := a.mod(r); st != 0 {
		return st
	}
	if r.set {
		if st := a.set(s, r); st != 0 {
			return st
		}
	}
	a.get(s, r)
	return 0
}

// The modifier rules.

func swModAny(*swReq) uint16 { return 0 }

func swModZero(r *swReq) uint16 { return invalidUnless(r.mod == 0) }

// swModZeroUnsupported: NodeDescription with a modifier is not an
// attribute the switch has.
func swModZeroUnsupported(r *swReq) uint16 {
	if r.mod != 0 {
		return StatusUnsupportedAttr
	}
	return 0
}

// swModPort: the low byte names a port (0..n), the rest is 0.
func swModPort(r *swReq) uint16 { return invalidUnless(r.mod>>8 == 0 && r.mod&0xFF <= r.n) }

// swModSLtoVL: bits 8..15 the input port, 0..7 the output port.
func swModSLtoVL(r *swReq) uint16 {
	return invalidUnless(r.mod>>16 == 0 && r.mod>>8&0xFF <= r.n && r.mod&0xFF <= r.n)
}

// swModVLArb: the low byte names a port, bits 16.. a table and block (1:
// low priority, 3: high priority; the capacity of 8 has no second block).
func swModVLArb(r *swReq) uint16 {
	if r.mod&0xFF > r.n || r.mod>>8&0xFF != 0 {
		return StatusInvalidField
	}
	switch r.mod >> 16 {
	case 1, 3:
		return 0
	}
	return StatusInvalidField
}

func swModLFTBlock(r *swReq) uint16 { return invalidUnless(r.mod < switchLFTCap/lftBlock) }

// swModMFTBlock: bits 0..8 the block, 28..31 the position (16 ports each)
// within the ports there are.
func swModMFTBlock(r *swReq) uint16 {
	return invalidUnless(r.mod&0x1FF < switchMFTCap/mftBlock && r.mod&0x0FFFFE00 == 0 && (r.mod>>28)*16 <= r.n)
}

func invalidUnless(ok bool) uint16 {
	if ok {
		return 0
	}
	return StatusInvalidField
}

// The handlers.

func (s *Switch) getNodeDescription(r *swReq) { _ = s.nodeDesc.Encode(r.data[:]) }

func (s *Switch) getNodeInfo(r *swReq) {
	ni := s.node
	ni.LocalPortNum = r.arrival
	clear(r.data[:])
	_ = ni.Encode(r.data[:])
}

func (s *Switch) getSwitchInfo(r *swReq) {
	clear(r.data[:])
	_ = s.si.Encode(r.data[:])
}

func (s *Switch) setSwitchInfo(r *swReq) uint16 {
	var ns SwitchInfo
	_ = ns.Decode(r.src[:])
	if ns.LinearFDBTop >= switchLFTCap || ns.LifeTimeValue > 0x1F ||
		ns.MulticastFDBTop != 0 && (ns.MulticastFDBTop < LIDMulticastBase-1 || ns.MulticastFDBTop >= LIDMulticastBase+switchMFTCap) {
		return StatusInvalidField
	}
	s.si.LinearFDBTop, s.si.LifeTimeValue = ns.LinearFDBTop, ns.LifeTimeValue
	s.fwd.top.Store(uint32(ns.LinearFDBTop))
	s.si.DefaultPort, s.si.DefaultMCPrimaryPort, s.si.DefaultMCNotPrimaryPort = ns.DefaultPort, ns.DefaultMCPrimaryPort, ns.DefaultMCNotPrimaryPort
	if ns.MulticastFDBTop != 0 {
		s.si.MulticastFDBTop = ns.MulticastFDBTop
	}
	if ns.PortStateChange { // write 1 to clear
		s.si.PortStateChange = false
	}
	return 0
}

func (s *Switch) getPortInfo(r *swReq) { s.encodePI(uint8(r.mod), r.arrival, r.data[:], r.hide) }

// setPortInfo applies the Set to the port the modifier names. A refused
// Set still answers the port's PortInfo as it stands.
func (s *Switch) setPortInfo(r *swReq) uint16 {
	pn := uint8(r.mod)
	if st := setSwitchPortInfo(&s.ports[pn].pi, pn == 0, r.src[:]); st != 0 {
		s.encodePI(pn, r.arrival, r.data[:], r.hide)
		return st
	}
	s.publishPorts()
	if pn == 0 {
		// Port 0's state is the switch's: Active once the SM makes it
		// so; it has no link to lose.
		r.hide = false
	}
	return 0
}

// Port 0's P_Key table (NodeInfo.PartitionCap entries, one block); the
// external ports have none (PartitionEnforcementCap 0).

func (s *Switch) getPKeyTable(r *swReq) {
	for i := range s.pkeys {
		be.PutUint16(r.data[2*i:], s.pkeys[i])
	}
}

func (s *Switch) setPKeyTable(r *swReq) uint16 {
	for i := range s.pkeys {
		s.pkeys[i] = be.Uint16(r.src[2*i:])
	}
	return 0
}

// slToVL is the table the modifier names: the output port's, for the input
// port.
func (s *Switch) slToVL(r *swReq) *SLtoVL { return &s.ports[r.mod&0xFF].sl2vl[r.mod>>8&0xFF] }

func (s *Switch) getSLtoVL(r *swReq) {
	clear(r.data[:])
	_ = s.slToVL(r).Encode(r.data[:])
}

func (s *Switch) setSLtoVL(r *swReq) uint16 {
	t := s.slToVL(r)
	_ = t.Decode(r.src[:])
	for i := range t {
		t[i] &= 0xF
	}
	return 0
}

// vlArb is the table the modifier names (its only block).
func (s *Switch) vlArb(r *swReq) []VLArbEntry {
	p := &s.ports[r.mod&0xFF]
	if r.mod>>16 == 1 {
		return p.vlLow[:defaultVLArbCap]
	}
	return p.vlHigh[:defaultVLArbCap]
}

func (s *Switch) getVLArb(r *swReq) {
	clear(r.data[:])
	for i, e := range s.vlArb(r) {
		r.data[2*i], r.data[2*i+1] = e.VL, e.Weight
	}
}

func (s *Switch) setVLArb(r *swReq) uint16 {
	tbl := s.vlArb(r)
	for i := range tbl {
		tbl[i] = VLArbEntry{VL: r.src[2*i] & 0xF, Weight: r.src[2*i+1]}
	}
	return 0
}

// lftBase is the first LID of the block the modifier names.
func lftBase(r *swReq) uint16 { return uint16(r.mod * lftBlock) }

func (s *Switch) getLFT(r *swReq) {
	base := lftBase(r)
	for i := range lftBlock {
		r.data[i] = s.fwd.entry(base + uint16(i))
	}
}

// setLFT writes the block's routes in order up to the first that names no
// port (a port of the switch or 0xFF, none), which fails the Set.
func (s *Switch) setLFT(r *swReq) uint16 {
	base := lftBase(r)
	for i := range lftBlock {
		v := r.src[i]
		if uint32(v) > r.n && v != 0xFF {
			return StatusInvalidField
		}
		s.fwd.setEntry(base+uint16(i), v)
	}
	return 0
}

// An MFT block: mftBlock entries from the block's first; position pos holds
// ports 16*pos..16*pos+15 of each mask.

func mftShift(r *swReq) uint32 { return 16 * (r.mod >> 28) }

func (s *Switch) getMFT(r *swReq) {
	base, shift := int(r.mod&0x1FF)*mftBlock, mftShift(r)
	for i := range mftBlock {
		be.PutUint16(r.data[2*i:], uint16(s.mft[base+i].Load()>>shift))
	}
}

// setMFT checks every mask of the block against the switch's ports before
// writing any.
func (s *Switch) setMFT(r *swReq) uint16 {
	base, shift := int(r.mod&0x1FF)*mftBlock, mftShift(r)
	valid := portMask(r.n) >> shift & 0xFFFF
	for i := range mftBlock {
		if uint64(be.Uint16(r.src[2*i:]))&^valid != 0 {
			return StatusInvalidField
		}
	}
	for i := range mftBlock {
		e := &s.mft[base+i]
		e.Store(e.Load()&^(0xFFFF<<shift) | uint64(be.Uint16(r.src[2*i:]))<<shift)
	}
	return 0
}
