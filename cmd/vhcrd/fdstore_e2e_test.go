package main

import (
	"bufio"
	"context"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/hack/testenv"
	"github.com/vhcrd/vhcrd/hack/testenv/sdnotify"
	"github.com/vhcrd/vhcrd/ivshmem"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// fakeManager plays systemd for vhcrd (package sdnotify): the notify
// socket, the file-descriptor store, starts with the store passed.
type fakeManager struct {
	*sdnotify.Manager
	t *testing.T
}

func newFakeManager(t *testing.T) *fakeManager {
	return &fakeManager{Manager: sdnotify.New(t), t: t}
}

// managed is a vhcrd the fake manager started.
type managed struct {
	cmd     *exec.Cmd
	exited  chan error
	mu      sync.Mutex
	stderr  strings.Builder
	metrics string
}

func (d *managed) log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stderr.String()
}

// start runs vhcrd with args, the store passed, and waits for READY=1.
func (m *fakeManager) start(args ...string) *managed {
	t := m.t
	t.Helper()
	cmd := m.Command(filepath.Join(binDir, "vhcrd"), args...)
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := m.Start(cmd); err != nil {
		t.Fatal(err)
	}
	d := &managed{cmd: cmd, exited: make(chan error, 1)}
	go func() { d.exited <- cmd.Wait(); pw.Close() }()
	urls := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`url=(http://[0-9.:]+)/metrics`)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			d.mu.Lock()
			d.stderr.WriteString(sc.Text() + "\n")
			d.mu.Unlock()
			if u := re.FindStringSubmatch(sc.Text()); u != nil {
				urls <- u[1]
			}
		}
		close(urls)
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-d.exited
		}
	})
	m.WaitFor("READY", "1")
	// The URL is logged before READY=1 is sent.
	if d.metrics = <-urls; d.metrics == "" {
		t.Fatalf("vhcrd ready without its metrics URL:\n%s", d.log())
	}
	return d
}

// metricValue is the value of the series of name whose labels include
// every label given (name="value" pairs), -1 if none.
func metricValue(t *testing.T, url, name string, labels ...string) int {
	t.Helper()
	for _, l := range strings.Split(get(t, url+"/metrics"), "\n") {
		if !strings.HasPrefix(l, name+"{") {
			continue
		}
		all := true
		for _, lb := range labels {
			all = all && strings.Contains(l, lb)
		}
		if all {
			f := strings.Fields(l)
			n, _ := strconv.ParseFloat(f[len(f)-1], 64)
			return int(n)
		}
	}
	return -1
}

// TestGuestSurvivesPFKillUnderServiceManager: vhcrd under a service
// manager (the fake above, speaking systemd's protocol) keeps a guest VF's
// ivshmem socket, QEMU's connection and the VF's MSI-X eventfds in the
// manager's file-descriptor store. A client in QEMU's place (the ivshmem
// client; the VF driver over the BAR files and the guest RAM, in mlx4's
// completion mode, waiting on its vector 0 eventfd) holds the connection;
// vhcrd is killed with SIGKILL; the driver posts an 'e' command to the dead
// PF; the manager starts a new vhcrd with the store: it adopts the
// connection (no new setup, the client never sees it close) and the
// eventfds, and the command completes once, by the interrupt of the
// eventfd the client got from the first vhcrd. The guest's going away
// (FLR) then removes its connection and vectors from the store.
func TestGuestSurvivesPFKillUnderServiceManager(t *testing.T) {
	dir := shmDir(t)
	barPath, ram := filepath.Join(dir, "bar"), filepath.Join(dir, "ram0")
	args := []string{"serve", "--bar", "file:" + barPath, "--dma", "file:" + filepath.Join(dir, "dma"), "--num-vfs", "2",
		"--window", "256K", "--metrics-addr", "127.0.0.1:0", "--vectors", "4", "--guest", "0=" + ram + ",size=64M"}
	m := newFakeManager(t)
	d1 := m.start(args...)
	want := []string{"vf0-listen"}
	if got := m.Names(); !slices.Equal(got, want) {
		t.Fatalf("stored before a guest: %v, want %v", got, want)
	}

	cl, err := ivshmem.Dial(wire.VFBARPath(barPath, 0) + ".sock")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cl.Close(); cl.State.CloseFDs() }()
	if err := cl.Setup(4, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	m.WaitFor("FDNAME", "vf0-conn")
	withGuest := []string{"vf0-conn", "vf0-irq0", "vf0-irq1", "vf0-irq2", "vf0-irq3", "vf0-listen"}
	if got := m.Names(); !slices.Equal(got, withGuest) {
		t.Fatalf("stored with a guest: %v, want %v", got, withGuest)
	}

	// The guest's driver: VF 0 over its BAR region and the guest's RAM,
	// interrupted through vector 0 as QEMU would deliver it.
	ctx := context.Background()
	vec0, err := unix.Dup(cl.State.Vectors[0])
	if err != nil {
		t.Fatal(err)
	}
	unix.CloseOnExec(vec0)
	irqFile := os.NewFile(uintptr(vec0), "vector 0")
	defer irqFile.Close()
	drv := guestDriver(t, barPath, ram, 2*time.Minute, irqFile)
	if _, err := drv.AllocMTT(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// The EQ's pages are an MTT range too.
	mtts := func(d *managed) int { return metricValue(t, d.metrics, "vhcrd_resources", `vf="0"`, `type="mtt"`) }
	n0 := mtts(d1)
	if n0 < 1 {
		t.Fatalf("VF 0 holds %d MTT ranges", n0)
	}
	irqsBefore := drv.Stats.Interrupts

	// kill -9: nothing of vhcrd's own runs.
	if err := d1.cmd.Process.Signal(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-d1.exited
	// The driver posts to the dead PF and waits for the completion's
	// interrupt; the test waits until the post is in slave_write.
	sw := func() uint32 {
		var b [4]byte
		f, err := os.Open(wire.VFBARPath(barPath, 0))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.ReadAt(b[:], mlx4.CommSlaveWrite); err != nil {
			t.Fatal(err)
		}
		return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
	}
	before := sw()
	type allocated struct {
		mtt vfdrv.MTT
		err error
	}
	done := make(chan allocated, 1)
	go func() { mt, err := drv.AllocMTT(ctx, 1); done <- allocated{mt, err} }()
	until(t, "the post to the dead PF", func() bool { return sw() != before })

	d2 := m.start(args...)
	var res allocated
	select {
	case res = <-done:
	case err := <-d2.exited:
		t.Fatalf("restarted vhcrd exited: %v\n%s", err, d2.log())
	}
	if res.err != nil {
		t.Fatalf("the command posted across the kill: %v\nrestarted vhcrd:\n%s", res.err, d2.log())
	}
	if drv.Stats.Interrupts == irqsBefore {
		t.Fatalf("the command completed without an interrupt of the adopted vector\n%s", d2.log())
	}
	if n := metricValue(t, d2.metrics, "vhcrd_interrupts_total", `vf="0"`); n < 1 {
		t.Fatalf("restarted vhcrd raised VF 0's vectors %d times", n)
	}
	if n := mtts(d2); n != n0+1 {
		t.Fatalf("VF 0 holds %d MTT ranges after the restart, want %d (one command, executed once)", n, n0+1)
	}
	// No stray completion: the next command's EQE is its own.
	if _, err := drv.AllocMTT(ctx, 1); err != nil {
		t.Fatalf("the next command: %v", err)
	}
	if n := mtts(d2); n != n0+2 {
		t.Fatalf("VF 0 holds %d MTT ranges, want %d", n, n0+2)
	}
	// The client's connection was never closed, nor set up again.
	var raw int
	if err := cl.Control(func(fd uintptr) { raw = int(fd) }); err != nil {
		t.Fatal(err)
	}
	var p [1]byte
	if n, _, err := unix.Recvfrom(raw, p[:], unix.MSG_PEEK|unix.MSG_DONTWAIT); err != unix.EAGAIN {
		t.Fatalf("the client's connection across the restart: %d bytes, %v; want open with nothing new", n, err)
	}
	for _, l := range []string{"guest connection adopted", "MSI-X eventfds adopted", "ivshmem socket adopted"} {
		if !strings.Contains(d2.log(), l) {
			t.Errorf("restarted vhcrd did not log %q:\n%s", l, d2.log())
		}
	}
	if n := metricValue(t, d2.metrics, "vhcrd_comm_resets_total", `vf="0"`, `reason="flr"`); n > 0 {
		t.Fatalf("VF 0 reset %d times as an FLR across the restart", n)
	}
	if got := m.Names(); !slices.Equal(got, withGuest) {
		t.Fatalf("stored after the restart: %v, want %v", got, withGuest)
	}

	// The guest goes: an FLR, and its connection and vectors leave the
	// store (the listening socket stays for the next QEMU).
	cl.Close()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("restarted vhcrd:\n%s", d2.log())
		}
	})
	m.WaitFor("FDNAME", "vf0-irq3")
	if got := m.Names(); !slices.Equal(got, want) {
		t.Fatalf("stored after the guest went: %v, want %v", got, want)
	}
	until(t, "the VF's FLR", func() bool { return mtts(d2) == 0 })
	if bad := m.Bad(); len(bad) > 0 {
		t.Fatalf("messages not from the main process: %v", bad)
	}
}

// TestQEMUGuestSurvivesPFKill: as TestGuestSurvivesPFKillUnderServiceManager
// with a real QEMU (7.2, TCG, paused) holding the ivshmem connection: after
// vhcrd's SIGKILL and its restart under the manager, QEMU's device is
// served on (no FLR, QEMU still running), the restarted vhcrd raises the
// VF's vectors for a command's completion, and QEMU's end, killed at last,
// is seen by the restarted vhcrd (the VF reset as an FLR, the store emptied
// but for the socket): the connection it served was QEMU's.
func TestQEMUGuestSurvivesPFKill(t *testing.T) {
	qemu := testenv.LookPath(t, "qemu-system-x86_64", "qemu-system-x86")
	dir := shmDir(t)
	barPath, ram := filepath.Join(dir, "bar"), filepath.Join(dir, "ram0")
	args := []string{"serve", "--bar", "file:" + barPath, "--dma", "file:" + filepath.Join(dir, "dma"), "--num-vfs", "2",
		"--window", "256K", "--metrics-addr", "127.0.0.1:0", "--vectors", "4", "--guest", "0=" + ram + ",size=64M"}
	m := newFakeManager(t)
	d1 := m.start(args...)
	q := startQEMU(t, qemu, ram, wire.VFBARPath(barPath, 0)+".sock")
	if got := q.ivshmemBAR2(t); got != wire.VFBARSize {
		t.Fatalf("BAR2 of %d bytes", got)
	}
	m.WaitFor("FDNAME", "vf0-conn")

	if err := d1.cmd.Process.Signal(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-d1.exited
	d2 := m.start(args...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("restarted vhcrd:\n%s", d2.log())
		}
	})
	if !strings.Contains(d2.log(), "guest connection adopted") {
		t.Fatal("the restarted vhcrd did not adopt QEMU's connection")
	}
	if q.cmd.ProcessState != nil {
		t.Fatal("QEMU exited")
	}

	// A driver of VF 0 over the BAR files and the guest's RAM (standing in
	// for the paused guest), its EQ armed through vector 0: the eventfd
	// QEMU holds, the one the first vhcrd handed over.
	ctx := context.Background()
	irqFile := os.NewFile(uintptr(m.StoredFD("vf0-irq0")), "vector 0")
	defer irqFile.Close()
	drv := guestDriver(t, barPath, ram, time.Minute, irqFile)
	if _, err := drv.AllocMTT(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if n := metricValue(t, d2.metrics, "vhcrd_interrupts_total", `vf="0"`); n < 1 {
		t.Fatalf("the restarted vhcrd raised VF 0's vectors %d times", n)
	}
	if n := metricValue(t, d2.metrics, "vhcrd_comm_resets_total", `vf="0"`, `reason="flr"`); n > 0 {
		t.Fatalf("VF 0 reset %d times as an FLR while QEMU stayed", n)
	}

	_ = q.cmd.Process.Kill()
	_ = q.cmd.Wait()
	m.WaitFor("FDNAME", "vf0-irq3")
	if got, want := m.Names(), []string{"vf0-listen"}; !slices.Equal(got, want) {
		t.Fatalf("stored after QEMU went: %v, want %v", got, want)
	}
	until(t, "the VF's FLR", func() bool {
		return metricValue(t, d2.metrics, "vhcrd_comm_resets_total", `vf="0"`, `reason="flr"`) == 1
	})
}

// guestDriver is an mlx4-completions driver of VF 0 as a guest sees it
// (guestVF), its EQ 1 armed through irq (vector 0) for 'e' commands.
func guestDriver(t *testing.T, barPath, ram string, post time.Duration, irq *os.File) *vfdrv.Driver {
	t.Helper()
	gv, vfBAR := guestVF(t, barPath, ram, post)
	drv, err := vfdrv.New(gv, vfdrv.Options{BAR: vfBAR, IRQ: irq, Completions: vfdrv.CompletionsMlx4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drv.EnableEvents(context.Background(), 1, 8); err != nil {
		t.Fatal(err)
	}
	return drv
}

// guestVF opens VF 0 as a guest's driver sees it, over the BAR files of
// barPath and the guest's RAM file ram (no futex doorbell), and brings its
// channel up; posts wait up to post. The regions close with the test.
func guestVF(t *testing.T, barPath, ram string, post time.Duration) (*vfclient.VF, bar.Region) {
	t.Helper()
	ctrl, err := bar.OpenFile(barPath, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrl.Close() })
	vfBAR, err := bar.OpenFile(wire.VFBARPath(barPath, 0), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vfBAR.Close() })
	ramR, err := bar.OpenFileLazy(ram, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ramR.Close() })
	lay, err := wire.ReadLayout(ctrl)
	if err != nil {
		t.Fatal(err)
	}
	gv, err := vfclient.NewGuestVF(ctrl, vfBAR, ramR, lay, 0)
	if err != nil {
		t.Fatal(err)
	}
	gv.NoDoorbell()
	gv.Timeouts = vfclient.Timeouts{Sync: time.Second, Offline: 30 * time.Second, Comm: 30 * time.Second, Post: post}
	if err := gv.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	return gv, vfBAR
}
