package master

import (
	"context"
	"errors"
	"math"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/internal/futex"
	"github.com/vhcrd/vhcrd/vhcr/internal/tick"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// Idle is the idle policy of the poller. After the last work it spins
// (PAUSE) for SpinFor, then yields the CPU (sched_yield, so that a VF
// spinning on the same CPU runs) until YieldFor, then blocks: on the futex
// doorbell where the region is shared memory, at most FutexTimeout per
// wait, else in nanosleep with a backoff up to MaxSleep. Go's time.Sleep
// cannot sleep under about 1.1 ms on these machines, which is why the
// sleeps are raw syscalls on the locked thread. A zero field takes its
// default (DefaultIdle).
type Idle struct {
	SpinFor  time.Duration // default 50 µs
	YieldFor time.Duration // default 1 ms
	MaxSleep time.Duration // default 1 ms
	// FutexTimeout bounds one futex wait, so that FLAGS handshakes and
	// requests are seen even if no VF rings the doorbell. Default 20 ms.
	FutexTimeout time.Duration
	// GuestSleep bounds the sleeps while a guest's VF is attached
	// (GuestAttached): a guest's driver writes slave_write and cannot ring
	// the futex doorbell, so every sleep (futex wait or nanosleep) is a
	// timed one, an eighth of the time the poller has been idle
	// (guestSleepShare), from 50 µs up to GuestSleep, and the poller finds
	// a guest's command at the latest one sleep after it was posted: a
	// delay of at most an eighth of the gap before it, and at most
	// GuestSleep. Default 20 ms: a wake-up costs the 2-CPU VM about 55 µs
	// of CPU in the poller's thread and as much again in the Go runtime's
	// (perf puts a third to two fifths of an idle vhcrd's samples in
	// sysmon, whose naps follow the poller's wakes; both mostly in the
	// kernel's context switch), so that with 5 ms an idle guest cost vhcrd
	// 1.7-2.5 % of a CPU (the poller's thread 1.3 % in the run that
	// reported it), with 10 ms 1.3-2.0 % (0.6-0.9 %), with 20 ms 1.35 and
	// 1.59 % (0.63, 0.85 %), the guest's bind 0.94-0.96x its bind under
	// busy polling against 0.88-1.58x with 10 ms and 0.88-1.45x with 5 ms,
	// the spread of the measurement (200 µs: 21 %; hack/vmtest
	// BenchmarkGuestBindPolicy). A guest's command after an idle spell of
	// 160 ms or more waits up to 20 ms.
	GuestSleep time.Duration
	// Busy keeps the poller on its CPU: it never yields or blocks and
	// spins between scans however long it has been idle (one CPU at
	// 100 %), so that a command is found as soon as it is posted, a
	// guest's too. The chores a blocking poller does before each sleep
	// (FLAGS handshakes, re-arms with EQEs pending, the data path's
	// sweep) run every FutexTimeout instead.
	Busy bool
}

// DefaultIdle is the poller's default idle policy.
var DefaultIdle = Idle{SpinFor: 50 * time.Microsecond, YieldFor: time.Millisecond, MaxSleep: time.Millisecond, FutexTimeout: 20 * time.Millisecond,
	GuestSleep: 20 * time.Millisecond}

// withDefaults fills the zero fields of i from DefaultIdle.
func (i Idle) withDefaults() Idle {
	d := DefaultIdle
	for _, x := range []struct{ f, def *time.Duration }{{&i.SpinFor, &d.SpinFor}, {&i.YieldFor, &d.YieldFor}, {&i.MaxSleep, &d.MaxSleep}, {&i.FutexTimeout, &d.FutexTimeout}, {&i.GuestSleep, &d.GuestSleep}} {
		if *x.f <= 0 {
			*x.f = *x.def
		}
	}
	return i
}

// minSleepNS is the poller's first sleep of an idle period (ns).
const minSleepNS = 50_000

// ErrStopped is returned by Do when the poller has stopped.
var ErrStopped = errors.New("master: poller stopped")

// Run serves the VFs until ctx is done or Stop is called. It locks its
// goroutine to an OS thread. It clears the offline bit of every comm page when
// it starts, and when it returns every in-flight command has completed, the
// offline bit is set again and the comm pages are left as a restarted PF (or
// a VF's sync_toggles) can resynchronise from.
func (p *PF) Run(ctx context.Context) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if !p.running.CompareAndSwap(false, true) {
		return errors.New("master: Run called twice")
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			p.Stop()
		case <-done:
		}
	}()
	perNS := tick.PerNS()
	spin := uint64(float64(p.idle.SpinFor.Nanoseconds()) * perNS)
	yield := uint64(float64(p.idle.YieldFor.Nanoseconds()) * perNS)
	p.choresEvery = uint64(float64(p.idle.FutexTimeout.Nanoseconds()) * perNS)
	if p.idle.Busy {
		spin, yield = math.MaxUint64, math.MaxUint64
	}
	p.dpath.every = uint64(float64(sweepInterval.Nanoseconds()) * perNS)
	// The loop runs under bar.Guard (on this goroutine: the fault mode is
	// per goroutine), entered once and again after each fault it handled
	// (fault.go): a region that shrinks under the PF is an error, not a
	// SIGBUS.
	start := true
	for {
		err := bar.Guard(func() { p.loop(start, spin, yield) })
		start = false
		if err == nil {
			break
		}
		if err = p.fault(err); err != nil {
			p.shutdown()
			p.log.Error("stopped serving", "err", err)
			return err
		}
	}
	p.shutdown()
	return nil
}

// loop is Run's poll loop; start is true the first time it is entered.
// It returns when the PF is asked to stop.
func (p *PF) loop(start bool, spin, yield uint64) {
	if start {
		p.startServing()
	}
	var idleSince uint64
	idle := false
	idleScans := 0
	sleepNS := int64(minSleepNS)
	perNS := tick.PerNS()
	for {
		p.stats.Runs++
		if p.scan() {
			if p.stats.BusyRuns++; p.stats.BusyRuns&1023 == 0 {
				p.hca.CheckArms() // under load too (hca/irq.go)
				p.beat.Store(p.stats.Runs)
			}
			idle = false
			continue
		}
		if !idle {
			// The clock is read at the first checkpoint, not here: right
			// after a command the next post is likely on its way.
			idle, idleSince, idleScans, sleepNS = true, 0, 0, minSleepNS
			bar.Pause()
			continue
		}
		// Between polls while spinning: one PAUSE and nothing else, so that
		// detection costs what the physical limit's responder pays. The
		// clock, requests and the stop flag are looked at every 64 idle
		// scans.
		if idleScans++; idleScans&63 != 0 {
			bar.Pause()
			continue
		}
		if p.pending.Load() != 0 {
			p.runRequests()
			continue
		}
		if p.stopping.Load() {
			return
		}
		now := tick.Now()
		p.now = now
		p.beat.Store(p.stats.Runs)
		if idleSince == 0 {
			idleSince = now
			p.hca.CheckArms()
			if p.sweepQueues() {
				idle = false
				continue
			}
			if p.scans++; p.scans%64 == 0 {
				p.checkFlags()
			}
		}
		switch d := now - idleSince; {
		case d < spin:
			if p.idle.Busy && now-p.choresAt >= p.choresEvery && p.chores(now) {
				idle = false
				continue
			}
			bar.Pause()
		case d < yield:
			schedYield() // lets a VF spinning on this CPU run
		default:
			if p.chores(now) {
				idle = false
				continue
			}
			p.block(sleepNS)
			p.now = tick.Now() // the stamp of the commands that woke the poller
			sleepNS = p.nextSleep(sleepNS, int64(float64(p.now-idleSince)/perNS))
		}
	}
}

// startServing is the poll loop's first step: the comm pages online, the
// state file's serving mark, the faults armed for the start.
func (p *PF) startServing() {
	for i := range p.vfs {
		p.vfs[i].flags.Store(p.vfs[i].flags.Load() &^ mlx4.CommFlagsOffline)
	}
	p.pfState.Store(wire.PFStateServing)
	p.log.Info("serving", "vfs", len(p.vfs), "doorbell", p.doorbell != nil)
	p.fireStartFaults()
}

// chores is what the idle poller does before it blocks (Idle.Busy: every
// FutexTimeout): FLAGS handshakes, re-arms with EQEs or CQEs pending
// (hca/irq.go, cqring.go), the uplink's buffered frames to its capture
// files (hca/eth.go) and the data path's sweep. It reports whether
// the sweep found work (never sleep on work a doorbell hint missed).
func (p *PF) chores(now uint64) bool {
	p.choresAt = now
	p.checkFlags()
	p.hca.CheckArms()
	p.hca.FlushUplink()
	return p.sweepQueues()
}

// Beats is a counter that the poller advances while it scans: every 64
// idle scans (an idle poller blocks for at most Idle.FutexTimeout, or
// Idle.MaxSleep, and then scans again) and every 1024 commands under load.
// It stands still while the poller is stuck (an executor or a request that
// does not return) or not running. Any goroutine may read it; a watchdog
// feeds the service manager only while it advances.
func (p *PF) Beats() uint64 { return p.beat.Load() }

// GuestAttached counts a guest's VF in (true) or out (false): while any is
// attached, every sleep of the poller is at most Idle.GuestSleep.
func (p *PF) GuestAttached(on bool) {
	if on {
		p.guests.Add(1)
	} else {
		p.guests.Add(-1)
	}
}

// guestSleepShare is the part of its idle time the poller sleeps at once
// while a guest is attached: a sleep of idleNS/8 finds a guest's command
// posted after a gap g at the latest g/8 later (a doubling backoff's last
// sleep is half the time it has been idle, and so its delay up to g/2).
// It costs a few wakes more per idle period, about 8.5 per e-fold of it,
// before GuestSleep bounds them.
const guestSleepShare = 8

// nextSleep is the backoff's sleep after one of sleepNS, the poller idle
// for idleNS: twice as long, until sleepCap; while a guest is attached,
// idleNS/guestSleepShare, from 50 µs (a yield phase shorter than that
// starts there) up to GuestSleep.
func (p *PF) nextSleep(sleepNS, idleNS int64) int64 {
	if p.guests.Load() > 0 {
		return min(max(idleNS/guestSleepShare, minSleepNS), p.idle.GuestSleep.Nanoseconds())
	}
	if sleepNS < p.sleepCap() {
		return 2 * sleepNS
	}
	return sleepNS
}

// sleepCap is where the backoff of the poller's sleeps stops: MaxSleep,
// or GuestSleep while a guest is attached (every sleep is then timed by
// it, the futex waits too).
func (p *PF) sleepCap() int64 {
	if p.guests.Load() > 0 {
		return p.idle.GuestSleep.Nanoseconds()
	}
	return p.idle.MaxSleep.Nanoseconds()
}

// block waits for work: on the futex doorbell if there is one, else sleeps.
// While a guest is attached the wait is sleepNS (the backoff) at most
// GuestSleep, the futex's too. The nearest RC retry deadline bounds both
// (hca.HCA.NextRetry); one already due is no reason to block at all.
func (p *PF) block(sleepNS int64) {
	futexNS := p.idle.FutexTimeout.Nanoseconds()
	sleepNS = min(sleepNS, p.sleepCap()) // a backoff past MaxSleep while a guest was attached
	if p.guests.Load() > 0 {
		futexNS = min(futexNS, sleepNS)
	}
	if ns, ok := p.hca.NextRetry(); ok {
		// An RC retry's deadline (hca/retry.go) bounds the wait: the scan
		// after it retries the WQE at about its deadline.
		if ns <= 0 {
			return
		}
		sleepNS, futexNS = min(sleepNS, ns), min(futexNS, ns)
	}
	p.stats.Sleeps++
	if p.doorbell == nil {
		ts := unix.NsecToTimespec(sleepNS)
		_ = unix.Nanosleep(&ts, nil)
		return
	}
	bar.WordStore(p.sleeping, 1) // XCHG: orders the flag before the re-check
	seq := bar.WordLoad(p.doorbell)
	if !p.peek() && p.pending.Load() == 0 && !p.stopping.Load() && !p.dataPathRang() {
		futex.Wait(p.doorbell, seq, futexNS)
		if p.hca.Attached() > 0 && bar.WordLoad(p.doorbell) != seq && !p.peek() {
			// rung, and not for a command: a send doorbell (vfclient's
			// VF.Ring), maybe of a cold QP storing the word it stored
			// last, which the UAR hint cannot show; heat the QPs with work
			p.hca.SweepQueues()
		}
	}
	bar.WordStore(p.sleeping, 0)
}

// wake rings the doorbell from inside the PF process. It runs on other
// goroutines than the poller (Do, Stop), so it is guarded: a control
// region that shrank is the poller's to report, not a SIGBUS here.
func (p *PF) wake() {
	if p.doorbell != nil {
		_ = bar.Guard(func() {
			bar.WordAdd(p.doorbell, 1)
			futex.Wake(p.doorbell, 1)
		})
	}
}

// Stop asks Run to return after the command in progress.
func (p *PF) Stop() {
	p.stopping.Store(true)
	p.wake()
}

func (p *PF) shutdown() {
	// Guarded: after the BAR region shrank, what is left of it is written
	// and the rest given up.
	err := bar.Guard(func() {
		for i := range p.vfs {
			p.persistVF(i)
			st := &p.vfs[i]
			st.flags.Store(st.flags.Load() | mlx4.CommFlagsOffline)
		}
		_ = p.bar.Store32(wire.HdrPFStopped, uint32(time.Now().Unix()))
		p.pfState.Store(wire.PFStateStopped)
	})
	p.running.Store(false)
	if err != nil {
		p.log.Info("stopped; the comm pages are not all there to be marked offline")
		return
	}
	p.log.Info("stopped; comm pages marked offline")
}

// Do runs f on the poller between scans (or directly if the poller is not
// running) and waits for it. Requests are how other goroutines change VF
// state: FLR, inspection, event injection.
func (p *PF) Do(f func()) error {
	if !p.running.Load() {
		// Guarded as the poller is: after Run stopped on a shrunk region,
		// a request (an operator's FLR) must not SIGBUS its caller.
		p.mu.Lock()
		defer p.mu.Unlock()
		return bar.Guard(f)
	}
	ch := make(chan struct{})
	p.mu.Lock()
	p.reqs = append(p.reqs, f)
	p.dones = append(p.dones, ch)
	p.pending.Store(1)
	p.mu.Unlock()
	p.wake()
	select {
	case <-ch:
		return nil
	case <-time.After(10 * time.Second):
		return ErrStopped
	}
}

func (p *PF) runRequests() {
	p.mu.Lock()
	reqs, dones := p.reqs, p.dones
	p.reqs, p.dones = nil, nil
	p.pending.Store(0)
	p.mu.Unlock()
	for _, f := range reqs {
		f()
	}
	p.journal.Requested() // what the operator changed, checkpointed before the request returns
	for _, ch := range dones {
		close(ch)
	}
}

// VFInfo is a snapshot of one VF's channel state.
type VFInfo struct {
	LastCmd mlx4.CommCmd
	Active  bool
	VHCR    uint64
	Toggle  uint32
	// Refused is the VF's last VHCR_POST answered with a status other
	// than OK (Refused.Status OK: none since the PF started).
	Refused Refusal
}

// Refusal is a VHCR_POST the PF answered with a non-OK status: the opcode,
// the status, the reason it recorded (refusal.Reason) and the toggle of the
// slave_write word that posted it, by which a VF's tool tells its own
// command from a later one.
type Refusal struct {
	Op     mlx4.Opcode
	Status mlx4.Status
	Reason refusal.Reason
	Toggle uint32 // 0 or 1
}

// Info returns VF vf's channel state (through the poller).
func (p *PF) Info(vf int) (VFInfo, error) {
	var in VFInfo
	err := p.Do(func() {
		st := &p.vfs[vf]
		in = VFInfo{LastCmd: st.lastCmd, Active: st.active, VHCR: st.vhcr, Toggle: st.ack >> mlx4.CommToggleShift, Refused: st.refused}
	})
	return in, err
}

// schedYield gives the CPU to another runnable thread (x/sys/unix has no
// wrapper for sched_yield).
func schedYield() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
