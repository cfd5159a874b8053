package vmtest

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/u-root/u-root/pkg/cpio"

	"github.com/vhcrd/vhcrd/hack/testenv"
	"github.com/vhcrd/vhcrd/hack/testenv/sdnotify"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// The Linux-driver tier: Debian's unmodified mlx4_core, ib_core, ib_uverbs
// and mlx4_ib in a QEMU guest bind to an ivshmem-doorbell device that
// `vhcrd serve` (a real process on the host) serves as VF 0: its BAR2 is
// VF 0's BAR region, its MSI-X vectors are vhcrd's eventfds, and the
// guest's RAM is VF 0's DMA region (IOVA = guest-physical address). The
// guest's /init is ./mlx4guest; the scenarios are subtests, each with a
// fresh QEMU against the same vhcrd, so that each also shows that the next
// guest binds cleanly after the previous one.

const (
	mlx4GuestRAM = 256 << 20 // -m; the guest RAM file is VF 0's DMA region
	mlx4Vectors  = 4         // mlx4 needs ≥ 2 (pci_enable_msix_range); it asks ports·CPUs+1 = 3
	// mlx4BootTimeout is each QEMU's hard limit. The guest's own fail-fast
	// (console patterns) ends a broken run long before the driver's 70 s
	// command timeouts.
	mlx4BootTimeout = 90 * time.Second
	// mlx4Silence fails a run whose console says nothing for this long:
	// the driver waits silently for a completion that does not come (its
	// timeout is 70 s). The longest quiet wait that is expected is the
	// catas poll's 5 s in the FLAGS scenario.
	mlx4Silence = 20 * time.Second
	// mlx4BootSilence is that bound before the guest's /init has said
	// anything: the boot prints nothing (quiet), and on a loaded 2-core
	// machine TCG takes longer than mlx4Silence to reach /init.
	mlx4BootSilence = 60 * time.Second
	guestVF         = 0
	bystanderVF     = 1
)

// consoleFailures are the lines that end a run at once: the driver's
// command timeouts and failures, EQEs it could not match, and a probe
// deferred because RESET went unanswered (the deferred probe would run
// again in the background, 10 s per try), and mlx4_ib's "Couldn't ..."
// (a refused command while it opens a port). They are
// checked from the guest /init's first line on (the kernel's own boot
// messages before it, like "tsc: Fast TSC calibration failed" under TCG, are
// not the driver's).
var consoleFailures = regexp.MustCompile(`(?i)bogus|timed out|failed|deferring probe|couldn't`)

// consoleExpected are driver lines that match consoleFailures and are
// expected against a VF: mlx4_dbg from map_bf_area when bf_reg_size is 0
// (vhcrd offers no BlueFlame, as mlx4-vf-linux.md records); and mlx4_en's
// second release of its one RX ring's QP at unbind (B0 steering, one RX
// ring: mlx4_en_config_rss_steer makes the RX QP priv->base_qpn,
// mlx4_en_release_rss_steer releases it and mlx4_en_put_qp releases
// priv->base_qpn again), which Linux's PF refuses as vhcrd does
// (rem_res_range: -ENOENT; TestLinuxMLX4Eth counts that one refusal).
var consoleExpected = []string{"Failed to map blue flame area", "Failed to release qp range"}

// dmesgQuotes are the guest kernel lines the test log quotes: the probe,
// the interrupt test of mlx4_cmd_use_events, mlx4_ib's device.
var dmesgQuotes = regexp.MustCompile(`mlx4_core: Initializing|Detected virtual function|NOP command IRQ test passed|mlx4_ib_add: mlx4_ib: Mellanox|mlx4_ib: multi-function enabled|operating in qp1 tunnel mode|default counter index`)

// mlx4Env is what every scenario shares: binaries, kernel, one vhcrd.
type mlx4Env struct {
	root, tmp, qemu, kernel, mods, pkg string
	guestInit, vfctl                   string
	vhcrd                              *vhcrdProc
}

// vhcrdProc is the `vhcrd serve` process.
type vhcrdProc struct {
	bin, dir    string
	args        []string
	mgr         *sdnotify.Manager // nil: not under a service manager
	cmd         *exec.Cmd
	metricsURL  string
	ctrl        string // the control region (--bar file:)
	ram, socket string // VF 0's guest RAM file and ivshmem server socket
	// ram1 and socket1 are VF 1's when it is a guest's too
	// (startVhcrdGuests).
	ram1, socket1 string
	osm           *openSM // the OpenSM of the verbs tier's fabric, or nil
	trace         string  // the command trace (JSON lines), shown on failure
	traceVF       int     // the VF the trace has (-1: every VF)
	tracer        *exec.Cmd
	mu            sync.Mutex
	log           strings.Builder
	exited        chan struct{}
}

func (v *vhcrdProc) logText() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.log.String()
}

// setupMLX4 prepares the Linux-driver tier (it skips without VHCRD_VMTEST=1,
// and where a tool is missing outside CI) and starts vhcrd on its files.
func setupMLX4(t testing.TB) *mlx4Env {
	e := setupMLX4Env(t)
	e.vhcrd = startVhcrd(t, filepath.Join(e.tmp, "vhcrd"), e.tmp, nil)
	return e
}

// setupMLX4Env is setupMLX4 without vhcrd: the tools checked, the guest's
// init, vhcrd and vfctl built.
func setupMLX4Env(t testing.TB) *mlx4Env {
	if os.Getenv("VHCRD_VMTEST") != "1" {
		t.Skip("VM tier: set VHCRD_VMTEST=1 to run it (make vmtest)")
	}
	e := &mlx4Env{qemu: os.Getenv("VHCRD_VMTEST_QEMU")}
	if e.qemu == "" {
		e.qemu = "qemu-system-x86_64"
	}
	p, err := exec.LookPath(e.qemu)
	if err != nil {
		testenv.SkipOrFail(t, "Linux-driver tier: %s not found (apt-get install --no-install-recommends qemu-system-x86)", e.qemu)
	}
	e.qemu = p
	e.root = moduleRoot(t)
	kdir := os.Getenv("VHCRD_VMTEST_DIR")
	if kdir == "" {
		kdir = filepath.Join(e.root, ".cache", "vmkernel")
	}
	e.kernel, e.mods = filepath.Join(kdir, "vmlinuz"), filepath.Join(kdir, "mlx4")
	for _, m := range []string{"mlx4_core", "ib_core", "ib_uverbs", "mlx4_ib"} {
		if _, err := os.Stat(filepath.Join(e.mods, m+".ko")); err != nil {
			testenv.SkipOrFail(t, "Linux-driver tier: no %s.ko in %s (run hack/fetch-vmkernel.sh)", m, e.mods)
		}
	}
	if _, err := os.Stat(e.kernel); err != nil {
		testenv.SkipOrFail(t, "Linux-driver tier: no kernel at %s (run hack/fetch-vmkernel.sh)", e.kernel)
	}
	pkg, _ := os.ReadFile(filepath.Join(kdir, "package"))
	e.pkg = strings.TrimSpace(string(pkg))
	t.Logf("guest kernel package: %s (Debian, unmodified; modules from %s)", e.pkg, e.mods)
	e.tmp = t.TempDir()
	goBuild(t, e.root, e.tmp, "./hack/vmtest/mlx4guest", "./cmd/vhcrd", "./cmd/vfctl")
	e.guestInit, e.vfctl = filepath.Join(e.tmp, "mlx4guest"), filepath.Join(e.tmp, "vfctl")
	return e
}

// startVhcrd starts `vhcrd serve` with two VFs: VF 0 is the guest's (its
// DMA region the guest RAM file, its BAR and vectors served to QEMU on an
// ivshmem socket), VF 1 is vhcrd's own kind of VF, the bystander. With mgr
// it runs under that service manager (restartable with killAndRestart).
func startVhcrd(t testing.TB, bin, dir string, mgr *sdnotify.Manager) *vhcrdProc {
	return startVhcrdGuests(t, bin, dir, mgr, false)
}

// startVhcrdGuests is startVhcrd with more serve arguments; with two, VF 1
// is a second QEMU guest's (its RAM file and socket ram1 and socket1)
// instead of the bystander, and the trace has both VFs' records.
func startVhcrdGuests(t testing.TB, bin, dir string, mgr *sdnotify.Manager, two bool, extra ...string) *vhcrdProc {
	v := &vhcrdProc{
		bin:  bin,
		dir:  dir,
		mgr:  mgr,
		ctrl: filepath.Join(dir, "bar"),
		ram:  filepath.Join(dir, "ram0"),
	}
	v.socket = v.ctrl + ".vf0.sock"
	v.trace = filepath.Join(dir, "trace.jsonl")
	v.args = []string{"serve",
		"--bar", "file:" + v.ctrl, "--dma", "file:" + filepath.Join(dir, "dma"),
		"--num-vfs", "2", "--window", "1M",
		"--guest", fmt.Sprintf("%d=%s,size=%dM,socket=%s", guestVF, v.ram, mlx4GuestRAM>>20, v.socket),
		"--vectors", fmt.Sprint(mlx4Vectors),
		"--metrics-addr", "127.0.0.1:0", "--admin-socket", filepath.Join(dir, "admin.sock")}
	v.traceVF = guestVF
	if two {
		v.ram1, v.socket1 = filepath.Join(dir, "ram1"), v.ctrl+".vf1.sock"
		v.args = append(v.args, "--guest", fmt.Sprintf("%d=%s,size=%dM,socket=%s", bystanderVF, v.ram1, mlx4GuestRAM>>20, v.socket1))
		v.traceVF = -1
	}
	v.args = append(v.args, extra...)
	t.Logf("vhcrd %s", strings.Join(v.args, " "))
	t.Cleanup(func() {
		if t.Failed() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if m, err := getMetrics(ctx, v.metricsURL); err == nil {
				var sb strings.Builder
				for _, s := range m {
					if s.labels["vf"] == fmt.Sprint(guestVF) && s.value != 0 {
						fmt.Fprintf(&sb, "\n%s %v %v", s.name, s.labels, s.value)
					}
				}
				t.Logf("vhcrd's non-zero series of VF %d:%s", guestVF, sb.String())
			}
			cancel()
		}
		if v.cmd == nil {
			v.stopTracer()
			return
		}
		err := v.terminate()
		if t.Failed() {
			t.Logf("vhcrd log:\n%s", v.logText())
			if f, err := os.Open(v.trace); err == nil {
				t.Logf("vhcrd's command trace (%s): %s", v.trace, traceSummary(f, nil))
				f.Close()
			}
		}
		if err != nil {
			t.Errorf("vhcrd serve: %v", err)
		}
	})
	v.launch(t)
	return v
}

// launch starts the vhcrd process (under v.mgr, with its store, if set)
// and its tracer, and waits until it serves.
func (v *vhcrdProc) launch(t testing.TB) {
	t.Helper()
	if v.mgr != nil {
		v.cmd = v.mgr.Command(v.bin, v.args...)
	} else {
		v.cmd = exec.Command(v.bin, v.args...)
	}
	v.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := v.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	v.cmd.Stdout = v.cmd.Stderr
	if v.mgr != nil {
		err = v.mgr.Start(v.cmd)
	} else {
		err = v.cmd.Start()
	}
	if err != nil {
		v.cmd = nil
		t.Fatal(err)
	}
	exited := make(chan struct{})
	v.exited = exited
	url := make(chan string, 1)
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			v.mu.Lock()
			v.log.WriteString(line + "\n")
			v.mu.Unlock()
			if i := strings.Index(line, "url=http://"); i >= 0 && strings.Contains(line, "msg=metrics") {
				select {
				case url <- strings.Fields(line[i+len("url="):])[0]:
				default:
				}
			}
		}
	}()
	select {
	case v.metricsURL = <-url:
	case <-exited:
		t.Fatalf("vhcrd serve exited at start:\n%s", v.logText())
	case <-time.After(20 * time.Second):
		t.Fatalf("vhcrd serve printed no metrics URL in 20 s:\n%s", v.logText())
	}
	if v.mgr != nil {
		v.mgr.WaitFor("READY", "1")
	}
	// VF 0's records of the command trace, from the admin socket (the
	// bystander's would be millions); a restarted vhcrd's are appended.
	tf, err := os.OpenFile(v.trace, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	v.tracer = exec.Command(v.bin, "trace", "--admin-socket", filepath.Join(v.dir, "admin.sock"), "--vf", fmt.Sprint(v.traceVF), "--json")
	v.tracer.Stdout, v.tracer.Stderr = tf, tf
	v.tracer.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := v.tracer.Start(); err != nil {
		t.Fatal(err)
	}
	tf.Close()
	// The server socket exists once serve listens on it.
	for _, sock := range []string{v.socket, v.socket1} {
		for i := 0; sock != ""; i++ {
			if _, err := os.Stat(sock); err == nil {
				break
			}
			if i == 2000 {
				t.Fatalf("no ivshmem socket %s after serve started:\n%s", sock, v.logText())
			}
			time.Sleep(5 * time.Millisecond) // observing another process's start-up
		}
	}
}

func (v *vhcrdProc) stopTracer() {
	if v.tracer != nil {
		v.tracer.Process.Signal(os.Interrupt)
		v.tracer.Wait()
		v.tracer = nil
	}
}

// terminate stops the tracer and then vhcrd (SIGTERM, SIGKILL after 10 s)
// and returns how it exited.
func (v *vhcrdProc) terminate() error {
	v.stopTracer()
	v.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-v.exited:
	case <-time.After(10 * time.Second):
		v.cmd.Process.Kill()
		<-v.exited
	}
	return v.cmd.Wait()
}

// killAndRestart SIGKILLs vhcrd (nothing of its own runs) and has the
// service manager start it again with the descriptors it stored; dead runs
// between the two. It returns how long the PF was gone.
func (v *vhcrdProc) killAndRestart(t *testing.T, dead func()) time.Duration {
	t.Helper()
	if v.mgr == nil {
		t.Fatal("killAndRestart of a vhcrd without a service manager")
	}
	t0 := time.Now()
	if err := v.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-v.exited
	if err := v.cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("vhcrd after SIGKILL: %v", err)
	}
	v.stopTracer()
	if dead != nil {
		dead()
	}
	v.mu.Lock()
	v.log.WriteString(restartMark + "\n")
	v.mu.Unlock()
	v.launch(t)
	return time.Since(t0)
}

// restartMark separates the killed vhcrd's log from the restarted one's.
const restartMark = "--- SIGKILL; the service manager starts vhcrd again with its fd store ---"

// sinceRestart is the log of the vhcrd started by the last killAndRestart.
func (v *vhcrdProc) sinceRestart() string {
	l := v.logText()
	return l[strings.LastIndex(l, restartMark)+len(restartMark):]
}

func (v *vhcrdProc) metrics(t testing.TB) scrape {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := getMetrics(ctx, v.metricsURL)
	if err != nil {
		t.Fatalf("vhcrd metrics: %v", err)
	}
	return m
}

// assertReleased checks that VF vf holds nothing: every resource gauge 0
// and its channel down.
func (v *vhcrdProc) assertReleased(t testing.TB, vf int, when string) scrape {
	t.Helper()
	m := v.metrics(t)
	lv := map[string]string{"vf": fmt.Sprint(vf)}
	if n := m.sum("vhcrd_resources", lv); n != 0 {
		t.Fatalf("%s: VF %d still holds %v objects: %v", when, vf, n, m.byLabel("vhcrd_resources", "type", lv))
	}
	if n := m.sum("vhcrd_vf_active", lv); n != 0 {
		t.Fatalf("%s: VF %d's channel is still up (vhcrd_vf_active %v)", when, vf, n)
	}
	t.Logf("%s: VF %d's resource gauges are all 0", when, vf)
	return m
}

// vm is one QEMU run of the mlx4 guest.
type vm struct {
	t         testing.TB
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	con       *serial
	ctx       context.Context
	cancel    context.CancelFunc
	started   time.Time
	exited    chan error
	done      bool
	inInit    bool     // the guest's /init has started: failure patterns apply
	tolerate  bool     // failure lines are expected in this phase (logged, not fatal)
	tolerated []string // the lines let through while tolerate was set
	during    []string // every console line while tolerate was set
	quoted    map[string]bool
	said      []string // the guest's "vmtest: " lines since the last step
}

// boot writes an initramfs with cfg and starts QEMU with the ivshmem
// device on vhcrd's socket.
func (e *mlx4Env) boot(t testing.TB, cfg MLX4Config) *vm {
	t.Helper()
	return e.bootWith(t, cfg, bootOpts{})
}

// bootOpts are what bootWith changes from boot's defaults.
type bootOpts struct {
	name        string        // the initramfs's and the console log's name (default: the scenario)
	extra       []cpio.Record // more files in the initramfs
	ram, socket string        // the VF's guest RAM file and ivshmem socket (default: VF 0's)
	qemuArgs    []string      // more QEMU arguments (a network device)
	timeout     time.Duration // the QEMU's hard limit (default mlx4BootTimeout)
	cpus        int           // vCPUs (default 1)
}

// bootWith is boot with o.
func (e *mlx4Env) bootWith(t testing.TB, cfg MLX4Config, o bootOpts) *vm {
	t.Helper()
	if o.name == "" {
		o.name = cfg.Scenario
	}
	if o.ram == "" {
		o.ram, o.socket = e.vhcrd.ram, e.vhcrd.socket
	}
	if o.timeout == 0 {
		o.timeout = mlx4BootTimeout
	}
	name := filepath.Join(e.tmp, "initramfs-"+o.name)
	cj, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := name + ".json"
	if err := os.WriteFile(cfgFile, cj, 0o644); err != nil {
		t.Fatal(err)
	}
	im := Image{Init: e.guestInit, Files: map[string]string{MLX4ConfigPath: cfgFile}, Modules: e.mods, Config: DefaultGuestConfig(), Extra: o.extra}
	f, err := os.Create(name + ".cpio")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := im.Write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	args := []string{"-machine", "q35,memory-backend=ram", "-accel", "tcg", "-cpu", "max", "-smp", fmt.Sprint(max(o.cpus, 1)),
		"-m", fmt.Sprintf("%dM", mlx4GuestRAM>>20),
		"-object", fmt.Sprintf("memory-backend-file,id=ram,size=%d,mem-path=%s,share=on", mlx4GuestRAM, o.ram),
		"-chardev", "socket,id=vf0,path=" + o.socket,
		"-device", fmt.Sprintf("ivshmem-doorbell,chardev=vf0,vectors=%d", mlx4Vectors),
		"-kernel", e.kernel, "-initrd", name + ".cpio",
		// quiet: the boot's own messages stay off the serial console
		// (each character is an exit under TCG); the guest raises the
		// console log level to 8 before it loads the modules, so that the
		// driver's lines, its debug lines included, reach the console.
		// iomem=relaxed: resource2 can be mapped while mlx4_core holds it
		// (the FLAGS scenario; CONFIG_IO_STRICT_DEVMEM is set).
		// no_timer_check: on a loaded host TCG can miss the kernel's
		// IO-APIC timer check ("IO-APIC + timer doesn't work!", a panic).
		"-append", "console=ttyS0 panic=-1 quiet iomem=relaxed no_timer_check",
		"-display", "none", "-serial", "stdio", "-monitor", "none", "-nodefaults", "-no-reboot"}
	args = append(args, o.qemuArgs...)
	v := &vm{t: t, exited: make(chan error, 1), quoted: map[string]bool{}}
	v.ctx, v.cancel = context.WithTimeout(context.Background(), o.timeout)
	v.cmd = exec.Command(e.qemu, args...)
	v.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if v.stdin, err = v.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	v.cmd.Stdout, v.cmd.Stderr = pw, pw
	v.started = time.Now()
	if err := v.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	go func() { v.exited <- v.cmd.Wait() }()
	go func() {
		<-v.ctx.Done()
		syscall.Kill(-v.cmd.Process.Pid, syscall.SIGKILL) // the hard limit
	}()
	v.con = newSerial(pr)
	t.Cleanup(func() {
		v.kill()
		pr.Close()
		if t.Failed() {
			<-v.con.done
			t.Logf("guest console (%s):\n%s", o.name, v.con.log.String())
		}
	})
	return v
}

// kill ends QEMU with SIGKILL (idempotent) and waits for it.
func (v *vm) kill() {
	if v.done {
		return
	}
	syscall.Kill(-v.cmd.Process.Pid, syscall.SIGKILL)
	<-v.exited
	v.done = true
	v.cancel()
}

// tail is the last n console lines.
func (v *vm) tail(n int) string {
	lines := strings.Split(strings.TrimRight(v.con.log.String(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// expect reads console lines until one contains want. A driver failure
// line (consoleFailures) fails the test at once with the console's tail,
// as do "vmtest: FAIL", the end of the output and the deadline.
func (v *vm) expect(want string) string {
	t := v.t
	t.Helper()
	bound := func() time.Duration {
		if v.inInit {
			return mlx4Silence
		}
		return mlx4BootSilence
	}
	silence := time.NewTimer(bound())
	defer silence.Stop()
	for {
		select {
		case <-silence.C:
			t.Fatalf("the guest console has been silent for %v waiting for %q (a command without completion?); console tail:\n%s", bound(), want, v.tail(40))
		case line, ok := <-v.con.lines:
			if !ok {
				t.Fatalf("guest console ended before %q; its tail:\n%s", want, v.tail(40))
			}
			if v.tolerate {
				v.during = append(v.during, line)
			}
			if strings.HasPrefix(line, "vmtest: ") {
				t.Logf("guest: %s", line)
				v.inInit = true
				v.said = append(v.said, line)
			}
			silence.Reset(bound())
			if dmesgQuotes.MatchString(line) && !v.quoted[dmesgKey(line)] {
				v.quoted[dmesgKey(line)] = true
				t.Logf("guest dmesg: %s", line)
			}
			if strings.Contains(line, "vmtest: FAIL") {
				t.Fatalf("guest failed: %s; console tail:\n%s", line, v.tail(40))
			}
			if v.inInit && consoleFailures.MatchString(line) && !expectedLine(line) {
				if !v.tolerate {
					t.Fatalf("driver failure on the guest console: %q; console tail:\n%s", line, v.tail(40))
				}
				v.tolerated = append(v.tolerated, line)
			}
			if strings.Contains(line, want) {
				return line
			}
		case <-v.ctx.Done():
			t.Fatalf("no %q from the guest before QEMU's hard limit; console tail:\n%s", want, v.tail(40))
		}
	}
}

// dmesgKey strips the kernel timestamp so that a line is quoted once.
func dmesgKey(line string) string {
	if i := strings.Index(line, "] "); i >= 0 && strings.HasPrefix(line, "[") {
		return line[i+2:]
	}
	return line
}

func expectedLine(line string) bool {
	for _, s := range consoleExpected {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

// step waits for "vmtest: wait STEP", runs check, and lets the guest go on.
func (v *vm) step(step string, check func()) {
	v.t.Helper()
	v.expect("vmtest: wait " + step)
	if check != nil {
		check()
	}
	v.said = v.said[:0]
	if _, err := io.WriteString(v.stdin, "go\n"); err != nil {
		v.t.Fatalf("writing go to the guest: %v", err)
	}
}

// finish waits for the guest's PASS and QEMU's exit.
func (v *vm) finish() time.Duration {
	v.t.Helper()
	v.expect("vmtest: PASS")
	select {
	case err := <-v.exited:
		v.done = true
		v.cancel()
		if err != nil {
			v.t.Fatalf("qemu: %v", err)
		}
	case <-v.ctx.Done():
		v.t.Fatal("QEMU did not exit after the guest powered off")
	}
	return time.Since(v.started)
}

// bystander is vhcrd's own load generator on VF 1 during a misbehaving
// guest's run: it must see no error.
type bystander struct {
	cmd    *exec.Cmd
	out    strings.Builder
	err    strings.Builder
	vhcrd  *vhcrdProc
	before scrape
}

// finishRebind is the host's side of a scenario's last round (the guest
// binds and unbinds once more): vhcrd must have released the VF after the
// unbind, and the guest must pass.
func (e *mlx4Env) finishRebind(t *testing.T, v *vm, scenario, what string) {
	t.Helper()
	v.step("bound 2", nil)
	v.step("unbound 2", func() { e.vhcrd.assertReleased(t, guestVF, what) })
	took := v.finish()
	t.Logf("%s: %.1fs of QEMU", scenario, took.Seconds())
}

func (e *mlx4Env) startBystander(t *testing.T) *bystander {
	t.Helper()
	b := &bystander{vhcrd: e.vhcrd, before: e.vhcrd.metrics(t)}
	b.cmd = exec.Command(e.vfctl, "load", "--bar", "file:"+e.vhcrd.ctrl, "--vfs", fmt.Sprint(bystanderVF), "--duration", "10m", "--json")
	b.cmd.Stdout, b.cmd.Stderr = &b.out, &b.err
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// It floods VF 1 with one CPU; on a small machine QEMU's TCG thread
	// needs the other more than the bystander needs throughput.
	syscall.Setpriority(syscall.PRIO_PROCESS, b.cmd.Process.Pid, 10)
	// The misbehaviour starts once VF 1 is busy: vhcrd has completed
	// commands of the load (observed from outside, bounded).
	lv := map[string]string{"vf": fmt.Sprint(bystanderVF)}
	for deadline := time.Now().Add(10 * time.Second); e.vhcrd.metrics(t).sum("vhcrd_vf_commands_total", lv) <= b.before.sum("vhcrd_vf_commands_total", lv); {
		if time.Now().After(deadline) {
			t.Fatalf("bystander vfctl load on VF %d posted nothing in 10 s: %s", bystanderVF, b.err.String())
		}
		time.Sleep(5 * time.Millisecond) // polling another process's metrics
	}
	// The baseline of stop's checks: after the load's own RESET.
	b.before = e.vhcrd.metrics(t)
	t.Cleanup(func() {
		if b.cmd.ProcessState == nil {
			b.cmd.Process.Kill()
			b.cmd.Wait()
		}
	})
	return b
}

// stop interrupts the load (vfctl prints its result on SIGINT) and checks
// that VF 1 saw nothing of the other VF's trouble.
func (b *bystander) stop(t *testing.T) {
	t.Helper()
	b.cmd.Process.Signal(os.Interrupt)
	err := b.cmd.Wait()
	out := b.out.String()
	if err != nil || !strings.Contains(out, "{") {
		t.Fatalf("bystander vfctl load on VF %d: %v\n%s\n%s", bystanderVF, err, out, b.err.String())
	}
	var res struct {
		Commands       uint64            `json:"commands"`
		Statuses       map[string]uint64 `json:"statuses"`
		ProtocolErrors uint64            `json:"protocol_errors"`
		Errors         []string          `json:"errors"`
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &res); err != nil {
		t.Fatalf("bystander output: %v\n%s", err, out)
	}
	if res.Commands == 0 || res.ProtocolErrors != 0 || len(res.Errors) != 0 || res.Statuses["OK"] != res.Commands {
		t.Fatalf("bystander VF %d noticed the other VF: %+v", bystanderVF, res)
	}
	// vhcrd's side: no reset of VF 1 and no command of its refused while
	// the other VF misbehaved.
	after := b.vhcrd.metrics(t)
	lv := map[string]string{"vf": fmt.Sprint(bystanderVF)}
	for _, name := range []string{"vhcrd_comm_resets_total", "vhcrd_command_refusals_total", "vhcrd_dma_faults_total", "vhcrd_channel_resyncs_total"} {
		if d := after.sum(name, lv) - b.before.sum(name, lv); d != 0 {
			t.Fatalf("bystander VF %d: %s rose by %v while the other VF misbehaved", bystanderVF, name, d)
		}
	}
	t.Logf("bystander VF %d: %d commands, all OK, no protocol errors; vhcrd counted no reset, refusal, DMA fault or resync of it", bystanderVF, res.Commands)
}

// guestInterrupts sums the counts of the guest's "vmtest: interrupts: "
// lines (its /proc/interrupts rows of the mlx4 vectors) since the last step.
func (v *vm) guestInterrupts() (n int, rows int) {
	for _, l := range v.said {
		rest, ok := strings.CutPrefix(l, "vmtest: interrupts: ")
		if !ok {
			continue
		}
		f := strings.Fields(rest) // "24:" "86" "PCI-MSI" ...
		var c int
		if len(f) > 1 {
			if _, err := fmt.Sscan(f[1], &c); err == nil {
				n += c
				rows++
			}
		}
	}
	return n, rows
}

// opCount is vhcrd's count of opcode op completed with status OK.
func opCount(m scrape, op string) float64 {
	return m.sum("vhcrd_opcode_commands_total", map[string]string{"opcode": op, "status": "OK"})
}

// interruptName is the per-VF interrupt counter of package metrics.
const interruptName = "vhcrd_interrupts_total"

func TestLinuxMLX4(t *testing.T) {
	e := setupMLX4(t)
	t0 := time.Now()
	defer func() { t.Logf("Linux-driver tier: %.1fs of scenarios (after the build)", time.Since(t0).Seconds()) }()

	// Item 7: bind, check mlx4_0, unbind; four binds, gauges at 0 after
	// each unbind; the command and interrupt counts of the four binds.
	t.Run("cycle", func(t *testing.T) {
		before := e.vhcrd.metrics(t)
		cfg := DefaultMLX4Config()
		v := e.boot(t, cfg)
		lv := map[string]string{"vf": fmt.Sprint(guestVF)}
		last := before
		for i := 1; i <= cfg.Binds; i++ {
			v.step(fmt.Sprintf("bound %d", i), func() {
				m := e.vhcrd.metrics(t)
				res := m.byLabel("vhcrd_resources", "type", lv)
				if i == 1 {
					t.Logf("bound: VF %d holds %v", guestVF, res)
					// What ibv_devinfo -v shows: mlx4_ib_query_device's
					// multicast limits, from QUERY_HCA's entry size
					// (slave_adjust_steering_mode) and a VF's zero groups.
					var grp, attach, total int
					found := false
					for _, l := range v.said {
						if _, err := fmt.Sscanf(l, "vmtest: verbs: max_mcast_grp %d max_mcast_qp_attach %d max_total_mcast_qp_attach %d", &grp, &attach, &total); err == nil {
							found = true
						}
					}
					if !found {
						t.Fatalf("bound 1: the guest printed no verbs line (QUERY_DEVICE through ib_uverbs)")
					}
					t.Logf("bound 1: the guest's QUERY_DEVICE: max_mcast_grp %d, max_mcast_qp_attach %d, max_total_mcast_qp_attach %d", grp, attach, total)
					if attach != 120 || grp != 0 || total != 0 {
						t.Fatalf("bound 1: the guest reads max_mcast_qp_attach %d, max_mcast_grp %d, max_total_mcast_qp_attach %d; want 120, 0, 0", attach, grp, total)
					}
				}
				for _, ty := range []string{"eq", "cq", "qp", "mpt"} {
					if res[ty] == 0 {
						t.Fatalf("bound %d: VF %d holds no %s (resources %v)", i, guestVF, ty, res)
					}
				}
				// Every interrupt the guest counted was raised by vhcrd; an
				// eventfd counts raises QEMU has not read yet as one, so
				// the guest may count fewer.
				raised := m.sum(interruptName, lv) - last.sum(interruptName, lv)
				got, rows := v.guestInterrupts()
				t.Logf("bound %d: vhcrd raised %v interrupts for VF %d, the guest counted %d on %d mlx4 vectors", i, raised, guestVF, got, rows)
				if rows == 0 || got == 0 || float64(got) > raised {
					t.Fatalf("bound %d: the guest counted %d interrupts on %d mlx4 vectors, vhcrd raised %v", i, got, rows, raised)
				}
			})
			v.step(fmt.Sprintf("unbound %d", i), func() { last = e.vhcrd.assertReleased(t, guestVF, fmt.Sprintf("unbind %d", i)) })
		}
		took := v.finish()
		// The counts of the binds: as the last unbind left them, before
		// QEMU's exit reset the VF (an FLR).
		after := last
		binds := float64(cfg.Binds)
		for _, c := range []struct {
			op  string
			min float64 // per bind
		}{{"SW2HW_EQ", 3}, {"HW2SW_EQ", 3}, {"MAP_EQ", 1}, {"SW2HW_CQ", 2}, {"HW2SW_CQ", 2}, {"SW2HW_MPT", 1},
			{"RST2INIT_QP", 4}, {"INIT2RTR_QP", 4}, {"RTR2RTS_QP", 4}, {"INIT_PORT", 2}, {"CLOSE_PORT", 2}, {"MAD_IFC", 1}, {"NOP", 1}} {
			n := opCount(after, c.op) - opCount(before, c.op)
			t.Logf("vhcrd: %s OK ×%v in %d binds", c.op, n, cfg.Binds)
			if n < c.min*binds {
				t.Errorf("vhcrd counted %v %s (OK) in %d binds, want ≥ %v", n, c.op, cfg.Binds, c.min*binds)
			}
		}
		all := after.sum("vhcrd_vf_commands_total", lv) - before.sum("vhcrd_vf_commands_total", lv)
		bad := after.sum("vhcrd_vf_commands_total", map[string]string{"vf": fmt.Sprint(guestVF), "status": "!OK"}) -
			before.sum("vhcrd_vf_commands_total", map[string]string{"vf": fmt.Sprint(guestVF), "status": "!OK"})
		t.Logf("vhcrd: VF %d posted %v commands in %d binds, %v not OK", guestVF, all, cfg.Binds, bad)
		if bad != 0 {
			t.Errorf("VF %d: %v commands completed with a status other than OK", guestVF, bad)
		}
		// A clean driver resets its function only with RESET (vf_reset):
		// no violation, FLR or FLAGS reset, no refusal, no DMA fault.
		for _, c := range []struct {
			name   string
			labels map[string]string
		}{{"vhcrd_comm_resets_total", map[string]string{"vf": fmt.Sprint(guestVF), "reason": "!vf_reset"}},
			{"vhcrd_command_refusals_total", lv}, {"vhcrd_dma_faults_total", lv}, {"vhcrd_eq_overruns_total", lv}} {
			if d := after.sum(c.name, c.labels) - before.sum(c.name, c.labels); d != 0 {
				t.Errorf("VF %d: %s %v rose by %v over the binds", guestVF, c.name, c.labels, d)
			}
		}
		if !after.has(interruptName) {
			t.Fatalf("vhcrd exports no %s", interruptName)
		}
		irqs := after.sum(interruptName, lv) - before.sum(interruptName, lv)
		t.Logf("vhcrd: %v MSI-X interrupts raised for VF %d in %d binds", irqs, guestVF, cfg.Binds)
		if irqs < binds {
			t.Errorf("vhcrd raised %v interrupts for VF %d in %d binds, want ≥ one per bind (the NOP IRQ test)", irqs, guestVF, cfg.Binds)
		}
		t.Logf("cycle: %d binds and unbinds in %.1fs of QEMU (boot included)", cfg.Binds, took.Seconds())
	})

	// Item 8: unbind in the middle of a command stream.
	t.Run("midstream", func(t *testing.T) {
		cfg := scenarioConfig(ScenarioMidstream)
		v := e.boot(t, cfg)
		// The bystander floods VF 1 over the misbehaviour only: on two
		// cores a flood through the boot would slow TCG for nothing.
		var b *bystander
		v.step("bound 1", func() { b = e.startBystander(t) })
		v.step("unbound 1", func() {
			e.vhcrd.assertReleased(t, guestVF, "unbind under MAD_IFC readers")
			b.stop(t)
		})
		e.finishRebind(t, v, "midstream", "unbind after the rebind")
	})

	// Item 8: the FLAGS reset handshake while bound.
	t.Run("flags", func(t *testing.T) {
		cfg := scenarioConfig(ScenarioFlags)
		resetsBefore := guestResets(e.vhcrd.metrics(t), "reset_request")
		v := e.boot(t, cfg)
		var b *bystander
		v.step("bound 1", func() { b = e.startBystander(t) })
		v.step("flags reset", func() {
			m := e.vhcrd.assertReleased(t, guestVF, "FLAGS reset acknowledged")
			if n := guestResets(m, "reset_request") - resetsBefore; n != 1 {
				t.Fatalf("vhcrd counted %v FLAGS resets (reason reset_request) of VF %d, want 1", n, guestVF)
			}
			// From here until the driver has restarted, its lines about the
			// reset are expected.
			v.tolerate = true
		})
		v.step("recovered", func() {
			v.tolerate = false
			for _, l := range v.tolerated {
				t.Logf("expected during the driver's reset: %s", l)
			}
			b.stop(t)
		})
		v.step("unbound 1", func() { e.vhcrd.assertReleased(t, guestVF, "unbind after the driver's restart") })
		e.finishRebind(t, v, "flags", "unbind of the clean rebind")
	})

	// An FLR of the bound guest's VF (`vhcrd vf flr 0`), twice: the idle
	// driver must learn of the first by itself and restart; an unbind
	// right after the second must not wait for the driver's command
	// timeout.
	t.Run("flr", func(t *testing.T) {
		cfg := scenarioConfig(ScenarioFLR)
		lv := map[string]string{"vf": fmt.Sprint(guestVF)}
		before := e.vhcrd.metrics(t)
		v := e.boot(t, cfg)
		flr := func(when string) {
			// From here until the guest's next step, the driver's lines
			// about the reset it finds are expected; a command timeout
			// is not.
			v.tolerate, v.during, v.tolerated = true, nil, nil
			out, err := exec.Command(e.vhcrd.bin, "vf", "flr", fmt.Sprint(guestVF), "--admin-socket", filepath.Join(e.vhcrd.dir, "admin.sock")).CombinedOutput()
			if err != nil {
				t.Fatalf("vhcrd vf flr %d: %v\n%s", guestVF, err, out)
			}
			t.Logf("%s: vhcrd vf flr %d: %s", when, guestVF, strings.TrimSpace(string(out)))
			e.vhcrd.assertReleased(t, guestVF, when)
		}
		// saw checks the console lines since the last FLR: none is a
		// command timeout (the 70 s the FLR's bit 17 spares the driver),
		// and one is want.
		saw := func(when, want string) {
			v.tolerate = false
			for _, l := range v.tolerated {
				t.Logf("%s: expected after the FLR: %s", when, l)
			}
			found := false
			for _, l := range v.during {
				if strings.Contains(l, "timed out") {
					t.Fatalf("%s: the driver timed out a command after the FLR: %s", when, l)
				}
				for _, k := range []string{"Internal error detected", "entering error state", "device is going to be reset", "VF Reset succeed", "mlx4_restart_one was ended"} {
					if strings.Contains(l, k) {
						t.Logf("%s: guest: %s", when, l)
					}
				}
				found = found || strings.Contains(l, want)
			}
			if !found {
				t.Fatalf("%s: no %q on the guest console after the FLR", when, want)
			}
		}
		v.step("bound 1", func() { flr("FLR of the idle bound guest's VF") })
		v.step("recovered", func() {
			// The catas poll read bit 17: the driver was told without a
			// command of its own.
			saw("the driver's own restart", "Internal error detected on the communication channel")
			flr("FLR before the unbind")
		})
		v.step("unbound 1", func() {
			// mlx4_unregister_device read bit 17 at the unbind's start
			// (or the catas poll did first): mlx4_enter_error_state.
			saw("unbind after the FLR", "device is going to be reset")
			e.vhcrd.assertReleased(t, guestVF, "unbind after the FLR")
		})
		e.finishRebind(t, v, "flr", "unbind of the clean rebind")
		m := e.vhcrd.metrics(t)
		if n := m.sum("vhcrd_comm_resets_total", map[string]string{"vf": fmt.Sprint(guestVF), "reason": "flr"}) - before.sum("vhcrd_comm_resets_total", map[string]string{"vf": fmt.Sprint(guestVF), "reason": "flr"}); n < 2 {
			t.Errorf("vhcrd counted %v FLRs of VF %d, want the 2 of the scenario", n, guestVF)
		}
		t.Logf("flr: VF %d resets by reason: %v (before the guest: %v)", guestVF, m.byLabel("vhcrd_comm_resets_total", "reason", lv), before.byLabel("vhcrd_comm_resets_total", "reason", lv))
	})

	// Item 8: QEMU killed with objects allocated; the next guest binds.
	t.Run("kill", func(t *testing.T) {
		cfg := scenarioConfig(ScenarioHold)
		flrBefore := guestResets(e.vhcrd.metrics(t), "flr")
		v := e.boot(t, cfg)
		v.expect("vmtest: wait hold")
		b := e.startBystander(t)
		lv := map[string]string{"vf": fmt.Sprint(guestVF)}
		if n := e.vhcrd.metrics(t).sum("vhcrd_resources", lv); n == 0 {
			t.Fatalf("VF %d holds nothing before the kill", guestVF)
		}
		v.kill()
		// vhcrd sees the ivshmem client go and resets VF 0 on its own
		// time: observe it from outside, bounded.
		deadline := time.Now().Add(10 * time.Second)
		for e.vhcrd.metrics(t).sum("vhcrd_resources", lv) != 0 {
			if time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond) // polling another process's metrics
		}
		m := e.vhcrd.assertReleased(t, guestVF, "QEMU killed")
		if n := guestResets(m, "flr") - flrBefore; n != 1 {
			t.Fatalf("vhcrd counted %v FLRs of VF %d for the killed QEMU, want 1", n, guestVF)
		}
		b.stop(t)
		cfg = DefaultMLX4Config()
		cfg.Binds = 1
		v = e.boot(t, cfg)
		v.step("bound 1", nil)
		v.step("unbound 1", func() { e.vhcrd.assertReleased(t, guestVF, "unbind in the next guest") })
		took := v.finish()
		t.Logf("kill: the next guest bound and unbound cleanly, %.1fs of QEMU", took.Seconds())
	})

	// vhcrd SIGKILLed while the Linux guest is bound and its readers keep
	// MAD_IFC commands in flight; the service manager restarts it with the
	// stored ivshmem socket, QEMU's connection and the vectors' eventfds.
	t.Run("pfkill", func(t *testing.T) {
		dir := filepath.Join(e.tmp, "pfkill")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		pe := *e
		pe.vhcrd = startVhcrd(t, filepath.Join(e.tmp, "vhcrd"), dir, sdnotify.New(t))
		cfg := DefaultMLX4Config()
		cfg.Scenario = ScenarioPFKill
		v := pe.boot(t, cfg)
		lv := map[string]string{"vf": fmt.Sprint(guestVF)}
		vf0 := fmt.Sprint(guestVF)
		// base: the restarted vhcrd's counters start at 0 or carry on from
		// the killed one's; base is what they start from.
		var pre, base scrape
		v.step("bound 1", nil)
		v.step("readers", func() {
			pre = pe.vhcrd.metrics(t)
			// What the kill caught: a VHCR_POST unanswered (slave_write's
			// toggle differs from slave_read's), or the guest's next post
			// to the dead PF, or, if neither comes in 2 s while the
			// readers run, a command acknowledged whose completion (EQE)
			// the readers wait for. It is logged, not asserted: each is
			// a command across the kill.
			var inFlight string
			gone := pe.vhcrd.killAndRestart(t, func() {
				f, err := os.Open(wire.VFBARPath(pe.vhcrd.ctrl, guestVF))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				reg := func(off int64) uint32 {
					var b [4]byte
					if _, err := f.ReadAt(b[:], off); err != nil {
						t.Fatalf("VF %d's comm register %#x: %v", guestVF, off, err)
					}
					return binary.BigEndian.Uint32(b[:])
				}
				w0, r0 := reg(mlx4.CommSlaveWrite), reg(mlx4.CommSlaveRead)
				if (w0^r0)&mlx4.CommToggle != 0 {
					inFlight = fmt.Sprintf("a comm command (VHCR_POST) unanswered at the kill (slave_write %#08x, slave_read %#08x)", w0, r0)
					return
				}
				inFlight = fmt.Sprintf("no comm command unanswered at the kill and none posted to the dead PF in 2 s: the readers waited for the completion of a command vhcrd had acknowledged (slave_write %#08x)", w0)
				for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
					if w := reg(mlx4.CommSlaveWrite); w != w0 {
						inFlight = fmt.Sprintf("the guest posted to the dead PF (slave_write %#08x → %#08x)", w0, w)
						return
					}
					time.Sleep(time.Millisecond) // observing another process (the guest)
				}
			})
			t.Logf("pfkill: %s", inFlight)
			m := pe.vhcrd.metrics(t)
			log := pe.vhcrd.sinceRestart()
			for _, l := range []string{"ivshmem socket adopted", "guest connection adopted", "MSI-X eventfds adopted"} {
				if !strings.Contains(log, l) {
					t.Fatalf("the restarted vhcrd did not log %q:\n%s", l, log)
				}
			}
			if m.sum("vhcrd_vf_commands_total", lv) >= pre.sum("vhcrd_vf_commands_total", lv) {
				base = pre
				t.Logf("pfkill: the restarted vhcrd's counters carry on from the killed one's")
			}
			res, preRes := m.byLabel("vhcrd_resources", "type", lv), pre.byLabel("vhcrd_resources", "type", lv)
			for ty, n := range preRes {
				if res[ty] != n {
					t.Fatalf("VF %d held %v before the kill, %v after the restart", guestVF, preRes, res)
				}
			}
			t.Logf("pfkill: vhcrd SIGKILLed with the guest's readers running; restarted under the service manager and serving in %v; VF %d still holds %v", gone.Round(time.Millisecond), guestVF, res)
		})
		// No reset of VF 0 by the restarted vhcrd (an FLR would mean it
		// lost QEMU's connection; any other, the channel's state).
		resets := func(when string, labels map[string]string) {
			m := pe.vhcrd.metrics(t)
			if n := m.sum("vhcrd_comm_resets_total", labels) - base.sum("vhcrd_comm_resets_total", labels); n != 0 {
				t.Fatalf("%s: the restarted vhcrd reset VF %d %v times (%v)", when, guestVF, n, m.byLabel("vhcrd_comm_resets_total", "reason", lv))
			}
			t.Logf("%s: the restarted vhcrd counted %v MAD_IFC (OK) and no reset of VF %d %v", when, opCount(m, "MAD_IFC")-opCount(base, "MAD_IFC"), guestVF, labels)
		}
		v.step("after", func() {
			if m := pe.vhcrd.metrics(t); opCount(m, "MAD_IFC") <= opCount(base, "MAD_IFC") {
				t.Fatal("the guest's readers went on but the restarted vhcrd completed no MAD_IFC")
			}
			resets("readers done after the restart", lv)
		})
		v.step("unbound 1", func() {
			pe.vhcrd.assertReleased(t, guestVF, "unbind after the PF restart")
			resets("unbind after the PF restart", map[string]string{"vf": vf0, "reason": "!vf_reset"})
		})
		took := v.finish()
		t.Logf("pfkill: %.1fs of QEMU", took.Seconds())
	})
}

// scenarioConfig is the default guest configuration running scenario.
func scenarioConfig(scenario string) MLX4Config {
	cfg := DefaultMLX4Config()
	cfg.Scenario = scenario
	return cfg
}

// guestResets is vhcrd_comm_resets_total of the guest's VF for reason.
func guestResets(m scrape, reason string) float64 {
	return m.sum("vhcrd_comm_resets_total", map[string]string{"vf": fmt.Sprint(guestVF), "reason": reason})
}
