package mad

import "fmt"

// ClassPortInfoSize is the size of ClassPortInfo.
const ClassPortInfoSize = 72

// ClassPortInfo (0x0001 in every GS class).
type ClassPortInfo struct {
	BaseVersion     uint8
	ClassVersion    uint8
	CapabilityMask  uint16
	CapabilityMask2 uint32 // 27 bits
	RespTimeValue   uint8  // 5 bits
	RedirectGID     [16]byte
	RedirectTC      uint8
	RedirectSL      uint8  // 4 bits
	RedirectFL      uint32 // 20 bits
	RedirectLID     uint16
	RedirectPKey    uint16
	RedirectQP      uint32 // 24 bits
	RedirectQKey    uint32
	TrapGID         [16]byte
	TrapTC          uint8
	TrapSL          uint8  // 4 bits
	TrapFL          uint32 // 20 bits
	TrapLID         uint16
	TrapPKey        uint16
	TrapHL          uint8
	TrapQP          uint32 // 24 bits
	TrapQKey        uint32
}

var classPortInfoReserved = func() (m [ClassPortInfoSize]byte) {
	m[32] = 0xFF
	return
}()

// Decode reads a ClassPortInfo.
func (c *ClassPortInfo) Decode(b []byte) error {
	if len(b) < ClassPortInfoSize {
		return short("ClassPortInfo", len(b), ClassPortInfoSize)
	}
	c.BaseVersion, c.ClassVersion = b[0], b[1]
	c.CapabilityMask = be.Uint16(b[2:])
	w := be.Uint32(b[4:])
	c.CapabilityMask2, c.RespTimeValue = w>>5, uint8(w&0x1F)
	copy(c.RedirectGID[:], b[8:24])
	w = be.Uint32(b[24:])
	c.RedirectTC, c.RedirectSL, c.RedirectFL = uint8(w>>24), uint8(w>>20)&0xF, w&0xFFFFF
	c.RedirectLID = be.Uint16(b[28:])
	c.RedirectPKey = be.Uint16(b[30:])
	c.RedirectQP = be.Uint32(b[32:]) & 0xFFFFFF
	c.RedirectQKey = be.Uint32(b[36:])
	copy(c.TrapGID[:], b[40:56])
	w = be.Uint32(b[56:])
	c.TrapTC, c.TrapSL, c.TrapFL = uint8(w>>24), uint8(w>>20)&0xF, w&0xFFFFF
	c.TrapLID = be.Uint16(b[60:])
	c.TrapPKey = be.Uint16(b[62:])
	w = be.Uint32(b[64:])
	c.TrapHL, c.TrapQP = uint8(w>>24), w&0xFFFFFF
	c.TrapQKey = be.Uint32(b[68:])
	return nil
}

// Encode writes the ClassPortInfo.
func (c *ClassPortInfo) Encode(b []byte) error {
	if len(b) < ClassPortInfoSize {
		return short("ClassPortInfo buffer", len(b), ClassPortInfoSize)
	}
	b[0], b[1] = c.BaseVersion, c.ClassVersion
	be.PutUint16(b[2:], c.CapabilityMask)
	be.PutUint32(b[4:], c.CapabilityMask2<<5|uint32(c.RespTimeValue&0x1F))
	copy(b[8:24], c.RedirectGID[:])
	be.PutUint32(b[24:], uint32(c.RedirectTC)<<24|uint32(c.RedirectSL&0xF)<<20|c.RedirectFL&0xFFFFF)
	be.PutUint16(b[28:], c.RedirectLID)
	be.PutUint16(b[30:], c.RedirectPKey)
	be.PutUint32(b[32:], c.RedirectQP&0xFFFFFF)
	be.PutUint32(b[36:], c.RedirectQKey)
	copy(b[40:56], c.TrapGID[:])
	be.PutUint32(b[56:], uint32(c.TrapTC)<<24|uint32(c.TrapSL&0xF)<<20|c.TrapFL&0xFFFFF)
	be.PutUint16(b[60:], c.TrapLID)
	be.PutUint16(b[62:], c.TrapPKey)
	be.PutUint32(b[64:], uint32(c.TrapHL)<<24|c.TrapQP&0xFFFFFF)
	be.PutUint32(b[68:], c.TrapQKey)
	return nil
}

// PortCountersSize is the number of bytes PortCounters uses.
const PortCountersSize = 44

// PortCounters (PerfMgt 0x0012).
type PortCounters struct {
	PortSelect                   uint8
	CounterSelect                uint16
	SymbolErrorCounter           uint16
	LinkErrorRecoveryCounter     uint8
	LinkDownedCounter            uint8
	PortRcvErrors                uint16
	PortRcvRemotePhysicalErrors  uint16
	PortRcvSwitchRelayErrors     uint16
	PortXmitDiscards             uint16
	PortXmitConstraintErrors     uint8
	PortRcvConstraintErrors      uint8
	CounterSelect2               uint8
	LocalLinkIntegrityErrors     uint8 // 4 bits
	ExcessiveBufferOverrunErrors uint8 // 4 bits
	QP1Dropped                   uint16
	VL15Dropped                  uint16
	PortXmitData                 uint32
	PortRcvData                  uint32
	PortXmitPkts                 uint32
	PortRcvPkts                  uint32
	PortXmitWait                 uint32
}

var portCountersReserved = func() (m [PortCountersSize]byte) {
	m[0] = 0xFF
	return
}()

// Decode reads a PortCounters.
func (p *PortCounters) Decode(b []byte) error {
	if len(b) < PortCountersSize {
		return short("PortCounters", len(b), PortCountersSize)
	}
	p.PortSelect = b[1]
	p.CounterSelect = be.Uint16(b[2:])
	p.SymbolErrorCounter = be.Uint16(b[4:])
	p.LinkErrorRecoveryCounter, p.LinkDownedCounter = b[6], b[7]
	p.PortRcvErrors = be.Uint16(b[8:])
	p.PortRcvRemotePhysicalErrors = be.Uint16(b[10:])
	p.PortRcvSwitchRelayErrors = be.Uint16(b[12:])
	p.PortXmitDiscards = be.Uint16(b[14:])
	p.PortXmitConstraintErrors, p.PortRcvConstraintErrors = b[16], b[17]
	p.CounterSelect2 = b[18]
	p.LocalLinkIntegrityErrors, p.ExcessiveBufferOverrunErrors = b[19]>>4, b[19]&0xF
	p.QP1Dropped = be.Uint16(b[20:])
	p.VL15Dropped = be.Uint16(b[22:])
	p.PortXmitData = be.Uint32(b[24:])
	p.PortRcvData = be.Uint32(b[28:])
	p.PortXmitPkts = be.Uint32(b[32:])
	p.PortRcvPkts = be.Uint32(b[36:])
	p.PortXmitWait = be.Uint32(b[40:])
	return nil
}

// Encode writes the PortCounters.
func (p *PortCounters) Encode(b []byte) error {
	if len(b) < PortCountersSize {
		return short("PortCounters buffer", len(b), PortCountersSize)
	}
	b[0], b[1] = 0, p.PortSelect
	be.PutUint16(b[2:], p.CounterSelect)
	be.PutUint16(b[4:], p.SymbolErrorCounter)
	b[6], b[7] = p.LinkErrorRecoveryCounter, p.LinkDownedCounter
	be.PutUint16(b[8:], p.PortRcvErrors)
	be.PutUint16(b[10:], p.PortRcvRemotePhysicalErrors)
	be.PutUint16(b[12:], p.PortRcvSwitchRelayErrors)
	be.PutUint16(b[14:], p.PortXmitDiscards)
	b[16], b[17] = p.PortXmitConstraintErrors, p.PortRcvConstraintErrors
	b[18] = p.CounterSelect2
	b[19] = p.LocalLinkIntegrityErrors<<4 | p.ExcessiveBufferOverrunErrors&0xF
	be.PutUint16(b[20:], p.QP1Dropped)
	be.PutUint16(b[22:], p.VL15Dropped)
	be.PutUint32(b[24:], p.PortXmitData)
	be.PutUint32(b[28:], p.PortRcvData)
	be.PutUint32(b[32:], p.PortXmitPkts)
	be.PutUint32(b[36:], p.PortRcvPkts)
	be.PutUint32(b[40:], p.PortXmitWait)
	return nil
}

// PortCountersExtendedSize is the size of PortCountersExtended.
const PortCountersExtendedSize = 72

// PortCountersExtended (PerfMgt 0x001D).
type PortCountersExtended struct {
	PortSelect            uint8
	CounterSelect         uint16
	PortXmitData          uint64
	PortRcvData           uint64
	PortXmitPkts          uint64
	PortRcvPkts           uint64
	PortUnicastXmitPkts   uint64
	PortUnicastRcvPkts    uint64
	PortMulticastXmitPkts uint64
	PortMulticastRcvPkts  uint64
}

var portCountersExtReserved = func() (m [PortCountersExtendedSize]byte) {
	m[0], m[4], m[5], m[6], m[7] = 0xFF, 0xFF, 0xFF, 0xFF, 0xFF
	return
}()

// Decode reads a PortCountersExtended.
func (p *PortCountersExtended) Decode(b []byte) error {
	if len(b) < PortCountersExtendedSize {
		return short("PortCountersExtended", len(b), PortCountersExtendedSize)
	}
	p.PortSelect = b[1]
	p.CounterSelect = be.Uint16(b[2:])
	p.PortXmitData = be.Uint64(b[8:])
	p.PortRcvData = be.Uint64(b[16:])
	p.PortXmitPkts = be.Uint64(b[24:])
	p.PortRcvPkts = be.Uint64(b[32:])
	p.PortUnicastXmitPkts = be.Uint64(b[40:])
	p.PortUnicastRcvPkts = be.Uint64(b[48:])
	p.PortMulticastXmitPkts = be.Uint64(b[56:])
	p.PortMulticastRcvPkts = be.Uint64(b[64:])
	return nil
}

// Encode writes the PortCountersExtended.
func (p *PortCountersExtended) Encode(b []byte) error {
	if len(b) < PortCountersExtendedSize {
		return short("PortCountersExtended buffer", len(b), PortCountersExtendedSize)
	}
	b[0], b[1] = 0, p.PortSelect
	be.PutUint16(b[2:], p.CounterSelect)
	be.PutUint32(b[4:], 0)
	be.PutUint64(b[8:], p.PortXmitData)
	be.PutUint64(b[16:], p.PortRcvData)
	be.PutUint64(b[24:], p.PortXmitPkts)
	be.PutUint64(b[32:], p.PortRcvPkts)
	be.PutUint64(b[40:], p.PortUnicastXmitPkts)
	be.PutUint64(b[48:], p.PortUnicastRcvPkts)
	be.PutUint64(b[56:], p.PortMulticastXmitPkts)
	be.PutUint64(b[64:], p.PortMulticastRcvPkts)
	return nil
}

// BKeyInfoSize is the number of bytes BKeyInfo uses.
const BKeyInfoSize = 14

// BKeyInfo (BM 0x0010).
type BKeyInfo struct {
	BKey            uint64
	BKeyProtectBit  bool
	BKeyLeasePeriod uint16 // seconds, 0 = infinite
	BKeyViolations  uint16 // read-only
}

var bkeyInfoReserved = func() (m [BKeyInfoSize]byte) {
	m[8], m[9] = 0x7F, 0xFF
	return
}()

// Decode reads a BKeyInfo.
func (k *BKeyInfo) Decode(b []byte) error {
	if len(b) < BKeyInfoSize {
		return short("BKeyInfo", len(b), BKeyInfoSize)
	}
	k.BKey = be.Uint64(b[0:])
	k.BKeyProtectBit = b[8]&0x80 != 0
	k.BKeyLeasePeriod = be.Uint16(b[10:])
	k.BKeyViolations = be.Uint16(b[12:])
	return nil
}

// Encode writes the BKeyInfo.
func (k *BKeyInfo) Encode(b []byte) error {
	if len(b) < BKeyInfoSize {
		return short("BKeyInfo buffer", len(b), BKeyInfoSize)
	}
	be.PutUint64(b[0:], k.BKey)
	b[8], b[9] = bit(k.BKeyProtectBit, 0x80), 0
	be.PutUint16(b[10:], k.BKeyLeasePeriod)
	be.PutUint16(b[12:], k.BKeyViolations)
	return nil
}

// GRHSize is the size of the global route header.
const GRHSize = 40

// GRH is the 40-byte global route header of a received MAD.
type GRH struct {
	IPVer      uint8 // 4 bits, 6
	TClass     uint8
	FlowLabel  uint32 // 20 bits
	PayLen     uint16
	NextHeader uint8 // 0x1B for IBA transport
	HopLimit   uint8
	SGID       [16]byte
	DGID       [16]byte
}

// Reply is the GRH of the response to a packet with GRH g, as a Linux
// agent addresses it (ib_init_ah_attr_from_wc): the GIDs swapped, the
// traffic class and flow label kept, hop limit 0xFF.
func (g *GRH) Reply() GRH {
	return GRH{IPVer: 6, TClass: g.TClass, FlowLabel: g.FlowLabel, NextHeader: g.NextHeader, HopLimit: 0xFF,
		SGID: g.DGID, DGID: g.SGID}
}

// Decode reads a GRH. IPVer must be 6.
func (g *GRH) Decode(b []byte) error {
	if len(b) < GRHSize {
		return short("GRH", len(b), GRHSize)
	}
	w := be.Uint32(b[0:])
	if v := uint8(w >> 28); v != 6 {
		return fmt.Errorf("mad: GRH: IPVer %d, want 6: %w", v, ErrInvalid)
	}
	g.IPVer, g.TClass, g.FlowLabel = uint8(w>>28), uint8(w>>20), w&0xFFFFF
	g.PayLen = be.Uint16(b[4:])
	g.NextHeader, g.HopLimit = b[6], b[7]
	copy(g.SGID[:], b[8:24])
	copy(g.DGID[:], b[24:40])
	return nil
}

// Encode writes the GRH.
func (g *GRH) Encode(b []byte) error {
	if len(b) < GRHSize {
		return short("GRH buffer", len(b), GRHSize)
	}
	be.PutUint32(b[0:], uint32(g.IPVer&0xF)<<28|uint32(g.TClass)<<20|g.FlowLabel&0xFFFFF)
	be.PutUint16(b[4:], g.PayLen)
	b[6], b[7] = g.NextHeader, g.HopLimit
	copy(b[8:24], g.SGID[:])
	copy(b[24:40], g.DGID[:])
	return nil
}
