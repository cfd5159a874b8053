package mad

// The SMA's attributes, one row each (the shape of QEMU hw/nvme's per-command
// table): the attribute modifier's rule, whether the modifier names a port
// whose own M_Key a Set must carry, and the Get and Set handlers. smaAttr runs
// the checks every attribute shares in front of them, in this order:
//
//  1. an attribute without a row is StatusUnsupportedAttr;
//  2. a Set of an attribute without a Set handler is StatusUnsupportedAttr
//     (before its modifier is looked at);
//  3. a modifier outside the row's range is StatusInvalidField;
//  4. for a row with portKey, a Set naming another port whose M_Key the SMP
//     does not carry is StatusInvalidField, and a Get of it hides the M_Key;
//  5. the Set handler, whose failure is the answer (the Get handler does
//     not run);
//  6. the Get handler, which encodes the attribute as it now stands.
//
// The arrival port's M_Key has been checked before (checkMKey), for every
// attribute alike.

// smaReq is the SMP an attribute handler works on. It lives in the Engine
// (under e.mu) and carries copies of the request's and the response's data
// fields: the handlers are reached through function values, and the MADs of
// the MAD_IFC path stay on its stack (no allocation per command).
type smaReq struct {
	p          *port // the arrival port
	tp         *port // the port the modifier names (modPort rows), else p
	set        bool
	mod        uint32
	mkey       uint64            // the SMP's M_Key
	hideMKey   bool              // PortInfo's M_Key reads as 0
	ignoreMKey bool              // a local query (IgnoreMKey): no key to compare
	src        [smpDataSize]byte // the request's data field (on a Set only)
	data       [smpDataSize]byte // the response's
}

// smaRow is one row of the SMA's attribute table.
type smaRow struct {
	id      uint16
	mod     func(e *Engine, r *smaReq) bool // the modifier's range; modPort also resolves r.tp
	portKey bool                            // the modifier names a port with its own M_Key
	get     func(e *Engine, r *smaReq)      // encodes into r.data
	set     func(e *Engine, r *smaReq) uint16
}

var smaAttrs = [...]smaRow{
	{id: AttrNodeDescription, mod: modZero, get: (*Engine).getNodeDescription, set: (*Engine).setNodeDescription},
	{id: AttrNodeInfo, mod: modZero, get: (*Engine).getNodeInfo},
	{id: AttrGUIDInfo, mod: modGUIDBlock, get: (*Engine).getGUIDInfo, set: (*Engine).setGUIDInfo},
	{id: AttrPortInfo, mod: modPort, portKey: true, get: (*Engine).getPortInfo, set: (*Engine).setPortInfoAttr},
	{id: AttrPKeyTable, mod: modPKeyBlock, get: (*Engine).getPKeyTable, set: (*Engine).setPKeyTable},
	{id: AttrSLtoVLTable, mod: modZero, get: (*Engine).getSLtoVL, set: (*Engine).setSLtoVL},
	{id: AttrVLArbTable, mod: modVLArbBlock, get: (*Engine).getVLArb, set: (*Engine).setVLArb},
	// The modifier names the port as PortInfo's does (OpenSM sends the
	// port number; 0 is the arrival port); no M_Key of its own.
	{id: AttrMLNXExtPortInfo, mod: modPort, get: (*Engine).getMLNXExtPortInfo, set: (*Engine).setMLNXExtPortInfo},
}

func smaRowFor(id uint16) *smaRow {
	for i := range smaAttrs {
		if smaAttrs[i].id == id {
			return &smaAttrs[i]
		}
	}
	return nil
}

// smaAttr answers a SubnGet or SubnSet of an attribute into out's data
// field and returns the status.
func (e *Engine) smaAttr(p *port, in, out *MAD, hideMKey, ignoreMKey bool) uint16 {
	r := &e.smp
	// Field by field, and the data fields as arrays (moves the compiler
	// inlines): this runs for every SMP of the MAD_IFC path.
	r.p, r.tp, r.set, r.mod, r.mkey = p, p, in.Method() == MethodSet, in.AttrMod(), in.MKey()
	r.hideMKey, r.ignoreMKey = hideMKey, ignoreMKey
	if r.set {
		r.src = *(*[smpDataSize]byte)(in[offSMPData:])
	}
	r.data = *(*[smpDataSize]byte)(out[offSMPData:])
	st := e.smaDispatch(r, in.AttrID())
	*(*[smpDataSize]byte)(out[offSMPData:]) = r.data
	return st
}

// smaDispatch is the shared early path in front of an attribute's handlers.
func (e *Engine) smaDispatch(r *smaReq, id uint16) uint16 {
	a := smaRowFor(id)
	if a == nil || r.set && a.set == nil {
		return StatusUnsupportedAttr
	}
	if !a.mod(e, r) {
		return StatusInvalidField
	}
	if a.portKey && r.tp != r.p && !r.ignoreMKey && r.tp.pi.MKey != 0 && r.tp.pi.MKey != r.mkey {
		if r.set {
			// As qib: naming another port of the node, a Set must also
			// pass that port's M_Key (a Get has passed the arrival
			// port's check and reads it with the M_Key hidden unless the
			// keys match).
			return StatusInvalidField
		}
		r.hideMKey = true
	}
	if r.set {
		if st := a.set(e, r); st != 0 {
			return st
		}
	}
	a.get(e, r)
	return 0
}

// The modifier rules.

func modZero(_ *Engine, r *smaReq) bool { return r.mod == 0 }

// modPort accepts 0 (the arrival port) or a port number of the node and
// points r.tp at that port.
func modPort(e *Engine, r *smaReq) bool {
	if r.mod > uint32(len(e.ports)) {
		return false
	}
	if r.mod != 0 {
		r.tp = &e.ports[r.mod-1]
	}
	return true
}

// modGUIDBlock: the modifier is a block of 8 GUIDs within GUIDCap.
func modGUIDBlock(_ *Engine, r *smaReq) bool {
	return r.mod < (uint32(r.p.pi.GUIDCap)+7)/8
}

// modPKeyBlock: the modifier's low 16 bits are a block of 32 P_Keys within
// the partition capacity.
func modPKeyBlock(e *Engine, r *smaReq) bool {
	return r.mod&0xFFFF < uint32((e.pcap+31)/32)
}

// modVLArbBlock: the modifier's high 16 bits name a table and block (1, 2:
// low priority; 3, 4: high priority) within the table's capacity.
func modVLArbBlock(_ *Engine, r *smaReq) bool {
	_, base, capacity, ok := vlArbBlock(r.p, r.mod)
	return ok && base < capacity
}

// vlArbBlock returns the table the modifier names, the block's first entry
// and the table's capacity.
func vlArbBlock(p *port, mod uint32) (tbl []VLArbEntry, base, capacity int, ok bool) {
	switch mod >> 16 {
	case 1, 2:
		tbl, capacity = p.vlLow[:], int(p.pi.VLArbitrationLowCap)
	case 3, 4:
		tbl, capacity = p.vlHigh[:], int(p.pi.VLArbitrationHighCap)
	default:
		return nil, 0, 0, false
	}
	if (mod>>16)%2 == 0 {
		base = 32
	}
	return tbl, base, capacity, true
}

// The handlers.

func (e *Engine) getNodeDescription(r *smaReq) { _ = e.nodeDesc.Encode(r.data[:]) }

func (e *Engine) setNodeDescription(r *smaReq) uint16 {
	if r.p.pi.CapabilityMask2&CapMask2SetNodeDescSuppd == 0 {
		return StatusUnsupportedAttr
	}
	var d NodeDescription
	if d.Decode(r.src[:]) != nil {
		return StatusInvalidField
	}
	e.nodeDesc = d
	return 0
}

func (e *Engine) getNodeInfo(r *smaReq) {
	ni := e.node
	ni.PortGUID = r.p.guids[0]
	ni.LocalPortNum = r.p.num
	clear(r.data[:])
	_ = ni.Encode(r.data[:])
}

func (e *Engine) getGUIDInfo(r *smaReq) {
	gcap, base := int(r.p.pi.GUIDCap), int(r.mod)*8
	for i := range 8 {
		var g uint64
		if idx := base + i; idx < gcap {
			g = r.p.guids[idx]
		}
		be.PutUint64(r.data[8*i:], g)
	}
}

func (e *Engine) setGUIDInfo(r *smaReq) uint16 {
	gcap, base := int(r.p.pi.GUIDCap), int(r.mod)*8
	for i := range 8 {
		idx := base + i
		if idx == 0 || idx >= gcap { // entry 0, the port GUID, is read-only
			continue
		}
		if g := be.Uint64(r.src[8*i:]); g != r.p.guids[idx] {
			r.p.guids[idx] = g
			e.portChanged(r.p, ChangeGUIDs).GUIDs |= 1 << idx
		}
	}
	return 0
}

func (e *Engine) getPortInfo(r *smaReq) { e.encodePortInfo(r.tp, r.p, r.data[:], r.hideMKey) }

// setPortInfoAttr applies the Set to the port the modifier names. A
// refused Set still answers the port's PortInfo as it stands; an applied
// one shows the M_Key it set.
func (e *Engine) setPortInfoAttr(r *smaReq) uint16 {
	if st := e.setPortInfo(r.tp, r.src[:]); st != 0 {
		e.encodePortInfo(r.tp, r.p, r.data[:], r.hideMKey)
		return st
	}
	r.hideMKey = false
	return 0
}

func (e *Engine) getPKeyTable(r *smaReq) {
	base := int(r.mod&0xFFFF) * 32
	for i := range 32 {
		var k uint16
		if idx := base + i; idx < e.pcap {
			k = r.p.pkeys[idx]
		}
		be.PutUint16(r.data[2*i:], k)
	}
}

func (e *Engine) setPKeyTable(r *smaReq) uint16 {
	base := int(r.mod&0xFFFF) * 32
	for i := range 32 {
		idx := base + i
		if idx >= e.pcap {
			continue
		}
		if k := be.Uint16(r.src[2*i:]); k != r.p.pkeys[idx] {
			r.p.pkeys[idx] = k
			e.portChanged(r.p, ChangePKeys).PKeys[idx/64] |= 1 << (idx % 64)
		}
	}
	e.publishRoute(r.p)
	return 0
}

func (e *Engine) getSLtoVL(r *smaReq) {
	clear(r.data[:])
	_ = r.p.sl2vl.Encode(r.data[:])
}

func (e *Engine) setSLtoVL(r *smaReq) uint16 {
	_ = r.p.sl2vl.Decode(r.src[:])
	return 0
}

func (e *Engine) getVLArb(r *smaReq) {
	tbl, base, capacity, _ := vlArbBlock(r.p, r.mod)
	for i := range 32 {
		var v VLArbEntry
		if idx := base + i; idx < capacity {
			v = tbl[idx]
		}
		r.data[2*i], r.data[2*i+1] = v.VL, v.Weight
	}
}

func (e *Engine) setVLArb(r *smaReq) uint16 {
	tbl, base, capacity, _ := vlArbBlock(r.p, r.mod)
	for i := range 32 {
		if idx := base + i; idx < capacity {
			tbl[idx] = VLArbEntry{VL: r.src[2*i] & 0xF, Weight: r.src[2*i+1]}
		}
	}
	return 0
}

// MLNXExtendedPortInfo (0xFF90) as a ConnectX-3 answers it, in OpenSM's
// layout (ib_mlnx_ext_port_info_t): byte 3 StateChangeEnable, byte 7
// LinkSpeedSupported, byte 11 LinkSpeedEnabled, byte 15 LinkSpeedActive
// (bit 0: FDR10). The model's links are QDR: no FDR10 supported, so only
// StateChangeEnable and an empty enable mask can be set.

func (e *Engine) getMLNXExtPortInfo(r *smaReq) {
	p := r.tp
	clear(r.data[:])
	r.data[3], r.data[7], r.data[11] = p.mlnxStateChangeEnable, p.mlnxSpeedSupported, p.mlnxSpeedEnabled
}

func (e *Engine) setMLNXExtPortInfo(r *smaReq) uint16 {
	if r.src[11]&^r.tp.mlnxSpeedSupported != 0 || r.src[3] > 1 {
		return StatusInvalidField
	}
	r.tp.mlnxStateChangeEnable, r.tp.mlnxSpeedEnabled = r.src[3], r.src[11]
	return 0
}
