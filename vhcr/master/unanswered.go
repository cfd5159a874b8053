package master

import (
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/pfstate"
)

// Commands left unanswered on purpose, and the VF's resync after them.
//
// Linux's PF serves a VF at each write to its slave_write (the device's
// comm channel event) when slave_write's toggle differs from slave_read's
// (cmd.c mlx4_master_comm_channel), so a VF that writes the same word again
// is served again. vhcrd sees values, not writes, and serves a slave_write
// that changed (scan). The two differ only after a command the PF left
// unanswered: the driver times out, its next probe's sync_toggles (cmd.c)
// finds the toggles apart, writes 0 to slave_read and then to slave_write,
// restarts its toggle at 0 and sends RESET with toggle 1, the word of an
// unanswered RESET that had toggle 1. The PF therefore marks slave_read
// with pfstate.SlaveReadUnanswered whenever it leaves a command unanswered
// (the faults never, toggle_never, toggle_twice), and a slave_read that no
// longer holds the mark tells it that the VF rewrote its registers: it
// takes its toggle from slave_read (resync) and serves slave_write by
// Linux's rule, the word sync_toggles' RESET writes included, even if it
// is the word it already took in.

// resyncReset is the first word a VF writes after sync_toggles zeroed its
// registers: RESET (main.c mlx4_init_slave) with its toggle restarted at 0
// and flipped (cmd.c mlx4_comm_cmd_post).
var resyncReset = mlx4.CommWord(1, mlx4.MLX4_COMM_CMD_RESET, 0)

// leaveUnanswered marks VF i's slave_read: the command just taken in stays
// unanswered, its toggle not flipped.
func (p *PF) leaveUnanswered(i int) {
	st := &p.vfs[i]
	v := st.sr.Load() | pfstate.SlaveReadUnanswered
	st.sr.Store(v)
	st.srMark, st.unanswered = v, true
	p.unanswered = true
}

// checkUnanswered is scan's look, while a VF has a command left
// unanswered, at whether the VF rewrote its slave_read. A VF that did
// (sync_toggles) is resynchronised at its next served word (resync); if
// its slave_write still holds the word taken in and that word is
// resyncReset, it is served again now: either sync_toggles' RESET, the same
// word written again, or the old word not yet zeroed (the two cannot be
// told apart; docs/differences.md), both a RESET the VF wants. Any other
// unchanged word is the old one, not served twice; the zero that follows
// it is a change.
func (p *PF) checkUnanswered() {
	left := false
	for i := range p.vfs {
		st := &p.vfs[i]
		if !st.unanswered {
			continue
		}
		if st.sr.Load() == st.srMark {
			left = true
			continue
		}
		st.unanswered, st.resynced = false, true
		if w := st.sw.Load(); w == st.lastWord && w == resyncReset {
			st.lastWord = ^w
		}
	}
	p.unanswered = left
}

// raiseSR sets bits in VF i's slave_read without answering its command:
// a mark the VF has not cleared stays, with the bits.
func (st *vfChannel) raiseSR(bits uint32) {
	v := st.sr.Load()
	if st.unanswered && v == st.srMark {
		st.srMark = v | bits
	}
	st.sr.Store(v | bits)
}
