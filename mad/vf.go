package mad

import "fmt"

// MAD_IFC (opcode 0x24) op_modifier bits (mlx4-commchan.md §4.2).
const (
	MADIFCIgnoreMKey  uint8 = 0x1
	MADIFCIgnoreBKey  uint8 = 0x2
	MADIFCExtended    uint8 = 0x4 // the WC and GRH follow the MAD in the inbox
	MADIFCNetworkView uint8 = 0x8 // driver-only; stripped before "firmware"
)

// IFCResult is what ProcessMADIFC made of a command. The command layer
// maps it to its status (package vhcr/hca to an mlx4.Status), so that the
// MAD engine knows nothing of the command interface.
type IFCResult uint8

const (
	IFCOK       IFCResult = iota // answered: out holds the response MAD
	IFCRefused                   // a VF's MAD the policy does not allow (mlx4: BAD_OP)
	IFCBadInbox                  // a malformed inbox or a port the function lacks (mlx4: BAD_PARAM)
	IFCNoReply                   // the engine dropped the MAD or did not answer (mlx4 firmware: BAD_PKT)
)

var ifcResultNames = [...]string{"ok", "refused", "bad_inbox", "no_reply"}

func (r IFCResult) String() string {
	if int(r) < len(ifcResultNames) {
		return ifcResultNames[r]
	}
	return fmt.Sprintf("IFCResult(%d)", uint8(r))
}

// Extended inbox layout: offsets after the 256-byte MAD.
const (
	ifcMyQPN       = 0x100
	ifcRQPN        = 0x108
	ifcSL          = 0x10C
	ifcGPath       = 0x10D
	ifcPKeyIndex   = 0x112
	ifcGRH         = 0x140
	ifcWCEnd       = ifcPKeyIndex + 2
	MADIFCInboxMax = ifcGRH + GRHSize // bytes an extended inbox with a GRH needs
)

// MADIFCInbox is a decoded MAD_IFC command: the MAD, the port and flags
// from the modifiers, and the optional work completion and GRH.
type MADIFCInbox struct {
	MAD         MAD
	Port        uint8
	Flags       Flags
	NetworkView bool
	HasWC       bool
	WC          WC
	HasGRH      bool
	GRH         GRH
}

// DecodeMADIFCInbox decodes a MAD_IFC command. in_modifier bits 15:0 are
// the port and, with an extended inbox, bits 31:16 the SLID. With
// MADIFCExtended the inbox holds at 0x100 my_qpn, 0x108 the remote QPN,
// 0x10C SL<<4, 0x10D g_path (bit 7 GRH present, bits 6:0 DLID path bits),
// 0x112 the P_Key index, and at 0x140 the GRH when g_path says so.
// Input shorter than those offsets need fails with ErrShort; a port above
// 255 or a GRH that does not decode fails with ErrInvalid.
func DecodeMADIFCInbox(opMod uint8, inMod uint32, inbox []byte, dst *MADIFCInbox) error {
	if len(inbox) < Size {
		return fmt.Errorf("mad: MAD_IFC inbox of %d bytes, want %d: %w", len(inbox), Size, ErrShort)
	}
	port := inMod & 0xFFFF
	if port > 0xFF {
		return fmt.Errorf("mad: MAD_IFC port %d: %w", port, ErrInvalid)
	}
	*dst = MADIFCInbox{Port: uint8(port), NetworkView: opMod&MADIFCNetworkView != 0}
	copy(dst.MAD[:], inbox[:Size])
	if opMod&MADIFCIgnoreMKey != 0 {
		dst.Flags |= IgnoreMKey
	}
	if opMod&MADIFCIgnoreBKey != 0 {
		dst.Flags |= IgnoreBKey
	}
	if opMod&MADIFCExtended == 0 {
		return nil
	}
	if len(inbox) < ifcWCEnd {
		return fmt.Errorf("mad: extended MAD_IFC inbox of %d bytes, want %d: %w", len(inbox), ifcWCEnd, ErrShort)
	}
	gpath := inbox[ifcGPath]
	dst.HasWC = true
	dst.WC = WC{
		SLID:         uint16(inMod >> 16),
		QPN:          be.Uint32(inbox[ifcMyQPN:]) & 0xFFFFFF,
		SrcQP:        be.Uint32(inbox[ifcRQPN:]) & 0xFFFFFF,
		SL:           inbox[ifcSL] >> 4,
		GRHPresent:   gpath&0x80 != 0,
		DLIDPathBits: gpath & 0x7F,
		PKeyIndex:    be.Uint16(inbox[ifcPKeyIndex:]),
	}
	if dst.WC.GRHPresent {
		if len(inbox) < MADIFCInboxMax {
			return fmt.Errorf("mad: MAD_IFC inbox with GRH of %d bytes, want %d: %w", len(inbox), MADIFCInboxMax, ErrShort)
		}
		if err := dst.GRH.Decode(inbox[ifcGRH:]); err != nil {
			return err
		}
		dst.HasGRH = true
	}
	return nil
}

// EncodeMADIFCInbox is the inverse of DecodeMADIFCInbox, for drivers and
// tests: it fills inbox (at least MADIFCInboxMax bytes when extended) and
// returns the op_modifier and in_modifier.
func EncodeMADIFCInbox(src *MADIFCInbox, inbox []byte) (opMod uint8, inMod uint32, err error) {
	need := Size
	if src.HasWC {
		need = MADIFCInboxMax
	}
	if len(inbox) < need {
		return 0, 0, fmt.Errorf("mad: MAD_IFC inbox buffer of %d bytes, want %d: %w", len(inbox), need, ErrShort)
	}
	copy(inbox, src.MAD[:])
	inMod = uint32(src.Port)
	if src.Flags&IgnoreMKey != 0 {
		opMod |= MADIFCIgnoreMKey
	}
	if src.Flags&IgnoreBKey != 0 {
		opMod |= MADIFCIgnoreBKey
	}
	if src.NetworkView {
		opMod |= MADIFCNetworkView
	}
	if !src.HasWC {
		return opMod, inMod, nil
	}
	opMod |= MADIFCExtended
	inMod |= uint32(src.WC.SLID) << 16
	clear(inbox[Size:MADIFCInboxMax])
	be.PutUint32(inbox[ifcMyQPN:], src.WC.QPN&0xFFFFFF)
	be.PutUint32(inbox[ifcRQPN:], src.WC.SrcQP&0xFFFFFF)
	inbox[ifcSL] = src.WC.SL << 4
	inbox[ifcGPath] = src.WC.DLIDPathBits & 0x7F
	if src.WC.GRHPresent {
		inbox[ifcGPath] |= 0x80
	}
	be.PutUint16(inbox[ifcPKeyIndex:], src.WC.PKeyIndex)
	if src.WC.GRHPresent {
		_ = src.GRH.Encode(inbox[ifcGRH:])
	}
	return opMod, inMod, nil
}

// VFView is what the MAD_IFC policy needs to know about the calling
// function. Port numbers are the function's own (1-based).
type VFView interface {
	// IsPF reports whether the caller is the PF, whose MADs are not filtered.
	IsPF() bool
	// PhysPort maps the function's port to the device port.
	PhysPort(port uint8) (phys uint8, ok bool)
	// PKeyIndex maps an index of the function's virtual P_Key table to an
	// index of the physical table; ok false means "no entry" (reads as 0).
	PKeyIndex(port uint8, virt int) (phys int, ok bool)
	// PortState is the port state the function sees (Active or Down).
	PortState(port uint8) PortState
	// CapMask is the PortInfo capability mask the function sees.
	CapMask(port uint8) uint32
	// PortGUID is the function's (admin) GUID on the port.
	PortGUID(port uint8) uint64
	// NodeGUID is the function's node GUID.
	NodeGUID() uint64
}

// SMIEnabler is implemented by views of functions that may be
// SMI-privileged (mlx4_vf_smi_enabled): such a VF's host-view LID-routed
// Gets are still paravirtualised, but everything else it sends runs
// natively on its port instead of being refused.
type SMIEnabler interface {
	SMIEnabled() bool
}

// StaticVF is a VFView held in plain fields, for ports 1..len(Ports).
type StaticVF struct {
	PF    bool
	SMI   bool // SMI-privileged VF (see SMIEnabler)
	Node  uint64
	Ports []VFPort
}

// SMIEnabled implements SMIEnabler.
func (v *StaticVF) SMIEnabled() bool { return v.SMI }

// VFPort is one port of a StaticVF.
type VFPort struct {
	Phys    uint8    // device port
	PKeyMap []uint16 // virtual index → physical index
	State   PortState
	CapMask uint32
	GUID    uint64
}

func (v *StaticVF) port(p uint8) *VFPort {
	if p < 1 || int(p) > len(v.Ports) {
		return nil
	}
	return &v.Ports[p-1]
}

// IsPF implements VFView.
func (v *StaticVF) IsPF() bool { return v.PF }

// PhysPort implements VFView.
func (v *StaticVF) PhysPort(p uint8) (uint8, bool) {
	if vp := v.port(p); vp != nil {
		return vp.Phys, true
	}
	return 0, false
}

// PKeyIndex implements VFView.
func (v *StaticVF) PKeyIndex(p uint8, virt int) (int, bool) {
	vp := v.port(p)
	if vp == nil || virt < 0 || virt >= len(vp.PKeyMap) {
		return 0, false
	}
	return int(vp.PKeyMap[virt]), true
}

// PortState implements VFView.
func (v *StaticVF) PortState(p uint8) PortState {
	if vp := v.port(p); vp != nil {
		return vp.State
	}
	return PortDown
}

// CapMask implements VFView.
func (v *StaticVF) CapMask(p uint8) uint32 {
	if vp := v.port(p); vp != nil {
		return vp.CapMask
	}
	return 0
}

// PortGUID implements VFView.
func (v *StaticVF) PortGUID(p uint8) uint64 {
	if vp := v.port(p); vp != nil {
		return vp.GUID
	}
	return 0
}

// NodeGUID implements VFView.
func (v *StaticVF) NodeGUID() uint64 { return v.Node }

// ProcessMADIFC executes a MAD_IFC command (the master's
// mlx4_MAD_IFC_wrapper, mlx4-commchan.md §4.1) for the function vf (nil
// means the PF) and returns its outcome; on IFCOK out holds the response
// MAD.
//
//   - The PF's commands run unfiltered: the inbox (with the extended WC and
//     GRH when op_modifier says so) goes to ProcessMAD with the ignore flags
//     of op_modifier; the network-view bit is stripped.
//   - A VF may only issue host-view, LID-routed (class 0x01, version 1) Gets.
//     P_KeyTable is answered from the VF's virtual P_Key map, PortInfo with
//     the VF's port state and capability mask (and, stricter than mlx4, the
//     M_Key field zeroed), GUIDInfo with the VF's GUID alone, NodeInfo with
//     the VF's node GUID. Other Gets run natively on the VF's port.
//   - Any other MAD from a VF — a Set, directed route, PerfMgt, BM, any
//     network-view command — is refused (IFCRefused), unless the view
//     says the VF is SMI-privileged (SMIEnabler) and has the port: then it
//     runs natively on the VF's port. This policy comes first, as in mlx4:
//     a refused MAD is IFCRefused even with a malformed extension or a
//     port the VF does not have. A LID-routed Get of another base or class
//     version passes the policy and runs natively.
//
// A MAD the engine drops or does not answer yields IFCNoReply (firmware's
// BAD_PKT; a VF sees BAD_PARAM after mlx4's status → errno → status round
// trip). A malformed inbox or a port the function does not have yields
// IFCBadInbox.
func (e *Engine) ProcessMADIFC(vf VFView, opMod uint8, inMod uint32, inbox []byte, out *MAD) IFCResult {
	pf := vf == nil || vf.IsPF()
	if !pf && !vfPolicyAllows(vf, opMod, inMod, inbox) {
		e.counters.vfRefused.Add(1)
		clear(out[:])
		return IFCRefused
	}
	var in MADIFCInbox
	if err := DecodeMADIFCInbox(opMod, inMod, inbox, &in); err != nil {
		return e.badInbox(out)
	}
	if pf {
		if in.Port < 1 || int(in.Port) > len(e.ports) {
			return e.badInbox(out)
		}
		return e.runIFC(&in, in.Port, out)
	}
	return e.vfIFC(vf, &in, out)
}

// vfPolicyAllows is mlx4_MAD_IFC_wrapper's VF policy, applied to the MAD
// header in the inbox before anything else: no extension is decoded and no
// port checked first, so a forbidden MAD is BAD_OP whatever follows it. The
// policy is the class and method (a host-view, LID-routed Get) unless the
// VF is SMI-privileged on the port; the paravirtualised attributes (vfIFC)
// also need base and class version 1, other LID-routed Gets run natively.
func vfPolicyAllows(vf VFView, opMod uint8, inMod uint32, inbox []byte) bool {
	if len(inbox) < Size {
		return true // a short inbox is the decoder's to refuse
	}
	hdr := (*MAD)(inbox[:Size])
	if opMod&MADIFCNetworkView == 0 && hdr.MgmtClass() == ClassSubnLID && hdr.Method() == MethodGet {
		return true
	}
	if p, ok := vf.(SMIEnabler); ok && p.SMIEnabled() {
		_, smi := vf.PhysPort(uint8(inMod)) // mlx4_vf_smi_enabled on the converted port
		return smi
	}
	return false
}

// badInbox answers a malformed inbox or a port the function does not have.
func (e *Engine) badInbox(out *MAD) IFCResult {
	e.counters.badInbox.Add(1)
	clear(out[:])
	return IFCBadInbox
}

// vfIFC runs a VF's command that passed the policy on the VF's physical
// port: natively, or for the attributes mlx4 paravirtualises with the
// answer rewritten to the VF's view.
func (e *Engine) vfIFC(vf VFView, in *MADIFCInbox, out *MAD) IFCResult {
	vport := in.Port
	phys, ok := vf.PhysPort(vport)
	if !ok {
		return e.badInbox(out)
	}
	m := &in.MAD
	if in.NetworkView || m.BaseVersion() != 1 || m.MgmtClass() != ClassSubnLID || m.ClassVersion() != 1 || m.Method() != MethodGet {
		// Past the policy: an SMI-enabled VF's MAD, or a LID-routed Get
		// of another version. mlx4: "Else run natively", on the
		// function's port, with the network-view bit stripped.
		return e.runIFC(in, phys, out)
	}
	switch m.AttrID() {
	case AttrPKeyTable:
		return e.vfPKeyTable(vf, in, vport, phys, out)
	case AttrPortInfo:
		return e.vfPortInfo(vf, in, vport, phys, out)
	case AttrGUIDInfo:
		return e.vfGUIDInfo(vf, in, vport, phys, out)
	case AttrNodeInfo:
		return e.vfNodeInfo(vf, in, phys, out)
	}
	return e.runIFC(in, phys, out)
}

// runParavirt runs a paravirtualised Get natively and reports whether it
// succeeded, so that its answer is to be rewritten (and counted).
func (e *Engine) runParavirt(in *MADIFCInbox, phys uint8, out *MAD) (IFCResult, bool) {
	st := e.runIFC(in, phys, out)
	if st != IFCOK || out.Status() != 0 {
		return st, false
	}
	e.counters.vfParavirt.Add(1)
	return st, true
}

// vfPKeyTable answers a block of the VF's virtual P_Key table from the
// port's block 0 query: entries the VF's map does not reach read as 0.
func (e *Engine) vfPKeyTable(vf VFView, in *MADIFCInbox, vport, phys uint8, out *MAD) IFCResult {
	block := in.MAD.AttrMod() & 0xFFFF
	be.PutUint32(in.MAD[20:], 0)
	if st, ok := e.runParavirt(in, phys, out); !ok {
		return st
	}
	be.PutUint32(out[20:], block)
	if block >= uint32((e.pcap+31)/32) {
		clear(out.SMPData())
		out.SetStatus(StatusInvalidField)
		return IFCOK
	}
	data := out.SMPData()
	for i := range 32 {
		v := int(block)*32 + i
		var key uint16
		if pi, ok := vf.PKeyIndex(vport, v); ok && v < e.pcap {
			key, _ = e.PKey(phys, pi)
		}
		be.PutUint16(data[2*i:], key)
	}
	return IFCOK
}

// vfPortInfo answers the physical port's PortInfo with the VF's port
// state, capability mask and port number, and no M_Key.
func (e *Engine) vfPortInfo(vf VFView, in *MADIFCInbox, vport, phys uint8, out *MAD) IFCResult {
	be.PutUint32(in.MAD[20:], uint32(phys))
	if st, ok := e.runParavirt(in, phys, out); !ok {
		return st
	}
	data := out.SMPData()
	be.PutUint64(data[0:], 0) // the M_Key is not the VF's business
	data[32] = data[32]&0xF0 | uint8(vf.PortState(vport))&0xF
	be.PutUint32(data[20:], vf.CapMask(vport))
	data[28] = vport
	return IFCOK
}

// vfGUIDInfo answers GUIDInfo block 0 with the VF's GUID alone.
func (e *Engine) vfGUIDInfo(vf VFView, in *MADIFCInbox, vport, phys uint8, out *MAD) IFCResult {
	be.PutUint32(in.MAD[20:], 0)
	if st, ok := e.runParavirt(in, phys, out); !ok {
		return st
	}
	data := out.SMPData()
	clear(data)
	be.PutUint64(data, vf.PortGUID(vport))
	return IFCOK
}

// vfNodeInfo answers NodeInfo with the VF's node GUID.
func (e *Engine) vfNodeInfo(vf VFView, in *MADIFCInbox, phys uint8, out *MAD) IFCResult {
	if st, ok := e.runParavirt(in, phys, out); !ok {
		return st
	}
	be.PutUint64(out.SMPData()[12:], vf.NodeGUID())
	return IFCOK
}

// runIFC runs the decoded command natively on a device port.
func (e *Engine) runIFC(in *MADIFCInbox, port uint8, out *MAD) IFCResult {
	var wc *WC
	var grh *GRH
	if in.HasWC {
		wc = &in.WC
	}
	if in.HasGRH {
		grh = &in.GRH
	}
	resp, res := e.ProcessMAD(in.Flags, port, wc, grh, &in.MAD)
	if res&Reply == 0 {
		clear(out[:])
		return IFCNoReply
	}
	*out = resp
	return IFCOK
}
