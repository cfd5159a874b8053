package master

import (
	"github.com/vhcrd/vhcrd/vhcr"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Completion by event: with the vHCR 'e' bit, a command completes with an
// EQE in the EQ the VF mapped for command completions.

// EventTypeCmd is the event type of command completions.
const EventTypeCmd = mlx4.EventCmd

// completionEQE reports a command's completion to VF i: the VF's token, the
// status and the immediate output (the seed's rule; mlx4 leaves both zero).
func (p *PF) completionEQE(i int, token uint16, status mlx4.Status, imm bool, out uint64) {
	if !imm {
		out = 0
	}
	mlx4.CompletionEQE(&p.eqe, token, status, out)
	p.holdEQE = true // recorded after the command (flushEQE)
	err := p.events.PostEQE(i, EventTypeCmd, &p.eqe)
	p.holdEQE = false
	if err != nil {
		if p.limit.allow() {
			p.log.Warn("completion EQE not delivered", "vf", i, "err", err)
		}
		return
	}
	p.stats.EQEs++
}

// eqDoorbell reads VF vf's EQ doorbell word for eqn (the HCA asks when an
// EQ looks full).
func (p *PF) eqDoorbell(vf, eqn int) (uint32, bool) {
	if vf < 0 || vf >= len(p.vfs) || eqn < 0 || eqn >= vhcr.MaxEQDoorbells {
		return 0, false
	}
	v, err := p.bar.Load32(p.lay.CommPage(vf) + vhcr.RegEQDoorbell + 4*int64(eqn))
	return v, err == nil
}
