package mad

import (
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Flags are process_mad's flags (enum ib_process_mad_flags).
type Flags uint8

// Flag values.
const (
	IgnoreMKey Flags = 1
	IgnoreBKey Flags = 2
	IgnoreAll  Flags = IgnoreMKey | IgnoreBKey
)

// Result is process_mad's result bit set (enum ib_mad_result).
type Result uint8

// Result values. Failure is the absence of Success ("!SUCCESS is the
// important flag"): the MAD is dropped. Success alone means "not mine": the
// caller hands the MAD to other agents (an SM, the SA). Success|Reply means
// the returned MAD is the response to send; Success|Consumed means the
// engine handled the MAD and nothing is sent (TrapRepress, a key violation).
const (
	Failure  Result = 0
	Success  Result = 1
	Reply    Result = 2
	Consumed Result = 4
)

// WC is the part of the receive work completion of a MAD that process_mad
// uses (struct ib_wc).
type WC struct {
	SLID         uint16 // source LID (LRH)
	SrcQP        uint32 // source QP (DETH), 24 bits
	SL           uint8  // service level
	PKeyIndex    uint16 // index of the packet's P_Key in the port's table
	DLIDPathBits uint8  // low DLID bits under the LMC
	GRHPresent   bool   // the packet carried a GRH
	// QPN is the QP the MAD arrived on: 0 (SMI) or 1 (GSI). SMP classes
	// are accepted only on QP0, GS classes only on QP1.
	QPN uint32
	// QKey is the packet's DETH Q_Key, checked against the GSI Q_Key when
	// QKeyValid (MAD_IFC's extended inbox does not carry it).
	QKey      uint32
	QKeyValid bool
}

// Trap is one trap MAD as it leaves the port, with its addressing.
type Trap struct {
	Port   uint8
	Number uint16 // 256..259
	Class  uint8  // ClassSubnLID or ClassBM
	SLID   uint16 // the port's LID
	DLID   uint16
	SL     uint8
	SrcQP  uint32 // 0 for SM traps, 1 for GS traps
	DestQP uint32
	QKey   uint32
	PKey   uint16
	// Repeat is 0 for the first transmission, n for the n-th resend.
	Repeat int
	MAD    MAD
}

// TrapSink receives every trap the engine sends, first transmissions and
// resends. It is called without engine locks held, from the goroutine that
// called ProcessMAD or PollTraps; it must not keep t's address.
type TrapSink interface {
	SendTrap(t Trap)
}

// Options are the engine's collaborators.
type Options struct {
	// Now is the clock for lease timers and trap pacing; nil means time.Now.
	Now func() time.Time
	// Sink receives traps; nil discards them (they are still counted).
	Sink TrapSink
	// MaxTrapRepeats bounds the resends of an unrepressed trap; 0 means
	// DefaultMaxTrapRepeats, negative means no resends.
	MaxTrapRepeats int
	// Logger, if set, gets an info line per key violation (the sender's
	// LID, QP and GID: what the trap names), at most one a second (the
	// counters count them all).
	Logger *slog.Logger
}

const (
	maxPending = 8 // traps awaiting TrapRepress per port
	outboxSize = MaxPorts*maxPending + 4
)

// MADWords is a MAD's packet from LRH to ICRC (LRH 8, BTH 12, DETH 8, the
// MAD's 256 bytes, ICRC 4: 72), in the 4-byte words PortXmitData and
// PortRcvData count (IBA 16.1.3.5).
const MADWords = (LRHSize + BTHSize + DETHSize + Size + ICRCSize) / 4

// lease is an M_Key or B_Key lease timer.
type lease struct {
	running  bool
	deadline time.Time
}

type pendingTrap struct {
	used  bool
	sends int
	last  time.Time
	t     Trap
}

type pmaCounters struct {
	symbolErr, linkErrRecovery, linkDowned, rcvErr, rcvRemotePhys, rcvSwitchRelay uint64
	xmitDiscards, xmitConstraint, rcvConstraint, localLinkIntegrity, bufOverrun   uint64
	qp1Dropped, vl15Dropped, xmitWait                                             uint64
	xmitData, rcvData, xmitPkts, rcvPkts                                          uint64
	ucXmitPkts, ucRcvPkts, mcXmitPkts, mcRcvPkts                                  uint64
}

type port struct {
	num       uint8
	pi        PortInfo
	pkeys     [MaxPartitionCap]uint16
	guids     [MaxGUIDCap]uint64
	sl2vl     SLtoVL
	vlLow     [MaxVLArbEntries]VLArbEntry
	vlHigh    [MaxVLArbEntries]VLArbEntry
	mkeyLease lease
	bkey      BKeyInfo
	bkeyLease lease
	qkey      uint32
	pmaCPI    ClassPortInfo
	bmCPI     ClassPortInfo
	pc        pmaCounters
	data      linkCounters // the data path's packets (CountData), lock-free

	// MLNXExtendedPortInfo (0xFF90).
	mlnxStateChangeEnable, mlnxSpeedSupported, mlnxSpeedEnabled uint8

	pending     [maxPending]pendingTrap
	lastNew     time.Time
	haveLastNew bool
}

// Engine is a model channel adapter's MAD processing: SMA, PMA and BMA.
// It is safe for concurrent use; calls are serialised by a mutex.
type Engine struct {
	mu        sync.Mutex
	node      NodeInfo
	nodeDesc  NodeDescription
	pcap      int
	ports     []port
	now       func() time.Time
	sink      TrapSink
	maxRepeat int
	log       *slog.Logger
	tid       uint64
	lastLog   time.Time
	outbox    [outboxSize]Trap
	nout      int
	observer  PortObserver
	changes   [MaxPorts]PortChange
	changed   uint8  // ports with a recorded change
	smp       smaReq // the SMP an SMA attribute handler works on

	counters Counters

	routes []atomic.Pointer[PortRoute] // per port, published under mu (portroute.go)
}

// New builds an engine for the node. It fails when node.Validate does.
func New(node NodeConfig, opt Options) (*Engine, error) {
	if err := node.Validate(); err != nil {
		return nil, err
	}
	e := &Engine{
		pcap:      node.partitionCap(),
		now:       opt.Now,
		sink:      opt.Sink,
		maxRepeat: opt.MaxTrapRepeats,
		log:       opt.Logger,
	}
	if e.now == nil {
		e.now = time.Now
	}
	if e.maxRepeat == 0 {
		e.maxRepeat = DefaultMaxTrapRepeats
	} else if e.maxRepeat < 0 {
		e.maxRepeat = 0
	}
	e.node = NodeInfo{
		BaseVersion:     1,
		ClassVersion:    1,
		NodeType:        NodeTypeCA,
		NumPorts:        uint8(len(node.Ports)),
		SystemImageGUID: orDefault(node.SystemImageGUID, node.NodeGUID),
		NodeGUID:        node.NodeGUID,
		PartitionCap:    uint16(e.pcap),
		DeviceID:        node.DeviceID,
		Revision:        node.Revision,
		VendorID:        node.VendorID,
	}
	copy(e.nodeDesc[:], node.Description)
	e.ports = make([]port, len(node.Ports))
	e.routes = make([]atomic.Pointer[PortRoute], len(node.Ports))
	for i := range node.Ports {
		e.ports[i].init(uint8(i+1), &node.Ports[i])
		e.publishRoute(&e.ports[i])
	}
	return e, nil
}

func (p *port) init(num uint8, c *PortConfig) {
	l := &c.Link
	p.num = num
	p.pi = PortInfo{
		MKey:                  c.MKey,
		GIDPrefix:             orDefault(c.GIDPrefix, DefaultGIDPrefix),
		LID:                   c.LID,
		MasterSMLID:           c.MasterSMLID,
		CapabilityMask:        orDefault(c.CapabilityMask, DefaultCapabilityMask),
		MKeyLeasePeriod:       c.MKeyLeasePeriod,
		LocalPortNum:          num,
		LinkWidthSupported:    orDefault(l.WidthSupported, defaultLinkWidthSupp),
		LinkSpeedSupported:    orDefault(l.SpeedSupported, defaultLinkSpeedSupp) & 0xF,
		PortState:             c.State,
		PortPhysicalState:     c.PhysState,
		LinkDownDefaultState:  orDefault(l.LinkDownDefaultState, 2) & 0xF,
		MKeyProtectBits:       c.MKeyProtect,
		LMC:                   c.LMC,
		MasterSMSL:            c.MasterSMSL,
		MTUCap:                orDefault(l.MTUCap, defaultMTU),
		VLCap:                 orDefault(l.VLCap, defaultVLCap),
		VLHighLimit:           l.VLHighLimit,
		VLArbitrationHighCap:  orDefault(l.VLArbHighCap, defaultVLArbCap),
		VLArbitrationLowCap:   orDefault(l.VLArbLowCap, defaultVLArbCap),
		InitType:              l.InitType & 0xF,
		VLStallCount:          l.VLStallCount & 0x7,
		HOQLife:               l.HOQLife & 0x1F,
		GUIDCap:               uint8(1 + len(c.GUIDs)),
		SubnetTimeOut:         c.SubnetTimeOut,
		RespTimeValue:         orDefault(l.RespTimeValue, defaultRespTime) & 0x1F,
		LocalPhyErrors:        l.LocalPhyErrors & 0xF,
		OverrunErrors:         l.OverrunErrors & 0xF,
		MaxCreditHint:         l.MaxCreditHint,
		LinkRoundTripLatency:  l.LinkRoundTripLatency & 0xFFFFFF,
		CapabilityMask2:       c.CapabilityMask2,
		LinkSpeedExtSupported: l.SpeedExtSupported & 0xF,
		LinkSpeedExtActive:    l.SpeedExtActive & 0xF,
		LinkSpeedExtEnabled:   l.SpeedExtEnabled & 0x1F,
	}
	pi := &p.pi
	pi.LinkWidthEnabled = orDefault(l.WidthEnabled, pi.LinkWidthSupported)
	pi.LinkWidthActive = orDefault(l.WidthActive, defaultLinkWidthActive)
	pi.LinkSpeedEnabled = orDefault(l.SpeedEnabled, pi.LinkSpeedSupported) & 0xF
	pi.LinkSpeedActive = orDefault(l.SpeedActive, defaultLinkSpeedActive) & 0xF
	pi.NeighborMTU = orDefault(l.NeighborMTU, pi.MTUCap)
	pi.OperationalVLs = orDefault(l.OperationalVLs, pi.VLCap)
	if pi.PortPhysicalState == PhysNoChange {
		pi.PortPhysicalState = PhysLinkUp
		if pi.PortState == PortDown {
			pi.PortPhysicalState = PhysPolling
		}
	}
	if len(c.PKeys) == 0 {
		p.pkeys[0] = DefaultPKey
	}
	copy(p.pkeys[:], c.PKeys)
	p.guids[0] = c.PortGUID
	copy(p.guids[1:], c.GUIDs)
	p.sl2vl = SLtoVL(c.SL2VL)
	p.bkey = BKeyInfo{BKey: c.BKey, BKeyProtectBit: c.BKeyProtect, BKeyLeasePeriod: c.BKeyLeasePeriod}
	p.qkey = orDefault(c.QKey, QP1QKey)
	p.pmaCPI = classPortInfo(defaultPMACapMask, pi.RespTimeValue, &c.PMATrap)
	p.bmCPI = classPortInfo(CPICapTrap, pi.RespTimeValue, &c.BMTrap)
}

func classPortInfo(capMask uint16, resp uint8, t *TrapAddress) ClassPortInfo {
	c := ClassPortInfo{BaseVersion: 1, ClassVersion: 1, CapabilityMask: capMask, RespTimeValue: resp}
	c.TrapLID, c.TrapQP, c.TrapSL = t.LID, t.QP, t.SL
	c.TrapQKey = orDefault(t.QKey, QP1QKey)
	c.TrapPKey = orDefault(t.PKey, DefaultPKey)
	c.TrapGID, c.TrapTC, c.TrapFL, c.TrapHL = t.GID, t.TC, t.FL, t.HL
	return c
}

// NumPorts returns the number of ports.
func (e *Engine) NumPorts() int { return len(e.ports) }

// Counters returns the engine's live counters.
func (e *Engine) Counters() *Counters { return &e.counters }

// Snapshot copies the engine's counters.
func (e *Engine) Snapshot() Snapshot { return e.counters.Snapshot() }

// PortInfo returns a copy of a port's current PortInfo (port 1..NumPorts).
func (e *Engine) PortInfo(portNum uint8) (PortInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if portNum < 1 || int(portNum) > len(e.ports) {
		return PortInfo{}, fmt.Errorf("mad: port %d of %d: %w", portNum, len(e.ports), ErrInvalid)
	}
	return e.ports[portNum-1].pi, nil
}

// SetPortState changes a port's logical state as the link would (an
// operator taking the link down or bringing it back): Down goes with the
// physical state Polling, any other state with LinkUp.
func (e *Engine) SetPortState(portNum uint8, st PortState) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if portNum < 1 || int(portNum) > len(e.ports) || st < PortDown || st > PortActive {
		return fmt.Errorf("mad: port %d state %d: %w", portNum, st, ErrInvalid)
	}
	pi := &e.ports[portNum-1].pi
	pi.PortState = st
	pi.PortPhysicalState = PhysLinkUp
	if st == PortDown {
		pi.PortPhysicalState = PhysPolling
	}
	e.publishRoute(&e.ports[portNum-1])
	return nil
}

// PKey returns entry idx of a port's physical P_Key table.
func (e *Engine) PKey(portNum uint8, idx int) (uint16, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if portNum < 1 || int(portNum) > len(e.ports) || idx < 0 || idx >= e.pcap {
		return 0, false
	}
	return e.ports[portNum-1].pkeys[idx], true
}

// ProcessMAD processes one MAD that arrived on port (1..NumPorts), with the
// receive work completion wc and GRH grh of the packet, either of which may
// be nil (a locally generated MAD; then no trap that needs them is built).
// It returns the response and the result bits; the response is meaningful
// only when the result has Reply. in is not modified.
func (e *Engine) ProcessMAD(flags Flags, port uint8, wc *WC, grh *GRH, in *MAD) (out MAD, res Result) {
	if in == nil {
		e.counters.mads[CClassOther][CMethodOther][CResultFailure].Add(1)
		return out, Failure
	}
	e.mu.Lock()
	res = e.process(flags, port, wc, grh, in, &out)
	pending, changed := e.nout, e.changed
	e.mu.Unlock()
	if pending > 0 {
		e.flush()
	}
	if changed != 0 {
		e.notify()
	}
	e.counters.mads[classLabel(in[1])][methodLabel(in[3])][resultLabel(res)].Add(1)
	return out, res
}

func (e *Engine) process(flags Flags, pn uint8, wc *WC, grh *GRH, in, out *MAD) Result {
	if pn < 1 || int(pn) > len(e.ports) || in.BaseVersion() != 1 {
		return Failure
	}
	p := &e.ports[pn-1]
	// The PMA counts packets on the link: MADs that arrived with a work
	// completion, their replies and the traps sent. A MAD without one was
	// generated locally (a driver's query through MAD_IFC) and never
	// crossed the port.
	wire := wc != nil
	if wire {
		p.pc.rcvPkts++
		p.pc.ucRcvPkts++
		p.pc.rcvData += MADWords
	}
	var res Result
	switch in.MgmtClass() {
	case ClassSubnLID, ClassSubnDirected:
		if wc != nil && wc.QPN != 0 {
			return Failure
		}
		res = e.sma(flags, p, wc, in, out)
		if wire && (res&Success == 0 || res&Consumed != 0) {
			p.pc.vl15Dropped++
		}
	case ClassPerfMgt, ClassBM:
		if wc != nil && wc.QPN != 1 {
			p.pc.qp1Dropped++
			return Failure
		}
		if !e.gsiKeysOK(p, wc, grh) {
			p.pc.qp1Dropped++ // wc is set: the checks need one
			return Success | Consumed
		}
		if in.MgmtClass() == ClassPerfMgt {
			res = e.pma(p, in, out)
		} else {
			res = e.bma(flags, p, wc, grh, in, out)
		}
	default:
		return Success
	}
	if res&Reply != 0 && wire {
		p.pc.xmitPkts++
		p.pc.ucXmitPkts++
		p.pc.xmitData += MADWords
	}
	return res
}

// respond makes out a copy of the request with a response header: GetResp
// for Get and Set, the method with the response bit otherwise; status 0.
func respond(in, out *MAD) {
	*out = *in
	if m := in.Method(); m == MethodGet || m == MethodSet {
		out[3] = MethodGetResp
	} else {
		out[3] = m | MethodResp
	}
	out.SetStatus(0)
}

// replyStatus returns a response carrying only a status.
func replyStatus(in, out *MAD, status uint16) Result {
	respond(in, out)
	out.SetStatus(status)
	return Success | Reply
}

func satInc16(v *uint16) {
	if *v != 0xFFFF {
		*v++
	}
}

// expired reports whether a running lease has run out at now, and stops it.
func (l *lease) expired(now time.Time) bool {
	if l.running && !now.Before(l.deadline) {
		l.running = false
		return true
	}
	return false
}

func (l *lease) start(now time.Time, seconds uint16) {
	if seconds != 0 && !l.running {
		l.running = true
		l.deadline = now.Add(time.Duration(seconds) * time.Second)
	}
}

func (e *Engine) logViolation(kind string, p *port, wc *WC, grh *GRH, in *MAD) {
	if e.log == nil {
		return
	}
	now := e.now()
	if !e.lastLog.IsZero() && now.Sub(e.lastLog) < time.Second {
		return
	}
	e.lastLog = now
	var slid uint16
	var srcQP uint32
	if wc != nil {
		slid, srcQP = wc.SLID, wc.SrcQP&0xFFFFFF
	}
	sgid := "none"
	if wc != nil && wc.GRHPresent && grh != nil {
		sgid = netip.AddrFrom16(grh.SGID).String()
	}
	e.log.Info("mad: key violation", "key", kind, "port", p.num, "slid", slid, "src_qp", srcQP, "sgid", sgid,
		"class", in.MgmtClass(), "method", in.Method(), "attr", in.AttrID())
}

// TrapSinks fans traps out to several sinks, in order.
type TrapSinks []TrapSink

// SendTrap implements TrapSink.
func (s TrapSinks) SendTrap(t Trap) {
	for _, k := range s {
		k.SendTrap(t)
	}
}

// CountData counts what the data path sent (xmit) or received on a port:
// pkts packets of words 4-byte words (mad.PacketWords), in the port's PMA
// counters beside its MADs. Lock-free and allocation-free: the data path
// calls it for every message on the wire. An unknown port is ignored.
func (e *Engine) CountData(portNum uint8, xmit bool, pkts, words uint64, multicast bool) {
	if portNum < 1 || int(portNum) > len(e.ports) {
		return
	}
	e.ports[portNum-1].data.count(xmit, pkts, words, multicast)
}

// counters is p's PMA counters: its MADs' and the data path's.
func (p *port) counters() pmaCounters {
	c := p.pc
	p.data.add(&c)
	return c
}

// PortCounters returns a port's PMA counters in their 64-bit form (what
// PortCountersExtended reports), for collectors that read them at scrape
// time without sending a MAD.
func (e *Engine) PortCounters(portNum uint8) (PortCountersExtended, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if portNum < 1 || int(portNum) > len(e.ports) {
		return PortCountersExtended{}, false
	}
	c := e.ports[portNum-1].counters()
	x := portCountersExt(&c)
	x.PortSelect = portNum
	return x, true
}
