package mad

import "sync/atomic"

// Label indexes of the MAD counters.
const (
	CClassSubnLID = iota
	CClassSubnDR
	CClassPerfMgt
	CClassBM
	CClassOther
	NumClassLabels
)

// Method label indexes.
const (
	CMethodGet = iota
	CMethodSet
	CMethodTrapRepress
	CMethodTrap
	CMethodSend
	CMethodResponse
	CMethodOther
	NumMethodLabels
)

// Result label indexes.
const (
	CResultReply    = iota // Success|Reply
	CResultConsumed        // Success|Consumed: handled, no reply (key violation, TrapRepress)
	CResultPass            // Success alone: not for this engine
	CResultFailure         // Failure: dropped (malformed, bad port)
	NumResultLabels
)

// Trap label indexes.
const (
	CTrap256 = iota
	CTrap257
	CTrap258
	CTrap259
	NumTrapLabels
)

// Reasons a trap was not sent.
const (
	CSuppressNoWC          = iota // the WC was nil
	CSuppressNoGRH                // the WC says GRH present but the GRH was nil
	CSuppressPortNotActive        // o14-3.2.1: only Active ports send traps
	CSuppressNoDestination        // MasterSMLID or the ClassPortInfo TrapLID is 0
	CSuppressRateLimited          // within SubnetTimeOut of the previous new trap
	CSuppressQueueFull            // too many traps awaiting TrapRepress
	NumSuppressLabels
)

// Key violation label indexes.
const (
	CKeyM = iota
	CKeyP
	CKeyQ
	CKeyB
	NumKeyLabels
)

// Label names, indexed by the constants above; for metric labels.
var (
	ClassLabels    = [NumClassLabels]string{"subn_lid", "subn_dr", "perf", "bm", "other"}
	MethodLabels   = [NumMethodLabels]string{"get", "set", "trap_repress", "trap", "send", "response", "other"}
	ResultLabels   = [NumResultLabels]string{"reply", "consumed", "pass", "failure"}
	TrapLabels     = [NumTrapLabels]string{"256", "257", "258", "259"}
	SuppressLabels = [NumSuppressLabels]string{"no_wc", "no_grh", "port_not_active", "no_destination", "rate_limited", "queue_full"}
	KeyLabels      = [NumKeyLabels]string{"m_key", "p_key", "q_key", "b_key"}
)

// Counters are the engine's counters: atomic, written by the engine, read
// at scrape time through Snapshot.
type Counters struct {
	mads       [NumClassLabels][NumMethodLabels][NumResultLabels]atomic.Uint64
	trapsSent  [NumTrapLabels]atomic.Uint64
	trapsRep   [NumTrapLabels]atomic.Uint64
	repressed  atomic.Uint64
	expired    atomic.Uint64
	suppressed [NumSuppressLabels]atomic.Uint64
	keyViol    [NumKeyLabels]atomic.Uint64
	vfRefused  atomic.Uint64
	vfParavirt atomic.Uint64
	badInbox   atomic.Uint64
}

// Snapshot is a copy of the counters at one instant (each value read
// atomically; the set is not one transaction).
type Snapshot struct {
	// MADs counts every ProcessMAD call by class, method and result label.
	MADs [NumClassLabels][NumMethodLabels][NumResultLabels]uint64
	// TrapsSent counts first transmissions by trap; TrapRepeats the resends.
	TrapsSent   [NumTrapLabels]uint64
	TrapRepeats [NumTrapLabels]uint64
	// TrapsRepressed counts traps ended by a TrapRepress; TrapsExpired those
	// dropped after the last allowed resend.
	TrapsRepressed uint64
	TrapsExpired   uint64
	// TrapsSuppressed counts traps not sent, by reason (NoWC and NoGRH are
	// the seed's "missing wc/grh" cases).
	TrapsSuppressed [NumSuppressLabels]uint64
	// KeyViolations counts M_Key, P_Key, Q_Key and B_Key violations (not
	// saturating, unlike the 16-bit attribute counters).
	KeyViolations [NumKeyLabels]uint64
	// VFRefused counts MAD_IFC commands refused with BAD_OP; VFParavirt the
	// paravirtualised Gets; BadInbox malformed MAD_IFC inboxes.
	VFRefused  uint64
	VFParavirt uint64
	BadInbox   uint64
}

// Snapshot copies the counters.
func (c *Counters) Snapshot() Snapshot {
	var s Snapshot
	for i := range c.mads {
		for j := range c.mads[i] {
			for k := range c.mads[i][j] {
				s.MADs[i][j][k] = c.mads[i][j][k].Load()
			}
		}
	}
	for i := range c.trapsSent {
		s.TrapsSent[i] = c.trapsSent[i].Load()
		s.TrapRepeats[i] = c.trapsRep[i].Load()
	}
	s.TrapsRepressed = c.repressed.Load()
	s.TrapsExpired = c.expired.Load()
	for i := range c.suppressed {
		s.TrapsSuppressed[i] = c.suppressed[i].Load()
	}
	for i := range c.keyViol {
		s.KeyViolations[i] = c.keyViol[i].Load()
	}
	s.VFRefused = c.vfRefused.Load()
	s.VFParavirt = c.vfParavirt.Load()
	s.BadInbox = c.badInbox.Load()
	return s
}

// MADsTotal sums MADs over all labels.
func (s *Snapshot) MADsTotal() uint64 {
	var n uint64
	for i := range s.MADs {
		for j := range s.MADs[i] {
			for _, v := range s.MADs[i][j] {
				n += v
			}
		}
	}
	return n
}

func classLabel(c uint8) int {
	switch c {
	case ClassSubnLID:
		return CClassSubnLID
	case ClassSubnDirected:
		return CClassSubnDR
	case ClassPerfMgt:
		return CClassPerfMgt
	case ClassBM:
		return CClassBM
	}
	return CClassOther
}

func methodLabel(m uint8) int {
	switch {
	case m == MethodGet:
		return CMethodGet
	case m == MethodSet:
		return CMethodSet
	case m == MethodTrapRepress:
		return CMethodTrapRepress
	case m == MethodTrap:
		return CMethodTrap
	case m == MethodSend:
		return CMethodSend
	case m&MethodResp != 0:
		return CMethodResponse
	}
	return CMethodOther
}

func resultLabel(r Result) int {
	switch {
	case r&Success == 0:
		return CResultFailure
	case r&Reply != 0:
		return CResultReply
	case r&Consumed != 0:
		return CResultConsumed
	}
	return CResultPass
}

func trapLabel(n uint16) int {
	switch n {
	case TrapBadMKey:
		return CTrap256
	case TrapBadPKey:
		return CTrap257
	case TrapBadQKey:
		return CTrap258
	}
	return CTrap259
}
