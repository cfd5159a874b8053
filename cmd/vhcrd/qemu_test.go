package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/hack/testenv"
	"github.com/vhcrd/vhcrd/vhcr/config"
	"github.com/vhcrd/vhcrd/vhcr/hca/restrack"
	"github.com/vhcrd/vhcrd/vhcr/master"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/vfclient/vfdrv"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// qmp is a QEMU started with -qmp stdio.
type qmp struct {
	cmd *exec.Cmd
	in  io.Writer
	dec *json.Decoder
}

// startQEMU starts QEMU paused (-S, TCG) with a guest whose RAM is ram and
// an ivshmem-doorbell device connected to sock, and negotiates QMP.
func startQEMU(t *testing.T, qemu, ram, sock string) *qmp {
	t.Helper()
	cmd := exec.Command(qemu, "-S", "-nodefaults", "-display", "none", "-accel", "tcg",
		"-machine", "q35,memory-backend=ram", "-m", "64M",
		"-object", "memory-backend-file,id=ram,size=64M,mem-path="+ram+",share=on",
		"-chardev", "socket,path="+sock+",id=vf0",
		"-device", "ivshmem-doorbell,chardev=vf0,vectors=4",
		"-qmp", "stdio")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	q := &qmp{cmd: cmd, in: in, dec: json.NewDecoder(bufio.NewReader(out))}
	var greeting map[string]any
	if err := q.dec.Decode(&greeting); err != nil || greeting["QMP"] == nil {
		t.Fatalf("QMP greeting: %v %v", greeting, err)
	}
	q.call(t, "qmp_capabilities", nil)
	return q
}

// refusedQEMU starts a second QEMU on the socket of a VF that has one: the
// server refuses it with a version no client accepts, and QEMU 7.2 must
// exit non-zero with its message (a refusal by end-of-file alone leaves it
// spinning for ever in ivshmem_recv_msg). The context only bounds a QEMU
// that would spin.
func refusedQEMU(t *testing.T, qemu, ram, sock string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, qemu, "-S", "-nodefaults", "-display", "none", "-accel", "tcg",
		"-machine", "q35,memory-backend=ram", "-m", "64M",
		"-object", "memory-backend-file,id=ram,size=64M,mem-path="+ram+",share=on",
		"-chardev", "socket,path="+sock+",id=vf0",
		"-device", "ivshmem-doorbell,chardev=vf0,vectors=4")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the refused QEMU did not exit: killed after 60 s (%v)\n%s", err, out)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("the refused QEMU: %v, want a non-zero exit\n%s", err, out)
	}
	const want = "server sent version -1, expecting 0"
	if !strings.Contains(string(out), want) {
		t.Fatalf("the refused QEMU exited %d without %q:\n%s", ee.ExitCode(), want, out)
	}
	t.Logf("a second QEMU on %s exits %d: %s", filepath.Base(sock), ee.ExitCode(), strings.TrimSpace(string(out)))
}

// call runs a QMP command and decodes its return into ret (events are
// skipped).
func (q *qmp) call(t *testing.T, cmd string, ret any) {
	t.Helper()
	if _, err := fmt.Fprintf(q.in, `{"execute":%q}`+"\n", cmd); err != nil {
		t.Fatal(err)
	}
	for {
		var m struct {
			Return json.RawMessage `json:"return"`
			Error  any             `json:"error"`
			Event  string          `json:"event"`
		}
		if err := q.dec.Decode(&m); err != nil {
			t.Fatalf("QMP %s: %v", cmd, err)
		}
		if m.Event != "" {
			continue
		}
		if m.Error != nil {
			t.Fatalf("QMP %s: %v", cmd, m.Error)
		}
		if ret != nil {
			if err := json.Unmarshal(m.Return, ret); err != nil {
				t.Fatalf("QMP %s: %v", cmd, err)
			}
		}
		return
	}
}

// ivshmemBAR2 returns the size of BAR2 of the guest's ivshmem device
// (1af4:1110), from query-pci.
func (q *qmp) ivshmemBAR2(t *testing.T) int64 {
	t.Helper()
	var buses []struct {
		Devices []struct {
			ID struct {
				Vendor int `json:"vendor"`
				Device int `json:"device"`
			} `json:"id"`
			Regions []struct {
				BAR  int   `json:"bar"`
				Size int64 `json:"size"`
			} `json:"regions"`
		} `json:"devices"`
	}
	q.call(t, "query-pci", &buses)
	for _, b := range buses {
		for _, d := range b.Devices {
			if d.ID.Vendor == 0x1af4 && d.ID.Device == 0x1110 {
				for _, r := range d.Regions {
					if r.BAR == 2 {
						return r.Size
					}
				}
				t.Fatal("the ivshmem device has no BAR2")
			}
		}
	}
	t.Fatal("no ivshmem device in query-pci")
	return 0
}

// until waits for cond, looking every millisecond, for at most 20 s.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestQEMUGuestVF: vhcrd serves VF 0 to a real QEMU (7.2, TCG, paused) as
// its ivshmem server: the device is realised with BAR2 the size of the VF
// BAR region, a vector vhcrd raises is consumed by QEMU (its eventfd, which
// QEMU watches, is read empty), a driver on the VF's BAR region and the
// guest's RAM allocates, killing QEMU resets the VF as an FLR does (the
// allocation released, VF 1 and its own guest untouched), and the next
// QEMU is served.
func TestQEMUGuestVF(t *testing.T) {
	qemu := testenv.LookPath(t, "qemu-system-x86_64", "qemu-system-x86")
	dir := shmDir(t)
	ram := filepath.Join(dir, "ram0")
	f := serveFlags{bar: "file:" + filepath.Join(dir, "bar"), dma: "file:" + filepath.Join(dir, "dma"), vfs: 2,
		vfBARs: vfSpecs{}, guests: vfSpecs{0: ram + ",size=64M", 1: filepath.Join(dir, "ram1") + ",size=64M"}, vectors: 6}
	s, err := openServer(f, config.Default(), 256<<10, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.pf.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		s.close()
	}()
	sock := wire.VFBARPath(filepath.Join(dir, "bar"), 0) + ".sock"
	srv := s.guests[0].srv

	q := startQEMU(t, qemu, ram, sock)
	if got := q.ivshmemBAR2(t); got != wire.VFBARSize {
		t.Fatalf("BAR2 of %d bytes, want the VF BAR region's %d", got, wire.VFBARSize)
	}
	// A second guest at once, with VF 1, its own RAM file and socket.
	q1 := startQEMU(t, qemu, filepath.Join(dir, "ram1"), wire.VFBARPath(filepath.Join(dir, "bar"), 1)+".sock")
	if got := q1.ivshmemBAR2(t); got != wire.VFBARSize {
		t.Fatalf("VF 1's guest: BAR2 of %d bytes", got)
	}
	srv1 := s.guests[1].srv
	if srv1 == srv {
		t.Fatal("VF 1 shares VF 0's ivshmem server")
	}
	until(t, "VF 1's ivshmem client", func() bool { _, _, c := srv1.Stats(); return c })
	until(t, "the ivshmem client", func() bool { _, _, c := srv.Stats(); return c })
	refusedQEMU(t, qemu, filepath.Join(dir, "ram0b"), sock)
	if clients, refused, connected := srv.Stats(); clients != 1 || refused != 1 || !connected {
		t.Fatalf("after the refused QEMU: %d clients, %d refused, connected %v; want the first QEMU served on", clients, refused, connected)
	}
	// QEMU watches the eventfds of its 4 vectors and closes the 2 extra
	// ones vhcrd sends: a raise of vector 3 is read by QEMU, one of vector
	// 5 stays pending (the control: only QEMU reads these fds).
	readable := func(vec int) bool {
		fd, err := s.irq.VF(0).FD(vec)
		if err != nil {
			t.Fatal(err)
		}
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(p, 0)
		return err == nil && n == 1
	}
	for _, vec := range []int{0, 3, 5} {
		if err := s.irq.Raise(0, vec); err != nil {
			t.Fatal(err)
		}
	}
	until(t, "QEMU to consume vectors 0 and 3", func() bool { return !readable(0) && !readable(3) })
	if !readable(5) {
		t.Fatal("vector 5, which QEMU does not have, was consumed")
	}

	// The test stands in for the paused guest's driver: VF 0 over its BAR
	// region and the guest's RAM (IOVA = GPA), without the futex doorbell
	// (the poller's sleep is bounded while the guest is attached). It
	// brings the channel up and allocates an MTT range.
	ram0, err := bar.OpenFileLazy(ram, false)
	if err != nil {
		t.Fatal(err)
	}
	defer ram0.Close()
	gv, err := vfclient.NewGuestVF(s.barR, s.vfBARs[0], ram0, s.pf.Layout(), 0)
	if err != nil {
		t.Fatal(err)
	}
	gv.NoDoorbell()
	gv.Timeouts = vfclient.Timeouts{Sync: time.Second, Offline: 10 * time.Second, Comm: 10 * time.Second, Post: 10 * time.Second}
	if err := gv.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	d, err := vfdrv.New(gv, vfdrv.Options{BAR: s.vfBARs[0]})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.AllocMTT(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	mtts := func(vf int) (n int) {
		if err := s.pf.Do(func() { n = s.hca.Res.Counts(vf)[restrack.MTT] }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := mtts(0); n != 1 {
		t.Fatalf("VF 0 holds %d MTT ranges", n)
	}

	resets := func() uint64 { return s.pf.Stats().Reset(0, master.ResetFLR) }
	if n := resets(); n != 0 {
		t.Fatalf("%d FLRs before QEMU went", n)
	}
	_ = q.cmd.Process.Kill()
	_ = q.cmd.Wait()
	until(t, "the VF's reset", func() bool { return resets() == 1 })
	if n := mtts(0); n != 0 {
		t.Errorf("VF 0 still holds %d MTT ranges after its guest went", n)
	}
	if n := s.pf.Stats().Reset(1, master.ResetFLR); n != 0 {
		t.Errorf("VF 1 reset %d times", n)
	}
	if _, _, c := srv1.Stats(); !c {
		t.Error("VF 1's guest lost its connection when VF 0's went")
	}

	q2 := startQEMU(t, qemu, ram, sock)
	if got := q2.ivshmemBAR2(t); got != wire.VFBARSize {
		t.Fatalf("second QEMU: BAR2 of %d bytes", got)
	}
	until(t, "the second client", func() bool { n, _, c := srv.Stats(); return c && n == 2 })
}
