package main

// Cross-process tests (tier 2): a real vhcrd process and real vfctl
// processes sharing tmpfs files, and (tier 5) promtool and a Prometheus
// server reading vhcrd's /metrics.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/hack/testenv"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

var binDir string

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		os.Exit(m.Run()) // a fuzzing worker runs one fuzz target: no binaries needed
	}
	dir, err := os.MkdirTemp("", "vhcrd-e2e-bin")
	if err != nil {
		panic(err)
	}
	// As the Makefile builds: the revision also through -X, for trees Go
	// does not stamp (a git worktree, GOFLAGS=-buildvcs=false).
	build := []string{"build", "-o", dir + "/"}
	if rev, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		build = append(build, "-ldflags", "-X github.com/vhcrd/vhcrd/metrics/buildinfo.Revision="+strings.TrimSpace(string(rev)))
	}
	out, err := exec.Command("go", append(build, "github.com/vhcrd/vhcrd/cmd/vhcrd", "github.com/vhcrd/vhcrd/cmd/vfctl")...).CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the binaries: %v\n%s", err, out)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// shmDir is tmpfs where there is one.
func shmDir(t *testing.T) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "vhcrd-e2e")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	return t.TempDir()
}

type daemon struct {
	cmd     *exec.Cmd
	metrics string // http://host:port
	stderr  *bytes.Buffer
	exited  chan error
	// later is the log after the daemon started serving
	mu    sync.Mutex
	later strings.Builder
}

// logAfterStart is the daemon's log since it started serving.
func (d *daemon) logAfterStart() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.later.String()
}

// startDaemon runs vhcrd serve and waits until it serves (its log line with
// the metrics URL, then the region header in the serving state).
func startDaemon(t *testing.T, barPath, dmaPath string, extra ...string) *daemon {
	t.Helper()
	args := append([]string{"serve", "--bar", "file:" + barPath, "--dma", "file:" + dmaPath, "--num-vfs", "4",
		"--window", "256K", "--metrics-addr", "127.0.0.1:0"}, extra...)
	cmd := exec.Command(filepath.Join(binDir, "vhcrd"), args...)
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &daemon{cmd: cmd, stderr: &bytes.Buffer{}, exited: make(chan error, 1)}
	go func() { d.exited <- cmd.Wait(); pw.Close() }()
	urlRE := regexp.MustCompile(`url=(http://[0-9.:]+)/metrics`)
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	t.Cleanup(func() { d.stop(t) })
	for d.metrics == "" || !strings.Contains(d.stderr.String(), "msg=serving") {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("vhcrd exited before serving:\n%s", d.stderr)
			}
			d.stderr.WriteString(l + "\n")
			if m := urlRE.FindStringSubmatch(l); m != nil {
				d.metrics = m[1]
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("vhcrd did not start serving:\n%s", d.stderr)
		}
	}
	go func() {
		for l := range lines {
			d.mu.Lock()
			d.later.WriteString(l + "\n")
			d.mu.Unlock()
		}
	}()
	return d
}

func (d *daemon) stop(t *testing.T) error {
	if d.cmd.ProcessState != nil {
		return nil
	}
	_ = d.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-d.exited:
		return err
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		t.Errorf("vhcrd did not stop on SIGINT")
		return <-d.exited
	}
}

func vfctl(t *testing.T, barPath string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "vfctl"), append(args[:1:1], append([]string{"--bar", "file:" + barPath}, args[1:]...)...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("vfctl %v: %v", args, err)
	}
	return out.String(), code
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestDaemonAndVFToolsAcrossProcesses(t *testing.T) {
	dir := shmDir(t)
	barPath, dmaPath := filepath.Join(dir, "bar"), filepath.Join(dir, "dma")
	d := startDaemon(t, barPath, dmaPath)

	out, code := vfctl(t, barPath, "cmd", "--vf", "3", "QUERY_FUNC_CAP")
	if code != 0 || !strings.Contains(out, "QUERY_FUNC_CAP: OK (0x00)") {
		t.Fatalf("QUERY_FUNC_CAP: exit %d\n%s", code, out)
	}
	out, code = vfctl(t, barPath, "cmd", "--vf", "3", "QUERY_FUNC_CAP", "--op-mod", "1", "--in-mod", "2")
	if code != 0 || !strings.Contains(out, "00000000  00 00 00 02") {
		t.Fatalf("QUERY_FUNC_CAP port 2 (physical port byte 3 = 2): exit %d\n%s", code, out)
	}
	out, code = vfctl(t, barPath, "cmd", "--vf", "3", "MAD_DEMUX")
	if code != 1 || !strings.Contains(out, "BAD_OP (0x02)") {
		t.Fatalf("MAD_DEMUX: exit %d\n%s", code, out)
	}
	out, code = vfctl(t, barPath, "cmd", "--vf", "1", "0x7")
	if code != 1 || !strings.Contains(out, "BAD_PARAM (0x03)") {
		t.Fatalf("INIT_HCA: exit %d\n%s", code, out)
	}
	out, code = vfctl(t, barPath, "load", "--vfs", "0-3", "--duration", "1s", "--json")
	if code != 0 {
		t.Fatalf("load: exit %d\n%s", code, out)
	}
	if strings.ContainsAny(out, "\r\033") {
		t.Errorf("load wrote terminal escapes to a pipe: %q", out)
	}
	var res struct {
		Commands       uint64            `json:"commands"`
		ProtocolErrors uint64            `json:"protocol_errors"`
		PerVF          map[string]uint64 `json:"per_vf"`
		LatencyNS      map[string]int64  `json:"latency_ns"`
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &res); err != nil {
		t.Fatalf("load JSON: %v\n%s", err, out)
	}
	if res.Commands == 0 || res.ProtocolErrors != 0 || len(res.PerVF) != 4 || res.LatencyNS["p50"] <= 0 {
		t.Fatalf("load result %+v", res)
	}
	for vf, n := range res.PerVF {
		if n == 0 {
			t.Errorf("VF %s completed no command under load", vf)
		}
	}
	m := get(t, d.metrics+"/metrics")
	for _, want := range []string{
		`vhcrd_opcode_commands_total{opcode="QUERY_FUNC_CAP",status="OK"} `,
		`vhcrd_opcode_commands_total{opcode="MAD_DEMUX",status="BAD_OP"} 1`,
		`vhcrd_vf_commands_total{status="OK",vf="3"} `,
		`vhcrd_vf_completion_mode{mode="poll",vf="3"} 1`,
		`vhcrd_command_refusals_total{reason="unknown_opcode",vf="1"} 1`,
		`vhcrd_vfs 4`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	out, code = vfctl(t, barPath, "flr", "--vf", "2")
	if code != 0 || !strings.Contains(out, "FLR of VF 2 done") {
		t.Fatalf("flr: exit %d\n%s", code, out)
	}
	if m := get(t, d.metrics+"/metrics"); !strings.Contains(m, `vhcrd_comm_resets_total{reason="flr",vf="2"} 1`) {
		t.Error("FLR not counted")
	}

	// SIGINT: the PF finishes, marks the pages offline and says it stopped.
	if err := d.stop(t); err != nil {
		t.Fatalf("vhcrd exit: %v", err)
	}
	a, err := vfclient.AttachFile(barPath)
	if err != nil {
		t.Fatal(err)
	}
	if st := a.PFState(); st != wire.PFStateStopped {
		t.Errorf("PF state after SIGINT: %d", st)
	}
	vb3, err := a.VFBAR(3)
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := vb3.Load32(mlx4.MLX4_COMM_CHAN_FLAGS); f&mlx4.CommFlagsOffline == 0 {
		t.Errorf("VF 3 FLAGS %#x: offline bit not set after the PF stopped", f)
	}
	a.Close()

	// A restarted PF resumes: VF 3 posts without bringing its channel up again.
	d2 := startDaemon(t, barPath, dmaPath)
	out, code = vfctl(t, barPath, "cmd", "--vf", "3", "NOP")
	if code != 0 || !strings.Contains(out, "NOP: OK (0x00)") {
		t.Fatalf("NOP after restart: exit %d\n%s", code, out)
	}
	if m := get(t, d2.metrics+"/metrics"); strings.Contains(m, `vhcrd_comm_resets_total{reason="vf_reset",vf="3"}`) {
		t.Error("VF 3 had to RESET after the PF restart")
	}
}

// One PF per set of regions: a second vhcrd on the same files is refused
// with the first one's pid before it touches a register, and the first one
// keeps serving (its VFs stay online and answer).
func TestSecondPFOnTheSameRegionsIsRefused(t *testing.T) {
	dir := shmDir(t)
	barPath, dmaPath := filepath.Join(dir, "bar"), filepath.Join(dir, "dma")
	d := startDaemon(t, barPath, dmaPath)
	if out, code := vfctl(t, barPath, "init", "--vf", "1"); code != 0 {
		t.Fatalf("vfctl init: exit %d\n%s", code, out)
	}
	// The last: fresh control and DMA files, but the first PF's VF 2 BAR
	// region as VF 0's.
	for _, files := range [][3]string{{barPath, dmaPath}, {barPath, filepath.Join(dir, "dma2")}, {filepath.Join(dir, "bar2"), dmaPath},
		{filepath.Join(dir, "bar3"), filepath.Join(dir, "dma3"), wire.VFBARPath(barPath, 2)}} {
		args := []string{"serve", "--bar", "file:" + files[0], "--dma", "file:" + files[1],
			"--num-vfs", "8", "--window", "128K", "--metrics-addr", "127.0.0.1:0"}
		if files[2] != "" {
			args = append(args, "--vf-bar", "0=file:"+files[2])
		}
		second := exec.Command(filepath.Join(binDir, "vhcrd"), args...)
		out := refusedOrServing(t, second)
		if want := fmt.Sprintf("pid %d", d.cmd.Process.Pid); !strings.Contains(out, "owned by another process") || !strings.Contains(out, want) {
			t.Errorf("second vhcrd on %v: the error does not name the owner (%s):\n%s", files, want, out)
		}
	}
	a, err := vfclient.AttachFile(barPath)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Layout.NumVFs != 4 {
		t.Errorf("the refused PF rewrote the header: %d VFs", a.Layout.NumVFs)
	}
	vb1, err := a.VFBAR(1)
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := vb1.Load32(mlx4.MLX4_COMM_CHAN_FLAGS); f&mlx4.CommFlagsOffline != 0 {
		t.Errorf("VF 1 FLAGS %#x: offline after a refused PF exited", f)
	}
	if out, code := vfctl(t, barPath, "cmd", "--vf", "1", "NOP"); code != 0 || !strings.Contains(out, "NOP: OK (0x00)") {
		t.Fatalf("NOP after the refused start: exit %d\n%s", code, out)
	}
}

// refusedOrServing runs cmd (a vhcrd serve) and returns its output once it
// has exited. If it starts serving instead, the test fails and the process is
// killed: a PF that should have been refused never exits on its own.
func refusedOrServing(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); pw.Close() }()
	var out strings.Builder
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "msg=serving") {
			_ = cmd.Process.Kill()
			t.Errorf("vhcrd started serving instead of being refused:\n%s", out.String())
		}
	}
	if cmd.ProcessState != nil && cmd.ProcessState.Success() {
		t.Errorf("vhcrd exited 0:\n%s", out.String())
	}
	return out.String()
}

func TestBadFlagsAndFilesAreClearErrors(t *testing.T) {
	dir := shmDir(t)
	run := func(args ...string) string {
		out, err := exec.Command(filepath.Join(binDir, "vhcrd"), args...).CombinedOutput()
		if err == nil {
			t.Fatalf("vhcrd %v succeeded", args)
		}
		return string(out)
	}
	if out := run("serve", "--num-vfs", "0"); !strings.Contains(out, "--num-vfs 0") {
		t.Errorf("--num-vfs 0: %s", out)
	}
	if out := run("serve", "--num-vfs", "127"); !strings.Contains(out, "1..126") {
		t.Errorf("--num-vfs 127: %s", out)
	}
	if out := run("serve", "--window", "5000", "--bar", "file:"+dir+"/b", "--dma", "file:"+dir+"/d"); !strings.Contains(out, "window") {
		t.Errorf("--window 5000: %s", out)
	}
	cfg := filepath.Join(dir, "bad.json")
	ex, _ := exec.Command(filepath.Join(binDir, "vhcrd"), "config").Output()
	_ = os.WriteFile(cfg, bytes.Replace(ex, []byte(`"subnet_timeout": 18`), []byte(`"subnet_timeout": 40`), 1), 0o600)
	if out := run("serve", "--config", cfg, "--bar", "file:"+dir+"/b", "--dma", "file:"+dir+"/d"); !strings.Contains(out, "ports[0].subnet_timeout") {
		t.Errorf("bad config: %s", out)
	}
	if out, _ := vfctl(t, filepath.Join(dir, "missing"), "cmd", "--vf", "0", "NOP"); !strings.Contains(out, "vhcrd serve") {
		t.Errorf("vfctl without a daemon: %s", out)
	}
	garbled := filepath.Join(dir, "garbled")
	_ = os.WriteFile(garbled, make([]byte, 8192), 0o600)
	if out, _ := vfctl(t, garbled, "cmd", "--vf", "0", "NOP"); !strings.Contains(out, "bad region header") {
		t.Errorf("vfctl on a garbled region: %s", out)
	}
}

func TestMetricsWithPromtoolAndPrometheus(t *testing.T) {
	promtool := testenv.LookPath(t, "promtool", "prometheus")
	prom := testenv.LookPath(t, "prometheus", "prometheus")
	dir := shmDir(t)
	barPath, dmaPath := filepath.Join(dir, "bar"), filepath.Join(dir, "dma")
	d := startDaemon(t, barPath, dmaPath)
	if out, code := vfctl(t, barPath, "cmd", "--vf", "0", "QUERY_FW"); code != 0 {
		t.Fatal(out)
	}
	body := get(t, d.metrics+"/metrics")
	check := exec.Command(promtool, "check", "metrics")
	check.Stdin = strings.NewReader(body)
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}

	// A real Prometheus server scrapes vhcrd and answers a query. It
	// scrapes through a forwarding server of the test's, which reports each
	// scrape: when the second one arrives, the first is committed to
	// Prometheus's head block, so one query must see it (no polling).
	scrapes := make(chan struct{}, 16)
	fwd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := http.Get(d.metrics + "/metrics")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		_, _ = io.Copy(w, resp.Body)
		select {
		case scrapes <- struct{}{}:
		default:
		}
	}))
	defer fwd.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	promAddr := ln.Addr().String()
	ln.Close()
	cfg := filepath.Join(dir, "prometheus.yml")
	target := strings.TrimPrefix(fwd.URL, "http://")
	_ = os.WriteFile(cfg, []byte(fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: vhcrd\n    static_configs:\n      - targets: [%q]\n", target)), 0o600)
	p := exec.Command(prom, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address="+promAddr)
	var plog bytes.Buffer
	p.Stdout, p.Stderr = &plog, &plog
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Process.Kill(); _ = p.Wait() }()
	timeout := time.After(60 * time.Second)
	for n := 0; n < 2; n++ {
		select {
		case <-scrapes:
		case <-timeout:
			t.Fatalf("Prometheus scraped vhcrd %d times in 60 s; its log:\n%s", n, plog.String())
		}
	}
	query := func(q string) string {
		return get(t, "http://"+promAddr+"/api/v1/query?query="+url.QueryEscape(q))
	}
	if b := query(`vhcrd_opcode_commands_total{opcode="QUERY_FW",status="OK"}`); !strings.Contains(b, `"1"]`) || strings.Contains(b, `"vf"`) {
		t.Fatalf("Prometheus query for vhcrd_opcode_commands_total{opcode=\"QUERY_FW\"}: %s\nits log:\n%s", b, plog.String())
	}
	if b := query(`vhcrd_vf_commands_total{vf="0",status="OK"}`); !strings.Contains(b, `"1"]`) {
		t.Fatalf("Prometheus query for vhcrd_vf_commands_total{vf=\"0\"}: %s", b)
	}
	if b := query(`vhcrd_vf_channel_state{vf="0",state="VHCR_POST"} * on(vf) vhcrd_vf_active`); !strings.Contains(b, `"1"]`) {
		t.Fatalf("Prometheus query for VF 0's state: %s", b)
	}
	if b := query(`count(vhcrd_command_duration_seconds_count) by (class)`); strings.Count(b, `"class"`) != 6 {
		t.Fatalf("Prometheus query for the latency classes: %s", b)
	}
	// build_info names the revision the binary was built from (the test
	// built it from this tree: go build stamps vcs.revision).
	if rev, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		want := `"revision":"` + strings.TrimSpace(string(rev)) + `"`
		if b := query(`vhcrd_build_info`); !strings.Contains(b, want) {
			t.Fatalf("vhcrd_build_info: %s, want %s", b, want)
		}
	}
}

func umad2sim(t *testing.T) string {
	testenv.LookPath(t, "smpquery", "infiniband-diags")
	testenv.LookPath(t, "tshark", "tshark")
	for _, p := range []string{"/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so", "/usr/lib/aarch64-linux-gnu/umad2sim/libumad2sim.so"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	testenv.SkipOrFail(t, "libumad2sim.so not installed (Debian package ibsim-utils)")
	return ""
}

// TestDaemonMADInterop: the daemon's --ibsim server answers unmodified
// smpquery, and a Trap 259 raised through a VF's MAD_IFC appears in the
// --capture file as tshark reads it and in /metrics.
func TestDaemonMADInterop(t *testing.T) {
	lib := umad2sim(t)
	dir := shmDir(t)
	barPath, dmaPath, capPath := filepath.Join(dir, "bar"), filepath.Join(dir, "dma"), filepath.Join(dir, "mads.pcap")
	sock := fmt.Sprintf("vhcrd-e2e-%d", os.Getpid())
	d := startDaemon(t, barPath, dmaPath, "--ibsim", sock, "--capture", capPath, "--num-vfs", "8")

	q := exec.Command("timeout", "20", "smpquery", "portinfo", "5", "1")
	q.Env = append(os.Environ(), "IBSIM_SOCKNAME="+sock, "LD_PRELOAD="+lib)
	q.Dir = dir
	out, err := q.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Lid:.............................5") ||
		!strings.Contains(string(out), "SMLid:...........................1") {
		t.Fatalf("smpquery portinfo: %v\n%s", err, out)
	}
	// VF 7 is SMI-privileged in the default config; port 1's B_Key is 0xb0b.
	vout, _ := vfctl(t, barPath, "mad", "--vf", "7", "bm-set", "--bkey", "0x1", "--slid", "9", "--src-qp", "0x45", "--sgid", "fe80::2:c903:0:7")
	if !strings.Contains(vout, "MAD_IFC:") {
		t.Fatalf("vfctl mad bm-set:\n%s", vout)
	}
	m := get(t, d.metrics+"/metrics")
	for _, want := range []string{`vhcrd_traps_sent_total{trap="259"} 1`, `vhcrd_key_violations_total{key="b_key"} 1`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if err := d.stop(t); err != nil {
		t.Fatal(err)
	}
	ts, err := exec.Command("timeout", "60", "tshark", "-r", capPath, "-T", "fields", "-E", "separator=,",
		"-e", "infiniband.lrh.slid", "-e", "infiniband.lrh.dlid", "-e", "infiniband.mad.mgmtclass",
		"-e", "infiniband.mad.method", "-e", "infiniband.mad.attributeid").CombinedOutput()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, ts)
	}
	// The trap: from the port's LID 5 to the master SM's LID 1, BM class, Trap(), Notice.
	if !strings.Contains(string(ts), "5,1,0x05,0x05,0x0002") {
		t.Errorf("no BM Trap(Notice) from LID 5 to LID 1 in the capture:\n%s", ts)
	}
	// The offending Set as it arrived from LID 9.
	if !strings.Contains(string(ts), "9,5,0x05,0x02,0x0010") {
		t.Errorf("the BM Set(BKeyInfo) from LID 9 is not in the capture:\n%s", ts)
	}
	// And smpquery's own exchange.
	if !strings.Contains(string(ts), "0x01,0x81,0x0015") {
		t.Errorf("smpquery's GetResp(PortInfo) is not in the capture:\n%s", ts)
	}
}

// TestTruncatedBARStopsTheDaemon: the control file is truncated under vhcrd
// serve. The daemon stops serving with a clear error naming the file and
// its size and exits with status 1, not with SIGBUS.
func TestTruncatedBARStopsTheDaemon(t *testing.T) {
	dir := shmDir(t)
	barPath, dmaPath := filepath.Join(dir, "bar"), filepath.Join(dir, "dma")
	cmd := exec.Command(filepath.Join(binDir, "vhcrd"), "serve", "--bar", "file:"+barPath, "--dma", "file:"+dmaPath,
		"--num-vfs", "4", "--window", "256K", "--metrics-addr", "")
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); pw.Close() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	var out strings.Builder
	sc := bufio.NewScanner(pr)
	truncated := false
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if !truncated && strings.Contains(sc.Text(), "msg=serving") {
			// The control region's header goes: the idle poller's next
			// sleep touches it. (A VF BAR region that goes stops only
			// that VF: TestVFBARRegionShrinks, vhcr/master.)
			if err := os.Truncate(barPath, 0); err != nil {
				t.Fatal(err)
			}
			truncated = true
		}
	}
	err := <-exited
	if !truncated {
		t.Fatalf("vhcrd never served:\n%s", out.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("vhcrd ended with %v, want exit status 1 (a signal means it died of the fault):\n%s", err, out.String())
	}
	for _, want := range []string{"vhcrd serve: file:" + barPath, "region shrank under the PF", "now has 0 bytes"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output does not say %q:\n%s", want, out.String())
		}
	}
}

// TestFLRBringsBackALostVFBAR: VF 1's BAR file is truncated under vhcrd
// serve, which stops serving VF 1 (a region_lost reset). `vhcrd vf flr 1`
// refuses while the file is short, saying which file, its size and the
// size needed; once the file has its size again, it answers done and VF 1
// serves commands again.
func TestFLRBringsBackALostVFBAR(t *testing.T) {
	dir := shmDir(t)
	barPath, dmaPath := filepath.Join(dir, "bar"), filepath.Join(dir, "dma")
	d := startDaemon(t, barPath, dmaPath)
	sock := "--bar=file:" + barPath
	if out, code := vfctl(t, barPath, "cmd", "NOP", "--vf", "1"); code != 0 {
		t.Fatalf("NOP on VF 1: exit %d\n%s", code, out)
	}
	vf1 := wire.VFBARPath(barPath, 1)
	if err := os.Truncate(vf1, 0); err != nil {
		t.Fatal(err)
	}
	// The poller's next scan faults on the lost page: observed from outside.
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(get(t, d.metrics+"/metrics"), `vhcrd_comm_resets_total{reason="region_lost",vf="1"} 1`); {
		if time.Now().After(deadline) {
			t.Fatalf("no region_lost reset of VF 1 in 20 s:\n%s", d.stderr)
		}
		time.Sleep(10 * time.Millisecond) // polling another process's metrics
	}
	out, code := vhcrdCmd(t, "vf", "flr", "1", sock)
	if code != 1 {
		t.Fatalf("vf flr 1 with its BAR file at 0 bytes: exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{"BAR region shrank", vf1 + " has 0 bytes", fmt.Sprintf("needs %d", wire.VFBARSize), "FLR again"} {
		if !strings.Contains(out, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, out)
		}
	}
	if err := os.Truncate(vf1, wire.VFBARSize); err != nil {
		t.Fatal(err)
	}
	if out, code := vhcrdCmd(t, "vf", "flr", "1", sock); code != 0 || !strings.Contains(out, "FLR of VF 1 done") {
		t.Fatalf("vf flr 1 with its BAR file whole: exit %d\n%s", code, out)
	}
	if out, code := vfctl(t, barPath, "cmd", "QUERY_FW", "--vf", "1"); code != 0 || !strings.Contains(out, "OK (0x00)") {
		t.Fatalf("QUERY_FW on VF 1 after the FLR: exit %d\n%s", code, out)
	}
	m := get(t, d.metrics+"/metrics")
	for _, want := range []string{`vhcrd_admin_changes_total{action="vf_flr",result="refused"} 1`, `vhcrd_admin_changes_total{action="vf_flr",result="done"} 1`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
