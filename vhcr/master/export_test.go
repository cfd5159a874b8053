package master

import "github.com/vhcrd/vhcrd/vhcr/mlx4"

// Hooks for the package's external tests, which drive a mastertest rig one
// scan at a time (compiled into this package's tests only).

// Scan runs one scan of every VF.
func (p *PF) Scan() bool { return p.scan() }

// ScanStart is the VF the next scan starts at; SetScanStart moves it.
func (p *PF) ScanStart() int { return p.next }

func (p *PF) SetScanStart(i int) { p.next = i }

// Counters are the poller's own counters (not a copy).
func (p *PF) Counters() *Stats { return p.stats }

// PostFast runs the fast path on VF i's current slave_write.
func (p *PF) PostFast(i int) bool {
	st := &p.vfs[i]
	return p.postFast(i, st, st.sw.Load())
}

// VFState is what the tests look at of a VF's channel state.
type VFState struct {
	LastCmd        mlx4.CommCmd
	Active         bool
	VHCR           uint64
	Ack, LastWord  uint32
	VHCRMapped     bool
	VHCRBoxChecked bool
}

// State returns VF i's channel state.
func (p *PF) State(i int) VFState {
	st := &p.vfs[i]
	return VFState{LastCmd: st.lastCmd, Active: st.active, VHCR: st.vhcr, Ack: st.ack, LastWord: st.lastWord,
		VHCRMapped: st.vhcrMem != nil, VHCRBoxChecked: st.vhcrBox.Perm() != 0}
}

// Plain is the row's fast-path flag.
func (e *Entry) Plain() bool { return e.plain }

// WithDefaults is Idle.withDefaults.
func (i Idle) WithDefaults() Idle { return i.withDefaults() }

// IdlePolicy is the policy the PF's poller runs with.
func (p *PF) IdlePolicy() Idle { return p.idle }

// Saved returns the channel state persisted for VF i in the header (ok is
// false where there is no valid record).
func (p *PF) Saved(i int) (s VFState, ok bool) {
	rec, cause := p.vfs[i].saved(i, p.gen-1) // written under p.gen
	return VFState{LastCmd: rec.lastCmd, Active: rec.active, VHCR: rec.vhcr}, cause == ""
}

// CheckFlags runs the FLAGS handshake check once.
func (p *PF) CheckFlags() { p.checkFlags() }

// SaveState writes s as VF i's saved channel state, as this PF writes it
// (a record the next PF's checks find intact).
func (p *PF) SaveState(i int, s VFState) {
	st := &p.vfs[i]
	st.lastCmd, st.active, st.vhcr, st.recOK = s.LastCmd, s.Active, s.VHCR, false
	p.persistVF(i)
}

// CmdToken is VF i's token counter of mlx4's completions.
func (p *PF) CmdToken(i int) (tok uint16) {
	_ = p.Do(func() { tok = p.vfs[i].cmdToken })
	return tok
}

// Crash is the panic value of a simulated kill.
type Crash string

// CrashAt makes the PF stop dead at the nth hit of the named point (a
// crashpoint name): it panics with Crash, which the test recovers, and the
// PF is then dropped without shutdown as a killed process would be.
func (p *PF) CrashAt(name string, nth int) {
	n := 0
	f := func(at string) {
		if at == name {
			if n++; n == nth {
				panic(Crash(at))
			}
		}
	}
	p.OnPoint(f)
}

// OnPoint calls f at every named point the PF passes (a crashpoint name),
// on the poller's goroutine.
func (p *PF) OnPoint(f func(string)) { p.journal.points().test = f }

// PersistCounters are the state file's counters: checkpoints, results
// delivered again, early-accepted commands executed after a restart.
func (p *PF) PersistCounters() (ckpt, redelivered, resumed uint64) {
	return p.stats.Checkpoints, p.stats.Redelivered, p.stats.Resumed
}

// Checkpoint writes a checkpoint now.
func (p *PF) Checkpoint() { p.journal.Checkpoint() }

// ExpireFaultTimers makes every fault timer's deadline pass: the next
// scan fires them (a test's way of "later", without sleeping).
func (p *PF) ExpireFaultTimers() {
	for k := range p.ftimers {
		p.ftimers[k].at = 0
	}
}

// FaultTimers is the number of fault timers pending.
func (p *PF) FaultTimers() int { return len(p.ftimers) }

// StartFaults fires the rules that fire now and were armed before the
// poller started, as the poller's start does.
func (p *PF) StartFaults() { p.fireStartFaults() }
