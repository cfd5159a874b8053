package vmtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/hack/testenv"
	"github.com/vhcrd/vhcrd/vhcr/master/trace"
)

// Environment:
//
//	VHCRD_VMTEST=1          run the VM tier (make vmtest sets it)
//	VHCRD_VMTEST_DIR        vmlinuz and mods/*.ko from hack/fetch-vmkernel.sh (default .cache/vmkernel)
//	VHCRD_VMTEST_QEMU       QEMU binary (default qemu-system-x86_64 from PATH)
//	VHCRD_VMTEST_SERVE      vhcrd arguments in the guest (default defaultServe)
//	CI=true                 a missing QEMU or kernel fails the test instead of skipping it
//
// defaultServe runs vhcrd on BAR2 through vfio-pci with the DMA windows and
// the two VF BAR regions (wire contract v2: 8 MiB each, at 8 and 16 MiB) in
// the same BAR (one 32 MiB ivshmem device holds everything), the control
// header and windows below the words the test itself uses at 0xff000.
const defaultServe = "serve --bar vfio:{BDF}#region2 --dma bar@0x40000 --num-vfs 2 --window 64K --metrics-addr=" +
	" --vf-bar 0=vfio:{BDF}#region2@8M --vf-bar 1=vfio:{BDF}#region2@16M"

// traceArgs make each guest run's vhcrd write its command trace to the
// VM's second serial port as JSON lines (see trace.go).
var traceArgs = []string{"--trace", "/dev/ttyS1", "--trace-json"}

// expectedRefusal is the refusal vfChecks provokes: opcode 0x7ff, which no
// table knows.
func expectedRefusal(e *trace.Entry) bool { return e.Opcode == "0x7ff" && e.Status == "BAD_PARAM" }

// defaultServeSysfs is the second run: the same layout through the sysfs
// resource2 file.
const defaultServeSysfs = "serve --bar sysfs:{BDF}#resource2 --dma bar@0x40000 --num-vfs 2 --window 64K --metrics-addr=" +
	" --vf-bar 0=sysfs:{BDF}#resource2@8M --vf-bar 1=sysfs:{BDF}#resource2@16M"

// withVFBARs puts vfBARArgs right after vfctl's command name (before any
// positional argument, where the flag package still parses flags).
func withVFBARs(args []string, shm string) []string {
	return append(append([]string{args[0]}, vfBARArgs(shm)...), args[1:]...)
}

// vfBARArgs are vfctl's --vf-bar flags for the host file shm: the VF BAR
// regions defaultServe serves at 8 and 16 MiB of the ivshmem BAR.
func vfBARArgs(shm string) []string {
	return []string{"--vf-bar", "0=file:" + shm + "@8M", "--vf-bar", "1=file:" + shm + "@16M"}
}

const (
	bootTimeout = 50 * time.Second // QEMU is killed after this, whatever happens
	barSize     = 32 << 20
)

// kvmUsable is vfio-lab.md's check: real VMX/SVM, not kvm_pvm, and a
// writable /dev/kvm. Otherwise QEMU runs under TCG.
func kvmUsable() bool {
	cpu, err := os.ReadFile("/proc/cpuinfo")
	if err != nil || !regexp.MustCompile(`\b(vmx|svm)\b`).Match(cpu) {
		return false
	}
	if _, err := os.Stat("/sys/module/kvm_pvm"); err == nil {
		return false
	}
	return syscall.Access("/dev/kvm", 2 /* W_OK */) == nil
}

func moduleRoot(t testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found")
		}
		dir = parent
	}
}

// goBuild builds static binaries (CGO_ENABLED=0) of pkgs into dir in one
// go build, so that their shared dependencies compile once.
func goBuild(t testing.TB, root, dir string, pkgs ...string) {
	t.Helper()
	t0 := time.Now()
	cmd := exec.Command("go", append([]string{"build", "-trimpath", "-o", dir + "/"}, pkgs...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", strings.Join(pkgs, " "), err, b)
	}
	t.Logf("built %s in %.1fs", strings.Join(pkgs, " "), time.Since(t0).Seconds())
}

// serial collects the guest's console lines.
type serial struct {
	lines chan string
	log   bytes.Buffer
	done  chan struct{}
}

func newSerial(r io.Reader) *serial {
	s := &serial{lines: make(chan string, 1024), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer close(s.lines)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := strings.TrimRight(sc.Text(), "\r")
			s.log.WriteString(line + "\n")
			s.lines <- line
		}
	}()
	return s
}

// expect reads lines until one contains want; a "vmtest: FAIL" line, the
// end of output or the deadline fails the test.
func (s *serial) expect(t *testing.T, ctx context.Context, want string) string {
	t.Helper()
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				t.Fatalf("guest output ended before %q", want)
			}
			if strings.HasPrefix(line, "vmtest: ") || strings.Contains(line, "msg=") {
				t.Logf("guest: %s", line)
			}
			if strings.Contains(line, "vmtest: FAIL") {
				t.Fatalf("guest failed: %s", line)
			}
			if strings.Contains(line, want) {
				return line
			}
		case <-ctx.Done():
			t.Fatalf("no %q from the guest before the deadline (%v)", want, ctx.Err())
		}
	}
}

// drainUntil reads lines until one contains want, the output ends or d
// has passed (no failure: the test has failed already).
func drainUntil(s *serial, want string, d time.Duration) {
	deadline := time.After(d)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok || strings.Contains(line, want) {
				return
			}
		case <-deadline:
			return
		}
	}
}

// pollWord polls a 32-bit word of the shared file until cond holds or the
// context ends. The guest writes it from another machine: polling is the
// only way to observe it.
func pollWord(ctx context.Context, f *bar.File, off int64, cond func(uint32) bool) (uint32, error) {
	for {
		v, err := f.Load32(off)
		if err != nil || cond(v) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-time.After(100 * time.Microsecond):
		}
	}
}

func TestVM(t *testing.T) {
	if os.Getenv("VHCRD_VMTEST") != "1" {
		t.Skip("VM tier: set VHCRD_VMTEST=1 to run it (make vmtest)")
	}
	qemu := os.Getenv("VHCRD_VMTEST_QEMU")
	if qemu == "" {
		qemu = "qemu-system-x86_64"
	}
	qemuPath, err := exec.LookPath(qemu)
	if err != nil {
		testenv.SkipOrFail(t, "VM tier: %s not found (apt-get install --no-install-recommends qemu-system-x86)", qemu)
	}
	root := moduleRoot(t)
	kdir := os.Getenv("VHCRD_VMTEST_DIR")
	if kdir == "" {
		kdir = filepath.Join(root, ".cache", "vmkernel")
	}
	kernel := filepath.Join(kdir, "vmlinuz")
	if _, err := os.Stat(kernel); err != nil {
		testenv.SkipOrFail(t, "VM tier: no kernel at %s (run hack/fetch-vmkernel.sh)", kernel)
	}
	tmp := t.TempDir()
	guestTrace := filepath.Join(tmp, "trace.jsonl")
	cfg := DefaultGuestConfig()
	im := Image{Init: filepath.Join(tmp, "guest"), Files: map[string]string{}, Modules: filepath.Join(kdir, "mods"), Config: cfg}
	pkgs := []string{"./hack/vmtest/guest"}
	withVhcrd, vfctl := false, ""
	if _, err := os.Stat(filepath.Join(root, "cmd", "vhcrd")); err == nil {
		withVhcrd = true
		pkgs = append(pkgs, "./cmd/vhcrd")
		im.Files["bin/vhcrd"] = filepath.Join(tmp, "vhcrd")
		serve := os.Getenv("VHCRD_VMTEST_SERVE")
		if serve == "" {
			serve = defaultServe
		}
		// The trace of each run goes to the second serial port, which
		// QEMU writes to guestTrace on the host.
		im.Config.Serve = append(strings.Fields(serve), traceArgs...)
		im.Config.ServeSysfs = append(strings.Fields(defaultServeSysfs), traceArgs...)
		if _, err := os.Stat(filepath.Join(root, "cmd", "vfctl")); err == nil {
			pkgs = append(pkgs, "./cmd/vfctl") // runs on the host; static is fine
			vfctl = filepath.Join(tmp, "vfctl")
		}
	} else {
		t.Log("no cmd/vhcrd yet: the guest answers handshakes through the VFIO mapping itself")
	}
	goBuild(t, root, tmp, pkgs...)
	initrd := filepath.Join(tmp, "initramfs.cpio")
	f, err := os.Create(initrd)
	if err != nil {
		t.Fatal(err)
	}
	release, err := im.Write(f)
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}

	// A unique shared file, removed at the end.
	var rnd [6]byte
	rand.Read(rnd[:])
	shm := fmt.Sprintf("/dev/shm/vhcrd-vmtest-%d-%s", os.Getpid(), hex.EncodeToString(rnd[:]))
	host, _, err := bar.CreateFile(shm, barSize)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close(); os.Remove(shm) })
	if err := host.Store32(cfg.MagicOff, cfg.Magic); err != nil {
		t.Fatal(err)
	}

	accel := []string{"-machine", "q35", "-accel", "tcg", "-cpu", "max"}
	if kvmUsable() {
		accel = []string{"-machine", "q35,kernel-irqchip=split", "-accel", "kvm", "-cpu", "host"}
	}
	args := append(accel,
		"-smp", "1", "-m", "512M",
		"-device", "intel-iommu,intremap=on",
		"-object", fmt.Sprintf("memory-backend-file,id=hm,size=%d,share=on,mem-path=%s", barSize, shm),
		"-device", "ivshmem-plain,memdev=hm",
		"-kernel", kernel, "-initrd", initrd,
		"-append", "console=ttyS0 panic=-1 intel_iommu=on",
		"-display", "none", "-serial", "stdio", "-serial", "file:"+guestTrace, "-monitor", "none", "-nodefaults", "-no-reboot")
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()
	cmd := exec.Command(qemuPath, args...)
	// Own process group, killed with the test process (Pdeathsig) and
	// at cleanup, so no QEMU outlives the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var qemuErr error
	qemuDone := false
	t.Cleanup(func() {
		if !qemuDone {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		pr.Close()
	})
	go func() {
		<-ctx.Done()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the hard timeout
	}()
	con := newSerial(pr)
	t.Cleanup(func() {
		if t.Failed() {
			<-con.done
			t.Logf("serial log:\n%s", con.log.String())
			if f, err := os.Open(guestTrace); err == nil {
				t.Logf("vhcrd's command trace (%s):\n%s", guestTrace, traceSummary(f, expectedRefusal))
				f.Close()
			}
		}
	})
	t.Logf("qemu %s, kernel %s, shared file %s", strings.Join(accel, " "), release, shm)
	// On a failure, before the deferred cancel kills QEMU: stop vhcrd if it
	// still runs, so that it writes the trace's last records.
	defer func() {
		if t.Failed() && withVhcrd && ctx.Err() == nil {
			io.WriteString(stdin, "stop\n")
			drainUntil(con, "vmtest: vhcrd exit status", 10*time.Second)
		}
	}()

	con.expect(t, ctx, "vmtest: modules loaded")
	con.expect(t, ctx, "vmtest: sysfs ")
	con.expect(t, ctx, "vmtest: bound ")
	con.expect(t, ctx, "vmtest: vfio vfio:")
	con.expect(t, ctx, "vmtest: dma map/unmap")
	con.expect(t, ctx, "vmtest: ready")
	for _, w := range []struct {
		off  int64
		want uint32
		who  string
	}{{cfg.MagicOff + 4, cfg.SysfsMark, "sysfs"}, {cfg.MagicOff + 8, cfg.VFIOMark, "vfio"}} {
		if v, err := host.Load32(w.off); err != nil || v != w.want {
			t.Fatalf("host file word at %#x = %#x (%v): the guest's %s store did not reach the file (want %#x)", w.off, v, err, w.who, w.want)
		}
	}
	if withVhcrd {
		// serve writes the header before it handles SIGTERM; "vhcrd
		// starting" says it is polling and will stop cleanly.
		con.expect(t, ctx, `msg="vhcrd starting"`)
		// "serving" follows PF_STATE SERVING: a PF in a guest holds no
		// owner claim on the host file, so vfctl reports one still
		// starting at once instead of waiting for it.
		con.expect(t, ctx, `msg=serving`)
		vfChecks(t, ctx, host, vfctl, shm)
	} else {
		echoChecks(t, ctx, host, cfg)
	}
	io.WriteString(stdin, "stop\n")
	if withVhcrd {
		con.expect(t, ctx, `msg="vhcrd stopped"`)
		con.expect(t, ctx, "vmtest: vhcrd exit status: 0")
		// The second run: vhcrd serve on sysfs resource2.
		con.expect(t, ctx, "vmtest: ready: vhcrd serve --bar sysfs:")
		con.expect(t, ctx, `msg="vhcrd starting" bar=sysfs:`)
		con.expect(t, ctx, `msg=serving`)
		sysfsChecks(t, ctx, vfctl, shm)
		io.WriteString(stdin, "stop\n")
		con.expect(t, ctx, `msg="vhcrd stopped"`)
		con.expect(t, ctx, "vmtest: vhcrd exit status: 0")
	}
	con.expect(t, ctx, "vmtest: PASS")
	select {
	case qemuErr = <-exited:
		qemuDone = true
	case <-ctx.Done():
		t.Fatal("QEMU did not exit after the guest powered off")
	}
	if qemuErr != nil {
		t.Fatalf("qemu: %v", qemuErr)
	}
	t.Logf("VM test wall time %.1fs (qemu start to exit)", time.Since(start).Seconds())
}

// echoChecks runs handshakes with the guest's stand-in loop: write n at
// EchoOff, wait for n+1 at EchoOff+4.
func echoChecks(t *testing.T, ctx context.Context, host *bar.File, cfg GuestConfig) {
	const rounds = 200
	var worst time.Duration
	for i := uint32(1); i <= rounds; i++ {
		t0 := time.Now()
		if err := host.Store32(cfg.EchoOff, i); err != nil {
			t.Fatal(err)
		}
		v, err := pollWord(ctx, host, cfg.EchoOff+4, func(v uint32) bool { return v == i+1 })
		if err != nil {
			t.Fatalf("handshake %d: guest answered %d: %v", i, v, err)
		}
		worst = max(worst, time.Since(t0))
	}
	t.Logf("%d handshakes through the guest's VFIO mapping, slowest %v", rounds, worst)
}

// sysfsChecks brings VF 0 up again against vhcrd serving the BAR through
// sysfs resource2 and posts one command.
func sysfsChecks(t *testing.T, ctx context.Context, vfctl, shm string) {
	if vfctl == "" {
		return
	}
	for _, args := range [][]string{
		{"init", "--bar", "file:" + shm, "--vf", "0"},
		{"cmd", "--bar", "file:" + shm, "--vf", "0", "--out-len", "0", "QUERY_FW"},
	} {
		out, err := exec.CommandContext(ctx, vfctl, withVFBARs(args, shm)...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), map[string]string{"init": "comm channel up", "cmd": "QUERY_FW: OK"}[args[0]]) {
			t.Fatalf("sysfs run: vfctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("sysfs run: vfctl %s: %s", args[0], strings.SplitN(string(out), "\n", 2)[0])
	}
}

// vfChecks runs the VF side against the PF that vhcrd serve runs in the
// guest on the vfio mapping of the same file: vfctl (built from cmd/vfctl)
// attaches to the host file as VFs 0 and 1, brings the comm channel up
// (sync, RESET, VHCR0..VHCR_EN), posts single commands and runs a short
// load. Without cmd/vfctl only the PF's region header is checked.
func vfChecks(t *testing.T, ctx context.Context, host *bar.File, vfctl, shm string) {
	v, err := pollWord(ctx, host, 0, func(v uint32) bool { return v != 0 })
	if err != nil {
		t.Fatalf("vhcrd wrote no region header (word 0 = %#x): %v", v, err)
	}
	t.Logf("region header word 0 = %#x", v)
	if vfctl == "" {
		t.Log("no cmd/vfctl: VF-side checks skipped")
		return
	}
	barSpec := "file:" + shm
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, vfctl, withVFBARs(args, shm)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	must := func(want string, args ...string) string {
		t.Helper()
		out, err := run(args...)
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("vfctl %s: %v: want %q in:\n%s", strings.Join(args, " "), err, want, out)
		}
		t.Logf("vfctl %s: %s", args[0], strings.SplitN(out, "\n", 2)[0])
		return out
	}
	must("VF 0: comm channel up", "init", "--bar", barSpec, "--vf", "0")
	must("QUERY_FUNC_CAP: OK", "cmd", "--bar", barSpec, "--vf", "0", "--out-len", "16", "QUERY_FUNC_CAP")
	must("QUERY_FW: OK", "cmd", "--bar", barSpec, "--vf", "1", "--out-len", "16", "QUERY_FW")
	// An opcode no table knows: the PF answers with a status, the VF tool
	// exits non-zero.
	if out, err := run("cmd", "--bar", barSpec, "--vf", "0", "0x7ff"); err == nil || !strings.Contains(out, "BAD_PARAM") {
		t.Fatalf("vfctl cmd 0x7ff: %v, want BAD_PARAM and an error:\n%s", err, out)
	}
	// stdout only: the progress line goes to stderr.
	outb, err := exec.CommandContext(ctx, vfctl, append([]string{"load", "--bar", barSpec, "--vfs", "0-1", "--duration", "1s", "--json"}, vfBARArgs(shm)...)...).Output()
	out := string(outb)
	if err != nil || !strings.Contains(out, "{") {
		t.Fatalf("vfctl load: %v\n%s", err, out)
	}
	var res struct {
		Commands       uint64            `json:"commands"`
		Statuses       map[string]uint64 `json:"statuses"`
		ProtocolErrors uint64            `json:"protocol_errors"`
		PerVF          map[string]uint64 `json:"per_vf"`
		Errors         []string          `json:"errors"`
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &res); err != nil {
		t.Fatalf("vfctl load output: %v\n%s", err, out)
	}
	if res.Commands == 0 || res.ProtocolErrors != 0 || len(res.Errors) != 0 || res.Statuses["OK"] != res.Commands ||
		res.PerVF["0"] == 0 || res.PerVF["1"] == 0 {
		t.Fatalf("vfctl load: %+v", res)
	}
	t.Logf("vfctl load: %d commands from VFs 0 and 1 (%v), all OK, no protocol errors", res.Commands, res.PerVF)
}
