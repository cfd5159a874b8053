package mad

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Switch limits of the model.
const (
	MaxSwitchPorts = 36     // external ports 1..36, as a 36-port QDR/FDR switch
	switchLFTCap   = 0xC000 // LinearFDBCap: every unicast LID
	switchMFTCap   = 1024   // MulticastFDBCap: MLIDs 0xC000..0xC3FF
	lftBlock       = 64     // LFT entries per block
	mftBlock       = 32     // MFT entries per block
	switchPKeyCap  = 32     // port 0's P_Key table: one block
)

// SwitchConfig describes a simulated switch: the link partner of the HCA's
// ports. Its SMA is a base switch port 0 (no enhanced port 0, no GSI).
type SwitchConfig struct {
	NodeGUID    uint64 // required; port 0's GUID is the node GUID
	Description string // NodeDescription, UTF-8, at most 64 bytes
	// NumPorts is the number of external ports, 1..MaxSwitchPorts.
	NumPorts int
	// VendorID (24 bits) and DeviceID; NodeInfo reports them. A non-Mellanox
	// vendor keeps OpenSM from asking the switch for vendor attributes.
	VendorID uint32
	DeviceID uint16
	// Now is the clock of the M_Key lease; nil means time.Now.
	Now func() time.Time
}

// Validate checks the switch description.
func (c *SwitchConfig) Validate() error {
	switch {
	case c.NodeGUID == 0:
		return cfgErr("Switch.NodeGUID", "must be non-zero")
	case c.NumPorts < 1 || c.NumPorts > MaxSwitchPorts:
		return cfgErr("Switch.NumPorts", "%d, want 1..%d", c.NumPorts, MaxSwitchPorts)
	case c.VendorID > 0xFFFFFF:
		return cfgErr("Switch.VendorID", "0x%x exceeds 24 bits", c.VendorID)
	}
	var d NodeDescription
	if len(c.Description) > NodeDescriptionSize {
		return cfgErr("Switch.Description", "more than %d bytes", NodeDescriptionSize)
	}
	copy(d[:], c.Description)
	return nil
}

// SwitchInfoSize is the size of SwitchInfo as encoded.
const SwitchInfoSize = 19

// SwitchInfo (0x0012), IBA 14.2.5.4.
type SwitchInfo struct {
	LinearFDBCap, RandomFDBCap, MulticastFDBCap, LinearFDBTop  uint16
	DefaultPort, DefaultMCPrimaryPort, DefaultMCNotPrimaryPort uint8
	LifeTimeValue                                              uint8 // 5 bits
	PortStateChange                                            bool
	OptimizedSLtoVL                                            uint8 // 2 bits
	LIDsPerPort, PartitionEnforcementCap                       uint16
	EnforcementCaps                                            uint8 // in, out, raw in, raw out
	EnhancedPort0                                              bool
	MulticastFDBTop                                            uint16
}

// Decode reads a SwitchInfo.
func (s *SwitchInfo) Decode(b []byte) error {
	if len(b) < SwitchInfoSize {
		return short("SwitchInfo", len(b), SwitchInfoSize)
	}
	s.LinearFDBCap, s.RandomFDBCap = be.Uint16(b[0:]), be.Uint16(b[2:])
	s.MulticastFDBCap, s.LinearFDBTop = be.Uint16(b[4:]), be.Uint16(b[6:])
	s.DefaultPort, s.DefaultMCPrimaryPort, s.DefaultMCNotPrimaryPort = b[8], b[9], b[10]
	s.LifeTimeValue, s.PortStateChange, s.OptimizedSLtoVL = b[11]>>3, b[11]&0x04 != 0, b[11]&0x3
	s.LIDsPerPort, s.PartitionEnforcementCap = be.Uint16(b[12:]), be.Uint16(b[14:])
	s.EnforcementCaps, s.EnhancedPort0 = b[16]>>4, b[16]&0x08 != 0
	s.MulticastFDBTop = be.Uint16(b[17:])
	return nil
}

// Encode writes a SwitchInfo.
func (s *SwitchInfo) Encode(b []byte) error {
	if len(b) < SwitchInfoSize {
		return short("SwitchInfo", len(b), SwitchInfoSize)
	}
	be.PutUint16(b[0:], s.LinearFDBCap)
	be.PutUint16(b[2:], s.RandomFDBCap)
	be.PutUint16(b[4:], s.MulticastFDBCap)
	be.PutUint16(b[6:], s.LinearFDBTop)
	b[8], b[9], b[10] = s.DefaultPort, s.DefaultMCPrimaryPort, s.DefaultMCNotPrimaryPort
	b[11] = s.LifeTimeValue<<3 | bit(s.PortStateChange, 0x04) | s.OptimizedSLtoVL&0x3
	be.PutUint16(b[12:], s.LIDsPerPort)
	be.PutUint16(b[14:], s.PartitionEnforcementCap)
	b[16] = s.EnforcementCaps<<4 | bit(s.EnhancedPort0, 0x08)
	be.PutUint16(b[17:], s.MulticastFDBTop)
	return nil
}

type swPort struct {
	pi     PortInfo
	sl2vl  [MaxSwitchPorts + 1]SLtoVL // by input port
	vlLow  [MaxVLArbEntries]VLArbEntry
	vlHigh [MaxVLArbEntries]VLArbEntry
}

// Switch is a simulated switch's SMA: NodeInfo (type 2), NodeDescription,
// SwitchInfo, PortInfo of port 0 and of every external port, the
// SLtoVL and VLArbitration tables, and the linear and multicast forwarding
// tables. Port 0 holds the switch's LID and M_Key: a Set with the wrong key,
// or a Get at protection 2 or 3, is dropped and counted in
// PortInfo.M_KeyViolations, and starts the M_Key lease (if it is not
// running) after which protection drops to 0; the right key stops it. The
// model sends no traps from the switch. Port 0's GSI has a Performance
// Management agent whose port counters count what crosses each external
// port (switch_pma.go). Safe for concurrent use.
type Switch struct {
	mu       sync.Mutex
	node     NodeInfo
	nodeDesc NodeDescription
	si       SwitchInfo
	ports    []swPort                    // 0..NumPorts
	fwd      swFwd                       // the LFT, LinearFDBTop and Active ports, lock-free (switch_fwd.go)
	mft      [switchMFTCap]atomic.Uint64 // port masks, bit p for port p; written under mu, read lock-free (MulticastPorts)
	pkeys    [switchPKeyCap]uint16
	now      func() time.Time
	lease    lease // port 0's M_Key lease
	mkeyViol uint16
	smp      swReq          // the SMP an attribute handler works on
	pmaCPI   ClassPortInfo  // the PMA's (switch_pma.go), under mu
	pc       []linkCounters // by port, 1..NumPorts: atomics (switch_pma.go)
}

// NewSwitch builds a switch with every external port Down (Polling) until
// Connect cables it.
func NewSwitch(c SwitchConfig) (*Switch, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	s := &Switch{now: c.Now}
	if s.now == nil {
		s.now = time.Now
	}
	s.node = NodeInfo{BaseVersion: 1, ClassVersion: 1, NodeType: NodeTypeSwitch, NumPorts: uint8(c.NumPorts),
		SystemImageGUID: c.NodeGUID, NodeGUID: c.NodeGUID, PortGUID: c.NodeGUID, PartitionCap: switchPKeyCap,
		DeviceID: c.DeviceID, VendorID: c.VendorID}
	copy(s.nodeDesc[:], c.Description)
	s.si = SwitchInfo{LinearFDBCap: switchLFTCap, MulticastFDBCap: switchMFTCap, LinearFDBTop: 0,
		DefaultPort: 0, DefaultMCPrimaryPort: 0xFF, DefaultMCNotPrimaryPort: 0xFF, LifeTimeValue: 18,
		LIDsPerPort: 0, MulticastFDBTop: LIDMulticastBase - 1}
	for i := range s.fwd.lft {
		s.fwd.lft[i].Store(0xFFFFFFFF) // unassigned: drop
	}
	s.pkeys[0] = DefaultPKey
	s.pmaCPI = classPortInfo(swCPICaps, defaultRespTime, &TrapAddress{})
	s.pc = make([]linkCounters, c.NumPorts+1)
	s.ports = make([]swPort, c.NumPorts+1)
	for i := range s.ports {
		p := &s.ports[i]
		p.pi = PortInfo{
			GIDPrefix: DefaultGIDPrefix, LocalPortNum: uint8(i),
			LinkWidthSupported: defaultLinkWidthSupp, LinkWidthEnabled: defaultLinkWidthSupp, LinkWidthActive: defaultLinkWidthActive,
			LinkSpeedSupported: defaultLinkSpeedSupp, LinkSpeedEnabled: defaultLinkSpeedSupp, LinkSpeedActive: defaultLinkSpeedActive,
			PortState: PortDown, PortPhysicalState: PhysPolling, LinkDownDefaultState: 2,
			NeighborMTU: defaultMTU, MTUCap: defaultMTU, VLCap: defaultVLCap, OperationalVLs: defaultVLCap,
			VLArbitrationHighCap: defaultVLArbCap, VLArbitrationLowCap: defaultVLArbCap,
			HOQLife: 16, VLStallCount: 7, RespTimeValue: defaultRespTime, SubnetTimeOut: 18,
		}
		if i == 0 {
			// Base switch port 0: no physical link; reported LinkUp and
			// Init until the SM makes the switch Active.
			p.pi.PortState, p.pi.PortPhysicalState = PortInit, PhysLinkUp
			p.pi.CapabilityMask = CapIsTrapSupported
			p.pi.GUIDCap = 1
		}
	}
	return s, nil
}

// NumPorts returns the number of external ports.
func (s *Switch) NumPorts() int { return len(s.ports) - 1 }

// NodeGUID returns the switch's node GUID.
func (s *Switch) NodeGUID() uint64 { return s.node.NodeGUID }

// LID returns port 0's LID, the switch's (0 until the SM assigns one).
func (s *Switch) LID() uint16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ports[0].pi.LID
}

// SetLink brings an external port's physical link up (the port trains to
// Init, IBA 7.2) or takes it down (Down, Polling).
func (s *Switch) SetLink(port int, up bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if port < 1 || port >= len(s.ports) {
		return fmt.Errorf("mad: switch port %d of %d: %w", port, len(s.ports)-1, ErrInvalid)
	}
	pi := &s.ports[port].pi
	if up {
		pi.PortState, pi.PortPhysicalState = PortInit, PhysLinkUp
	} else {
		pi.PortState, pi.PortPhysicalState = PortDown, PhysPolling
	}
	s.si.PortStateChange = true
	s.publishPorts()
	return nil
}

// Swept is what an SM's sweep leaves in a switch: port 0's LID and master
// SM LID, the linear forwarding table's routes and the external ports the
// SM made Active.
type Swept struct {
	LID    uint16           // port 0's LID, unicast
	SMLID  uint16           // port 0's MasterSMLID
	Routes map[uint16]uint8 // unicast LID → output port (0: the switch)
	Active []int            // external ports whose links are up
}

// Configure puts the switch in the state a sweep leaves it (a subnet
// already swept when the model starts): port 0 and the listed ports
// Active, the routes in the linear forwarding table (LinearFDBTop the
// highest routed LID). A listed port must have its link up (SetLink).
func (s *Switch) Configure(w Swept) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.LID == 0 || w.LID >= LIDMulticastBase {
		return fmt.Errorf("mad: switch LID %d: %w", w.LID, ErrInvalid)
	}
	for _, pn := range w.Active {
		if pn < 1 || pn >= len(s.ports) || s.ports[pn].pi.PortPhysicalState != PhysLinkUp {
			return fmt.Errorf("mad: switch port %d: not an external port with its link up: %w", pn, ErrInvalid)
		}
	}
	top := uint16(0)
	for lid, out := range w.Routes {
		if lid == 0 || lid >= switchLFTCap || int(out) >= len(s.ports) {
			return fmt.Errorf("mad: switch route LID %d → port %d: %w", lid, out, ErrInvalid)
		}
		top = max(top, lid)
	}
	for lid, out := range w.Routes {
		s.fwd.setEntry(lid, out)
	}
	s.si.LinearFDBTop = top
	s.fwd.top.Store(uint32(top))
	s.si.PortStateChange = false // the SM has seen the links
	p0 := &s.ports[0].pi
	p0.LID, p0.MasterSMLID, p0.PortState = w.LID, w.SMLID, PortActive
	for _, pn := range w.Active {
		s.ports[pn].pi.PortState = PortActive
	}
	s.publishPorts()
	return nil
}

// PortInfo returns a copy of a port's PortInfo (0..NumPorts).
func (s *Switch) PortInfo(port int) (PortInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if port < 0 || port >= len(s.ports) {
		return PortInfo{}, false
	}
	return s.ports[port].pi, true
}

// ProcessSMP answers an SMP that reached the switch's SMA through external
// port arrival (0 for an SMP generated at port 0). A directed-route SMP
// must have been through the SMI steps already (hop pointer HopCount+1).
// It returns the response and Success|Reply, Success|Consumed (a key
// violation or TrapRepress: nothing is sent) or Failure (dropped).
func (s *Switch) ProcessSMP(arrival uint8, in *MAD) (out MAD, res Result) {
	if in.BaseVersion() != 1 || int(arrival) >= len(s.ports) {
		return out, Failure
	}
	switch in.MgmtClass() {
	case ClassSubnLID, ClassSubnDirected:
	default:
		return out, Failure // GMPs: ProcessGMP
	}
	method := in.Method()
	switch method {
	case MethodGet, MethodSet:
	case MethodTrapRepress:
		return out, Success | Consumed
	default:
		if method&MethodResp != 0 {
			return out, Failure
		}
		respond(in, &out)
		return out, s.reply(in, &out, StatusUnsupportedMethod)
	}
	if in.AttrID() == AttrSMInfo {
		return out, Failure // no SM on the switch
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p0 := &s.ports[0].pi
	if s.lease.expired(s.now()) {
		p0.MKeyProtectBits = 0
	}
	if p0.MKey != 0 && in.MKey() == p0.MKey {
		s.lease.running = false // only the right key stops the lease
	}
	if p0.MKey != 0 && in.MKey() != p0.MKey && (method == MethodSet || p0.MKeyProtectBits >= 2) {
		satInc16(&s.mkeyViol)
		satInc16(&p0.MKeyViolations)
		s.lease.start(s.now(), p0.MKeyLeasePeriod)
		return out, Success | Consumed
	}
	hide := p0.MKey != 0 && in.MKey() != p0.MKey && p0.MKeyProtectBits == 1
	respond(in, &out)
	if in.ClassVersion() != 1 {
		return out, s.reply(in, &out, StatusBadVersion)
	}
	return out, s.reply(in, &out, s.attr(arrival, in, &out, hide))
}

func (s *Switch) reply(in, out *MAD, status uint16) Result {
	if in.MgmtClass() == ClassSubnDirected {
		status |= StatusDirection
	}
	out.SetStatus(status)
	return Success | Reply
}

// portMask has the bits of ports 0..n.
func portMask(n uint32) uint64 { return 1<<(n+1) - 1 }

func (s *Switch) encodePI(pn, arrival uint8, data []byte, hide bool) {
	pi := s.ports[pn].pi
	pi.LocalPortNum = arrival
	if pn != 0 {
		// External ports report port 0's keys and LID fields: they have
		// none of their own (IBA 14.2.5.6, "switch port 0 only").
		p0 := &s.ports[0].pi
		pi.MKey, pi.GIDPrefix, pi.LID, pi.MasterSMLID = p0.MKey, p0.GIDPrefix, p0.LID, p0.MasterSMLID
		pi.MKeyProtectBits, pi.MKeyLeasePeriod, pi.LMC, pi.CapabilityMask = p0.MKeyProtectBits, p0.MKeyLeasePeriod, p0.LMC, p0.CapabilityMask
	}
	if hide {
		pi.MKey = 0
	}
	_ = pi.Encode(data)
}

// setSwitchPortInfo applies a SubnSet(PortInfo) to switch port 0 (LID and
// keys) or an external port (link fields and state). An invalid value fails
// the Set with StatusInvalidField and changes nothing.
func setSwitchPortInfo(pi *PortInfo, port0 bool, src []byte) uint16 {
	var np PortInfo
	if np.Decode(src) != nil {
		return StatusInvalidField
	}
	c := *pi
	if port0 {
		if !validUnicast(np.LID) || np.MasterSMLID >= LIDMulticastBase || np.LMC != 0 {
			return StatusInvalidField
		}
		c.MKey, c.GIDPrefix, c.LID, c.MasterSMLID = np.MKey, np.GIDPrefix, np.LID, np.MasterSMLID
		c.MKeyLeasePeriod, c.MKeyProtectBits, c.MasterSMSL = np.MKeyLeasePeriod, np.MKeyProtectBits, np.MasterSMSL
		c.SubnetTimeOut = np.SubnetTimeOut
	}
	if st := portStateSet(&c, np.PortState, np.PortPhysicalState); st != 0 {
		return st
	}
	if !port0 {
		if !enable(&c.LinkWidthEnabled, np.LinkWidthEnabled, c.LinkWidthSupported, 0xFF) ||
			!enable(&c.LinkSpeedEnabled, np.LinkSpeedEnabled, c.LinkSpeedSupported, 0xF) {
			return StatusInvalidField
		}
		if np.NeighborMTU == 0 || np.NeighborMTU > c.MTUCap || np.OperationalVLs > c.VLCap {
			return StatusInvalidField
		}
		c.NeighborMTU = np.NeighborMTU
		if np.OperationalVLs != 0 {
			c.OperationalVLs = np.OperationalVLs
		}
		c.VLHighLimit, c.HOQLife, c.VLStallCount = np.VLHighLimit, np.HOQLife, np.VLStallCount
		c.PartitionEnforcementIn, c.PartitionEnforcementOut = np.PartitionEnforcementIn, np.PartitionEnforcementOut
		c.FilterRawInbound, c.FilterRawOutbound = np.FilterRawInbound, np.FilterRawOutbound
	}
	*pi = c
	return 0
}

// enable applies a Set's LinkWidthEnabled, LinkSpeedEnabled or
// LinkSpeedExtEnabled value v to *field (IBA 14.2.5.6): 0 changes nothing,
// all (every bit of the field) enables every supported value, anything else
// must be a subset of supported. It reports false for a value outside it.
func enable(field *uint8, v, supported, all uint8) bool {
	switch {
	case v == 0:
	case v == all:
		*field = supported
	case v&^supported != 0:
		return false
	default:
		*field = v
	}
	return true
}

// portStateSet applies the PortState and PortPhysicalState of a PortInfo
// Set (IBA 7.2, 14.2.5.6): Armed only from Init or Armed, Active only from
// Armed or Active; Down with the physical link up means the link retrains
// and the port comes back in Init; Polling or Disabled take the link down.
func portStateSet(c *PortInfo, st PortState, phys PhysState) uint16 {
	switch st {
	case PortNoChange:
	case PortDown:
		c.PortState = PortDown
		if c.PortPhysicalState == PhysLinkUp {
			c.PortState = PortInit // link retraining brings it back
		}
	case PortArmed:
		if c.PortState != PortInit && c.PortState != PortArmed {
			return StatusInvalidField
		}
		c.PortState = PortArmed
	case PortActive:
		if c.PortState != PortArmed && c.PortState != PortActive {
			return StatusInvalidField
		}
		c.PortState = PortActive
	default:
		return StatusInvalidField
	}
	switch phys {
	case PhysNoChange:
	case PhysPolling, PhysDisabled:
		c.PortPhysicalState = phys
		c.PortState = PortDown
	default:
		return StatusInvalidField
	}
	return 0
}
