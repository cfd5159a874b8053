package master

import (
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
	numResetReasons
)

var resetReasonNames = [...]string{"vf_reset", "sequence", "unknown_comm_cmd", "toggle", "vhcr_address", "dma", "flr", "reset_request", "admin_state", "saved_state", "region_lost"}

func (r ResetReason) String() string { return resetReasonNames[r] }

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
// histogram (from detection of the post to completion).
var LatencyBounds = []float64{250e-9, 500e-9, 1e-6, 2e-6, 4e-6, 8e-6, 16e-6, 32e-6, 64e-6, 128e-6, 256e-6, 512e-6, 1e-3, 4e-3, 16e-3}

// Stats are counters the poller owns: plain integers that only the poller
// thread writes, with no atomic or locked instruction on the hot path.
// Readers get a copy through PF.Stats, which the poller makes between two
// scans (or directly when it is not running); collectors call it at scrape
// time.
type Stats struct {
	numOps   int
	Commands []uint64 // [vf][op index][status slot]
	Resets   []uint64 // [vf][reason]
	Refusals []uint64 // [vf][mlx4.Reason]
	Resyncs  []uint64 // [vf]: the VF rewrote its registers (zeroed, §6.5)
	DMA      []uint64 // [vf]: DMA faults (vHCR, inbox, outbox)
	Dropped  []uint64 // [vf]: comm commands dropped during FLR

	Runs      uint64     // scans of all VFs
	BusyRuns  uint64     // scans that found work
	Sleeps    uint64     // times the poller blocked (futex or sleep)
	Done      uint64     // commands completed
	Latency   [16]uint64 // sampled: one command in LatencySample is timed
	LatencyNS uint64     // sum of the sampled latencies
	EQEs      uint64     // completion EQEs written

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
		Commands: make([]uint64, numVFs*numOps*NumStatusSlots),
		Resets:   make([]uint64, numVFs*int(numResetReasons)),
		Refusals: make([]uint64, numVFs*mlx4.NumReasons),
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
	cmd, res, ref, rsy, dm, drp := d.Commands, d.Resets, d.Refusals, d.Resyncs, d.DMA, d.Dropped
	*d = *s
	d.Commands = append(cmd[:0], s.Commands...)
	d.Resets = append(res[:0], s.Resets...)
	d.Refusals = append(ref[:0], s.Refusals...)
	d.Resyncs = append(rsy[:0], s.Resyncs...)
	d.DMA = append(dm[:0], s.DMA...)
	d.Dropped = append(drp[:0], s.Dropped...)
}

// Command returns the count of commands of VF vf, dense opcode index op and
// status slot s.
func (s *Stats) Command(vf, op, slot int) uint64 {
	return s.Commands[(vf*s.numOps+op)*NumStatusSlots+slot]
}

// Reset returns the resets of VF vf for reason r.
func (s *Stats) Reset(vf int, r ResetReason) uint64 {
	return s.Resets[vf*int(numResetReasons)+int(r)]
}

// Refusal returns the refused commands of VF vf for reason r.
func (s *Stats) Refusal(vf int, r mlx4.Reason) uint64 {
	return s.Refusals[vf*mlx4.NumReasons+int(r)]
}

func (s *Stats) countCommand(vf, op int, st mlx4.Status) {
	s.Commands[(vf*s.numOps+op)*NumStatusSlots+int(statusSlots[st])]++
	s.Done++
}

func (s *Stats) countReset(vf int, r ResetReason) { s.Resets[vf*int(numResetReasons)+int(r)]++ }

func (s *Stats) countRefusal(vf int, r mlx4.Reason) {
	if r != mlx4.ReasonNone {
		s.Refusals[vf*mlx4.NumReasons+int(r)]++
	}
}

// sample reports whether the next command is to be timed.
func (s *Stats) sample() bool {
	s.sampleCount++
	return s.sampleCount%LatencySample == 0
}

func (s *Stats) observe(ticks uint64) {
	s.LatencyNS += tick.ToNS(ticks, tick.PerNS())
	for i, b := range s.latencyTicks {
		if ticks <= b {
			s.Latency[i]++
			return
		}
	}
	s.Latency[len(LatencyBounds)]++
}

// Completed returns the number of commands completed (all VFs, all
// statuses).
func (s *Stats) Completed() uint64 { return s.Done }
