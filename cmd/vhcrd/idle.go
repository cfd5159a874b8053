package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/master"
)

// idleFlag is serve's --idle: the poller's idle policy (master.Idle), as
// "default", "busy", or a comma-separated list of busy and key=DURATION
// items (spin, yield, max-sleep, futex, guest-sleep); an item not given
// keeps its default.
type idleFlag struct {
	set    string
	policy master.Idle
}

var errIdle = errors.New("want default, busy, or busy and spin=, yield=, max-sleep=, futex=, guest-sleep= DURATION items separated by commas")

func (f *idleFlag) String() string {
	if f == nil {
		return ""
	}
	return f.set
}

func (f *idleFlag) Set(s string) error {
	var p master.Idle
	if s != "default" {
		for _, item := range strings.Split(s, ",") {
			if item == "busy" {
				p.Busy = true
				continue
			}
			k, v, ok := strings.Cut(item, "=")
			d, err := time.ParseDuration(v)
			if !ok || err != nil || d <= 0 {
				return fmt.Errorf("%q: %w", item, errIdle)
			}
			field := map[string]*time.Duration{"spin": &p.SpinFor, "yield": &p.YieldFor, "max-sleep": &p.MaxSleep, "futex": &p.FutexTimeout, "guest-sleep": &p.GuestSleep}[k]
			if field == nil {
				return fmt.Errorf("%q: %w", item, errIdle)
			}
			*field = d
		}
	}
	f.set, f.policy = s, p
	return nil
}

// idleUsage is --idle's help, with master.DefaultIdle's figures.
func idleUsage() string {
	d := master.DefaultIdle
	return fmt.Sprintf("the poller's idle `POLICY`: default (after the last work spin %v, yield until %v, then block: on the futex doorbell for at most %v a wait, else in nanosleep backing off up to %v; while a guest is attached, which cannot ring the futex, every sleep is timed, an eighth of the time idle, up to %v), busy (never yield or block: a CPU at 100 %%), or busy and spin=, yield=, max-sleep=, futex=, guest-sleep= DURATION items separated by commas",
		d.SpinFor, d.YieldFor, d.FutexTimeout, d.MaxSleep, d.GuestSleep)
}
