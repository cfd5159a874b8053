package hca

// RC retries, spaced in time as the hardware spaces them.
//
// Two things make an RC requester send a packet again (IBA 9.7.5.2,
// 9.7.6.1): an RNR NAK (the responder had no receive WQE) and a lost packet
// (no ACK comes before the local ACK timeout: the DLID unreachable, a port
// on the way not Active, the P_Key refused, no QP there that takes it).
//
//   - RNR NAK: the requester waits the RNR timer the NAK carries, the
//     responder QP's min_rnr_timer (IBA table 45, mlx4.RNRTimer), and
//     sends again; after rnr_retry retries that met an RNR NAK again the
//     WQE completes with RNR_RETRY_EXC_ERR when the last NAK arrives.
//     rnr_retry 7 retries for ever.
//   - Lost: the requester waits the local ACK timeout (the path's
//     timeout, 4.096 µs × 2^timeout: mlx4.LocalAckTimeout) and sends
//     again; when the retry_cnt-th retry's timeout expires without an ACK
//     the WQE completes with TRANSPORT_RETRY_EXC_ERR. Timeout 0 disables
//     the timer: the WQE waits for ever (ibv_modify_qp(3)), and only
//     leaving RTS (ERR: the flush) ends the wait.
//
// Either way the WQE stays at SQHead and the WQEs behind it wait, in
// order, as on hardware. Until the retry's deadline runSQ does nothing for
// the QP and sqPending reports no work, so the sweeps and the poller's
// checks before it sleeps (SweepQueues, QueuesPending) see none and the
// poller sleeps, at most until the nearest deadline (NextRetry bounds its
// futex wait or nanosleep, vhcr/master poller.go). The QP is put on its
// hot list when it starts to wait (retryHot) and stays there (runHot does
// not count a waiting QP's empty turns), where the first scan past the
// deadline tries the WQE again. A retry that finds the receive WQE, or the route back
// (the LFT restored, the port Active again), completes as any other.
//
// The clock. The engine reads h.now only to set a deadline and, while a
// QP waits, to check it: a QP with no retry pending pays one load of
// wq.rt.wait per runSQ and sqPending. h.clock is the test rig's hook; by
// default the poller's cycle counter (vhcr/internal/tick) in nanoseconds.
//
// A restart. The retry state is runtime only (on wq, which a restarted PF
// builds again from the state file): a WQE that was waiting is tried again
// at the new PF's first scan, and its tries count from zero. That is at
// most more retries than the QP asked for, never a WQE lost or executed
// twice: the WQE has not completed (its SQHead has not moved), and an RNR
// NAK or a lost packet changed nothing at the responder.

import (
	"github.com/vhcrd/vhcrd/vhcr/internal/tick"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// sqRetry is the retry state of the WQE at a QP's SQHead (transient).
type sqRetry struct {
	wait      bool   // the WQE waits for a retry
	forever   bool   // lost with ACK timeout 0: no deadline
	fail      bool   // lost after the last retry: at the deadline the WQE fails
	op        uint8  // the WQE's opcode (the error CQE's)
	rnrTries  uint8  // RNR NAKs retried for this WQE
	lostTries uint8  // transport retries for this WQE
	deadline  uint64 // h.now at which the WQE is tried again (or fails)
}

// now is the engine's clock in nanoseconds: the test rig's hook, or the
// cycle counter the poller reads.
func (h *HCA) now() uint64 {
	if h.clock != nil {
		return h.clock()
	}
	return tick.ToNS(tick.Now(), tick.PerNS())
}

// SetClock replaces the engine's clock (nanoseconds) for the RC retries'
// deadlines: a test that steps the PF's scans itself moves time by hand
// and sees each retry when it says. nil is the poller's cycle counter. Call
// it while no scan runs.
func (h *HCA) SetClock(clock func() uint64) { h.clock = clock }

// sqWaiting reports whether qp's WQE at SQHead waits for a retry whose
// deadline has not come: nothing to do for the QP now.
func (h *HCA) sqWaiting(w *wq) bool {
	r := &w.rt
	return r.wait && (r.forever || h.now() < r.deadline)
}

// retryPending reports whether qp's WQE at SQHead waits for a retry (its
// deadline come or not): one load, no clock.
func retryPending(qp *qpObj) bool { return qp.wq != nil && qp.wq.rt.wait }

// retryDue is runSQ's step for a QP whose WQE waited and whose deadline
// came: the wait ends and the WQE is tried again (false), or, lost after
// its last retry, it fails with transport retry exceeded (true: consumed).
func (h *HCA) retryDue(qp *qpObj) bool {
	r := &qp.wq.rt
	r.wait = false
	if !r.fail {
		return false
	}
	h.sqError(qp, r.op, mlx4.CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR)
	return true
}

// rnr handles an RNR NAK from dq for the WQE at SQHead: a retry after dq's
// RNR timer (false: not consumed) or, the retries spent, RNR retry
// exceeded at once.
func (h *HCA) rnr(qp, dq *qpObj, op uint8) bool {
	w := qp.wq
	r := &w.rt
	if w.rnrRetry != mlx4.RNRRetryInfinite && r.rnrTries >= w.rnrRetry {
		h.sqError(qp, op, mlx4.CQE_SYNDROME_RNR_RETRY_EXC_ERR)
		return true
	}
	if w.rnrRetry != mlx4.RNRRetryInfinite {
		r.rnrTries++
	}
	h.fw.vfs[w.vf].eng.RNRRetries.Add(1)
	r.wait, r.forever, r.fail, r.op = true, false, false, op
	r.deadline = h.now() + uint64(mlx4.RNRTimer(dq.wq.minRNRTimer))
	h.retryHot(qp)
	return false
}

// lost handles an RC packet that no ACK answers: the WQE waits the local
// ACK timeout, then is sent again (retry_cnt times) or fails.
func (h *HCA) lost(qp *qpObj, op uint8) bool {
	w := qp.wq
	r := &w.rt
	r.wait, r.op = true, op
	to := mlx4.LocalAckTimeout(w.ackTimeout)
	if r.forever = to == 0; r.forever {
		return false
	}
	if r.fail = r.lostTries >= w.retry; !r.fail {
		r.lostTries++
		h.fw.vfs[w.vf].eng.TransportRetries.Add(1)
	}
	r.deadline = h.now() + uint64(to)
	h.retryHot(qp)
	return false
}

// retryHot puts a QP whose WQE now waits on its VF's hot list (if it is
// attached), where each scan looks at the deadline and NextRetry finds it.
func (h *HCA) retryHot(qp *qpObj) {
	if q := h.sched.byQPN[uint32(qp.tr.ID)]; q != nil {
		h.sched.heat(q)
	}
}

// NextRetry reports how long, in nanoseconds of the engine's clock, until
// the nearest RC retry deadline of an attached QP (0: one is due), and
// false when no QP waits for one with a deadline (none waits, or only with
// ACK timeout 0, which only leaving RTS ends). The poller bounds its sleep
// by it (vhcr/master), so a retry runs at about its deadline and not at
// the next unrelated wake-up. It looks at the hot QPs only: a QP whose
// WQE waits is kept hot (retryHot, runHot).
func (h *HCA) NextRetry() (int64, bool) {
	s := &h.sched
	next, ok := h.aliasNext() // the alias GUID registration's resend (aliasguid.go)
	for _, vf := range s.live {
		for _, q := range s.vfs[vf].hot {
			w := q.qp.wq
			if w == nil || !w.rt.wait || w.rt.forever || q.qp.Suspended || q.qp.State != mlx4.QP_STATE_RTS {
				continue // only RTS runs a retry (SQD drains nothing here, SUSPEND_QP stops all): no deadline to wake for
			}
			if !ok || w.rt.deadline < next {
				next, ok = w.rt.deadline, true
			}
		}
	}
	if !ok {
		return 0, false
	}
	now := h.now()
	if next <= now {
		return 0, true
	}
	return int64(next - now), true
}
