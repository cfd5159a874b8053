package master

import (
	"errors"
	"fmt"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// Completion by event: with the vHCR 'e' bit, a command completes with an
// EQE in the EQ the VF mapped for command completions, in one of two ways.
//
// mlx4's (mlx4_master_do_cmd, mlx4_master_process_vhcr, mlx4_GEN_EQE in
// Linux's cmd.c and resource_tracker.c): the command runs with the channel
// busy; the vHCR is written back (status, immediate output), then a
// command-completion EQE carries the token ++event_eq[CMD].token (a per-VF
// counter, zeroed at RESET and by FLR's release; 1, 2, 3, ...), status 0 and
// out_param 0; then the toggle is acknowledged. Linux's VF (mlx4_slave_cmd,
// mlx4_comm_cmd_wait, mlx4_cmd_event) writes token 0xffff (CMD_POLL_TOKEN)
// into the vHCR, waits for the EQE whose token is its context's (1, 2, 3,
// ...), then for the toggle, and reads status and output from the vHCR.
//
// The early way (vfdrv's): accepted early, the toggle acknowledged before the
// command runs so the VF may post the next one; the EQE echoes the VF's own
// token and carries the status and the immediate output; the vHCR is not
// written back. Several commands are in flight.
//
// Who gets which (Completions, per VF from the configuration): auto, the
// default, decides per command from the token the VF wrote. 0xffff is
// CMD_POLL_TOKEN, the only token Linux's VF ever writes and one an early-completion VF
// never uses (its tokens skip it, since mlx4's own PF ignores the field and
// an echo of 0xffff could not name a command), so it gets mlx4's way;
// any other token gets the early way. Per command rather than latched per VF
// at its first 'e' command: the decision is a pure function of the
// shadow, so there is no latch to persist across a PF restart, none to
// clear at RESET, and no first command that could mislabel the rest.
// mlx4 and early force one way whatever the token. A VF whose way and the
// override disagree gets completions it cannot match: an early-completion VF under mlx4
// sees one command at a time accepted late and EQEs carrying the counter,
// not its tokens (its commands are lost to it: vfdrv reports them stray);
// a Linux VF under early sees an EQE with token 0xffff, status and output in
// the EQE and no write-back, and never completes (Linux times out after
// 70 s; vfdrv's mlx4 mode fails at the stray token).

// Completions selects how VF's 'e'-bit commands complete.
type Completions uint8

const (
	CompletionsAuto  Completions = iota // per command: token 0xffff → mlx4, else early
	CompletionsMlx4                     // always as Linux's PF
	CompletionsEarly                    // always the accept-early EQE
)

var completionNames = [...]string{"auto", "mlx4", "early"}

func (c Completions) String() string {
	if int(c) < len(completionNames) {
		return completionNames[c]
	}
	return "unknown"
}

// ParseCompletions parses the configuration's value ("" is auto).
func ParseCompletions(s string) (Completions, error) {
	if s == "" {
		return CompletionsAuto, nil
	}
	if s == "seed" {
		return CompletionsEarly, nil // the name early had before
	}
	for i, n := range completionNames {
		if s == n {
			return Completions(i), nil
		}
	}
	return 0, fmt.Errorf("%w: completions %q (auto, mlx4 or early)", ErrCompletions, s)
}

// ErrCompletions is an unknown completion mode.
var ErrCompletions = errors.New("master: unknown completion mode")

// mlx4Way reports whether an 'e' command with token completes as Linux's
// PF completes it.
func (st *vfChannel) mlx4Way(token uint16) bool {
	switch st.completions {
	case CompletionsMlx4:
		return true
	case CompletionsEarly:
		return false
	}
	return token == mlx4.PollToken
}

// EventTypeCmd is the event type of command completions.
const EventTypeCmd = mlx4.EventCmd

// completionEQE reports a command's completion to VF i: the VF's token, the
// status and the immediate output (the early way's rule; mlx4 leaves both zero).
func (p *PF) completionEQE(i int, token uint16, status mlx4.Status, imm bool, out uint64) {
	if !imm {
		out = 0
	}
	mlx4.CompletionEQE(&p.eqe, token, status, out)
	if f := p.eqeFault; f != nil && p.eqeFaulted(i, f, token, status, out) {
		return
	}
	p.postCompletion(i)
}

// postCompletion posts the completion EQE in p.eqe to VF i.
func (p *PF) postCompletion(i int) {
	p.holdEQE = true // recorded after the command (flushEQE)
	err := p.hca.PostEQE(i, EventTypeCmd, &p.eqe)
	p.holdEQE = false
	if err != nil {
		if p.limit.allow() {
			p.log.Warn("completion EQE not delivered", "vf", i, "err", err)
		}
		return
	}
	p.stats.EQEs++
}

// eqDoorbell reads VF vf's EQ doorbell word for eqn (the HCA asks when an
// EQ looks full).
func (p *PF) eqDoorbell(vf, eqn int) (uint32, bool) {
	if vf < 0 || vf >= len(p.vfs) || eqn < 0 || eqn >= wire.MaxEQDoorbells {
		return 0, false
	}
	v, err := p.vfs[vf].bar.Load32(mlx4.EQDoorbellOffset(eqn))
	return v, err == nil
}
