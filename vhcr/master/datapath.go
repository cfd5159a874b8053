package master

import "time"

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

// sweepInterval bounds how often the idle checkpoints sweep every attached
// send queue: a full sweep costs 0.1–0.3 µs per attached QP, 0.3 µs and
// more from the cold caches of a wake (ARCHITECTURE.md), and the poller
// reaches a checkpoint at every wake (50 per second blocked on the futex,
// up to 5,000 with a guest attached): with 1,000 idle QPs a sweep every
// 50 ms was near 1 % of a CPU by itself. A doorbell the UAR hint cannot
// show (a cold QP storing the same word again while the poller is idle)
// waits at most this long; a busy poller's incremental sweep (4 QPs every
// 8 scans) finds it sooner.
const sweepInterval = 200 * time.Millisecond

// dataPath is the poller's data-path state: when it last swept.
type dataPath struct {
	last, every uint64 // tick.Now of the last full sweep; ticks between two
}

// sweepQueues is the idle checkpoint's look at every attached send queue
// by ownership (hca.HCA.SweepQueues), at most every sweepInterval: where
// one has work, it is run at once and the poller is busy again. A queue
// that looks valid but runs nothing (the engine waiting, e.g. on an RNR
// timer) does not keep the poller from sleeping.
func (p *PF) sweepQueues() bool {
	if p.hca.Attached() == 0 || p.now-p.dpath.last < p.dpath.every {
		return false
	}
	p.dpath.last = p.now
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

// sleepCheckQPs bounds the attached QPs the poller checks by ownership
// after it said it sleeps and before it blocks (hca.HCA.QueuesPending):
// about 0.1 µs each, a few µs per sleep; above it only the hot QPs are
// checked, and a send doorbell that rang in that window on a cold QP waits
// for the futex timeout or the next sweep.
const sleepCheckQPs = 64

// dataPathRang is the poller's re-check of the data path after it said it
// sleeps (HdrPFSleeping) and before it blocks: a VF that rang a send
// doorbell or armed a CQ before it saw the flag did not wake the futex. The
// UAR hints, the hot QPs and the watched CQs' arms are served
// (hca.HCA.ServiceQueues), and the attached QPs checked by ownership
// (hca.HCA.QueuesPending): work found is a reason not to block, as are
// MADs the tunnel queued meanwhile (hca.HCA.ServiceTunnel) and frames from
// an Ethernet port's uplink (hca.HCA.ServiceUplink).
func (p *PF) dataPathRang() bool {
	return p.hca.ServiceQueues(dataPathBudget) > 0 || p.hca.ServiceTunnel() > 0 || p.hca.ServiceUplink() > 0 ||
		p.hca.QueuesPending(sleepCheckQPs)
}
