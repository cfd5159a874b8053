package master

import (
	"encoding/binary"

	"github.com/vhcrd/vhcrd/vhcr/internal/tick"
	"github.com/vhcrd/vhcrd/vhcr/master/trace"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// The command trace (Options.Trace): the poller, its only writer, records
// every comm step, VHCR_POST, EQE, reset, FLR and restart into the ring,
// whether or not anyone reads it, so that a reader attaching after the fact
// (vhcrd trace --from-start) finds what happened; each record site checks
// only that there is a ring (Enabled: not nil). A VHCR_POST's record
// carries the head of its shadow inbox (for MAD_IFC the MAD's class,
// method and attribute), copied, not decoded. Interrupts are counted per
// VF (vhcrd_interrupts_total), not traced: nothing writes the ring's IRQ
// records.
//
// Stamping. A VHCR_POST the poller times anyway (one in LatencySample) is
// recorded with its detection and completion ticks; the others with p.now,
// the poller's latest clock reading (the last timed command, an idle
// checkpoint, the wake-up from a sleep), so that tracing adds no read of
// the cycle counter to a command: such records carry no latency and the
// time of that reading. Comm steps, EQEs, resets, FLRs and restarts are
// rare and read the clock afresh.
//
// Measured (BenchmarkPost/NOP, 8 runs each, 2 shared vCPUs): untraced
// 32.8 ns fastest, 42.4 ns median; traced as above 35.3 / 43.3 ns; traced
// with both ticks read for every command 56.7 / 72.5 ns (untraced 30.6 /
// 40.1 ns in that run). Hence the sampled stamps. The cost of recording
// always, against the ring that recorded only while held: see
// docs/operating.md ("Command trace").

// NewTrace returns a ring of records stamped with the poller's cycle
// counter (records: a power of two; 0 for trace.DefaultRecords), to pass
// as Options.Trace. It records from the first record on.
func NewTrace(records int) (*trace.Ring, error) {
	return trace.New(trace.Config{Records: records, Ticks: tick.Now, TicksPerNS: tick.PerNS()})
}

// stamp reads the clock for a rare record and keeps the reading as p.now.
func (p *PF) stamp() uint64 {
	p.now = tick.Now()
	return p.now
}

// traceComm records comm command cmd of VF i.
func (p *PF) traceComm(i int, cmd mlx4.CommCmd, toggle uint32, param uint16) {
	if p.trace.Enabled() {
		p.trace.Comm(p.stamp(), i, uint8(cmd), toggle, param)
	}
}

// traceReset records a reset of VF i's channel state.
func (p *PF) traceReset(i int, why ResetReason) {
	if p.trace.Enabled() {
		p.trace.Reset(p.stamp(), i, uint8(why))
	}
}

// heldEQE is a completion EQE whose record waits for its command's.
type heldEQE struct {
	vf, eqn int
	token   uint16
	held    bool
}

// eqePosted is the HCA's EQE observer: it records the EQE, or, while
// completionEQE posts a command's completion, holds it so that the
// command's record comes first.
func (p *PF) eqePosted(vf, eqn int, eqe *[mlx4.EQESize]byte) {
	if !p.trace.Enabled() {
		return
	}
	typ := eqe[mlx4.EQEType]
	var token uint16
	if typ == mlx4.EventCmd {
		token = binary.BigEndian.Uint16(eqe[mlx4.EQECmdToken:])
	}
	if p.holdEQE {
		p.held = heldEQE{vf: vf, eqn: eqn, token: token, held: true}
		return
	}
	p.trace.EQE(p.stamp(), vf, typ, eqn, token)
}

// flushEQE records the completion EQE held back by eqePosted.
func (p *PF) flushEQE() {
	if h := p.held; h.held {
		p.held.held = false
		if p.trace.Enabled() {
			p.trace.EQE(p.stamp(), h.vf, mlx4.EventCmd, h.eqn, h.token)
		}
	}
}
