package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/vhcrd/vhcrd/hack/vmtest"
)

// The killed guest's scenario and its bystander's (vmtest.ScenarioVerbsKill):
// a long rdma-core pingpong with both ends in this guest, which the victim
// SIGKILLs mid-transfer (and then has QEMU killed under a second one), and
// which the bystander lets run to its end meanwhile.

// remoteAddress is the line each end of ibv_rc_pingpong and
// ibv_ud_pingpong prints once it has its peer's address; the server has
// connected its QP before it sends its own, the client connects right
// after it prints it and posts its first send, and both enter their loop.
const remoteAddress = "remote address:"

func (g *guest) verbsKill() error {
	kc := g.cfg.VerbsKill
	if err := ifUp("lo", nil, 0); err != nil {
		return err
	}
	if err := g.bindVerbs("verbskill"); err != nil {
		return err
	}
	limit := time.Duration(kc.TimeLimitMS) * time.Millisecond
	switch kc.Role {
	case vmtest.KillVictim:
		return g.victim(kc.Pingpong, kc.Iters, limit)
	case vmtest.KillBystander:
		return g.bystander(kc, limit)
	}
	return fmt.Errorf("verbskill: unknown role %q", kc.Role)
}

// victim runs the transfer and SIGKILLs both its ends at the host's go,
// then runs it again and waits for the host to kill QEMU.
func (g *guest) victim(pp vmtest.Pingpong, iters int, limit time.Duration) error {
	tr, err := startTransfer(pp, iters, limit)
	if err != nil {
		return err
	}
	if err := tr.awaitRunning(1); err != nil {
		return err
	}
	wait("running 1")
	if err := tr.killEnds(); err != nil {
		return err
	}
	wait("killed 1")
	if tr, err = startTransfer(pp, iters, limit); err != nil {
		return err
	}
	if err := tr.awaitRunning(2); err != nil {
		return err
	}
	// The host kills QEMU here, mid-transfer.
	wait("running 2")
	tr.killEnds()
	return errors.New("verbskill: the host let the victim go on at running 2 (it kills QEMU there)")
}

// bystander runs the transfer to its end while the host kills the victim.
func (g *guest) bystander(kc vmtest.VerbsKillConfig, limit time.Duration) error {
	pp, iters := kc.Pingpong, kc.Iters
	if kc.CalibrateIters > 0 {
		n, err := calibrate(kc, limit)
		if err != nil {
			return err
		}
		iters = n
	}
	tr, err := startTransfer(pp, iters, limit)
	if err != nil {
		return err
	}
	if err := tr.awaitRunning(1); err != nil {
		return err
	}
	wait("running 1")
	if ended := tr.ended(); len(ended) == 0 {
		say("%s", strings.TrimPrefix(vmtest.KillStillRunning, "vmtest: "))
	} else {
		say("verbskill: the transfer had ended before the host's go: %s", strings.Join(ended, ", "))
	}
	// The host reads the console only at the next step: a line every
	// few seconds keeps it from taking the wait for a silent guest.
	for _, r := range tr.ends {
		for done := false; !done; {
			select {
			case <-r.done:
				done = true
			case <-time.After(5 * time.Second):
				say("verbskill: %s runs on, %v since its start", pp.Name, time.Since(tr.t0).Round(time.Second))
			}
		}
	}
	report(pp.Name, time.Since(tr.t0), limit, tr.ends, "")
	wait("transfer")
	if err := g.unbind(1); err != nil {
		return err
	}
	wait("unbound 1")
	return nil
}

// transfer is one pingpong with its server and client in this guest.
type transfer struct {
	pp     vmtest.Pingpong
	ctx    context.Context
	cancel context.CancelFunc
	t0     time.Time
	ends   []*toolRun
	conn   []chan struct{} // closed when end i printed its peer's address
}

// usecPerIter is a pingpong's "N iters in T seconds = U usec/iter".
var usecPerIter = regexp.MustCompile(`\d+ iters in [\d.]+ seconds = ([\d.]+) usec/iter`)

// calibrate runs kc's pingpong with CalibrateIters round trips and returns
// the round trips that last about TargetMS at its client's rate.
func calibrate(kc vmtest.VerbsKillConfig, limit time.Duration) (int, error) {
	cal := kc.Pingpong
	cal.Name += " calibration"
	tr, err := startTransfer(cal, kc.CalibrateIters, limit)
	if err != nil {
		return 0, err
	}
	for _, r := range tr.ends {
		<-r.done
	}
	report(cal.Name, time.Since(tr.t0), limit, tr.ends, "")
	usec := 0.0
	for _, l := range tr.ends[1].last {
		if m := usecPerIter.FindStringSubmatch(l); m != nil {
			usec, _ = strconv.ParseFloat(m[1], 64)
		}
	}
	if tr.ends[1].err != nil || usec <= 0 {
		return 0, fmt.Errorf("verbskill: %s: no usec/iter from its client (%s)", cal.Name, tr.lastLines())
	}
	n := min(max(int(float64(kc.TargetMS)*1000/usec), kc.CalibrateIters), kc.Iters)
	say("%s%.2f usec/iter, the transfer runs -n %d (about %v)", strings.TrimPrefix(vmtest.KillCalibrationPrefix, "vmtest: "), usec, n,
		(time.Duration(float64(n)*usec) * time.Microsecond).Round(time.Second))
	return n, nil
}

// startTransfer starts pp's server with "-n iters", waits for it to
// listen on its TCP port, and starts its client to 127.0.0.1; both are
// killed when limit passes.
func startTransfer(pp vmtest.Pingpong, iters int, limit time.Duration) (*transfer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	pp.Args = append(append([]string{}, pp.Args...), "-n", strconv.Itoa(iters))
	tr := &transfer{pp: pp, ctx: ctx, cancel: cancel, t0: time.Now()}
	bin := "/usr/bin/" + pp.Tool
	start := func(end string, args ...string) {
		r := &toolRun{name: pp.Name + " " + end, done: make(chan struct{})}
		conn := make(chan struct{})
		tr.ends, tr.conn = append(tr.ends, r), append(tr.conn, conn)
		go func() {
			defer close(r.done)
			connected := false
			res := runToolLines(ctx, r.name, bin, func(l string) {
				if !connected && strings.Contains(l, remoteAddress) {
					connected = true
					close(conn)
				}
			}, args...)
			r.last, r.err, r.hung, r.took = res.last, res.err, res.hung, res.took
		}()
	}
	start("server", pp.Args...)
	if err := awaitListen(ctx, pingpongPort); err != nil {
		cancel()
		<-tr.ends[0].done
		return nil, fmt.Errorf("verbskill: %s: the server never listened on its TCP port: %w; last lines: %s", pp.Name, err, strings.Join(tr.ends[0].last, " | "))
	}
	start("client", append(append([]string{}, pp.Args...), "127.0.0.1")...)
	return tr, nil
}

// awaitRunning waits until both ends have printed their peer's address;
// an end that exits first fails the transfer (both ends are killed).
func (tr *transfer) awaitRunning(round int) error {
	for i, r := range tr.ends {
		select {
		case <-tr.conn[i]:
		case <-r.done:
			select {
			case <-tr.conn[i]: // it connected and ended: its lines say how
			default:
				tr.cancel()
				for _, r := range tr.ends {
					<-r.done
				}
				return fmt.Errorf("verbskill: %s ended before its transfer ran: %v, last lines: %s", r.name, exitText(r.err), strings.Join(r.last, " | "))
			}
		}
	}
	say("verbskill: running %d: %s, both ends connected %v after the start", round, tr.pp.Name, time.Since(tr.t0).Round(time.Millisecond))
	return nil
}

// ended names the ends that have exited.
func (tr *transfer) ended() []string {
	var out []string
	for _, r := range tr.ends {
		select {
		case <-r.done:
			out = append(out, r.name)
		default:
		}
	}
	return out
}

// killEnds SIGKILLs both ends (runTool kills a tool with SIGKILL when its
// context ends) and waits for them: once wait4 has returned, the exit has
// closed the uverbs file and the kernel has destroyed the end's objects.
// An end that had exited before, or past the time limit, is an error.
func (tr *transfer) killEnds() error {
	early := tr.ended()
	timedOut := tr.ctx.Err() != nil
	tr.cancel()
	for _, r := range tr.ends {
		<-r.done
	}
	switch {
	case timedOut:
		return fmt.Errorf("verbskill: %s ran into its time limit before the kill", tr.pp.Name)
	case len(early) != 0:
		return fmt.Errorf("verbskill: %s: %s had exited before the kill (%s)", tr.pp.Name, strings.Join(early, ", "), tr.lastLines())
	}
	for _, r := range tr.ends {
		say("verbskill: killed %s: %s after %v", r.name, exitText(r.err), r.took.Round(time.Millisecond))
	}
	return nil
}

func (tr *transfer) lastLines() string {
	var b []string
	for _, r := range tr.ends {
		b = append(b, fmt.Sprintf("%s: %v, last lines: %s", r.name, exitText(r.err), strings.Join(r.last, " | ")))
	}
	return strings.Join(b, "; ")
}
