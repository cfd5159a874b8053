package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/hack/vmtest"
)

// faults runs the fault matrix's rounds (vmtest.ScenarioFaults). Nothing
// the driver does fails the guest: each step is reported on a "vmtest:
// fault:" line and the host, which injected the fault, classifies. Per
// case:
//
//	wait "arm N"      the host adds a fault of point bind
//	bind              "fault: bind: driver D ib B in T: ERR"
//	wait "bound N"    the host adds a fault of point steady
//	steady state      "fault: steady: R reads, E errors, restart L; ib B"
//	wait "pingpong N" (a round with a Pingpong) the host adds a fault of
//	                  point pingpong; the pingpong (faults_dp.go)
//	wait "steady N"   the host adds a fault of point unbind
//	unbind            "fault: unbind: in T: ERR"
//	wait "unbound N"  the host clears the faults
//	clean round       "fault: clean: ok" or "fault: clean: failed: ..."
//	wait "done N"     the host classifies the case
func (g *guest) faults() error {
	hung := [][2]string{
		{"/proc/sys/kernel/hung_task_timeout_secs", fmt.Sprint(vmtest.HungTaskTimeout)},
		{"/proc/sys/kernel/hung_task_check_interval_secs", fmt.Sprint(vmtest.HungTaskCheck)},
		{"/proc/sys/kernel/hung_task_warnings", "-1"},
	}
	for _, h := range hung {
		if err := os.WriteFile(h[0], []byte(h[1]), 0); err != nil {
			say("fault: hung-task detector: %s: %v", h[0], err)
		}
	}
	say("fault: hung-task detector: timeout %ss, check every %ss", readFile(hung[0][0]), readFile(hung[1][0]))
	g.faultsNeedLo()
	// new_id adds the VF's ID (with its driver_data) and probes through
	// driver_attach, whose deferred probes the driver core keeps for a
	// retry; a sysfs bind does not (dd.c device_driver_attach returns
	// -EPROBE_DEFER as -EAGAIN). Every case binds through bind: new_id
	// once here, with driver_override naming no driver so that it probes
	// nothing (pci_match_device), then driver_override cleared.
	if !g.bound {
		dev := filepath.Join("/sys/bus/pci/devices", g.bdf, "driver_override")
		oerr := sysfsWrite(dev, "vmtest-none")
		err := sysfsWrite(driverDir+"/new_id", g.cfg.NewID)
		cerr := sysfsWrite(dev, "\n")
		g.bound = err == nil
		say("fault: boot: new_id %v (driver_override %v, %v), driver %q", err, oerr, cerr, g.driver())
	}
	for i, c := range g.cfg.Faults {
		n := i + 1
		say("fault: case %d %s", n, c.Name)
		wait(fmt.Sprintf("arm %d", n))
		g.faultBind("bind")
		// The baseline is read before the host arms the steady point: a
		// port kind (lid_change, pkey_change...) acts as it is added, so a
		// baseline read after "bound" already shows the change.
		before := g.portAttrs()
		wait(fmt.Sprintf("bound %d", n))
		g.settle(c.Settle, before)
		if c.Pingpong != nil {
			wait(fmt.Sprintf("pingpong %d", n))
			g.faultPingpong(c.Pingpong)
		}
		wait(fmt.Sprintf("steady %d", n))
		g.faultUnbind("unbind")
		wait(fmt.Sprintf("unbound %d", n))
		g.clean()
		wait(fmt.Sprintf("done %d", n))
	}
	return nil
}

// driver is the driver bound to the device ("" for none).
func (g *guest) driver() string {
	drv, err := os.Readlink(filepath.Join("/sys/bus/pci/devices", g.bdf, "driver"))
	if err != nil {
		return ""
	}
	return filepath.Base(drv)
}

// faultBind binds (new_id the first time, bind after) and reports the
// driver, mlx4_0 and the write's result.
func (g *guest) faultBind(what string) bool {
	t0 := time.Now()
	dog := time.AfterFunc(bindWatchdog, dumpStacks)
	defer dog.Stop()
	var err error
	if !g.bound {
		err = sysfsWrite(driverDir+"/new_id", g.cfg.NewID)
		g.bound = err == nil
	} else {
		err = sysfsWrite(driverDir+"/bind", g.bdf)
	}
	took := time.Since(t0).Round(time.Millisecond)
	deferred := ""
	if errors.Is(err, unix.EAGAIN) {
		deferred = " (the probe deferred: -EPROBE_DEFER, which a sysfs bind returns as EAGAIN and does not retry)"
	}
	drv := g.driver()
	ibErr := fmt.Errorf("not bound")
	if drv == "mlx4_core" {
		ibErr = g.checkIB(0)
	}
	say("fault: %s: driver %q ib %v in %v%s: %v (%v)", what, drv, ibErr == nil, took, deferred, err, ibErr)
	return ibErr == nil
}

// sysfsWrite writes v to the sysfs file p with one write(2) on a plain
// descriptor and returns its error: os.WriteFile would put the file
// (kernfs supports poll) in Go's poller, which takes EAGAIN for "not
// ready" and writes again once epoll says so — a second bind the kernel
// never made, or, when the edge-triggered readiness was already taken,
// a wait for ever.
func sysfsWrite(p, v string) error {
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte(v)); err != nil {
		return &os.PathError{Op: "write", Path: p, Err: err}
	}
	return nil
}

// bindWatchdog is how long a bind write may take before the guest dumps
// its kernel's stacks to the console: past every timeout of the probe
// (MLX4_COMM_TIME 10 s for a comm command, sync_toggles' 5 s), before the
// host's silence limit gives the case up as hung.
const bindWatchdog = 60 * time.Second

// dumpStacks asks the kernel for the backtraces of its CPUs and of its
// blocked tasks (sysrq l and w), so that a hung case shows where.
func dumpStacks() {
	say("fault: watchdog: a bind write is still running after %v: sysrq l, w", bindWatchdog)
	for _, c := range []string{"l", "w"} {
		sysfsWrite("/proc/sysrq-trigger", c)
	}
}

// faultUnbind unbinds if the driver is bound and reports the write.
func (g *guest) faultUnbind(what string) {
	if g.driver() != "mlx4_core" {
		say("fault: %s: not bound", what)
		return
	}
	t0 := time.Now()
	err := sysfsWrite(driverDir+"/unbind", g.bdf)
	_, serr := os.Stat(filepath.Join(ibClass, "mlx4_0"))
	say("fault: %s: in %v, mlx4_0 gone %v: %v", what, time.Since(t0).Round(time.Millisecond), serr != nil, err)
}

// settle reads the ports' state every vmtest.SettleRead for d (each read
// a MAD_IFC), watching the kernel log for the driver's restart, and then
// reports the reads, the port attributes against before (read before the
// steady point's faults were armed) and whether mlx4_0 is whole.
func (g *guest) settle(d time.Duration, before []string) {
	if g.driver() != "mlx4_core" {
		say("fault: steady: not bound")
		return
	}
	k, err := openKmsg()
	if err != nil {
		say("fault: steady: %v", err)
		return
	}
	defer k.Close()
	restarted := make(chan string, 1)
	go func() {
		line, _ := k.await("mlx4_restart_one was ended", d)
		restarted <- line
	}()
	var reads, errs int
	var firstErr error
	states := make([][]string, g.cfg.Ports) // the distinct states read, in order
	// d counts from here: a command the fault holds back may be the
	// first state read's.
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		for p := 1; p <= g.cfg.Ports; p++ {
			st, err := readSysfs(filepath.Join(ibClass, "mlx4_0/ports", fmt.Sprint(p), "state"))
			reads++
			if err != nil {
				errs++
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			s := strings.TrimSpace(string(st))
			if l := states[p-1]; len(l) == 0 || l[len(l)-1] != s {
				states[p-1] = append(l, s)
			}
		}
		time.Sleep(vmtest.SettleRead) // the steady state's pace, not synchronisation
	}
	after := g.portAttrs()
	for p := range states {
		say("fault: steady: port %d states %s; %s -> %s", p+1, strings.Join(states[p], " > "), before[p], after[p])
	}
	restart := <-restarted
	ibErr := fmt.Errorf("not bound")
	if g.driver() == "mlx4_core" {
		ibErr = g.checkIB(0)
	}
	say("fault: steady: %d reads, %d errors (%v), restart %q; ib %v (%v)", reads, errs, firstErr, restart, ibErr == nil, ibErr)
}

// clean binds and unbinds once with the faults cleared: whatever the fault
// did, the device must be usable again.
func (g *guest) clean() {
	if g.driver() == "mlx4_core" {
		// The case left the driver bound (an unbind that was not done).
		g.faultUnbind("clean unbind first")
	}
	if !g.faultBind("clean bind") {
		say("fault: clean: failed: the bind after the case did not give mlx4_0 with its ports")
		return
	}
	g.faultUnbind("clean unbind")
	if g.driver() != "" {
		say("fault: clean: failed: %s still has driver %s", g.bdf, g.driver())
		return
	}
	say("fault: clean: ok")
}

// portAttrs are each port's lid, sm_lid, P_Key 0 and GID 0 from sysfs
// (lid and sm_lid an ib_query_port each, the others from ib_core's cache).
func (g *guest) portAttrs() []string {
	var out []string
	for p := 1; p <= g.cfg.Ports; p++ {
		d := filepath.Join(ibClass, "mlx4_0/ports", fmt.Sprint(p))
		out = append(out, fmt.Sprintf("lid=%s sm_lid=%s pkey0=%s gid0=%s", readAttr(d+"/lid"), readAttr(d+"/sm_lid"), readAttr(d+"/pkeys/0"), readAttr(d+"/gids/0")))
	}
	return out
}

// readAttr is a sysfs attribute's value, or "ERR" when its read failed
// (the ib_query_port under it returned an error): the host counts that as
// an error returned to the caller, not as a change the driver followed.
func readAttr(p string) string {
	b, err := readSysfs(p)
	if err != nil {
		return "ERR"
	}
	return strings.TrimSpace(string(b))
}

// readSysfs reads a sysfs attribute with one read(2) on a plain
// descriptor: os.ReadFile would put the file (kernfs supports poll) in
// Go's poller, which takes EAGAIN (mlx4_status_to_errno's LAM_NOT_PRE)
// for "not ready", waits for a readiness kernfs reports at once and reads
// again: a second MAD_IFC would hide the first one's error.
func readSysfs(p string) ([]byte, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	b := make([]byte, 4096)
	n, err := unix.Read(fd, b)
	if err != nil {
		return nil, err
	}
	return b[:n], nil
}
