package master

import (
	"errors"
	"fmt"

	"github.com/vhcrd/vhcrd/vhcr/faultinj"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"

	"github.com/vhcrd/vhcrd/bar"
)

// Function resets besides RESET: the FLAGS handshake a VF in its error
// state starts, and the FLR the operator starts.

// checkFlags answers VF reset requests: a VF in its error state toggles
// FLAGS bit 16; the PF resets the function and copies bit 16 into bit 8
// (the handshake mlx4_reset_slave waits for, up to 10 s).
func (p *PF) checkFlags() {
	for i := range p.vfs {
		st := &p.vfs[i]
		f := st.flags.Load()
		req := f&mlx4.CommFlagsResetReq != 0
		if req == (f&mlx4.CommFlagsResetAck != 0) {
			continue
		}
		if st.fault.flagsHold {
			if f == st.fault.flagsWord {
				continue // left unanswered by an injected fault (faults.go)
			}
			st.fault.flagsHold = false
		}
		if p.farmed&faultinj.PointFlags != 0 && p.flagsFault(i, st, f) {
			continue
		}
		p.answerFlags(i, st, f)
	}
}

// answerFlags resets VF i's function and acknowledges its reset request
// (FLAGS word f).
func (p *PF) answerFlags(i int, st *vfChannel, f uint32) {
	p.resetFunction(i, ResetRequest)
	p.persistVF(i)
	st.flags.Store(flagsAcked(f))
}

// flagsAcked is FLAGS word f with the acknowledgement bit copied from the
// request bit.
func flagsAcked(f uint32) uint32 {
	f &^= mlx4.CommFlagsResetAck
	if f&mlx4.CommFlagsResetReq != 0 {
		f |= mlx4.CommFlagsResetAck
	}
	return f
}

// BeginFLR starts a function-level reset of VF vf (the FLR event of mlx4
// eq.c): the VF's resources are released at once and, until EndFLR, every
// comm command but RESET is dropped without acknowledgement and RESET is
// acknowledged without the version. slave_read gets bit 17 (its toggle
// kept), as mlx4_report_internal_err_comm_event marks a VF whose function
// is gone: a driver still bound learns of the reset without a command of
// its own (its catas poll, every 5 s; mlx4_unregister_device at an unbind,
// which no longer polls) and resets itself; its next RESET clears it.
func (p *PF) BeginFLR(vf int) error {
	if vf < 0 || vf >= len(p.vfs) {
		return errors.New("master: no such VF")
	}
	var err error
	if derr := p.Do(func() {
		if err = p.restoreBAR(vf); err != nil {
			return
		}
		if p.trace.Enabled() {
			p.trace.FLR(p.stamp(), vf, true)
		}
		p.resetFunction(vf, ResetFLR)
		st := &p.vfs[vf]
		st.lastCmd = mlx4.MLX4_COMM_CMD_FLR
		p.persistVF(vf)
		st.raiseSR(mlx4.COMM_CHAN_EVENT_INTERNAL_ERR)
	}); derr != nil {
		return derr
	}
	return err
}

// restoreBAR maps VF vf's own BAR region again if it was given up after
// it shrank (fault.go: barLost) and its file is whole again: the registers
// start as a new PF's do (offline until the poller runs, VF reset
// supported), and the FLR that follows returns the VF to RESET. A file
// still too short refuses the FLR with ErrBARLost and its size.
func (p *PF) restoreBAR(vf int) error {
	st := &p.vfs[vf]
	if !st.barLost {
		return nil
	}
	r := st.lostBAR
	n, ok := bar.Backed(r)
	if !ok || n < p.lay.VFBARSize {
		have := "cannot be measured"
		if ok {
			have = fmt.Sprintf("has %d bytes", n)
		}
		return fmt.Errorf("VF %d: %w: %s %s, the VF needs %d; restore it (truncate -s %d) and FLR again", vf, ErrBARLost, r.Name(), have, p.lay.VFBARSize, p.lay.VFBARSize)
	}
	if err := st.mapBAR(r); err != nil {
		return fmt.Errorf("VF %d: mapping its BAR region again: %w", vf, err)
	}
	st.barLost, st.lostBAR = false, nil
	st.caps.Store(mlx4.CommCapsVFReset)
	st.flags.Store(st.flags.Load() &^ (mlx4.CommFlagsOffline | mlx4.CommFlagsResetReq | mlx4.CommFlagsResetAck))
	st.lastWord, st.ack, st.unanswered = st.sw.Load(), st.sr.Load()&mlx4.CommToggle, false
	if p.limit.allow() {
		p.log.Info("VF BAR region whole again: served after its FLR", "vf", vf, "region", r.Name())
	}
	return nil
}

// EndFLR completes the FLR (mlx4's INFORM_FLR_DONE): the VF may start again
// from RESET.
func (p *PF) EndFLR(vf int) error {
	if vf < 0 || vf >= len(p.vfs) {
		return errors.New("master: no such VF")
	}
	return p.Do(func() {
		st := &p.vfs[vf]
		if st.lastCmd == mlx4.MLX4_COMM_CMD_FLR {
			if p.trace.Enabled() {
				p.trace.FLR(p.stamp(), vf, false)
			}
			st.lastCmd = mlx4.MLX4_COMM_CMD_RESET
			p.persistVF(vf)
		}
	})
}

// FLR runs a whole function-level reset of VF vf.
func (p *PF) FLR(vf int) error {
	if err := p.BeginFLR(vf); err != nil {
		return err
	}
	return p.EndFLR(vf)
}
