package vhcr

import (
	"sync/atomic"

	"github.com/vhcrd/vhcrd/vhcr/hcr"
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
	numResetReasons
)

var resetReasonNames = [...]string{"vf_reset", "sequence", "unknown_comm_cmd", "toggle", "vhcr_address", "dma", "flr", "reset_request"}

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
var SlotStatuses = []hcr.Status{hcr.OK, hcr.INTERNAL_ERR, hcr.BAD_OP, hcr.BAD_PARAM, hcr.BAD_SYS_STATE,
	hcr.BAD_RESOURCE, hcr.RESOURCE_BUSY, hcr.EXCEED_LIM, hcr.BAD_RES_STATE, hcr.BAD_INDEX, hcr.ICM_ERROR,
	hcr.BAD_QP_STATE, hcr.BAD_PKT, hcr.BAD_SIZE}

// NumStatusSlots counts SlotStatuses plus the "other" slot.
var NumStatusSlots = len(SlotStatuses) + 1

// LatencyBounds are the upper bounds, in seconds, of the command latency
// histogram (from detection of the post to completion).
var LatencyBounds = []float64{250e-9, 500e-9, 1e-6, 2e-6, 4e-6, 8e-6, 16e-6, 32e-6, 64e-6, 128e-6, 256e-6, 512e-6, 1e-3, 4e-3, 16e-3}

// Stats are counters the poller owns and writes; collectors read them at
// scrape time with atomic loads. Nothing here is touched by client_golang on
// the hot path.
type Stats struct {
	numOps   int
	Commands []atomic.Uint64 // [vf][op index][status slot]
	Resets   []atomic.Uint64 // [vf][reason]
	Refusals []atomic.Uint64 // [vf][hcr.Reason]
	Resyncs  []atomic.Uint64 // [vf]: the VF rewrote its registers (zeroed, §6.5)
	DMA      []atomic.Uint64 // [vf]: DMA faults (vHCR, inbox, outbox)
	Dropped  []atomic.Uint64 // [vf]: comm commands dropped during FLR

	Runs      atomic.Uint64 // scans of all VFs
	BusyRuns  atomic.Uint64 // scans that found work
	Sleeps    atomic.Uint64 // times the poller blocked (futex or sleep)
	Latency   [16]atomic.Uint64
	LatencyNS atomic.Uint64 // sum
	EQEs      atomic.Uint64 // completion EQEs written
}

func newStats(numVFs, numOps int) *Stats {
	return &Stats{
		numOps:   numOps,
		Commands: make([]atomic.Uint64, numVFs*numOps*NumStatusSlots),
		Resets:   make([]atomic.Uint64, numVFs*int(numResetReasons)),
		Refusals: make([]atomic.Uint64, numVFs*hcr.NumReasons),
		Resyncs:  make([]atomic.Uint64, numVFs),
		DMA:      make([]atomic.Uint64, numVFs),
		Dropped:  make([]atomic.Uint64, numVFs),
	}
}

// Command returns the count of commands of VF vf, dense opcode index op and
// status slot s.
func (s *Stats) Command(vf, op, slot int) uint64 {
	return s.Commands[(vf*s.numOps+op)*NumStatusSlots+slot].Load()
}

// Reset returns the resets of VF vf for reason r.
func (s *Stats) Reset(vf int, r ResetReason) uint64 {
	return s.Resets[vf*int(numResetReasons)+int(r)].Load()
}

// Refusal returns the refused commands of VF vf for reason r.
func (s *Stats) Refusal(vf int, r hcr.Reason) uint64 {
	return s.Refusals[vf*hcr.NumReasons+int(r)].Load()
}

func (s *Stats) countCommand(vf, op int, st hcr.Status) {
	s.Commands[(vf*s.numOps+op)*NumStatusSlots+int(statusSlots[st])].Add(1)
}

func (s *Stats) countReset(vf int, r ResetReason) { s.Resets[vf*int(numResetReasons)+int(r)].Add(1) }

func (s *Stats) countRefusal(vf int, r hcr.Reason) {
	if r != hcr.ReasonNone {
		s.Refusals[vf*hcr.NumReasons+int(r)].Add(1)
	}
}

func (s *Stats) observe(ns uint64) {
	s.LatencyNS.Add(ns)
	sec := float64(ns) * 1e-9
	for i, b := range LatencyBounds {
		if sec <= b {
			s.Latency[i].Add(1)
			return
		}
	}
	s.Latency[len(LatencyBounds)].Add(1)
}

// Completed returns the number of commands completed (all VFs, all
// statuses), from the latency histogram.
func (s *Stats) Completed() uint64 {
	var n uint64
	for i := range s.Latency {
		n += s.Latency[i].Load()
	}
	return n
}
