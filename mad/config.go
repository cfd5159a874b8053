package mad

import (
	"fmt"
	"unicode/utf8"
)

// Limits of the model. They bound every table the engine keeps.
const (
	MaxPorts        = 8
	MaxPartitionCap = 256 // P_Keys per port (8 blocks)
	MaxGUIDCap      = 64  // GUIDInfo entries per port (8 blocks)
	MaxVLArbEntries = 64  // per priority (2 blocks)
)

// PortInfo's link width and speed encodings (IBA 14.2.5.6, PortInfo
// LinkWidth*, LinkSpeed*, LinkSpeedExt*): masks in *Supported and
// *Enabled, one bit in *Active.
const (
	LinkWidth1X  = 0x01
	LinkWidth4X  = 0x02
	LinkWidth8X  = 0x04
	LinkWidth12X = 0x08
	LinkWidth2X  = 0x10

	LinkSpeedSDR = 0x1 // 2.5 Gb/s
	LinkSpeedDDR = 0x2 // 5.0 Gb/s
	LinkSpeedQDR = 0x4 // 10.0 Gb/s

	LinkSpeedExtFDR = 0x1 // 14.0625 Gb/s
	LinkSpeedExtEDR = 0x2 // 25.78125 Gb/s
	// LinkSpeedExtEnabled's two special values.
	LinkSpeedExtDisabled     = 0x1e
	LinkSpeedExtAllSupported = 0x1f
)

// Defaults used where a config field is zero.
const (
	DefaultPartitionCap    = 64
	DefaultCapabilityMask  = CapIsTrapSupported | CapIsNoticeSupported | 1<<6 | CapIsSystemImageGUID | CapIsCMSupported | CapIsClientReregSupport
	DefaultGIDPrefix       = 0xFE80000000000000
	DefaultMaxTrapRepeats  = 4
	defaultVLArbCap        = 8
	defaultLinkWidthSupp   = LinkWidth1X | LinkWidth4X
	defaultLinkWidthActive = LinkWidth4X
	defaultLinkSpeedSupp   = LinkSpeedSDR | LinkSpeedDDR | LinkSpeedQDR
	defaultLinkSpeedActive = LinkSpeedQDR
	defaultMTU             = 5 // 4096
	defaultVLCap           = 4 // VL0-7
	defaultRespTime        = 18
)

// NodeConfig describes the modelled channel adapter: what NodeInfo and
// NodeDescription report, and its ports. Zero-valued optional fields take the
// defaults documented on each field.
type NodeConfig struct {
	// NodeGUID is NodeInfo.NodeGUID; required (non-zero).
	NodeGUID uint64
	// SystemImageGUID is NodeInfo.SystemImageGUID; 0 means NodeGUID.
	SystemImageGUID uint64
	// Description is the NodeDescription text: UTF-8, at most 64 bytes, no NUL.
	Description string
	// DeviceID, Revision and VendorID (24 bits) are reported in NodeInfo.
	DeviceID uint16
	Revision uint32
	VendorID uint32
	// PartitionCap is the number of P_Key table entries of every port
	// (NodeInfo.PartitionCap); 0 means DefaultPartitionCap, at most
	// MaxPartitionCap.
	PartitionCap uint16
	// Ports are ports 1..len(Ports); between 1 and MaxPorts.
	Ports []PortConfig
}

// PortConfig describes one port: what PortInfo, GUIDInfo, P_KeyTable and the
// SLtoVL and VLArbitration tables report, and the port's keys.
type PortConfig struct {
	// LID is the base LID (unicast: 0 = not assigned yet, below 0xC000).
	LID uint16
	// LMC is the LID mask control, 0..7.
	LMC uint8
	// GIDPrefix is the subnet prefix; 0 means DefaultGIDPrefix (fe80::).
	GIDPrefix uint64
	// PortGUID is GUIDInfo entry 0 and NodeInfo.PortGUID; required.
	PortGUID uint64
	// GUIDs are further GUIDInfo entries (index 1...). GUIDCap is
	// 1+len(GUIDs), at most MaxGUIDCap.
	GUIDs []uint64
	// State is the logical port state: Down, Init, Armed or Active.
	State PortState
	// PhysState is the physical state; 0 means LinkUp (Polling if State is Down).
	PhysState PhysState
	// CapabilityMask is PortInfo.CapabilityMask; 0 means DefaultCapabilityMask.
	CapabilityMask uint32
	// CapabilityMask2 is PortInfo.CapabilityMask2.
	CapabilityMask2 uint16
	// MKey, MKeyProtect (0..3) and MKeyLeasePeriod (seconds, 0 = never
	// expires) configure M_Key protection.
	MKey            uint64
	MKeyProtect     uint8
	MKeyLeasePeriod uint16
	// PKeys is the P_Key table from index 0; missing entries are 0 (invalid).
	// Empty means a table holding only the default P_Key 0xFFFF. At most
	// NodeConfig.PartitionCap entries.
	PKeys []uint16
	// MasterSMLID and MasterSMSL address SM traps (QP0).
	MasterSMLID uint16
	MasterSMSL  uint8
	// SubnetTimeOut (0..31): traps are spaced at least 4.096 µs × 2^n.
	SubnetTimeOut uint8
	// BKey, BKeyProtect and BKeyLeasePeriod configure the BMA's BKeyInfo.
	BKey            uint64
	BKeyProtect     bool
	BKeyLeasePeriod uint16
	// QKey is the GSI (QP1) Q_Key; 0 means QP1QKey (0x80010000).
	QKey uint32
	// PMATrap and BMTrap are the ClassPortInfo trap addresses of the PMA
	// and the BMA. A zero LID disables that class's traps.
	PMATrap TrapAddress
	BMTrap  TrapAddress
	// Link holds the link attributes of PortInfo.
	Link LinkConfig
	// SL2VL is the SLtoVLMappingTable (VL of each SL).
	SL2VL [16]uint8
}

// TrapAddress is the Trap* part of a ClassPortInfo.
type TrapAddress struct {
	LID  uint16
	QP   uint32 // 24 bits; required when LID is set
	QKey uint32 // 0 means QP1QKey
	SL   uint8  // 4 bits
	PKey uint16 // 0 means 0xFFFF
	GID  [16]byte
	TC   uint8
	FL   uint32 // 20 bits
	HL   uint8
}

// LinkConfig holds PortInfo's link fields. Zero fields take defaults: 4X
// QDR, MTU 4096, VL0-7, eight VLArbitration entries per priority.
type LinkConfig struct {
	WidthSupported, WidthEnabled, WidthActive uint8
	SpeedSupported, SpeedEnabled, SpeedActive uint8 // 4 bits each
	SpeedExtSupported, SpeedExtEnabled        uint8
	SpeedExtActive                            uint8
	MTUCap, NeighborMTU                       uint8 // 1=256 .. 5=4096
	VLCap, OperationalVLs                     uint8 // 1=VL0 .. 5=VL0-14
	VLHighLimit                               uint8
	VLArbHighCap, VLArbLowCap                 uint8 // at most MaxVLArbEntries
	InitType                                  uint8
	LinkDownDefaultState                      uint8
	HOQLife, VLStallCount                     uint8
	RespTimeValue                             uint8
	LocalPhyErrors, OverrunErrors             uint8
	MaxCreditHint                             uint16
	LinkRoundTripLatency                      uint32
}

func cfgErr(field, format string, args ...any) error {
	return fmt.Errorf("mad: config: %s: %s: %w", field, fmt.Sprintf(format, args...), ErrConfig)
}

// Validate checks the node and every port; the error names the bad field.
func (n *NodeConfig) Validate() error {
	if n.NodeGUID == 0 {
		return cfgErr("NodeGUID", "must be non-zero")
	}
	if len(n.Description) > NodeDescriptionSize || !utf8.ValidString(n.Description) {
		return cfgErr("Description", "must be UTF-8 of at most 64 bytes")
	}
	for i := 0; i < len(n.Description); i++ {
		if n.Description[i] == 0 {
			return cfgErr("Description", "contains NUL")
		}
	}
	if n.VendorID > 0xFFFFFF {
		return cfgErr("VendorID", "0x%x exceeds 24 bits", n.VendorID)
	}
	if n.PartitionCap > MaxPartitionCap {
		return cfgErr("PartitionCap", "%d > %d", n.PartitionCap, MaxPartitionCap)
	}
	if len(n.Ports) < 1 || len(n.Ports) > MaxPorts {
		return cfgErr("Ports", "%d ports, want 1..%d", len(n.Ports), MaxPorts)
	}
	pcap := n.partitionCap()
	for i := range n.Ports {
		if err := n.Ports[i].validate(pcap); err != nil {
			return fmt.Errorf("mad: config: Ports[%d] (port %d): %w", i, i+1, err)
		}
	}
	return nil
}

func (n *NodeConfig) partitionCap() int {
	if n.PartitionCap == 0 {
		return DefaultPartitionCap
	}
	return int(n.PartitionCap)
}

// Validate checks the port alone, with the default partition capacity.
func (p *PortConfig) Validate() error { return p.validate(MaxPartitionCap) }

func (p *PortConfig) validate(pcap int) error {
	switch {
	case p.LID >= LIDMulticastBase:
		return cfgErr("LID", "0x%04x is not a unicast LID", p.LID)
	case p.LMC > 7:
		return cfgErr("LMC", "%d > 7", p.LMC)
	case p.PortGUID == 0:
		return cfgErr("PortGUID", "must be non-zero")
	case 1+len(p.GUIDs) > MaxGUIDCap:
		return cfgErr("GUIDs", "%d entries, at most %d", len(p.GUIDs), MaxGUIDCap-1)
	case p.State < PortDown || p.State > PortActive:
		return cfgErr("State", "%d, want Down(1), Init(2), Armed(3) or Active(4)", p.State)
	case p.PhysState > PhysPhyTest:
		return cfgErr("PhysState", "%d > 7", p.PhysState)
	case p.MKeyProtect > 3:
		return cfgErr("MKeyProtect", "%d > 3", p.MKeyProtect)
	case len(p.PKeys) > pcap:
		return cfgErr("PKeys", "%d entries, partition capacity %d", len(p.PKeys), pcap)
	case p.MasterSMLID >= LIDMulticastBase:
		return cfgErr("MasterSMLID", "0x%04x is not a unicast LID", p.MasterSMLID)
	case p.MasterSMSL > 15:
		return cfgErr("MasterSMSL", "%d > 15", p.MasterSMSL)
	case p.SubnetTimeOut > 31:
		return cfgErr("SubnetTimeOut", "%d > 31", p.SubnetTimeOut)
	case p.Link.VLArbHighCap > MaxVLArbEntries:
		return cfgErr("Link.VLArbHighCap", "%d > %d", p.Link.VLArbHighCap, MaxVLArbEntries)
	case p.Link.VLArbLowCap > MaxVLArbEntries:
		return cfgErr("Link.VLArbLowCap", "%d > %d", p.Link.VLArbLowCap, MaxVLArbEntries)
	case p.Link.MTUCap > 5 || p.Link.NeighborMTU > 5:
		return cfgErr("Link.MTUCap", "MTU codes run 1..5")
	case p.Link.VLCap > 5 || p.Link.OperationalVLs > 5:
		return cfgErr("Link.VLCap", "VL codes run 1..5")
	}
	for i, vl := range p.SL2VL {
		if vl > 15 {
			return cfgErr(fmt.Sprintf("SL2VL[%d]", i), "%d > 15", vl)
		}
	}
	if err := p.PMATrap.validate("PMATrap"); err != nil {
		return err
	}
	return p.BMTrap.validate("BMTrap")
}

func (t *TrapAddress) validate(name string) error {
	switch {
	case t.LID >= LIDMulticastBase:
		return cfgErr(name+".LID", "0x%04x is not a unicast LID", t.LID)
	case t.LID != 0 && t.QP == 0:
		return cfgErr(name+".QP", "required when LID is set")
	case t.QP > 0xFFFFFF:
		return cfgErr(name+".QP", "0x%x exceeds 24 bits", t.QP)
	case t.SL > 15:
		return cfgErr(name+".SL", "%d > 15", t.SL)
	case t.FL > 0xFFFFF:
		return cfgErr(name+".FL", "0x%x exceeds 20 bits", t.FL)
	}
	return nil
}

func orDefault[T comparable](v, d T) T {
	var zero T
	if v == zero {
		return d
	}
	return v
}
