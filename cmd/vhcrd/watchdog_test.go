package main

import (
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/vhcr/master/mastertest"
)

// waitBeat waits until the poller's beats pass b (the condition, not a
// time: the test fails by its own deadline if it never comes).
func waitBeat(r *mastertest.Rig, b uint64) {
	for r.PF.Beats() == b {
		runtime.Gosched()
	}
}

// The watchdog feeds only while the poller scans: an idle poller (parked
// on its futex between scans) feeds it, a poller stuck in a request does
// not, and one that scans again feeds it again.
func TestWatchdogFedOnlyWhileThePollerScans(t *testing.T) {
	r := mastertest.New(t, 2)
	r.Start(t)
	w := watchdog{beats: r.PF.Beats}
	w.step()
	waitBeat(r, w.last) // idle: blocked on the futex at most FutexTimeout, then a scan
	if !w.step() {
		t.Fatal("an idle poller that scans does not feed the watchdog")
	}
	inside, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- r.PF.Do(func() { close(inside); <-release }) }()
	<-inside // the poller runs the request: it is stuck until release
	w.step()
	if w.step() {
		t.Fatal("a stuck poller fed the watchdog")
	}
	if w.step() {
		t.Fatal("a stuck poller fed the watchdog")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitBeat(r, w.last)
	if !w.step() {
		t.Fatal("a poller scanning again does not feed the watchdog")
	}
}

// WATCHDOG_USEC is the manager's timeout: pings at half of it, none when
// unset or meant for another process; the variables are not inherited.
func TestWatchdogInterval(t *testing.T) {
	t.Setenv("WATCHDOG_USEC", "4000000")
	t.Setenv("WATCHDOG_PID", "1")
	if d, err := watchdogInterval(); d != 0 || err != nil {
		t.Errorf("for pid 1: %v, %v; want none", d, err)
	}
	t.Setenv("WATCHDOG_USEC", "4000000")
	t.Setenv("WATCHDOG_PID", "")
	if d, err := watchdogInterval(); d != 2*time.Second || err != nil {
		t.Errorf("4 s: %v, %v; want pings every 2s", d, err)
	}
	for _, k := range []string{"WATCHDOG_USEC", "WATCHDOG_PID"} {
		if v, ok := syscall.Getenv(k); ok {
			t.Errorf("%s=%q left for children", k, v)
		}
	}
	t.Setenv("WATCHDOG_USEC", "soon")
	if _, err := watchdogInterval(); err == nil || !strings.Contains(err.Error(), "WATCHDOG_USEC") {
		t.Errorf("a bad WATCHDOG_USEC: %v", err)
	}
}

// vhcrd under a service manager with WatchdogSec: WATCHDOG=1 arrives while
// it serves (idle, and after commands).
func TestWatchdogUnderServiceManager(t *testing.T) {
	m := newFakeManager(t)
	m.SetWatchdog(400 * time.Millisecond)
	dir := shmDir(t)
	barPath := dir + "/bar"
	d := m.start("serve", "--bar", "file:"+barPath, "--dma", "file:"+dir+"/dma", "--num-vfs", "2", "--window", "256K", "--metrics-addr", "127.0.0.1:0")
	m.WaitFor("WATCHDOG", "1")
	if out, code := vfctl(t, barPath, "cmd", "--vf", "1", "NOP"); code != 0 {
		t.Fatalf("NOP: exit %d\n%s", code, out)
	}
	m.WaitFor("WATCHDOG", "1")
	if n := m.Pings(); n < 2 {
		t.Fatalf("%d pings", n)
	}
	if !strings.Contains(d.log(), "msg=watchdog ping_every=200ms") {
		t.Errorf("no watchdog line:\n%s", d.log())
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-d.exited; err != nil {
		t.Fatalf("vhcrd: %v\n%s", err, d.log())
	}
	if strings.Contains(d.log(), "stopped scanning") {
		t.Errorf("a stall reported:\n%s", d.log())
	}
}
