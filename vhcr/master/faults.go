package master

import (
	"errors"
	"fmt"

	"github.com/vhcrd/vhcrd/vhcr/faultinj"
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/internal/tick"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Injected faults (package faultinj's catalogue), carried out at the PF's
// hooks:
//
//	post path   post (PointPost: after admission; the fast path steps aside
//	            while a rule of the point is armed), process (the result:
//	            outbox field, immediate output), deliver (write-back,
//	            toggle), completionEQE (the completion EQE)
//	comm path   serve (PointComm: before the command is traced and served)
//	FLAGS       checkFlags (PointFlags: the reset request)
//	data path   cqeFault (PointCQE: every CQE the engine writes, through
//	            the hook fsync installs while such a rule is armed;
//	            faults_dp.go)
//	now         AddFault (once, when armed; before Run, when the poller
//	            starts)
//	timers      scan (deadlines checked between scans: a delayed answer,
//	            the end of an FLR or of an offline time, a late reset
//	            acknowledgement, a port coming back up)
//
// Each fault fired is counted by kind (the Set), traced (trace.KindFault)
// and logged, at most ten lines a second. With no rule armed and no VF
// held or offline, the PF's cost is one load and branch in postFast's
// guard (fmask) and one in scan (the timer list's length).

// ErrFault is wrapped by the errors of AddFault and ClearFaults.
var ErrFault = errors.New("master: fault injection")

// faultVF is one VF's fault state.
type faultVF struct {
	replay     bool   // serving a held command again: not a new occurrence
	held       bool   // a comm command held back (delay, pf_offline)
	heldWord   uint32 // its slave_write word
	offline    bool   // pf_offline: comm commands are held until it ends
	flagsHold  bool   // a reset request left unanswered (flags_no_ack, flags_late_ack)
	flagsWord  uint32 // the FLAGS word of that request
	irqDrop    int    // msix_drop: interrupts still to drop
	noResetCap bool   // no_vf_reset_cap: COMM_CHAN_CAPS bit 30 cleared
	// internalErr: internal_err fired; bit 17 stays in every reply until
	// the function is reset, as a PF in its error state leaves it (mlx4's
	// mlx4_report_internal_err_comm_event, then no acknowledgement
	// without it): a driver busy posting must still find it at its next
	// catas poll.
	internalErr bool
}

// timerWhat is what a fault timer does when its deadline passes.
type timerWhat uint8

const (
	timerRelease  timerWhat = iota + 1 // serve a held command
	timerEndFLR                        // flr_mid's end (EndFLR)
	timerOnline                        // pf_offline's end
	timerFlagsAck                      // flags_late_ack: reset and acknowledge
	timerPortUp                        // port_flap: the port back up
	timerPortDown                      // port_flap: the next cycle
)

// faultTimer is a deadline in ticks, checked between scans.
type faultTimer struct {
	at   uint64
	what timerWhat
	vf   int
	word uint32 // timerRelease: the held word; timerFlagsAck: the FLAGS word
	port int
	n    int    // port_flap: cycles left
	us   uint64 // port_flap: the down time
}

// deadline is us µs from now, in ticks.
func deadline(us uint64) uint64 {
	return tick.Now() + uint64(float64(us)*1000*tick.PerNS())
}

// fsync recomputes the PF's cached masks after a change of the rules or
// of a VF's state: fmask has PointPost where the fast path must step
// aside and PointComm where serve asks commFault.
func (p *PF) fsync() {
	p.farmed = p.faults.Armed()
	p.fmask = p.farmed
	if p.foffline > 0 {
		p.fmask |= faultinj.PointPost | faultinj.PointComm
	}
	p.cqeHook()
}

func (p *PF) addTimer(t faultTimer) { p.ftimers = append(p.ftimers, t) }

// runTimers fires the timers whose deadline passed (scan calls it while
// there are any).
func (p *PF) runTimers() {
	now := tick.Now()
	for k := 0; k < len(p.ftimers); {
		t := p.ftimers[k]
		if now < t.at {
			k++
			continue
		}
		last := len(p.ftimers) - 1
		p.ftimers[k] = p.ftimers[last]
		p.ftimers = p.ftimers[:last]
		p.fireTimer(t)
	}
}

func (p *PF) fireTimer(t faultTimer) {
	st := &p.vfs[t.vf]
	switch t.what {
	case timerRelease:
		p.release(t.vf, t.word)
	case timerEndFLR:
		if st.lastCmd == mlx4.MLX4_COMM_CMD_FLR {
			if p.trace.Enabled() {
				p.trace.FLR(p.stamp(), t.vf, false)
			}
			st.lastCmd = mlx4.MLX4_COMM_CMD_RESET
			p.persistVF(t.vf)
		}
	case timerOnline:
		if st.offline() {
			st.fault.offline = false
			p.foffline--
			st.flags.Store(st.flags.Load() &^ mlx4.CommFlagsOffline)
			p.fsync()
			if st.fault.held {
				p.release(t.vf, st.fault.heldWord)
			}
		}
	case timerFlagsAck:
		if st.fault.flagsHold && st.flags.Load() == t.word {
			st.fault.flagsHold = false
			p.answerFlags(t.vf, st, t.word)
		}
	case timerPortUp:
		p.setPort(t.port, "active")
		if t.n > 1 {
			t.what, t.n, t.at = timerPortDown, t.n-1, deadline(t.us)
			p.addTimer(t)
		}
	case timerPortDown:
		p.setPort(t.port, "down")
		t.what, t.at = timerPortUp, deadline(t.us)
		p.addTimer(t)
	}
}

func (st *vfChannel) offline() bool { return st.fault.offline }

// hold keeps VF i's comm command w back: served when a timer at `at`
// releases it (at 0: when pf_offline ends), unless the VF has written
// another command by then.
func (p *PF) hold(i int, w uint32, at uint64) {
	st := &p.vfs[i]
	st.fault.held, st.fault.heldWord = true, w
	if at != 0 {
		p.addTimer(faultTimer{at: at, what: timerRelease, vf: i, word: w})
	}
}

// release serves VF i's held command w, if it is still the one in
// slave_write; a held command the VF replaced is dropped (the new one was
// served by the scans meanwhile).
func (p *PF) release(i int, w uint32) {
	st := &p.vfs[i]
	if !st.fault.held || st.fault.heldWord != w {
		return
	}
	if st.offline() {
		return // still offline: the end of the offline time serves it
	}
	st.fault.held = false
	if st.sw.Load() != w || st.lastWord != w {
		return
	}
	st.fault.replay = true
	p.serve(i, w)
	st.fault.replay = false
}

// injected traces and logs a fault that fired (the Set counted it).
func (p *PF) injected(vf int, r *faultinj.Rule, pt faultinj.Point, op mlx4.Opcode, comm mlx4.CommCmd) {
	if p.trace.Enabled() {
		p.trace.Fault(p.stamp(), vf, uint8(r.Kind), uint32(r.ID), uint8(pt), op, uint8(comm))
	}
	if p.flimit.allow() {
		at := pt.String()
		switch pt {
		case faultinj.PointPost:
			at += " " + op.String()
		case faultinj.PointComm:
			at += " " + comm.String()
		}
		p.log.Warn("fault injected", "kind", r.Kind.String(), "rule", r.ID, "vf", vf, "at", at)
	}
}

// commFault is serve's hook for VF i's comm command cmd (slave_write w):
// it holds the command while the VF is offline, and asks the rules of
// PointComm. It reports whether it took the command over (held, dropped,
// or served and answered its own way).
func (p *PF) commFault(i int, st *vfChannel, w uint32, cmd mlx4.CommCmd, param uint16, toggle uint32) bool {
	if st.offline() {
		p.hold(i, w, 0)
		return true
	}
	if st.fault.replay || cmd == mlx4.MLX4_COMM_CMD_VHCR_POST || st.lastCmd == mlx4.MLX4_COMM_CMD_FLR || p.farmed&faultinj.PointComm == 0 {
		return false
	}
	r := p.faults.Match(faultinj.PointComm, i, int(cmd), false)
	if r == nil {
		return false
	}
	p.injected(i, r, faultinj.PointComm, 0, cmd)
	switch r.Kind {
	case faultinj.Delay:
		p.hold(i, w, deadline(r.Params.US))
	case faultinj.Never:
		p.leaveUnanswered(i)
	case faultinj.FLRMid:
		p.faultFLR(i, r.Params.US)
	case faultinj.VFReset:
		p.traceComm(i, cmd, toggle, param)
		p.violation(i, toggle, ResetFault, "injected fault", w)
	case faultinj.PFOffline:
		p.setOffline(i, r.Params.US)
		p.hold(i, w, 0)
	case faultinj.ResetVersion:
		p.traceComm(i, cmd, toggle, param)
		p.resetFunction(i, ResetByVF)
		p.acknowledge(i, cmd, toggle|uint32(r.Params.Version))
		p.journal.ResetAcked()
	case faultinj.ToggleNever, faultinj.ToggleTwice, faultinj.InternalErr:
		p.traceComm(i, cmd, toggle, param)
		reply, ok := p.command(i, st, w, cmd, param, toggle)
		if !ok {
			return true
		}
		switch r.Kind {
		case faultinj.ToggleNever:
			st.lastCmd = cmd
			p.persistVF(i)
			p.leaveUnanswered(i)
		case faultinj.ToggleTwice:
			p.acknowledge(i, cmd, reply)
			st.reply(reply ^ mlx4.CommToggle)
			p.leaveUnanswered(i)
		default:
			p.acknowledge(i, cmd, reply|mlx4.COMM_CHAN_EVENT_INTERNAL_ERR)
		}
		if cmd == mlx4.MLX4_COMM_CMD_RESET {
			p.journal.ResetAcked()
		}
	default:
		p.act(i, r) // an event or a port change at this command; the command is served
		return false
	}
	return true
}

// postFault is post's hook: rule r fired at VF i's command x (admitted).
// It reports whether it took the command over (held, dropped, an FLR, a
// reset); otherwise x goes on, with x.fault set for the kinds that act on
// its result, write-back, toggle or EQE.
func (p *PF) postFault(x *inflight, r *faultinj.Rule) bool {
	i, st := x.vf, &p.vfs[x.vf]
	p.injected(i, r, faultinj.PointPost, x.c.Op, 0)
	switch r.Kind {
	case faultinj.Status:
		if r.Params.Status != mlx4.OK {
			// Not executed; OK leaves the command as it was.
			x.status = x.c.Refuse(r.Params.Status, refusal.Injected)
		}
	case faultinj.Delay:
		p.hold(i, st.lastWord, deadline(r.Params.US))
		return true
	case faultinj.Never:
		p.leaveUnanswered(i)
		return true
	case faultinj.FLRMid:
		p.traceComm(i, mlx4.MLX4_COMM_CMD_VHCR_POST, x.toggle, 0)
		p.faultFLR(i, r.Params.US)
		return true
	case faultinj.VFReset:
		p.traceComm(i, mlx4.MLX4_COMM_CMD_VHCR_POST, x.toggle, 0)
		p.violation(i, x.toggle, ResetFault, "injected fault", st.lastWord)
		return true
	case faultinj.InternalErr, faultinj.ToggleNever, faultinj.ToggleTwice, faultinj.NoWriteback,
		faultinj.OutboxField, faultinj.OutParam, faultinj.EQEDrop, faultinj.EQEDup, faultinj.EQEToken, faultinj.EQEStatus:
		x.fault = r
	default:
		p.act(i, r)
	}
	return false
}

// faultResult is process's hook between execute and deliver: a result
// changed before it is delivered (the journal keeps the true one).
func (p *PF) faultResult(x *inflight) {
	switch r := x.fault; r.Kind {
	case faultinj.OutboxField:
		if x.status == mlx4.OK && x.c.Outbox != nil {
			r.Params.Field.Apply(p.outbox[:], r.Params.Value)
		}
	case faultinj.OutParam:
		x.c.OutParam = r.Params.Value
	}
}

// faultAck is the acknowledgement of command x under a toggle or
// internal-error fault; false: x's fault is not one of those.
func (p *PF) faultAck(x *inflight) bool {
	st := &p.vfs[x.vf]
	switch x.fault.Kind {
	case faultinj.ToggleNever:
		st.lastCmd = mlx4.MLX4_COMM_CMD_VHCR_POST
		p.persistVF(x.vf)
		p.leaveUnanswered(x.vf)
	case faultinj.ToggleTwice:
		p.acknowledge(x.vf, mlx4.MLX4_COMM_CMD_VHCR_POST, x.toggle)
		st.reply(x.toggle ^ mlx4.CommToggle)
		p.leaveUnanswered(x.vf)
	case faultinj.InternalErr:
		st.fault.internalErr = true
		p.acknowledge(x.vf, mlx4.MLX4_COMM_CMD_VHCR_POST, x.toggle)
	default:
		return false
	}
	return true
}

// eqeFaulted applies the completion-EQE fault f to the EQE in p.eqe
// (token, status) for VF i; true: the EQE is not to be posted (dropped,
// or posted here twice).
func (p *PF) eqeFaulted(i int, f *faultinj.Rule, token uint16, status mlx4.Status, out uint64) bool {
	switch f.Kind {
	case faultinj.EQEDrop:
		return true
	case faultinj.EQEToken:
		mlx4.CompletionEQE(&p.eqe, token^f.Params.XOR, status, out)
	case faultinj.EQEStatus:
		mlx4.CompletionEQE(&p.eqe, token, f.Params.Status, out)
	case faultinj.EQEDup:
		p.postCompletion(i)
		p.postCompletion(i)
		return true
	}
	return false
}

// faultFLR begins an FLR of VF i as BeginFLR does (on the poller), ended
// us µs later by a timer.
func (p *PF) faultFLR(i int, us uint64) {
	if p.trace.Enabled() {
		p.trace.FLR(p.stamp(), i, true)
	}
	p.resetFunction(i, ResetFLR)
	st := &p.vfs[i]
	st.lastCmd = mlx4.MLX4_COMM_CMD_FLR
	p.persistVF(i)
	st.raiseSR(mlx4.COMM_CHAN_EVENT_INTERNAL_ERR)
	p.addTimer(faultTimer{at: deadline(us), what: timerEndFLR, vf: i})
}

// setOffline marks VF i's comm channel offline for us µs.
func (p *PF) setOffline(i int, us uint64) {
	st := &p.vfs[i]
	if !st.fault.offline {
		st.fault.offline = true
		p.foffline++
		p.fsync()
	}
	st.flags.Store(st.flags.Load() | mlx4.CommFlagsOffline)
	p.addTimer(faultTimer{at: deadline(us), what: timerOnline, vf: i})
}

// flagsFault is checkFlags' hook: VF i's reset request (FLAGS word f).
// It reports whether the request is left to the fault.
func (p *PF) flagsFault(i int, st *vfChannel, f uint32) bool {
	r := p.faults.Match(faultinj.PointFlags, i, 0, false)
	if r == nil {
		return false
	}
	p.injected(i, r, faultinj.PointFlags, 0, 0)
	switch r.Kind {
	case faultinj.FlagsNoAck:
		st.fault.flagsHold, st.fault.flagsWord = true, f
	case faultinj.FlagsLateAck:
		st.fault.flagsHold, st.fault.flagsWord = true, f
		p.addTimer(faultTimer{at: deadline(r.Params.US), what: timerFlagsAck, vf: i, word: f})
	case faultinj.FlagsAckNoReset:
		st.flags.Store(flagsAcked(f))
	default:
		return false
	}
	return true
}

// act carries out an event, port or channel-register kind for VF vf
// (Any: every VF, for the kinds that are per VF).
func (p *PF) act(vf int, r *faultinj.Rule) {
	perVF := r.Kind.Info().Group != faultinj.GroupPort
	if perVF && vf == faultinj.Any {
		for i := range p.vfs {
			p.actVF(i, r)
		}
		return
	}
	p.actVF(vf, r)
}

func (p *PF) actVF(vf int, r *faultinj.Rule) {
	pr := &r.Params
	var st *vfChannel
	if vf >= 0 {
		st = &p.vfs[vf]
	}
	var err error
	switch r.Kind {
	case faultinj.InternalErr:
		st.fault.internalErr = true
		st.raiseSR(mlx4.COMM_CHAN_EVENT_INTERNAL_ERR)
	case faultinj.VFReset:
		p.violation(vf, st.ack, ResetFault, "injected fault", st.lastWord)
	case faultinj.PFOffline:
		p.setOffline(vf, pr.US)
	case faultinj.NoVFResetCap:
		st.fault.noResetCap = true
		st.caps.Store(st.caps.Load() &^ mlx4.CommCapsVFReset)
	case faultinj.EQOverrun:
		e := mlx4.EncodeEQE(mlx4.EQE{Type: mlx4.EventEQOverflow, Object: uint32(pr.EQN)})
		err = p.hca.PostEQE(vf, mlx4.EventEQOverflow, &e)
	case faultinj.EQFull:
		p.hca.DropEvents(vf, pr.Count)
	case faultinj.MSIXDrop:
		if p.irqs == nil {
			err = errors.New("no MSI-X delivery")
			break
		}
		if !p.irqWrapped {
			p.irqWrapped = true
			p.hca.SetInterrupts(faultIRQ{p})
		}
		st.fault.irqDrop += pr.Count
	case faultinj.MSIXSpurious:
		if p.irqs == nil {
			err = errors.New("no MSI-X delivery")
			break
		}
		err = p.irqs.Raise(vf, pr.Vector)
	case faultinj.PortFlap:
		p.setPort(pr.Port, "down")
		p.addTimer(faultTimer{at: deadline(pr.US), what: timerPortUp, port: pr.Port, n: pr.Count, us: pr.US})
	case faultinj.LIDChange, faultinj.SMLIDChange, faultinj.PKeyChange, faultinj.GUIDChange, faultinj.ClientRereg, faultinj.GIDPrefixChange:
		_, err = p.hca.InjectPortChange(pr.Port, portInjection(vf, r))
	}
	if err != nil && p.flimit.allow() {
		p.log.Warn("fault not carried out", "kind", r.Kind.String(), "rule", r.ID, "vf", vf, "err", err)
	}
}

// portInjection is a port kind's change for the HCA.
func portInjection(vf int, r *faultinj.Rule) hca.PortInjection {
	pr := &r.Params
	in := hca.PortInjection{VF: vf}
	switch r.Kind {
	case faultinj.LIDChange:
		in.What, in.LID = hca.InjectLID, pr.LID
	case faultinj.SMLIDChange:
		in.What, in.SMLID = hca.InjectSMLID, pr.LID
	case faultinj.PKeyChange:
		in.What, in.PKeyIndex, in.PKey = hca.InjectPKey, pr.Index, pr.PKey
	case faultinj.GUIDChange:
		in.What, in.GUID = hca.InjectGUID, pr.GUID
	case faultinj.ClientRereg:
		in.What = hca.InjectClientRereg
	case faultinj.GIDPrefixChange:
		in.What, in.GIDPrefix = hca.InjectGIDPrefix, pr.Prefix
	}
	return in
}

// setPort takes a physical port down or up (the admin port command's
// change).
func (p *PF) setPort(port int, state string) {
	if _, err := p.hca.SetPortState(port, state); err != nil && p.flimit.allow() {
		p.log.Warn("fault: port state not changed", "port", port, "state", state, "err", err)
	}
}

// faultIRQ is the MSI-X delivery while msix_drop rules are in use: a VF's
// interrupts still to drop are not raised.
type faultIRQ struct{ p *PF }

func (f faultIRQ) Raise(vf, vector int) error {
	if vf >= 0 && vf < len(f.p.vfs) {
		if d := &f.p.vfs[vf].fault.irqDrop; *d > 0 {
			*d--
			return nil
		}
	}
	return f.p.irqs.Raise(vf, vector)
}

// fireNow fires a rule of PointNow (on the poller).
func (p *PF) fireNow(r *faultinj.Rule) {
	if !p.faults.FireNow(r) {
		return
	}
	vf := r.VF
	p.injected(vf, r, faultinj.PointNow, 0, 0)
	p.act(vf, r)
	p.fsync()
}

// AddFault arms a fault rule (faultinj.Spec) and returns it as armed. A
// rule that fires now fires at once, or when the poller starts if it has
// not.
func (p *PF) AddFault(s faultinj.Spec) (faultinj.RuleStatus, error) {
	var out faultinj.RuleStatus
	var err error
	if derr := p.Do(func() {
		var r *faultinj.Rule
		if r, err = p.faults.Add(s); err != nil {
			return
		}
		if r.Point == faultinj.PointNow {
			if p.running.Load() {
				p.fireNow(r)
			} else {
				p.fnow = append(p.fnow, r)
			}
		}
		p.fsync()
		out = r.Status()
	}); derr != nil {
		return out, derr
	}
	if err != nil {
		return out, fmt.Errorf("%w: %w", ErrFault, err)
	}
	return out, nil
}

// Faults lists the armed rules with their counts.
func (p *PF) Faults() ([]faultinj.RuleStatus, error) {
	var out []faultinj.RuleStatus
	err := p.Do(func() {
		for _, r := range p.faults.Rules() {
			out = append(out, r.Status())
		}
	})
	return out, err
}

// ClearFaults disarms rule id (0: every rule) and returns how many it
// removed; an unknown id is an error. What a cleared no_vf_reset_cap
// changed is restored; faults already under way (a held command, an
// offline time, an FLR, a port flap) run their course.
func (p *PF) ClearFaults(id int) (int, error) {
	n := 0
	if err := p.Do(func() {
		rs := p.faults.Clear(id)
		n = len(rs)
		keep := p.fnow[:0]
		for _, r := range p.fnow {
			if id != 0 && r.ID != id {
				keep = append(keep, r) // still armed: fires when the poller starts
			}
		}
		p.fnow = keep
		for _, r := range rs {
			for i := range p.vfs {
				st := &p.vfs[i]
				if r.VF != faultinj.Any && r.VF != i {
					continue
				}
				switch {
				case r.Kind == faultinj.NoVFResetCap && st.fault.noResetCap:
					st.fault.noResetCap = false
					st.caps.Store(st.caps.Load() | mlx4.CommCapsVFReset)
				case (r.Kind == faultinj.FlagsNoAck || r.Kind == faultinj.FlagsLateAck) && st.fault.flagsHold:
					// The request the rule left unanswered is the PF's
					// again: checkFlags answers it at its next scan, as it
					// would have without the fault (a VF whose request
					// stays unanswered finds FLAGS out of sync at its next
					// reset: "Communication channel isn't sync").
					st.fault.flagsHold = false
				}
			}
		}
		p.fsync()
	}); err != nil {
		return 0, err
	}
	if n == 0 && id != 0 {
		return 0, fmt.Errorf("%w: no rule %d", ErrFault, id)
	}
	return n, nil
}

// FaultsInjected copies the faults fired so far, by kind, into dst.
func (p *PF) FaultsInjected(dst *[faultinj.NumKinds]uint64) error {
	return p.Do(func() { p.faults.InjectedAll(dst) })
}

// fireStartFaults fires the rules armed before the poller started that
// fire now (loop's start, after the comm pages went online).
func (p *PF) fireStartFaults() {
	for _, r := range p.fnow {
		p.fireNow(r)
	}
	p.fnow = nil
}
