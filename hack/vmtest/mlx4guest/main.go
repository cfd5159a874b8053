// Command mlx4guest is the /init of the VM tier's Linux-driver guest: it
// mounts /dev, /proc and /sys, loads Debian's unmodified mlx4_core, ib_core,
// ib_uverbs and mlx4_ib (u-root's kmodule, modules.dep from the image),
// binds mlx4_core to the ivshmem-doorbell device that vhcrd serves as a VF
// (new_id "1af4 1110 ffffffff ffffffff 0 0 1"; the probe runs inside the
// write), checks that /sys/class/infiniband/mlx4_0 has its ports, and then
// runs the scenario of /etc/mlx4guest.json (vmtest.MLX4Config): unbind and
// rebind rounds, an unbind under a stream of MAD_IFC commands, the FLAGS
// reset handshake while bound, a hold for the host to kill QEMU, or
// Debian's rdma-core tools against mlx4_0 (verbs.go: ibv_devinfo -v and the
// RC and UD pingpongs, on one VF or with a peer guest over virtio-net;
// verbskill.go: a long pingpong killed mid-transfer, or run to its end
// beside the guest whose pingpong is).
//
// Every step is a "vmtest: " line on the console. At "vmtest: wait STEP" the
// guest blocks until the host writes a "go" line to the console, so that
// the host can check vhcrd's gauges and counters between steps. The guest
// ends with "vmtest: PASS" or "vmtest: FAIL: ..." and powers off.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/bar/pci"
	"github.com/vhcrd/vhcrd/bar/sysfs"
	"github.com/vhcrd/vhcrd/hack/vmtest"
	"github.com/vhcrd/vhcrd/hack/vmtest/guestinit"
)

const (
	driverDir = "/sys/bus/pci/drivers/mlx4_core"
	ibClass   = "/sys/class/infiniband"
	// commTime is MLX4_COMM_TIME, what mlx4_reset_slave waits for the ack.
	commTime = 10 * time.Second
	// recoverTime bounds the wait for the driver's own restart after the
	// FLAGS reset: the catas poll runs every 5 s (MLX4_CATAS_POLL_INTERVAL).
	recoverTime = 30 * time.Second
)

var say = guestinit.Say

func main() { guestinit.Main(run) }

// host is the console input: one value per "go" line.
var host = guestinit.Lines("go")

// wait tells the host that step is done and blocks until it says go.
func wait(step string) {
	say("wait %s", step)
	<-host
}

type guest struct {
	cfg   vmtest.MLX4Config
	bdf   string
	bound bool // new_id written
}

func run() error {
	data, err := os.ReadFile("/" + vmtest.MLX4ConfigPath)
	if err != nil {
		return err
	}
	g := &guest{}
	if err := json.Unmarshal(data, &g.cfg); err != nil {
		return fmt.Errorf("%s: %w", vmtest.MLX4ConfigPath, err)
	}
	var u unix.Utsname
	unix.Uname(&u)
	say("init at uptime %s, kernel %s, scenario %s", guestinit.Uptime(), unix.ByteSliceToString(u.Release[:]), g.cfg.Scenario)
	// The host boots with quiet; from here every kernel line, the
	// driver's debug lines (mlx4_dbg) included, goes to the console,
	// where the host watches for failures.
	if err := os.WriteFile("/proc/sys/kernel/printk", []byte("8"), 0); err != nil {
		return fmt.Errorf("console log level: %w", err)
	}
	if err := (&pci.Modules{Params: g.cfg.ModuleParams}).Load(g.cfg.Modules...); err != nil {
		return err
	}
	say("modules loaded: %s", strings.Join(loadedModules(), " "))
	addrs, err := pci.Find(pci.DefaultRoot, g.cfg.Vendor, g.cfg.Device)
	if err != nil {
		return err
	}
	if len(addrs) != 1 {
		return fmt.Errorf("%d %04x:%04x devices (%v), want one: is -device ivshmem-doorbell on the QEMU command line?", len(addrs), g.cfg.Vendor, g.cfg.Device, addrs)
	}
	g.bdf = addrs[0]
	res, _ := os.ReadFile(filepath.Join(pci.DefaultRoot, "bus/pci/devices", g.bdf, "resource"))
	if l := strings.Split(string(res), "\n"); len(l) > 2 {
		say("device %s BAR2 %s", g.bdf, l[2])
	}
	switch g.cfg.Scenario {
	case vmtest.ScenarioCycle:
		return g.cycle()
	case vmtest.ScenarioMidstream:
		return g.midstream()
	case vmtest.ScenarioFlags:
		return g.flags()
	case vmtest.ScenarioPFKill:
		return g.pfkill()
	case vmtest.ScenarioFLR:
		return g.flr()
	case vmtest.ScenarioVerbs:
		return g.verbs()
	case vmtest.ScenarioVerbsKill:
		return g.verbsKill()
	case vmtest.ScenarioFaults:
		return g.faults()
	case vmtest.ScenarioEth:
		return g.eth()
	case vmtest.ScenarioHold:
		if err := g.bind(1); err != nil {
			return err
		}
		wait("hold")
		return errors.New("the host let a held guest go on")
	}
	return fmt.Errorf("unknown scenario %q", g.cfg.Scenario)
}

// cycle binds and unbinds Binds times; the host checks vhcrd after each.
func (g *guest) cycle() error {
	for i := 1; i <= g.cfg.Binds; i++ {
		if err := g.round(i); err != nil {
			return err
		}
	}
	return nil
}

// round binds and unbinds once, waiting for the host after each.
func (g *guest) round(i int) error {
	if err := g.bind(i); err != nil {
		return err
	}
	wait(fmt.Sprintf("bound %d", i))
	if err := g.unbind(i); err != nil {
		return err
	}
	wait(fmt.Sprintf("unbound %d", i))
	return nil
}

// midstream unbinds while two readers keep MAD_IFC commands in flight
// (each read of ports/N/state is an ib_query_port, which mlx4_ib answers
// with a MAD_IFC), then binds again and checks the device is whole.
func (g *guest) midstream() error {
	if err := g.bind(1); err != nil {
		return err
	}
	wait("bound 1")
	r := g.startReaders()
	if err := r.until(int64(g.cfg.MidstreamReads)); err != nil {
		return err
	}
	before := r.reads.Load()
	say("midstream: %d port-state reads (MAD_IFC) done, unbinding under the readers", before)
	err := g.unbind(1)
	r.halt()
	if err != nil {
		return err
	}
	say("midstream: %d reads in all, %d during the unbind, %d readers saw the device go", r.reads.Load(), r.reads.Load()-before, r.errs.Load())
	wait("unbound 1")
	return g.round(2)
}

// readers read mlx4_0's ports/N/state in a loop, one goroutine per port:
// each read is an ib_query_port, which mlx4_ib answers with a MAD_IFC.
type readers struct {
	reads, errs atomic.Int64
	stop        chan struct{}
	wg          sync.WaitGroup
}

func (g *guest) startReaders() *readers {
	r := &readers{stop: make(chan struct{})}
	for p := 1; p <= g.cfg.Ports; p++ {
		r.wg.Add(1)
		go func(p int) {
			defer r.wg.Done()
			path := filepath.Join(ibClass, "mlx4_0/ports", fmt.Sprint(p), "state")
			for {
				select {
				case <-r.stop:
					return
				default:
				}
				if _, err := os.ReadFile(path); err != nil {
					r.errs.Add(1) // the device went away under the reader
					return
				}
				r.reads.Add(1)
			}
		}(p)
	}
	return r
}

// until waits for n reads in all; a reader's error stops the readers and
// is returned.
func (r *readers) until(n int64) error {
	for r.reads.Load() < n && r.errs.Load() == 0 {
		time.Sleep(time.Millisecond) // progress check of the readers, not synchronisation
	}
	if r.errs.Load() != 0 {
		r.halt()
		return fmt.Errorf("a reader of mlx4_0's port state failed after %d reads", r.reads.Load())
	}
	return nil
}

// halt stops the readers and waits for them.
func (r *readers) halt() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	r.wg.Wait()
}

// pfkill keeps readers issuing MAD_IFC commands while the host SIGKILLs
// vhcrd and its service manager restarts it with the stored descriptors;
// the readers must go on without an error (the driver's commands across
// the kill complete), then the guest reads every port once more and
// unbinds cleanly.
func (g *guest) pfkill() error {
	if err := g.bind(1); err != nil {
		return err
	}
	wait("bound 1")
	r := g.startReaders()
	if err := r.until(int64(g.cfg.MidstreamReads) / 2); err != nil {
		return err
	}
	say("pfkill: %d port-state reads (MAD_IFC) done, readers running", r.reads.Load())
	wait("readers")
	at := r.reads.Load()
	if err := r.until(at + int64(g.cfg.MidstreamReads)); err != nil {
		return err
	}
	r.halt()
	say("pfkill: %d reads while the host killed and restarted vhcrd, %d reads after it", at, r.reads.Load()-at)
	for p := 1; p <= g.cfg.Ports; p++ {
		st, err := os.ReadFile(filepath.Join(ibClass, "mlx4_0/ports", fmt.Sprint(p), "state"))
		if err != nil {
			return fmt.Errorf("port %d state after the PF restart: %w", p, err)
		}
		say("pfkill: port %d state %s", p, strings.TrimSpace(string(st)))
	}
	wait("after")
	if err := g.unbind(1); err != nil {
		return err
	}
	wait("unbound 1")
	return nil
}

// flags runs mlx4_reset_slave's handshake from user space while the driver
// is bound: toggle FLAGS bit 16, wait for vhcrd to copy it into bit 8. The
// driver learns of the reset at its next command (slave_read bit 17),
// resets itself and loads again; the guest waits for that and checks the
// device, then unbinds.
func (g *guest) flags() error {
	if err := g.bind(1); err != nil {
		return err
	}
	wait("bound 1")
	// With iomem=relaxed the resource file maps although mlx4_core holds
	// the region (CONFIG_IO_STRICT_DEVMEM makes busy regions exclusive).
	r, err := sysfs.Open(pci.DefaultRoot, g.bdf, 2)
	if err != nil {
		return fmt.Errorf("map resource2 while bound (is iomem=relaxed on the kernel command line?): %w", err)
	}
	defer r.Close()
	f, err := r.Load32(mlx4.MLX4_COMM_CHAN_FLAGS)
	if err != nil {
		return err
	}
	req, ack := f&mlx4.CommFlagsResetReq != 0, f&mlx4.CommFlagsResetAck != 0
	if req != ack {
		return fmt.Errorf("FLAGS %#x: request and ack differ before the reset", f)
	}
	t0 := time.Now()
	if err := r.Store32(mlx4.MLX4_COMM_CHAN_FLAGS, f^mlx4.CommFlagsResetReq); err != nil {
		return err
	}
	for {
		v, err := r.Load32(mlx4.MLX4_COMM_CHAN_FLAGS)
		if err != nil {
			return err
		}
		if (v&mlx4.CommFlagsResetReq != 0) == (v&mlx4.CommFlagsResetAck != 0) {
			say("flags: reset requested (FLAGS %#x -> %#x), acknowledged in %v (FLAGS %#x)", f, f^mlx4.CommFlagsResetReq, time.Since(t0).Round(time.Millisecond), v)
			break
		}
		if time.Since(t0) > commTime {
			return fmt.Errorf("FLAGS reset not acknowledged in %v (FLAGS %#x)", commTime, v)
		}
		time.Sleep(100 * time.Microsecond) // polling a register another machine writes
	}
	wait("flags reset")
	// The driver's next command finds the channel reset (slave_read bit
	// 17); its catas poll (every 5 s) then resets the function and
	// restarts the device: mlx4_restart_one.
	kmsg, err := openKmsg()
	if err != nil {
		return err
	}
	defer kmsg.Close()
	say("flags: querying port 1; the driver must see the reset and restart")
	t1 := time.Now()
	_, qerr := os.ReadFile(filepath.Join(ibClass, "mlx4_0/ports/1/state"))
	// The query waits for its completion until the driver's catas poll
	// (every 5 s) reads bit 17 and fails the commands in flight.
	say("flags: the port query returned after %v (%v)", time.Since(t1).Round(time.Millisecond), qerr)
	line, err := kmsg.await("mlx4_restart_one was ended", recoverTime)
	if err != nil {
		return fmt.Errorf("flags: no restart of the driver within %v of the reset: %w", recoverTime, err)
	}
	if !strings.HasSuffix(line, "ret=0") {
		return fmt.Errorf("flags: the driver's restart failed: %s", line)
	}
	say("flags: driver restarted %v after the query began: %s", time.Since(t1).Round(time.Millisecond), line)
	if err := g.checkIB(1); err != nil {
		return err
	}
	wait("recovered")
	if err := g.unbind(1); err != nil {
		return err
	}
	wait("unbound 1")
	return g.round(2) // the next bind must be clean
}

// flr binds and waits while the host resets the function (`vhcrd vf flr
// 0`, which the driver is not told of by any command of its own): the
// driver must find out by itself (slave_read bit 17, read by its catas
// poll) and restart. Then the host resets the function again and the guest
// unbinds at once: the unbind must find the reset at its start
// (mlx4_unregister_device reads bit 17, as the catas poll is stopped) and
// not wait for its first command's 70 s timeout. A clean bind and unbind
// follow.
func (g *guest) flr() error {
	if err := g.bind(1); err != nil {
		return err
	}
	// Opened before the host's FLR: the restart cannot come before it.
	kmsg, err := openKmsg()
	if err != nil {
		return err
	}
	defer kmsg.Close()
	wait("bound 1")
	t0 := time.Now()
	line, err := kmsg.await("mlx4_restart_one was ended", recoverTime)
	if err != nil {
		return fmt.Errorf("flr: the driver did not restart within %v of the FLR: %w", recoverTime, err)
	}
	if !strings.HasSuffix(line, "ret=0") {
		return fmt.Errorf("flr: the driver's restart failed: %s", line)
	}
	say("flr: the driver restarted on its own %v after the FLR: %s", time.Since(t0).Round(time.Millisecond), line)
	if err := g.checkIB(1); err != nil {
		return err
	}
	wait("recovered")
	say("flr: the host reset the function again; unbinding at once")
	if err := g.unbind(1); err != nil {
		return err
	}
	wait("unbound 1")
	return g.round(2) // the next bind must be clean
}

// kmsg reads the kernel log from /dev/kmsg, from the end at open.
type kmsg struct{ f *os.File }

func openKmsg() (*kmsg, error) {
	fd, err := unix.Open("/dev/kmsg", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("/dev/kmsg: %w", err)
	}
	if _, err := unix.Seek(fd, 0, unix.SEEK_END); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("/dev/kmsg: seek to the end: %w", err)
	}
	return &kmsg{os.NewFile(uintptr(fd), "/dev/kmsg")}, nil
}

func (k *kmsg) Close() error { return k.f.Close() }

// await returns the first message containing want, or an error after d.
// /dev/kmsg gives one record per read: "prio,seq,usec,flags;text".
func (k *kmsg) await(want string, d time.Duration) (string, error) {
	buf := make([]byte, 8192)
	end := time.Now().Add(d)
	fd := int(k.f.Fd())
	for {
		n, err := unix.Read(fd, buf)
		switch {
		case err == nil:
			_, text, _ := strings.Cut(string(buf[:n]), ";")
			text, _, _ = strings.Cut(text, "\n")
			if strings.Contains(text, want) {
				return text, nil
			}
			continue
		case errors.Is(err, unix.EPIPE): // overwritten records: read on
			continue
		case !errors.Is(err, unix.EAGAIN):
			return "", err
		}
		left := time.Until(end)
		if left <= 0 {
			return "", fmt.Errorf("no kernel message %q", want)
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		unix.Poll(fds, int(min(left, time.Second).Milliseconds())+1)
	}
}

func (g *guest) bind(round int) error {
	t0 := time.Now()
	var err error
	if !g.bound {
		say("bind %d: writing %q to new_id (the probe runs inside the write)", round, g.cfg.NewID)
		err = stalled(fmt.Sprintf("bind %d", round), func() error { return os.WriteFile(driverDir+"/new_id", []byte(g.cfg.NewID), 0) })
		g.bound = err == nil
	} else {
		say("bind %d: writing %s to bind", round, g.bdf)
		err = stalled(fmt.Sprintf("bind %d", round), func() error { return os.WriteFile(driverDir+"/bind", []byte(g.bdf), 0) })
	}
	if err != nil {
		return fmt.Errorf("bind %d: %w", round, err)
	}
	took := time.Since(t0)
	drv, _ := os.Readlink(filepath.Join("/sys/bus/pci/devices", g.bdf, "driver"))
	if filepath.Base(drv) != "mlx4_core" {
		return fmt.Errorf("bind %d: %s has driver %q after the write, want mlx4_core (the probe failed: see the kernel log above)", round, g.bdf, drv)
	}
	say("bound %d: %s to mlx4_core in %v", round, g.bdf, took.Round(time.Millisecond))
	if err := g.checkIB(round); err != nil {
		return err
	}
	for _, l := range mlx4Interrupts() {
		say("interrupts: %s", l)
	}
	return nil
}

// checkIB checks mlx4_0: its PCI device, node type, firmware, and each
// port's state and link layer.
func (g *guest) checkIB(round int) error {
	dev := filepath.Join(ibClass, "mlx4_0")
	link, err := filepath.EvalSymlinks(filepath.Join(dev, "device"))
	if err != nil {
		ls, _ := filepath.Glob(ibClass + "/*")
		return fmt.Errorf("bind %d: no %s (have %v): %w", round, dev, ls, err)
	}
	if filepath.Base(link) != g.bdf {
		return fmt.Errorf("bind %d: mlx4_0 is %s, not %s", round, filepath.Base(link), g.bdf)
	}
	ports, _ := os.ReadDir(filepath.Join(dev, "ports"))
	var names []string
	for _, p := range ports {
		names = append(names, p.Name())
	}
	sort.Strings(names)
	var want []string
	for p := 1; p <= g.cfg.Ports; p++ {
		want = append(want, fmt.Sprint(p))
	}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		return fmt.Errorf("bind %d: mlx4_0 ports %v, want %v", round, names, want)
	}
	say("mlx4_0: node_type %q fw_ver %q node_guid %s", readFile(dev+"/node_type"), readFile(dev+"/fw_ver"), readFile(dev+"/node_guid"))
	// What ibv_devinfo -v shows of the multicast limits (the guest has no
	// rdma-core): mlx4_ib_query_device through ib_uverbs.
	uv, _ := filepath.Glob(filepath.Join(dev, "device/infiniband_verbs/uverbs*"))
	if len(uv) != 1 {
		return fmt.Errorf("bind %d: mlx4_0 has %d verbs devices (%v), want 1: is ib_uverbs loaded?", round, len(uv), uv)
	}
	a, err := queryDevice("/dev/infiniband/" + filepath.Base(uv[0]))
	if err != nil {
		return fmt.Errorf("bind %d: %w", round, err)
	}
	say("verbs: max_mcast_grp %d max_mcast_qp_attach %d max_total_mcast_qp_attach %d", a.MaxMcastGrp, a.MaxMcastQPAttach, a.MaxTotalMcastQPAttach)
	for _, p := range names {
		pd := filepath.Join(dev, "ports", p)
		st, ll, ps := readFile(pd+"/state"), readFile(pd+"/link_layer"), readFile(pd+"/phys_state")
		if st == "" || ll == "" {
			return fmt.Errorf("bind %d: mlx4_0 port %s: state %q link_layer %q", round, p, st, ll)
		}
		say("mlx4_0 port %s: state %q phys_state %q link_layer %q", p, st, ps, ll)
	}
	return nil
}

func (g *guest) unbind(round int) error {
	t0 := time.Now()
	if err := stalled(fmt.Sprintf("unbind %d", round), func() error { return os.WriteFile(driverDir+"/unbind", []byte(g.bdf), 0) }); err != nil {
		return fmt.Errorf("unbind %d: %w", round, err)
	}
	if _, err := os.Stat(filepath.Join(ibClass, "mlx4_0")); err == nil {
		return fmt.Errorf("unbind %d: mlx4_0 still there", round)
	}
	say("unbound %d: in %v", round, time.Since(t0).Round(time.Millisecond))
	return nil
}

// stallTime is how long a bind or unbind may take before the guest reports
// it: against vhcrd a bind takes well under a second of TCG, and the
// driver's own command timeout is 70 s.
const stallTime = 10 * time.Second

// stalled runs op (a sysfs write the driver works inside); if it has not
// returned after stallTime, the guest fails with the mlx4 interrupt counts,
// which tell a missing interrupt from an EQE the driver did not take.
func stalled(what string, op func() error) error {
	done := make(chan error, 1)
	go func() { done <- op() }()
	select {
	case err := <-done:
		return err
	case <-time.After(stallTime):
	}
	say("FAIL: %s has not returned after %v (a command without completion?); mlx4 interrupts: %s", what, stallTime, strings.Join(mlx4Interrupts(), "; "))
	return <-done
}

// mlx4Interrupts is the mlx4 lines of /proc/interrupts, blanks folded.
func mlx4Interrupts() []string {
	var irqs []string
	for _, l := range strings.Split(readFile("/proc/interrupts"), "\n") {
		if strings.Contains(l, "mlx4") {
			irqs = append(irqs, strings.Join(strings.Fields(l), " "))
		}
	}
	return irqs
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return strings.TrimSpace(string(b))
}

func loadedModules() []string {
	var mods []string
	for _, l := range strings.Split(readFile("/proc/modules"), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			mods = append(mods, f[0])
		}
	}
	return mods
}
