package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"
)

// The service manager's watchdog (sd_watchdog_enabled(3), systemd's
// WatchdogSec=): WATCHDOG=1 at half the timeout, sent only while the
// poller scans (master.PF.Beats advanced since the last ping), so that a
// poller stuck in an executor or a request is killed and restarted where
// a process that merely answers (the metrics listener, the admin socket)
// would not be. An idle poller is healthy: it blocks on its futex doorbell
// for at most Idle.FutexTimeout and scans again, which advances Beats.

// watchdogInterval reads WATCHDOG_USEC and WATCHDOG_PID and unsets them
// (children must not inherit them): the interval of the pings, half the
// timeout, or 0 where the manager asks for none (unset, or for another
// process).
func watchdogInterval() (time.Duration, error) {
	usec, pid := os.Getenv("WATCHDOG_USEC"), os.Getenv("WATCHDOG_PID")
	os.Unsetenv("WATCHDOG_USEC")
	os.Unsetenv("WATCHDOG_PID")
	if usec == "" {
		return 0, nil
	}
	if pid != "" && pid != strconv.Itoa(os.Getpid()) {
		return 0, nil
	}
	n, err := strconv.ParseUint(usec, 10, 63)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%w: WATCHDOG_USEC=%q: want a positive number of microseconds", errNotify, usec)
	}
	return time.Duration(n) * time.Microsecond / 2, nil
}

// watchdog decides each ping: feed only if the poller's beats advanced.
type watchdog struct {
	beats func() uint64
	last  uint64
}

// step reports whether the poller has scanned since the last step.
func (w *watchdog) step() bool {
	b := w.beats()
	moved := b != w.last
	w.last = b
	return moved
}

// runWatchdog pings the service manager every interval while the poller
// scans, until ctx ends; a stall is logged once, and so is its end.
func (s *server) runWatchdog(ctx context.Context, every time.Duration, log *slog.Logger) {
	w := watchdog{beats: s.pf.Beats}
	t := time.NewTicker(every)
	defer t.Stop()
	var stalledSince time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if w.step() {
				s.notify.state("WATCHDOG=1")
				if !stalledSince.IsZero() {
					log.Info("poller scanning again: watchdog fed", "stalled_for", now.Sub(stalledSince).Round(time.Millisecond))
					stalledSince = time.Time{}
				}
				continue
			}
			if stalledSince.IsZero() {
				stalledSince = now.Add(-every)
				log.Error("poller has stopped scanning: the service manager's watchdog is not fed", "for_at_least", every, "timeout", 2*every)
			}
		}
	}
}
