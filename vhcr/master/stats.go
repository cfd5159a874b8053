package master

import (
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/internal/tick"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// ResetReason says why the PF reset a VF's channel state.
type ResetReason uint8

const (
	ResetByVF        ResetReason = iota // the VF sent RESET
	ResetSequence                       // comm command out of order (VHCR1 before VHCR0, POST before EN, ...)
	ResetUnknownCmd                     // comm command value not defined
	ResetToggle                         // slave_write rewritten without a toggle flip
	ResetVHCRAddress                    // vHCR address unaligned or outside the window (VHCR_EN)
	ResetDMA                            // vHCR or outbox DMA failed
	ResetFLR                            // function-level reset by the operator
	ResetRequest                        // the VF's reset request (FLAGS bit 16)
	ResetAdminState                     // VHCR_EN: no room for the VF's VST VLAN or spoof-checked MAC
	ResetSavedState                     // PF start: the channel state a previous PF saved cannot be trusted
	ResetRegionLost                     // the DMA region behind the VF's window shrank
	ResetFault                          // an injected fault (faultinj.VFReset)
	numResetReasons
)

var resetReasonNames = [...]string{"vf_reset", "sequence", "unknown_comm_cmd", "toggle", "vhcr_address", "dma", "flr", "reset_request", "admin_state", "saved_state", "region_lost", "fault"}

func (r ResetReason) String() string { return resetReasonNames[r] }

// Ordinary reports whether r is a reset that working drivers and operators
// cause, not trouble: the VF's own RESET (mlx4_core sends it at every load,
// mlx4_init_slave, and unload, mlx4_slave_exit) and an FLR (the operator's,
// or a guest's disconnect). Every other reason is the PF refusing a
// channel (a violation, a DMA fault, admin state it cannot apply), a VF in
// its error state asking for a reset, or the PF giving a channel up (state
// it cannot trust at start, a region that shrank).
func (r ResetReason) Ordinary() bool { return r == ResetByVF || r == ResetFLR }

// ResetReasons lists every reason, for collectors.
func ResetReasons() []ResetReason {
	out := make([]ResetReason, numResetReasons)
	for i := range out {
		out[i] = ResetReason(i)
	}
	return out
}

// statusSlots maps a status byte to a dense counter slot. The slots are the
// statuses a VF can observe (mlx4 §1.11) plus the few the model returns
// itself; anything else lands in the last slot.
var statusSlots = func() (m [256]uint8) {
	for i := range m {
		m[i] = uint8(len(SlotStatuses))
	}
	for i, s := range SlotStatuses {
		m[s] = uint8(i)
	}
	return
}()

// SlotStatuses are the statuses with their own counter slot.
var SlotStatuses = []mlx4.Status{mlx4.OK, mlx4.INTERNAL_ERR, mlx4.BAD_OP, mlx4.BAD_PARAM, mlx4.BAD_SYS_STATE,
	mlx4.BAD_RESOURCE, mlx4.RESOURCE_BUSY, mlx4.EXCEED_LIM, mlx4.BAD_RES_STATE, mlx4.BAD_INDEX, mlx4.ICM_ERROR,
	mlx4.BAD_QP_STATE, mlx4.BAD_PKT, mlx4.BAD_SIZE}

// NumStatusSlots counts SlotStatuses plus the "other" slot.
var NumStatusSlots = len(SlotStatuses) + 1

// LatencyBounds are the upper bounds, in seconds, of the command latency
// histograms (from detection of the post to completion).
var LatencyBounds = []float64{250e-9, 500e-9, 1e-6, 2e-6, 4e-6, 8e-6, 16e-6, 32e-6, 64e-6, 128e-6, 256e-6, 512e-6, 1e-3, 4e-3, 16e-3}

// Class groups the command table's rows by the work the PF does for them,
// for the latency histograms: one histogram per class, so that a slow
// MAD_IFC does not hide in the distribution of NOPs.
type Class uint8

const (
	ClassPlain    Class = iota // no mailbox, no tracked resource: NOP, INIT_PORT, SET_MCAST_FLTR, ...
	ClassMailbox               // an inbox or an outbox, no tracked resource: QUERY_FW, QUERY_PORT, SET_PORT, ACCESS_REG, ...
	ClassResource              // the resource tracker's wrappers other than QPs': ALLOC_RES, FREE_RES, SW2HW_*/HW2SW_*, MTT, queries of MPT/EQ/CQ/SRQ, attaches
	ClassQP                    // QP state transitions and QP queries (mlx4's *_QP_wrapper family)
	ClassMAD                   // MAD_IFC (the MAD engine and the VF policy)
	ClassDenied                // not in the table or EPERM: answered without executing anything
	NumClasses
)

var classNames = [NumClasses]string{"plain", "mailbox", "resource", "qp", "mad", "denied"}

func (c Class) String() string { return classNames[c] }

// classFor is a row's class, from its effects and mailboxes: an EPERM
// row is denied.
func classFor(x *hca.Command) Class {
	switch {
	case x.Effects&hca.EffPrivileged != 0 || x.Exec == nil:
		return ClassDenied
	case x.Effects&hca.EffMAD != 0:
		return ClassMAD
	case x.Effects&hca.EffQP != 0:
		return ClassQP
	case x.Effects&hca.EffTracked != 0:
		return ClassResource
	case x.HasInbox || x.HasOutbox:
		return ClassMailbox
	}
	return ClassPlain
}

// ClassOf returns the latency class of op (an opcode without a row is
// denied).
func ClassOf(op mlx4.Opcode) Class {
	if x := hca.Lookup(op); x != nil {
		return classFor(x)
	}
	return ClassDenied
}

// Stats are counters the poller owns: plain integers that only the poller
// thread writes, with no atomic or locked instruction on the hot path.
// Readers get a copy through PF.Stats, which the poller makes between two
// scans (or directly when it is not running); collectors call it at scrape
// time.
//
// Commands are counted twice, never per VF and opcode together (that
// product is what makes a label set unbounded in practice): per VF by
// status, and per opcode by status. Refusals say per VF why.
type Stats struct {
	numOps   int
	VFStatus []uint64 // [vf][status slot]
	OpStatus []uint64 // [op index][status slot]
	Resets   []uint64 // [vf][reason]
	Refusals []uint64 // [vf][refusal.Reason]
	Resyncs  []uint64 // [vf]: the VF rewrote its registers (zeroed, §6.5)
	DMA      []uint64 // [vf]: DMA faults (vHCR, inbox, outbox)
	Dropped  []uint64 // [vf]: comm commands dropped during FLR

	Runs      uint64                 // scans of all VFs
	BusyRuns  uint64                 // scans that found work
	Sleeps    uint64                 // times the poller blocked (futex or sleep)
	Done      uint64                 // commands completed
	Latency   [NumClasses][16]uint64 // sampled: one command in LatencySample is timed
	LatencyNS [NumClasses]uint64     // sum of the sampled latencies
	EQEs      uint64                 // completion EQEs written
	// the state file (pfstate.go): checkpoints written; results delivered
	// again and early-accepted commands executed by a restarted PF
	Checkpoints, Redelivered, Resumed uint64

	latencyTicks [15]uint64 // LatencyBounds in cycle-counter ticks
	sampleCount  uint32
}

// LatencySample: the poller times one command in LatencySample (the cycle
// counter costs tens of ns per read in a VM; sampling keeps it off the
// common path while the histogram keeps its shape).
const LatencySample = 8

func newStats(numVFs, numOps int) *Stats {
	s := &Stats{
		numOps:   numOps,
		VFStatus: make([]uint64, numVFs*NumStatusSlots),
		OpStatus: make([]uint64, numOps*NumStatusSlots),
		Resets:   make([]uint64, numVFs*int(numResetReasons)),
		Refusals: make([]uint64, numVFs*refusal.NumReasons),
		Resyncs:  make([]uint64, numVFs),
		DMA:      make([]uint64, numVFs),
		Dropped:  make([]uint64, numVFs),
	}
	perNS := tick.PerNS()
	for i, b := range LatencyBounds {
		s.latencyTicks[i] = uint64(b * 1e9 * perNS)
	}
	return s
}

// copyTo copies s into d (same shape), reusing d's slices.
func (s *Stats) copyTo(d *Stats) {
	vs, ops, res, ref, rsy, dm, drp := d.VFStatus, d.OpStatus, d.Resets, d.Refusals, d.Resyncs, d.DMA, d.Dropped
	*d = *s
	d.VFStatus = append(vs[:0], s.VFStatus...)
	d.OpStatus = append(ops[:0], s.OpStatus...)
	d.Resets = append(res[:0], s.Resets...)
	d.Refusals = append(ref[:0], s.Refusals...)
	d.Resyncs = append(rsy[:0], s.Resyncs...)
	d.DMA = append(dm[:0], s.DMA...)
	d.Dropped = append(drp[:0], s.Dropped...)
}

// NumOps is the number of dense opcode indexes (Table.NumOps).
func (s *Stats) NumOps() int { return s.numOps }

// VF returns the commands of VF vf completed with status slot slot.
func (s *Stats) VF(vf, slot int) uint64 { return s.VFStatus[vf*NumStatusSlots+slot] }

// Op returns the commands of dense opcode index op (0: not in the table),
// all VFs, completed with status slot slot.
func (s *Stats) Op(op, slot int) uint64 { return s.OpStatus[op*NumStatusSlots+slot] }

// Reset returns the resets of VF vf for reason r.
func (s *Stats) Reset(vf int, r ResetReason) uint64 {
	return s.Resets[vf*int(numResetReasons)+int(r)]
}

// Refusal returns the refused commands of VF vf for reason r.
func (s *Stats) Refusal(vf int, r refusal.Reason) uint64 {
	return s.Refusals[vf*refusal.NumReasons+int(r)]
}

func (s *Stats) countCommand(vf, op int, st mlx4.Status) {
	slot := int(statusSlots[st])
	s.VFStatus[vf*NumStatusSlots+slot]++
	s.OpStatus[op*NumStatusSlots+slot]++
	s.Done++
}

func (s *Stats) countReset(vf int, r ResetReason) { s.Resets[vf*int(numResetReasons)+int(r)]++ }

func (s *Stats) countRefusal(vf int, r refusal.Reason) {
	if r != refusal.None {
		s.Refusals[vf*refusal.NumReasons+int(r)]++
	}
}

// sample reports whether the next command is to be timed.
func (s *Stats) sample() bool {
	s.sampleCount++
	return s.sampleCount%LatencySample == 0
}

// classOf is the class of a table row (nil: an opcode not in the table).
func classOf(e *Entry) Class {
	if e == nil {
		return ClassDenied
	}
	return e.class
}

// observe records a timed command of class c.
func (s *Stats) observe(c Class, ticks uint64) {
	s.LatencyNS[c] += tick.ToNS(ticks, tick.PerNS())
	for i, b := range s.latencyTicks {
		if ticks <= b {
			s.Latency[c][i]++
			return
		}
	}
	s.Latency[c][len(LatencyBounds)]++
}

// Completed returns the number of commands completed (all VFs, all
// statuses).
func (s *Stats) Completed() uint64 { return s.Done }

// Channel is one VF's channel state, as the per-VF state gauges show it.
type Channel struct {
	State  mlx4.CommCmd // the last comm command served (CommFLR: an FLR is in progress)
	Active bool         // VHCR_EN accepted and no reset since (mlx4's slave_state[].active)
	// Events: the VF mapped an EQ for command completions (MAP_EQ of the
	// command event, as mlx4_cmd_use_events does), so commands it posts
	// with the 'e' bit complete by EQE; else it polls the vHCR's go bit.
	Events bool
	// Mlx4: the VF's last 'e' command completed as Linux's PF completes it
	// (complete.go); before any, whether its configuration forces mlx4.
	Mlx4 bool
}

// ChannelStates are the values a Channel's State takes: the comm commands
// the PF serves and CommFLR.
var ChannelStates = [...]mlx4.CommCmd{mlx4.MLX4_COMM_CMD_RESET, mlx4.MLX4_COMM_CMD_VHCR0, mlx4.MLX4_COMM_CMD_VHCR1, mlx4.MLX4_COMM_CMD_VHCR2,
	mlx4.MLX4_COMM_CMD_VHCR_EN, mlx4.MLX4_COMM_CMD_VHCR_POST, mlx4.MLX4_COMM_CMD_FLR}

// Channels fills dst[i] with VF i's channel state for the first len(dst)
// VFs, in one request to the poller (one round trip per scrape, not one
// per VF).
func (p *PF) Channels(dst []Channel) error {
	if len(dst) > len(p.vfs) {
		dst = dst[:len(p.vfs)]
	}
	return p.Do(func() {
		for i := range dst {
			st := &p.vfs[i]
			dst[i] = Channel{State: st.lastCmd, Active: st.active,
				Events: p.hca.HasEQ(i, EventTypeCmd), Mlx4: st.lastMlx4}
		}
	})
}
