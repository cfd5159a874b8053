package mad

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

func short(what string, have, want int) error {
	return fmt.Errorf("mad: %s: %d bytes, want %d: %w", what, have, want, ErrShort)
}

// NodeDescriptionSize is the size of NodeDescription.
const NodeDescriptionSize = 64

// NodeDescription (0x0010): 64 bytes of UTF-8 text, zero-padded.
type NodeDescription [NodeDescriptionSize]byte

// Decode reads a NodeDescription. The text must be valid UTF-8 up to its
// first NUL, and every byte after that NUL must be zero.
func (d *NodeDescription) Decode(b []byte) error {
	if len(b) < NodeDescriptionSize {
		return short("NodeDescription", len(b), NodeDescriptionSize)
	}
	b = b[:NodeDescriptionSize]
	n := bytes.IndexByte(b, 0)
	if n < 0 {
		n = NodeDescriptionSize
	}
	if !utf8.Valid(b[:n]) {
		return fmt.Errorf("mad: NodeDescription: not UTF-8: %w", ErrInvalid)
	}
	for _, c := range b[n:] {
		if c != 0 {
			return fmt.Errorf("mad: NodeDescription: bytes after the NUL: %w", ErrInvalid)
		}
	}
	copy(d[:], b)
	return nil
}

// Encode writes the NodeDescription.
func (d *NodeDescription) Encode(b []byte) error {
	if len(b) < NodeDescriptionSize {
		return short("NodeDescription buffer", len(b), NodeDescriptionSize)
	}
	copy(b, d[:])
	return nil
}

// String returns the text up to the first NUL.
func (d *NodeDescription) String() string {
	n := bytes.IndexByte(d[:], 0)
	if n < 0 {
		n = len(d)
	}
	return string(d[:n])
}

// NodeInfoSize is the number of bytes NodeInfo uses (the SMP data is 64).
const NodeInfoSize = 40

// NodeInfo (0x0011).
type NodeInfo struct {
	BaseVersion     uint8
	ClassVersion    uint8
	NodeType        uint8
	NumPorts        uint8
	SystemImageGUID uint64
	NodeGUID        uint64
	PortGUID        uint64
	PartitionCap    uint16
	DeviceID        uint16
	Revision        uint32
	LocalPortNum    uint8
	VendorID        uint32 // 24 bits
}

// Decode reads a NodeInfo. NodeType must be 1, 2 or 3.
func (n *NodeInfo) Decode(b []byte) error {
	if len(b) < NodeInfoSize {
		return short("NodeInfo", len(b), NodeInfoSize)
	}
	if b[2] < NodeTypeCA || b[2] > NodeTypeRouter {
		return fmt.Errorf("mad: NodeInfo: node type %d: %w", b[2], ErrInvalid)
	}
	n.BaseVersion, n.ClassVersion, n.NodeType, n.NumPorts = b[0], b[1], b[2], b[3]
	n.SystemImageGUID = be.Uint64(b[4:])
	n.NodeGUID = be.Uint64(b[12:])
	n.PortGUID = be.Uint64(b[20:])
	n.PartitionCap = be.Uint16(b[28:])
	n.DeviceID = be.Uint16(b[30:])
	n.Revision = be.Uint32(b[32:])
	n.LocalPortNum = b[36]
	n.VendorID = uint32(b[37])<<16 | uint32(b[38])<<8 | uint32(b[39])
	return nil
}

// Encode writes the NodeInfo into the first 40 bytes of b.
func (n *NodeInfo) Encode(b []byte) error {
	if len(b) < NodeInfoSize {
		return short("NodeInfo buffer", len(b), NodeInfoSize)
	}
	b[0], b[1], b[2], b[3] = n.BaseVersion, n.ClassVersion, n.NodeType, n.NumPorts
	be.PutUint64(b[4:], n.SystemImageGUID)
	be.PutUint64(b[12:], n.NodeGUID)
	be.PutUint64(b[20:], n.PortGUID)
	be.PutUint16(b[28:], n.PartitionCap)
	be.PutUint16(b[30:], n.DeviceID)
	be.PutUint32(b[32:], n.Revision)
	b[36] = n.LocalPortNum
	b[37], b[38], b[39] = byte(n.VendorID>>16), byte(n.VendorID>>8), byte(n.VendorID)
	return nil
}

// GUIDInfoSize is the size of one GUIDInfo block.
const GUIDInfoSize = 64

// GUIDInfo (0x0014): one block of 8 GUIDs; AttrMod is the block number.
type GUIDInfo [8]uint64

// Decode reads a GUIDInfo block.
func (g *GUIDInfo) Decode(b []byte) error {
	if len(b) < GUIDInfoSize {
		return short("GUIDInfo", len(b), GUIDInfoSize)
	}
	for i := range g {
		g[i] = be.Uint64(b[8*i:])
	}
	return nil
}

// Encode writes the GUIDInfo block.
func (g *GUIDInfo) Encode(b []byte) error {
	if len(b) < GUIDInfoSize {
		return short("GUIDInfo buffer", len(b), GUIDInfoSize)
	}
	for i, v := range g {
		be.PutUint64(b[8*i:], v)
	}
	return nil
}

// PortInfoSize is the size of PortInfo.
const PortInfoSize = 64

// PortInfo (0x0015): every field of the 64-byte attribute (ib-mad.md §2.4).
// Fields narrower than their Go type hold only the low bits; Encode masks.
type PortInfo struct {
	MKey                      uint64
	GIDPrefix                 uint64
	LID                       uint16
	MasterSMLID               uint16
	CapabilityMask            uint32
	DiagCode                  uint16
	MKeyLeasePeriod           uint16
	LocalPortNum              uint8
	LinkWidthEnabled          uint8
	LinkWidthSupported        uint8
	LinkWidthActive           uint8
	LinkSpeedSupported        uint8 // 4 bits
	PortState                 PortState
	PortPhysicalState         PhysState
	LinkDownDefaultState      uint8 // 4 bits
	MKeyProtectBits           uint8 // 2 bits
	LMC                       uint8 // 3 bits
	LinkSpeedActive           uint8 // 4 bits
	LinkSpeedEnabled          uint8 // 4 bits
	NeighborMTU               uint8 // 4 bits
	MasterSMSL                uint8 // 4 bits
	VLCap                     uint8 // 4 bits
	InitType                  uint8 // 4 bits
	VLHighLimit               uint8
	VLArbitrationHighCap      uint8
	VLArbitrationLowCap       uint8
	InitTypeReply             uint8 // 4 bits
	MTUCap                    uint8 // 4 bits
	VLStallCount              uint8 // 3 bits
	HOQLife                   uint8 // 5 bits
	OperationalVLs            uint8 // 4 bits
	PartitionEnforcementIn    bool
	PartitionEnforcementOut   bool
	FilterRawInbound          bool
	FilterRawOutbound         bool
	MKeyViolations            uint16
	PKeyViolations            uint16
	QKeyViolations            uint16
	GUIDCap                   uint8
	ClientReregister          bool
	MulticastPKeyTrapSuppress uint8 // 2 bits
	SubnetTimeOut             uint8 // 5 bits
	RespTimeValue             uint8 // 5 bits
	LocalPhyErrors            uint8 // 4 bits
	OverrunErrors             uint8 // 4 bits
	MaxCreditHint             uint16
	LinkRoundTripLatency      uint32 // 24 bits
	CapabilityMask2           uint16
	LinkSpeedExtActive        uint8 // 4 bits
	LinkSpeedExtSupported     uint8 // 4 bits
	LinkSpeedExtEnabled       uint8 // 5 bits
}

// portInfoReserved marks the reserved bits of PortInfo (byte 34 bits 5:3,
// byte 52 bits 7:5, byte 56, byte 63 bits 7:5).
var portInfoReserved = func() (m [PortInfoSize]byte) {
	m[34], m[52], m[56], m[63] = 0x38, 0xE0, 0xFF, 0xE0
	return
}()

// Decode reads a PortInfo. PortState above Active (4) and a physical state
// above PhyTest (7) are reserved values and rejected.
func (p *PortInfo) Decode(b []byte) error {
	if len(b) < PortInfoSize {
		return short("PortInfo", len(b), PortInfoSize)
	}
	if s := b[32] & 0xF; s > uint8(PortActive) {
		return fmt.Errorf("mad: PortInfo: PortState %d: %w", s, ErrInvalid)
	}
	if s := b[33] >> 4; s > uint8(PhysPhyTest) {
		return fmt.Errorf("mad: PortInfo: PortPhysicalState %d: %w", s, ErrInvalid)
	}
	p.MKey = be.Uint64(b[0:])
	p.GIDPrefix = be.Uint64(b[8:])
	p.LID = be.Uint16(b[16:])
	p.MasterSMLID = be.Uint16(b[18:])
	p.CapabilityMask = be.Uint32(b[20:])
	p.DiagCode = be.Uint16(b[24:])
	p.MKeyLeasePeriod = be.Uint16(b[26:])
	p.LocalPortNum = b[28]
	p.LinkWidthEnabled = b[29]
	p.LinkWidthSupported = b[30]
	p.LinkWidthActive = b[31]
	p.LinkSpeedSupported = b[32] >> 4
	p.PortState = PortState(b[32] & 0xF)
	p.PortPhysicalState = PhysState(b[33] >> 4)
	p.LinkDownDefaultState = b[33] & 0xF
	p.MKeyProtectBits = b[34] >> 6
	p.LMC = b[34] & 0x7
	p.LinkSpeedActive = b[35] >> 4
	p.LinkSpeedEnabled = b[35] & 0xF
	p.NeighborMTU = b[36] >> 4
	p.MasterSMSL = b[36] & 0xF
	p.VLCap = b[37] >> 4
	p.InitType = b[37] & 0xF
	p.VLHighLimit = b[38]
	p.VLArbitrationHighCap = b[39]
	p.VLArbitrationLowCap = b[40]
	p.InitTypeReply = b[41] >> 4
	p.MTUCap = b[41] & 0xF
	p.VLStallCount = b[42] >> 5
	p.HOQLife = b[42] & 0x1F
	p.OperationalVLs = b[43] >> 4
	p.PartitionEnforcementIn = b[43]&0x8 != 0
	p.PartitionEnforcementOut = b[43]&0x4 != 0
	p.FilterRawInbound = b[43]&0x2 != 0
	p.FilterRawOutbound = b[43]&0x1 != 0
	p.MKeyViolations = be.Uint16(b[44:])
	p.PKeyViolations = be.Uint16(b[46:])
	p.QKeyViolations = be.Uint16(b[48:])
	p.GUIDCap = b[50]
	p.ClientReregister = b[51]&0x80 != 0
	p.MulticastPKeyTrapSuppress = (b[51] >> 5) & 0x3
	p.SubnetTimeOut = b[51] & 0x1F
	p.RespTimeValue = b[52] & 0x1F
	p.LocalPhyErrors = b[53] >> 4
	p.OverrunErrors = b[53] & 0xF
	p.MaxCreditHint = be.Uint16(b[54:])
	p.LinkRoundTripLatency = uint32(b[57])<<16 | uint32(b[58])<<8 | uint32(b[59])
	p.CapabilityMask2 = be.Uint16(b[60:])
	p.LinkSpeedExtActive = b[62] >> 4
	p.LinkSpeedExtSupported = b[62] & 0xF
	p.LinkSpeedExtEnabled = b[63] & 0x1F
	return nil
}

func bit(v bool, m byte) byte {
	if v {
		return m
	}
	return 0
}

// Encode writes the PortInfo; reserved bits are written as zero.
func (p *PortInfo) Encode(b []byte) error {
	if len(b) < PortInfoSize {
		return short("PortInfo buffer", len(b), PortInfoSize)
	}
	be.PutUint64(b[0:], p.MKey)
	be.PutUint64(b[8:], p.GIDPrefix)
	be.PutUint16(b[16:], p.LID)
	be.PutUint16(b[18:], p.MasterSMLID)
	be.PutUint32(b[20:], p.CapabilityMask)
	be.PutUint16(b[24:], p.DiagCode)
	be.PutUint16(b[26:], p.MKeyLeasePeriod)
	b[28] = p.LocalPortNum
	b[29] = p.LinkWidthEnabled
	b[30] = p.LinkWidthSupported
	b[31] = p.LinkWidthActive
	b[32] = p.LinkSpeedSupported<<4 | uint8(p.PortState)&0xF
	b[33] = uint8(p.PortPhysicalState)<<4 | p.LinkDownDefaultState&0xF
	b[34] = p.MKeyProtectBits<<6 | p.LMC&0x7
	b[35] = p.LinkSpeedActive<<4 | p.LinkSpeedEnabled&0xF
	b[36] = p.NeighborMTU<<4 | p.MasterSMSL&0xF
	b[37] = p.VLCap<<4 | p.InitType&0xF
	b[38] = p.VLHighLimit
	b[39] = p.VLArbitrationHighCap
	b[40] = p.VLArbitrationLowCap
	b[41] = p.InitTypeReply<<4 | p.MTUCap&0xF
	b[42] = p.VLStallCount<<5 | p.HOQLife&0x1F
	b[43] = p.OperationalVLs<<4 | bit(p.PartitionEnforcementIn, 0x8) | bit(p.PartitionEnforcementOut, 0x4) |
		bit(p.FilterRawInbound, 0x2) | bit(p.FilterRawOutbound, 0x1)
	be.PutUint16(b[44:], p.MKeyViolations)
	be.PutUint16(b[46:], p.PKeyViolations)
	be.PutUint16(b[48:], p.QKeyViolations)
	b[50] = p.GUIDCap
	b[51] = bit(p.ClientReregister, 0x80) | (p.MulticastPKeyTrapSuppress&0x3)<<5 | p.SubnetTimeOut&0x1F
	b[52] = p.RespTimeValue & 0x1F
	b[53] = p.LocalPhyErrors<<4 | p.OverrunErrors&0xF
	be.PutUint16(b[54:], p.MaxCreditHint)
	b[56] = 0
	b[57], b[58], b[59] = byte(p.LinkRoundTripLatency>>16), byte(p.LinkRoundTripLatency>>8), byte(p.LinkRoundTripLatency)
	be.PutUint16(b[60:], p.CapabilityMask2)
	b[62] = p.LinkSpeedExtActive<<4 | p.LinkSpeedExtSupported&0xF
	b[63] = p.LinkSpeedExtEnabled & 0x1F
	return nil
}

// PKeyTableSize is the size of one P_KeyTable block.
const PKeyTableSize = 64

// PKeyTable (0x0016): one block of 32 P_Keys.
type PKeyTable [32]uint16

// Decode reads a P_KeyTable block.
func (t *PKeyTable) Decode(b []byte) error {
	if len(b) < PKeyTableSize {
		return short("P_KeyTable", len(b), PKeyTableSize)
	}
	for i := range t {
		t[i] = be.Uint16(b[2*i:])
	}
	return nil
}

// Encode writes the P_KeyTable block.
func (t *PKeyTable) Encode(b []byte) error {
	if len(b) < PKeyTableSize {
		return short("P_KeyTable buffer", len(b), PKeyTableSize)
	}
	for i, v := range t {
		be.PutUint16(b[2*i:], v)
	}
	return nil
}

// SLtoVLSize is the size of SLtoVLMappingTable.
const SLtoVLSize = 8

// SLtoVL (0x0017): the VL (4 bits) of each of the 16 SLs.
type SLtoVL [16]uint8

// Decode reads an SLtoVLMappingTable.
func (t *SLtoVL) Decode(b []byte) error {
	if len(b) < SLtoVLSize {
		return short("SLtoVLMappingTable", len(b), SLtoVLSize)
	}
	for i := range 8 {
		t[2*i], t[2*i+1] = b[i]>>4, b[i]&0xF
	}
	return nil
}

// Encode writes the SLtoVLMappingTable.
func (t *SLtoVL) Encode(b []byte) error {
	if len(b) < SLtoVLSize {
		return short("SLtoVLMappingTable buffer", len(b), SLtoVLSize)
	}
	for i := range 8 {
		b[i] = t[2*i]<<4 | t[2*i+1]&0xF
	}
	return nil
}

// VLArbEntry is one VLArbitrationTable entry.
type VLArbEntry struct {
	VL     uint8 // 4 bits
	Weight uint8
}

// VLArbSize is the size of one VLArbitrationTable block.
const VLArbSize = 64

// VLArbTable (0x0018): one block of 32 entries.
type VLArbTable [32]VLArbEntry

var vlArbReserved = func() (m [VLArbSize]byte) {
	for i := 0; i < VLArbSize; i += 2 {
		m[i] = 0xF0
	}
	return
}()

// Decode reads a VLArbitrationTable block.
func (t *VLArbTable) Decode(b []byte) error {
	if len(b) < VLArbSize {
		return short("VLArbitrationTable", len(b), VLArbSize)
	}
	for i := range t {
		t[i] = VLArbEntry{VL: b[2*i] & 0xF, Weight: b[2*i+1]}
	}
	return nil
}

// Encode writes the VLArbitrationTable block.
func (t *VLArbTable) Encode(b []byte) error {
	if len(b) < VLArbSize {
		return short("VLArbitrationTable buffer", len(b), VLArbSize)
	}
	for i, e := range t {
		b[2*i], b[2*i+1] = e.VL&0xF, e.Weight
	}
	return nil
}

// SMInfoSize is the number of bytes SMInfo uses.
const SMInfoSize = 21

// SMInfo (0x0020).
type SMInfo struct {
	GUID     uint64
	SMKey    uint64
	ActCount uint32
	Priority uint8 // 4 bits
	SMState  uint8 // 4 bits: 0 not active, 1 discovering, 2 standby, 3 master
}

// Decode reads an SMInfo. SMState above 3 is reserved.
func (s *SMInfo) Decode(b []byte) error {
	if len(b) < SMInfoSize {
		return short("SMInfo", len(b), SMInfoSize)
	}
	if st := b[20] & 0xF; st > 3 {
		return fmt.Errorf("mad: SMInfo: SMState %d: %w", st, ErrInvalid)
	}
	s.GUID = be.Uint64(b[0:])
	s.SMKey = be.Uint64(b[8:])
	s.ActCount = be.Uint32(b[16:])
	s.Priority = b[20] >> 4
	s.SMState = b[20] & 0xF
	return nil
}

// Encode writes the SMInfo.
func (s *SMInfo) Encode(b []byte) error {
	if len(b) < SMInfoSize {
		return short("SMInfo buffer", len(b), SMInfoSize)
	}
	be.PutUint64(b[0:], s.GUID)
	be.PutUint64(b[8:], s.SMKey)
	be.PutUint32(b[16:], s.ActCount)
	b[20] = s.Priority<<4 | s.SMState&0xF
	return nil
}
