package master

// dataPathBudget bounds the WQEs the data path executes per scan, across
// all VFs (hca.HCA.ServiceQueues shares it fairly): with 64-byte SENDs at
// about 0.1 µs each, a scan with data-path work delays the next look at
// the comm channels by a few microseconds at most.
const dataPathBudget = 64

// uarWord reads the 32-bit big-endian word at byte offset off of VF vf's
// BAR region (its UAR pages: the send doorbell at MLX4_SEND_DOORBELL, the
// CQ doorbell at MLX4_CQ_DOORBELL) with one load, for the data path's
// scheduler (hca.HCA.SetUARReader). Offsets outside the region or not
// 4-byte aligned read nothing; nothing allocates.
func (p *PF) uarWord(vf int, off uint64) (uint32, bool) {
	if vf < 0 || vf >= len(p.vfs) || off%4 != 0 {
		return 0, false
	}
	r := p.vfs[vf].bar
	if size := r.Size(); size < 4 || off > uint64(size-4) {
		return 0, false
	}
	v, err := r.Load32(int64(off))
	return v, err == nil
}

// sweepQueues is the idle checkpoint's look at every attached send queue
// by ownership (hca.HCA.SweepQueues): where one has work, it is run at once
// and the poller is busy again. A queue that looks valid but runs nothing
// (the engine waiting, e.g. on an RNR timer) does not keep the poller from
// sleeping.
func (p *PF) sweepQueues() bool {
	return p.hca.SweepQueues() > 0 && p.hca.ServiceQueues(dataPathBudget) > 0
}

// attachDataPath gives the HCA the state file's data-path region (the
// positions of QPs, SRQs and CQs, the step record, the atomic intent:
// hca's dplog.go, pfstate's datapath.go) once the model is restored: the
// positions are applied over the checkpoint and the journal, and a step
// the previous PF committed and did not finish is redone before any scan.
// The kill points it passes are the journal's (dp-intent, dp-effects,
// dp-cqe, dp-commit-torn). State that was not trusted leaves nothing of
// the region.
func (p *PF) attachDataPath(ps *pstate) {
	dp := ps.b[ps.g.DP.Off:ps.g.DP.End()]
	if p.stateCause != "" {
		clear(dp)
	}
	k := p.journal.points()
	if p.hca.AttachDataPathLog(dp, k.hit) {
		p.stats.DPRedone++
	}
}
