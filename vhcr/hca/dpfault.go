package hca

// Injected faults on the data path: faultinj's data_path kinds, which the
// PF selects and traces (vhcr/master's faults.go) and the engine carries
// out here, at the one place every CQE passes (cqe, sq.go).
//
// While no data-path rule is armed the PF installs no hook, and a CQE
// costs one load and a branch more (h.cqeHook). With a hook the engine
// asks it once per CQE — send or receive, success or error, flushes
// included — with the completion's VF, its work request's opcode (a
// receive: Recv), whether it is a success, its QP and CQ; the hook answers
// what to do:
//
//   - CQEError (a successful completion only): the CQE is written as the
//     device writes an error CQE (struct mlx4_err_cqe: the QPN, wqe_index
//     and send bit kept, the opcode MLX4_CQE_OPCODE_ERROR, the syndrome and
//     vendor_err_syndrome; the rest zero), and the QP does what it does
//     after an error completion of its own: a send takes the QP out of RTS
//     (RC to ERR, UD and UC to SQER: sqLeave), a receive takes the QP to
//     ERR; every work request after it completes with WR_FLUSH_ERR, now
//     and as the VF posts more. The data the message carried has landed
//     (the fault is the completion's, not the transfer's), and the
//     requester of a faulted receive completes as it would have.
//   - CQEDrop: the CQE is not written; the work request stays complete
//     for the device (its WQE consumed, the QP's state as it was).
//   - CQEDup: the CQE is written twice, at two producer indexes, each with
//     its pass's owner bit.
//   - CQEOverrun: the CQ overruns at this CQE as a full CQ does (writeCQE):
//     the CQE dropped, the CQ in error with the overrun syndrome, the CQ
//     error event to the VF's EQ mapped for it, no CQE written to it until
//     it is destroyed; counted as an overrun.
//
// With the state file's data-path log the decision is taken before the
// step's CQEs are held back, so the step record holds what the VF is to
// see: the error CQE, no CQE, the CQE twice, or the overrun (a flagged
// entry, pfstate.StepOverrun), and a restarted PF that redoes the step
// redoes the fault and asks no rule again.

import (
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// CQEAction is what an injected fault does with one completion.
type CQEAction uint8

// The actions of a CQEFault.
const (
	CQEWrite   CQEAction = iota // no fault: the CQE is written
	CQEError                    // written as an error CQE; the QP leaves RTS and flushes
	CQEDrop                     // not written
	CQEDup                      // written twice
	CQEOverrun                  // the CQ overruns at it
)

// Completion is a CQE the engine is about to write, as the fault hook
// sees it.
type Completion struct {
	VF   int
	Recv bool   // a receive completion (else a send's)
	Op   uint8  // a send's WQE opcode (mlx4.OPCODE_*)
	OK   bool   // a successful completion (not an error or flush CQE)
	QPN  uint32 // its QP
	CQN  uint32 // its CQ
}

// CQEFault is the hook's answer: the action and, for CQEError, the
// error CQE's syndrome and vendor syndrome.
type CQEFault struct {
	Action   CQEAction
	Syndrome uint8
	Vendor   uint8
}

// CQEFaultHook decides the fault of one completion (on the poller; it
// must not allocate).
type CQEFaultHook func(c Completion) CQEFault

// SetCQEFaults installs hook, asked for every CQE the engine writes; nil
// removes it (the PF installs one only while a data-path rule is armed).
// Runs on the poller.
func (h *HCA) SetCQEFaults(hook CQEFaultHook) { h.cqeHook = hook }

// cqeFault asks the hook about qp's CQE e on CQ cqn (op: a send's WQE
// opcode) and carries its answer out; false: no fault, cqe writes it.
func (h *HCA) cqeFault(qp *qpObj, op uint8, cqn uint32, e *mlx4.CQE, solicited bool) bool {
	w := qp.wq
	f := h.cqeHook(Completion{VF: w.vf, Recv: !e.IsSend, Op: op, OK: !e.IsError(), QPN: w.qpn, CQN: cqn})
	switch f.Action {
	case CQEError:
		if e.IsError() {
			return false // the hook asks for success CQEs only; an error stays as it is
		}
		*e = mlx4.CQE{VlanMyQPN: e.VlanMyQPN, WQEIndex: e.WQEIndex, IsSend: e.IsSend}
		e.SetError(f.Syndrome, f.Vendor)
		h.completion(w.vf, cqn, e, true)
		// The work request is consumed (sqDone moved the send queue past
		// it, recvConsume the receive queue): the flush starts at the next.
		if e.IsSend {
			h.sqLeave(qp)
		} else {
			h.qpError(qp, 0)
		}
	case CQEDrop:
	case CQEDup:
		h.completion(w.vf, cqn, e, solicited)
		h.completion(w.vf, cqn, e, solicited)
	case CQEOverrun:
		if !h.dpHoldOverrun(cqn) {
			if h.overrunCQ(cqn) != nil {
				h.fw.vfs[w.vf].eng.CQEDrops.Add(1)
			}
		}
	default:
		return false
	}
	return true
}

// overrunCQ makes CQ cqn overrun as writeCQE does when the ring is full:
// the CQE its caller had is dropped, the CQ fails with the overrun
// syndrome (the CQ error event). ErrNoCQ, ErrCQFailed (already failed),
// ErrCQOverrun.
func (h *HCA) overrunCQ(cqn uint32) error {
	cq := h.fw.cqs[cqn&mlx4.ObjectMask]
	if cq == nil || cq.ring == nil || cq.tr.State != restrack.HW {
		return ErrNoCQ
	}
	if h.fw.quiet {
		return nil
	}
	st := &h.sched.stats[cq.ring.vf]
	st.CQEDropped.Add(1)
	if cq.Err != 0 {
		return ErrCQFailed
	}
	st.CQOverruns.Add(1)
	h.cqFail(cq, mlx4.CQErrOverrun)
	return ErrCQOverrun
}
