package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/cmd/internal/adminc"
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/master/trace"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// traceUntil runs `vhcrd trace ARGS` and returns its stdout, read until a
// line contains each of want (in order), then interrupts it and checks that
// it exits 0.
func traceUntil(t *testing.T, args []string, want ...string) []string {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "vhcrd"), append([]string{"trace"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(stdout)
	done := make(chan struct{})
	timer := time.AfterFunc(30*time.Second, func() { _ = cmd.Process.Kill() }) // a hung test ends
	defer timer.Stop()
	go func() {
		defer close(done)
		for len(want) > 0 && sc.Scan() {
			lines = append(lines, sc.Text())
			if strings.Contains(sc.Text(), want[0]) {
				want = want[1:]
			}
		}
	}()
	<-done
	if len(want) > 0 {
		_ = cmd.Wait()
		t.Fatalf("vhcrd trace %v: no line with %q in\n%s\nstderr:\n%s", args, want[0], strings.Join(lines, "\n"), stderr.String())
	}
	_ = cmd.Process.Signal(os.Interrupt)
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("vhcrd trace after SIGINT: %v\n%s", err, stderr.String())
	}
	return lines
}

// TestTraceAcrossProcesses: `vhcrd trace` against a running vhcrd shows a
// vfctl command, with names, as text and as JSON lines, filtered by VF and
// opcode; `serve --trace` writes the same records to its file.
func TestTraceAcrossProcesses(t *testing.T) {
	dir := shmDir(t)
	barPath, dmaPath := filepath.Join(dir, "bar"), filepath.Join(dir, "dma")
	traceFile := filepath.Join(dir, "trace.txt")
	d := startDaemon(t, barPath, dmaPath, "--trace", traceFile)
	sock := barPath + ".sock"
	if st, err := os.Stat(sock); err != nil || st.Mode().Type() != os.ModeSocket || st.Mode().Perm() != 0o600 {
		t.Fatalf("admin socket %s: %v, mode %v (want a socket, 0600)", sock, err, st.Mode())
	}
	if out, code := vfctl(t, barPath, "cmd", "--vf", "2", "QUERY_FUNC_CAP", "--op-mod", "1", "--in-mod", "2"); code != 0 {
		t.Fatalf("vfctl: exit %d\n%s", code, out)
	}
	if out, code := vfctl(t, barPath, "cmd", "--vf", "1", "MAD_DEMUX"); code != 1 {
		t.Fatalf("vfctl: exit %d\n%s", code, out)
	}
	// From the ring's start: the records are there.
	lines := traceUntil(t, []string{"--bar", "file:" + barPath, "--vf", "2", "--from-start"},
		"vf2 COMM VHCR_EN toggle=", "vf2 POST  QUERY_FUNC_CAP op_mod=1 in_mod=0x2 ")
	for _, l := range lines {
		if !strings.Contains(l, " vf2 ") {
			t.Errorf("--vf 2 let through %q", l)
		}
	}
	if !strings.Contains(lines[len(lines)-1], "tok=0xffff poll  OK") {
		t.Errorf("QUERY_FUNC_CAP line: %q", lines[len(lines)-1])
	}
	lines = traceUntil(t, []string{"--admin-socket", sock, "--opcode", "MAD_DEMUX", "--json", "--from-start"}, `"opcode":"MAD_DEMUX"`)
	if len(lines) != 1 {
		t.Fatalf("--opcode MAD_DEMUX: %q", lines)
	}
	e, err := trace.ParseJSON([]byte(lines[0]))
	if err != nil || e.VF != 1 || e.Status != "BAD_OP" || e.Reason != "privileged" {
		t.Fatalf("MAD_DEMUX entry %+v (%v)", e, err)
	}
	if err := d.stop(t); err != nil {
		t.Fatalf("vhcrd exit: %v", err)
	}
	b, err := os.ReadFile(traceFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{" vf2 POST  QUERY_FUNC_CAP op_mod=1 in_mod=0x2 ", " vf1 POST  MAD_DEMUX op_mod=0 ", "BAD_OP reason=privileged"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("--trace file lacks %q:\n%s", want, b)
		}
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("admin socket left after an orderly stop: %v", err)
	}
}

// TestTraceFromStartAfterTheFact: the ring records with nobody reading
// (no --trace, no client): `vhcrd trace --from-start`, attached after the
// commands ran, shows them, decoded: the resource type and mode of an
// ALLOC_RES and the QPN it reserved, in hexadecimal; the MAD of a MAD_IFC;
// the EQE type; and the same as JSON lines.
func TestTraceFromStartAfterTheFact(t *testing.T) {
	dir := shmDir(t)
	barPath, dmaPath := filepath.Join(dir, "bar"), filepath.Join(dir, "dma")
	d := startDaemon(t, barPath, dmaPath)
	for _, args := range [][]string{
		{"cmd", "--vf", "3", "ALLOC_RES", "--in-mod", "0", "--op-mod", "0", "--in-param", "0x100000001"},
		{"mad", "--vf", "3", "get", "portinfo"},
		{"res", "--vf", "3", "--events"},
	} {
		if out, code := vfctl(t, barPath, args...); code != 0 {
			t.Fatalf("vfctl %v: exit %d\n%s", args, code, out)
		}
	}
	lines := traceUntil(t, []string{"--bar", "file:" + barPath, "--vf", "3", "--from-start"},
		"vf3 COMM VHCR_EN toggle=",
		"vf3 POST  ALLOC_RES RES_QP RES_OP_RESERVE qpn=0x",
		"vf3 POST  MAD_IFC port=1 SUBN_LID_ROUTED GET PORT_INFO attr_mod=0x1 ",
		"vf3 EQE CMD type=0x0a ")
	var alloc string
	for _, l := range lines {
		if strings.Contains(l, "ALLOC_RES RES_QP") {
			alloc = l
		}
	}
	out := alloc[strings.Index(alloc, " out=0x")+len(" out=0x"):]
	out = out[:strings.IndexByte(out, ' ')]
	if !strings.Contains(alloc, " qpn=0x"+out+" ") || !strings.Contains(alloc, "poll  OK") {
		t.Errorf("QP reservation: the QPN is out_param's, in hexadecimal: %q", alloc)
	}
	lines = traceUntil(t, []string{"--bar", "file:" + barPath, "--vf", "3", "--opcode", "MAD_IFC", "--json", "--from-start"},
		`"opcode":"MAD_IFC"`)
	e, err := trace.ParseJSON([]byte(lines[0]))
	if err != nil || e.MADClass != "SUBN_LID_ROUTED" || e.MADMethod != "GET" || e.MADAttr != "PORT_INFO" ||
		e.MADAttrMod != 1 || !e.HasPort || e.Port != 1 || e.Status != "OK" {
		t.Errorf("MAD_IFC entry %+v (%v) from %s", e, err, lines[0])
	}
	if err := d.stop(t); err != nil {
		t.Fatalf("vhcrd exit: %v", err)
	}
}

// TestAdminSocketStaleAndLive: the socket file of a killed vhcrd is
// replaced by the next one; a socket a live vhcrd serves is refused.
func TestAdminSocketStaleAndLive(t *testing.T) {
	dir := shmDir(t)
	barPath, dmaPath := filepath.Join(dir, "bar"), filepath.Join(dir, "dma")
	d := startDaemon(t, barPath, dmaPath)
	_ = d.cmd.Process.Kill()
	<-d.exited
	if _, err := os.Stat(barPath + ".sock"); err != nil {
		t.Fatalf("a killed vhcrd left no socket file to test with: %v", err)
	}
	d2 := startDaemon(t, barPath, dmaPath)
	if !strings.Contains(d2.stderr.String(), "replaced a stale admin socket") {
		t.Errorf("no word of the stale socket:\n%s", d2.stderr)
	}
	// The new daemon answers on it: with an error line for an unknown command.
	c, err := net.Dial("unix", barPath+".sock")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write([]byte(`{"cmd":"no_such_cmd"}` + "\n"))
	reply, _ := io.ReadAll(c)
	c.Close()
	if !strings.HasPrefix(string(reply), "# error: ") || !strings.Contains(string(reply), `unknown cmd "no_such_cmd"`) {
		t.Errorf("reply to an unknown command: %q", reply)
	}
	other := filepath.Join(dir, "other")
	cmd := exec.Command(filepath.Join(binDir, "vhcrd"), "serve", "--bar", "file:"+other+"-bar", "--dma", "file:"+other+"-dma",
		"--num-vfs", "1", "--window", "256K", "--metrics-addr", "", "--admin-socket", barPath+".sock")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "admin socket in use") {
		t.Fatalf("a second vhcrd on a live admin socket: %v\n%s", err, out)
	}
}

// TestTraceExitStatus: usage errors exit 2, a daemon that is not there 1.
func TestTraceExitStatus(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--vf", "x"}, 2, "invalid value"},
		{[]string{"--opcode", "NO_SUCH_OP"}, 2, "NO_SUCH_OP"},
		{[]string{"--vf", "70000"}, 2, "vf 70000"},
		{[]string{"--admin-socket", "a", "--bar", "file:b"}, 2, "give one"},
		{[]string{"extra"}, 2, "unexpected"},
		{[]string{"--admin-socket", filepath.Join(dir, "none.sock")}, 1, "is vhcrd serving"},
		{[]string{"--bar", "file:" + filepath.Join(dir, "bar")}, 1, "is vhcrd serving"},
	} {
		out, err := exec.Command(filepath.Join(binDir, "vhcrd"), append([]string{"trace"}, tc.args...)...).CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != tc.code || !strings.Contains(string(out), tc.says) {
			t.Errorf("vhcrd trace %q: %v, want exit %d saying %q:\n%s", tc.args, err, tc.code, tc.says, out)
		}
	}
}

// TestSlowReaderLosesRecords: a reader the writer has lapped is told how
// many records it lost, through the admin socket, and then gets the ones
// the ring still holds. The reader asks from the ring's start after 100
// records went into a ring of 16: the count is exact.
func TestSlowReaderLosesRecords(t *testing.T) {
	ring, err := trace.New(trace.Config{Records: 16})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		c := hca.Cmd{VF: 1, Op: mlx4.NOP, InMod: uint32(i), Token: mlx4.PollToken}
		ring.PostUntimed(uint64(i), 0, &c, mlx4.OK)
	}
	sock := filepath.Join(t.TempDir(), "admin.sock")
	a, err := listenAdmin(sock, ring, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { a.serve(ctx); close(served) }()
	defer func() { cancel(); <-served }()

	pr, pw := io.Pipe()
	followed := make(chan error, 1)
	fctx, stop := context.WithCancel(ctx)
	go func() {
		followed <- followTrace(fctx, adminc.Socket{Path: sock}, trace.Request{FromStart: true}, pw)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	var lines []string
	for len(lines) < 16 && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	stop()
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if err := <-followed; err != nil {
		t.Fatal(err)
	}
	if len(lines) != 16 || lines[0] != "# lost 85 records" {
		t.Fatalf("stream:\n%s", strings.Join(lines, "\n"))
	}
	for i, l := range lines[1:] {
		if want := fmt.Sprintf(" vf1 POST  NOP op_mod=0 in_mod=%#x ", 85+i); !strings.Contains(l, want) {
			t.Errorf("record %d: %q, want %q", i, l, want)
		}
	}
	if c, err := net.Dial("unix", sock); err != nil {
		t.Errorf("admin socket after a client left: %v", err)
	} else {
		c.Close()
	}
}
