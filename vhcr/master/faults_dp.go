package master

import (
	"github.com/vhcrd/vhcrd/vhcr/faultinj"
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// The data path's injected faults (faultinj's data_path kinds, at
// PointCQE): fsync installs cqeFault as the work-request engine's hook
// while a rule of the point is armed, and removes it when none is, so
// that a CQE costs the engine one load and a branch when no rule is
// armed. The engine asks the hook once per CQE it writes and carries the
// answer out (vhcr/hca dpfault.go); here the rules are asked, the fault
// counted (the Set), traced and logged as every other kind.

// cqeHook installs or removes the engine's hook after a change of the
// armed points.
func (p *PF) cqeHook() {
	if p.hca == nil {
		return
	}
	if p.farmed&faultinj.PointCQE == 0 {
		if p.cqeHooked {
			p.hca.SetCQEFaults(nil)
			p.cqeHooked = false
		}
		return
	}
	if !p.cqeHooked {
		p.hca.SetCQEFaults(p.cqeFault)
		p.cqeHooked = true
	}
}

// cqeFault is the engine's hook: the rules of PointCQE asked for
// completion c, keyed by its work request's opcode (RECV for a
// receive), qualified by its success (cqe_error fires at successful
// completions only).
func (p *PF) cqeFault(c hca.Completion) hca.CQEFault {
	key := faultinj.CQEKey(c.Recv, c.Op)
	r := p.faults.Match(faultinj.PointCQE, c.VF, key, c.OK)
	if r == nil {
		return hca.CQEFault{}
	}
	if p.trace.Enabled() {
		p.trace.Fault(p.stamp(), c.VF, uint8(r.Kind), uint32(r.ID), uint8(faultinj.PointCQE), mlx4.Opcode(key), 0)
	}
	if p.flimit.allow() {
		p.log.Warn("fault injected", "kind", r.Kind.String(), "rule", r.ID, "vf", c.VF,
			"at", "cqe "+faultinj.CQEKeyName(key), "qpn", c.QPN, "cqn", c.CQN)
	}
	switch r.Kind {
	case faultinj.CQEError:
		return hca.CQEFault{Action: hca.CQEError, Syndrome: r.Params.Syndrome, Vendor: r.Params.Vendor}
	case faultinj.CQEDrop:
		return hca.CQEFault{Action: hca.CQEDrop}
	case faultinj.CQEDup:
		return hca.CQEFault{Action: hca.CQEDup}
	case faultinj.CQOverrun:
		return hca.CQEFault{Action: hca.CQEOverrun}
	}
	return hca.CQEFault{}
}
