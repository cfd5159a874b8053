package master

import (
	"fmt"

	"github.com/vhcrd/vhcrd/vhcr/faultinj"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"

	"github.com/vhcrd/vhcrd/dma"
)

// The comm channel state machine (mlx4_master_do_cmd): scanning the comm
// pages, the per-VF sequence RESET, VHCR0..VHCR2, VHCR_EN, VHCR_POST, and
// the resets that answer violations.

// scan serves every VF with a new slave_write once, round-robin from a start
// that advances every scan. It reports whether any VF had work.
func (p *PF) scan() bool {
	if p.unanswered {
		p.checkUnanswered()
	}
	n := len(p.vfs)
	i := p.next
	busy := false
	for k := 0; k < n; k++ {
		st := &p.vfs[i]
		if w := st.sw.Load(); w != st.lastWord {
			p.serve(i, w)
			busy = true
		}
		if i++; i == n {
			i = 0
		}
	}
	if p.next++; p.next == n {
		p.next = 0
	}
	if p.hca.ServiceQueues(dataPathBudget) > 0 { // the send queues (hca/dpsched.go)
		busy = true
	}
	if p.hca.ServiceTunnel() > 0 { // MADs for the VFs' proxy QPs (hca/tunnel.go)
		busy = true
	}
	if p.hca.ServiceUplink() > 0 { // frames from the hosts' side of the Ethernet ports (hca/eth.go)
		busy = true
	}
	p.journal.Scanned()
	if len(p.ftimers) != 0 {
		p.runTimers()
	}
	return busy
}

// peek reports whether any VF has written slave_write since last served.
func (p *PF) peek() bool {
	for i := range p.vfs {
		if p.vfs[i].sw.Load() != p.vfs[i].lastWord {
			return true
		}
	}
	return false
}

// serve handles a changed slave_write word w of VF i (mlx4_master_do_cmd).
func (p *PF) serve(i int, w uint32) {
	st := &p.vfs[i]
	if w&^mlx4.CommToggle == mlx4.CommVHCRPostWord && w&mlx4.CommToggle != st.ack && st.lastCmd == mlx4.MLX4_COMM_CMD_VHCR_POST && p.postFast(i, st, w) {
		return
	}
	if p.resync(i, st, w) {
		return
	}
	st.lastWord = w
	toggle := w & mlx4.CommToggle
	// Bits 30:24 are ignored, as mlx4_master_comm_channel does: it passes
	// only bits 23:16 (the command) and 15:0 (the parameter) on.
	cmd, param := mlx4.SplitCommWord(w)
	if p.fmask&faultinj.PointComm != 0 && p.commFault(i, st, w, cmd, param, toggle) {
		return
	}
	if cmd != mlx4.MLX4_COMM_CMD_VHCR_POST || st.lastCmd != mlx4.MLX4_COMM_CMD_VHCR_EN && st.lastCmd != mlx4.MLX4_COMM_CMD_VHCR_POST {
		p.traceComm(i, cmd, toggle, param) // a VHCR_POST in sequence is recorded by post
	}
	if st.lastCmd == mlx4.MLX4_COMM_CMD_FLR && cmd != mlx4.MLX4_COMM_CMD_RESET {
		// FLR in progress: drop without acknowledgement (mlx4 §1.7 step 4).
		p.stats.Dropped[i]++
		return
	}
	reply, ok := p.command(i, st, w, cmd, param, toggle)
	if !ok {
		return
	}
	p.acknowledge(i, cmd, reply)
	if cmd == mlx4.MLX4_COMM_CMD_RESET {
		p.journal.ResetAcked()
	}
}

// resync takes slave_read as the reference, as mlx4's scan does: if it no
// longer holds our last acknowledgement, or no longer the mark of a command
// left unanswered (checkUnanswered), the VF rewrote its registers
// (sync_toggles zeroes both after a misbehaved predecessor) and the PF
// resynchronises from it. It reports whether w is then served already:
// nothing pending, or a toggle not flipped (a violation).
func (p *PF) resync(i int, st *vfChannel, w uint32) bool {
	sr := st.sr.Load()
	resynced := sr&mlx4.CommToggle != st.ack || st.resynced
	st.resynced = false
	if resynced {
		st.ack = sr & mlx4.CommToggle
		p.stats.Resyncs[i]++
	}
	if w&mlx4.CommToggle == st.ack {
		st.lastWord = w
		if resynced {
			return true // nothing pending after all
		}
		if w == 0 && sr == 0 {
			// Both registers zeroed while our toggle was already 0.
			p.stats.Resyncs[i]++
			return true
		}
		// slave_write rewritten without a toggle flip: a VF that flipped
		// twice, or wrote over a pending command.
		p.violation(i, st.ack, ResetToggle, "slave_write rewritten without a toggle flip", w)
		return true
	}
	return false
}

// command performs comm command cmd with its parameter and returns the reply
// to acknowledge it with, or false when there is none: the VF was reset, or
// the command was a VHCR_POST (post answers it).
func (p *PF) command(i int, st *vfChannel, w uint32, cmd mlx4.CommCmd, param uint16, toggle uint32) (reply uint32, ok bool) {
	reply = toggle
	switch cmd {
	case mlx4.MLX4_COMM_CMD_RESET:
		if st.lastCmd == mlx4.MLX4_COMM_CMD_FLR {
			// RESET during FLR: acknowledged without the version and without
			// cleanup (the FLR released everything).
			st.lastCmd, st.active, st.vhcr = mlx4.MLX4_COMM_CMD_RESET, false, 0
		} else {
			p.resetFunction(i, ResetByVF)
			reply |= mlx4.CommVersion
		}
	case mlx4.MLX4_COMM_CMD_VHCR0:
		if st.lastCmd != mlx4.MLX4_COMM_CMD_RESET {
			p.violation(i, toggle, ResetSequence, "VHCR0 not after RESET", w)
			return 0, false
		}
		st.vhcr = uint64(param) << mlx4.CommVHCRShift(mlx4.MLX4_COMM_CMD_VHCR0)
	case mlx4.MLX4_COMM_CMD_VHCR1:
		if st.lastCmd != mlx4.MLX4_COMM_CMD_VHCR0 {
			p.violation(i, toggle, ResetSequence, "VHCR1 not after VHCR0", w)
			return 0, false
		}
		st.vhcr |= uint64(param) << mlx4.CommVHCRShift(mlx4.MLX4_COMM_CMD_VHCR1)
	case mlx4.MLX4_COMM_CMD_VHCR2:
		if st.lastCmd != mlx4.MLX4_COMM_CMD_VHCR1 {
			p.violation(i, toggle, ResetSequence, "VHCR2 not after VHCR1", w)
			return 0, false
		}
		st.vhcr |= uint64(param) << mlx4.CommVHCRShift(mlx4.MLX4_COMM_CMD_VHCR2)
	case mlx4.MLX4_COMM_CMD_VHCR_EN:
		if st.lastCmd != mlx4.MLX4_COMM_CMD_VHCR2 {
			p.violation(i, toggle, ResetSequence, "VHCR_EN not after VHCR2", w)
			return 0, false
		}
		if !p.enableVHCR(i, st, w, toggle, param) {
			return 0, false
		}
	case mlx4.MLX4_COMM_CMD_VHCR_POST:
		if st.lastCmd != mlx4.MLX4_COMM_CMD_VHCR_EN && st.lastCmd != mlx4.MLX4_COMM_CMD_VHCR_POST {
			p.violation(i, toggle, ResetSequence, "VHCR_POST before VHCR_EN", w)
			return 0, false
		}
		if err := p.post(i, toggle); err != nil {
			p.traceComm(i, cmd, toggle, param) // no status: the channel is reset
			p.violation(i, toggle, ResetDMA, err.Error(), w)
		}
		return 0, false
	default:
		p.violation(i, toggle, ResetUnknownCmd, "unknown comm command", w)
		return 0, false
	}
	return reply, true
}

// enableVHCR completes the vHCR's address with VHCR_EN's parameter, maps it
// and activates the VF's admin state; false: the VF was reset.
func (p *PF) enableVHCR(i int, st *vfChannel, w, toggle uint32, param uint16) bool {
	st.vhcr |= uint64(param)
	if st.unbacked && !p.backedAgain(i) {
		p.violation(i, toggle, ResetRegionLost, "DMA window still not backed by the region's file", w)
		return false
	}
	// Stricter than mlx4, which finds a bad address at the first
	// VHCR_POST: the vHCR must be 4 KiB aligned (ACCESS_MEM's rule) and
	// inside the window now.
	if err := st.mapVHCR(); err != nil {
		p.violation(i, toggle, ResetVHCRAddress, "vHCR address: "+err.Error(), w)
		return false
	}
	// mlx4_master_activate_admin_state: VST VLAN and spoof-checked MAC
	// registered; no room resets the VF, as mlx4 does.
	p.journal.Record(recActivate, i)
	if err := p.hca.ActivateVF(i); err != nil {
		p.violation(i, toggle, ResetAdminState, err.Error(), w)
		return false
	}
	st.active = true
	return true
}

// acknowledge records cmd as the VF's last command, persists the channel
// state, and only then writes the reply: a PF killed at any point between
// the two leaves a state the next PF continues from (the command not yet
// acknowledged is served again, and its effect on the channel state is
// idempotent).
func (p *PF) acknowledge(i int, cmd mlx4.CommCmd, reply uint32) {
	st := &p.vfs[i]
	st.lastCmd = cmd
	p.persistVF(i)
	st.reply(reply)
}

// reply writes slave_read and records its toggle as acknowledged; the
// VF's last command is unchanged. After an injected internal error, bit 17
// stays until the function is reset.
func (st *vfChannel) reply(r uint32) {
	st.ack = r & mlx4.CommToggle
	st.unanswered = false
	if st.fault.internalErr {
		r |= mlx4.COMM_CHAN_EVENT_INTERNAL_ERR
	}
	st.sr.Store(r)
}

// violation resets VF i's channel (releasing its resources) and acknowledges
// with bit 17 so that the VF resets itself at once instead of timing out.
func (p *PF) violation(i int, toggle uint32, why ResetReason, msg string, word uint32) {
	p.resetFunction(i, why)
	st := &p.vfs[i]
	st.lastCmd = mlx4.MLX4_COMM_CMD_RESET
	p.persistVF(i) // before the VF can see the reset
	st.ack, st.unanswered = toggle, false
	st.sr.Store(toggle | mlx4.COMM_CHAN_EVENT_INTERNAL_ERR)
	if p.limit.allow() {
		p.log.Warn("resetting VF after a comm channel violation", "vf", i, "reason", why.String(), "detail", msg, "slave_write", fmt.Sprintf("%#08x", word))
	}
}

// resetFunction releases VF i's resources and returns it to RESET.
func (p *PF) resetFunction(i int, why ResetReason) {
	st := &p.vfs[i]
	p.journal.Record(recReset, i)
	p.hca.ResetFunction(i)
	st.fault.internalErr = false
	st.active, st.vhcr, st.vhcrBox, st.vhcrMem = false, 0, dma.Mailbox{}, nil
	st.lastCmd = mlx4.MLX4_COMM_CMD_RESET
	st.cmdToken = 0 // mlx4_master_do_cmd's RESET: event_eq[].token = 0
	st.lastMlx4 = st.completions == CompletionsMlx4
	p.stats.countReset(i, why)
	p.traceReset(i, why)
}
