package hca

// MSI-X interrupts from EQs, as ConnectX raises them.
//
// An EQ is armed or not. SW2HW_EQ takes the state from the EQ context
// (mlx4_create_eq writes MLX4_EQ_STATE_ARMED; ALWAYS_ARMED raises for
// every EQE; FIRED, or any other value, starts disarmed). When an EQE is
// written into an armed EQ, the EQ is disarmed and the MSI-X vector its
// context names (mlx4_eq_context.intr, the function's vector: 0 for
// Linux's async EQ, i for its completion EQ i) is raised: once per arm,
// however many EQEs follow. EQEs written into a disarmed EQ raise nothing
// (counted as Unarmed). A doorbell write with bit 31 (eq_set_ci's
// req_not) arms it again; a write without it only moves the consumer
// index and leaves the state alone, as mlx4_eq_int's mid-loop
// eq_set_ci(eq, 0) expects.
//
// Re-arming with EQEs pending raises at once. mlx4_eq_int consumes the
// software-owned EQEs, then writes eq_set_ci(eq, 1) and returns without
// looking again: an EQE the device wrote between its last look and the
// arm is seen only because the device raises when an arm finds the
// consumer index behind the producer. The model does the same: pending
// means the consumer index of the arm differs from the producer.
//
// How the model sees a doorbell write. A VF's doorbell words live in
// shared memory nobody traps; the PF reads them (SetDoorbellReader). A
// word is a new write where it differs from the last word applied, so an
// arm is taken once however often the word is read; the same value
// written twice is one write (the second would re-arm an armed EQ, or
// arm with ci = what the PF already knows, which raises nothing the
// first did not). The word is read before every EQE written (not after:
// a VF that consumes the new EQE and re-arms before the PF looks would
// have its arm for the next EQE taken by this one, as if the device had
// fired after the arm), and by
// CheckArms for each EQ that is disarmed with EQEs pending (the watch
// list): the only EQs where an arm the PF has not seen yet owes the VF an
// interrupt. The poller calls CheckArms when it goes idle, before it
// sleeps and every 1024 busy scans, so a re-arm with EQEs pending raises
// within one sleep or 1024 scans.
// EQDoorbell (a caller that traps the writes) applies a write at once.
//
// A vector at or above the VF's count is the VF's error (Interrupts
// returns an error): counted (IRQErrors), nothing raised, and the EQ is
// disarmed all the same, as the device has fired.

import "github.com/vhcrd/vhcrd/vhcr/mlx4"

// Interrupts raises VF vf's MSI-X vector (irq.Set). It never blocks and
// allocates nothing; an error (a vector the VF does not have, its eventfds
// gone) is counted as the VF's IRQError.
type Interrupts interface {
	Raise(vf, vector int) error
}

// SetInterrupts installs the MSI-X delivery, nil for none (the default:
// no doorbell reads, no interrupt counters).
func (h *HCA) SetInterrupts(irq Interrupts) { h.fw.irq = irq }

// pending reports whether the VF has EQEs it has not consumed, as far as
// the model knows.
func (eq *eqObj) pending() bool { return eq.Prod != eq.Cons }

// doorbellWrite applies a write of the VF's EQ doorbell: consumer index,
// and arm if bit 31.
func (h *HCA) doorbellWrite(eq *eqObj, v uint32) {
	eq.dbLast = v
	eq.Cons = v & mlx4.EQIndexMask
	if v&mlx4.EQ_DOORBELL_ARM != 0 {
		eq.Armed = true
	}
}

// raise fires eq: disarmed (unless always armed), its vector raised.
func (h *HCA) raise(eq *eqObj) {
	if !eq.always {
		eq.Armed = false
	}
	st := &h.fw.vfs[eq.VF].stats
	if err := h.fw.irq.Raise(eq.VF, int(eq.intr)); err != nil {
		st.IRQErrors.Add(1)
		return
	}
	st.Interrupts.Add(1)
}

// eqeWritten is PostEQE's interrupt step, after the EQE is written (and
// the doorbell word read before it).
func (h *HCA) eqeWritten(eq *eqObj) {
	if eq.Armed || eq.always {
		h.raise(eq)
	} else {
		h.fw.vfs[eq.VF].stats.Unarmed.Add(1)
	}
	if !eq.Armed && !eq.always && eq.pending() && !eq.watched {
		eq.watched = true
		h.fw.watch = append(h.fw.watch, eq)
	}
}

// unwatch takes a destroyed EQ off the watch list, so that the list holds
// live EQs only, however fast a VF creates and destroys them.
func (h *HCA) unwatch(eq *eqObj) {
	if eq == nil || !eq.watched {
		return
	}
	eq.watched = false
	for i, w := range h.fw.watch {
		if w == eq {
			last := len(h.fw.watch) - 1
			h.fw.watch[i] = h.fw.watch[last]
			h.fw.watch[last] = nil
			h.fw.watch = h.fw.watch[:last]
			return
		}
	}
}

// CheckArms reads the doorbell of every EQ that is disarmed with EQEs
// pending and raises those the VF has re-armed since, and the doorbell
// record of every CQ disarmed with CQEs pending (a re-arm owed fires). It
// returns how many it raised and fired. The poller calls it when it goes idle, before it sleeps, and
// every 1024 busy scans (so that a VF flooding the channel cannot delay
// another VF's interrupt).
func (h *HCA) CheckArms() int {
	n := 0
	for i := 0; i < len(h.fw.watch); {
		eq := h.fw.watch[i]
		if h.fw.irq != nil && h.fw.eqs[eq.tr.ID] == eq {
			h.refreshCI(eq)
			if eq.Armed && eq.pending() {
				h.raise(eq)
				n++
			}
			if !eq.Armed && eq.pending() {
				i++
				continue
			}
		}
		// armed with nothing pending, caught up, or destroyed: unwatched
		eq.watched = false
		last := len(h.fw.watch) - 1
		h.fw.watch[i] = h.fw.watch[last]
		h.fw.watch[last] = nil
		h.fw.watch = h.fw.watch[:last]
	}
	return n + h.checkCQArms() // CQs disarmed with CQEs pending (cqring.go)
}
