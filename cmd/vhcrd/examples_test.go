package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/cmd/internal/cli"
)

// helpExamples are the lines of a --help's "examples:" section.
func helpExamples(help string) []string {
	_, sec, ok := strings.Cut(help, "\nexamples:\n")
	if !ok {
		return nil
	}
	var out []string
	for _, l := range strings.Split(sec, "\n") {
		if !strings.HasPrefix(l, "  ") {
			break
		}
		out = append(out, strings.TrimSpace(l))
	}
	return out
}

// refusedExamples are the examples that end in a refusal, exit 1, by
// design: the PCI ones need a device this machine lacks, bm-set's wrong
// B_Key is the point of the example, and clean refuses the files of the PF
// the test serves. Each must say why on its output.
var refusedExamples = map[string]string{
	"vhcrd bind 0000:03:00.1":   "no such device",
	"vhcrd unbind 0000:03:00.1": "no such device",
	"vhcrd clean":               "a PF serves these regions, nothing removed",
	"vhcrd serve --bar vfio:0000:03:00.1#region2 --dma bar@0x40000 --num-vfs 1 --vf-bar 0=vfio:0000:03:00.1#region2@8M":                                                       "vhcrd serve: --bar: ",
	"vhcrd serve --bar vfio:0000:00:01.0#region2 --dma bar@0x40000 --num-vfs 2 --window 64K --vf-bar 0=vfio:0000:00:01.0#region2@8M --vf-bar 1=vfio:0000:00:01.0#region2@16M": "vhcrd serve: --bar: ",
	"vfctl mad --vf 7 bm-set --bkey 0x1 --slid 9 --sgid fe80::2:c903:0:7":                                                                                                     "BAD_PARAM (0x03): mad_dropped",
}

// lockedBuffer is a bytes.Buffer a process writes while a test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestHelpExamplesRun runs every example of every --help of both tools as
// printed, through sh, in order per help, against a vhcrd that just started
// on temporary regions: VHCRD_BAR, VHCRD_DMA and VHCRD_METRICS_ADDR (the
// tools' documented defaults of --bar, --dma and --metrics-addr) point the
// examples there without changing a word of them. Each exits 0, except the
// refusedExamples, which exit 1 and say why; a `vhcrd serve` example serves
// (on regions of its own) until SIGTERM, a `vhcrd trace` example streams
// what the VF the example filters on posts until SIGINT. The daemon's log
// shows no Go value syntax.
func TestHelpExamplesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a vhcrd per help level")
	}
	seen := map[string]bool{}
	for _, tool := range []string{"vhcrd", "vfctl"} {
		levels := append(tree(t, tool), &level{words: []string{"version"}})
		for _, l := range levels {
			help, _, code := runTool(t, tool, append(append([]string(nil), l.words...), "--help")...)
			name := strings.TrimSpace(tool + " " + strings.Join(l.words, " "))
			exs := helpExamples(help)
			if code != 0 || len(exs) == 0 {
				t.Errorf("%s --help: exit %d, no examples", name, code)
				continue
			}
			key := strings.Join(exs, "\n")
			if seen[key] {
				continue // the same list as another level's (port up, port down)
			}
			seen[key] = true
			t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) { runExamples(t, exs) })
		}
	}
}

// runExamples runs one help's examples in order against a fresh PF.
func runExamples(t *testing.T, exs []string) {
	dir := shmDir(t)
	barPath, dmaPath := filepath.Join(dir, "bar"), filepath.Join(dir, "dma")
	d := startDaemon(t, barPath, dmaPath, "--num-vfs", "8", "--window", "1M")
	work := t.TempDir()
	// `vfctl bench --vhcrd bin/vhcrd`, as from the top of a checkout.
	if err := os.Symlink(binDir, filepath.Join(work, "bin")); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		cli.EnvBAR+"=file:"+barPath, cli.EnvDMA+"=file:"+dmaPath, cli.EnvMetricsAddr+"=127.0.0.1:0")
	for _, ex := range exs {
		switch {
		case refusedExamples[ex] != "":
			out, code := runExample(t, work, env, ex)
			if code != 1 || !strings.Contains(out, refusedExamples[ex]) {
				t.Errorf("%s: exit %d, want 1 with %q:\n%s", ex, code, refusedExamples[ex], out)
			}
		case strings.HasPrefix(ex, "vhcrd serve"):
			own := t.TempDir()
			serveExample(t, work, append(env, cli.EnvBAR+"=file:"+filepath.Join(own, "bar"), cli.EnvDMA+"=file:"+filepath.Join(own, "dma")), ex)
		case strings.HasPrefix(ex, "vhcrd trace"):
			traceExample(t, work, env, ex)
		default:
			out, code := runExample(t, work, env, ex)
			if code != 0 {
				t.Errorf("%s: exit %d:\n%s", ex, code, out)
			}
		}
	}
	if err := d.stop(t); err != nil {
		t.Errorf("vhcrd serve: %v\n%s", err, d.logAfterStart())
	}
	if m := goValue.FindString(d.logAfterStart()); m != "" {
		t.Errorf("vhcrd's log shows %q (Go value syntax):\n%s", m, d.logAfterStart())
	}
}

// goValue is what Go's fmt prints for a value no user should see.
var goValue = regexp.MustCompile(`<nil>|map\[|\[\d+( \d+)+\]|%!`)

func runExample(t *testing.T, dir string, env []string, ex string) (string, int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", ex)
	cmd.Dir, cmd.Env = dir, env
	return combinedOutput(t, cmd)
}

// background starts an example that runs until signalled.
func background(t *testing.T, dir string, env []string, ex string) (*exec.Cmd, *lockedBuffer, chan error) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "exec "+ex)
	cmd.Dir, cmd.Env = dir, env
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return cmd, out, done
}

// awaitOutput waits until out contains want, calling poke between looks
// (nil: none); false if the process ended first or 30 s passed.
func awaitOutput(out *lockedBuffer, done chan error, want *regexp.Regexp, poke func()) (ended error, ok bool) {
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !want.MatchString(out.String()) {
		if time.Now().After(deadline) {
			return nil, false
		}
		select {
		case err := <-done:
			return err, false
		case <-tick.C:
			if poke != nil {
				poke()
			}
		}
	}
	return nil, true
}

// serveExample runs a `vhcrd serve` example until it serves, then stops it
// with SIGTERM: exit 0.
func serveExample(t *testing.T, dir string, env []string, ex string) {
	cmd, out, done := background(t, dir, env, ex)
	if err, ok := awaitOutput(out, done, regexp.MustCompile(`msg=serving|"msg":"serving"`), nil); !ok {
		t.Errorf("%s: did not serve (%v):\n%s", ex, err, out)
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := <-done; err != nil {
		t.Errorf("%s: after SIGTERM: %v\n%s", ex, err, out)
	}
}

var (
	flagVF     = regexp.MustCompile(`--vf (\d+)`)
	flagOpcode = regexp.MustCompile(`--opcode (\S+)`)
)

// traceExample runs a `vhcrd trace` example while the VF it filters on
// (--vf, else 0) posts the opcode it filters on (--opcode, else NOP) until
// a record shows, then interrupts it: exit 0.
func traceExample(t *testing.T, dir string, env []string, ex string) {
	vf, op := "0", "NOP"
	if m := flagVF.FindStringSubmatch(ex); m != nil {
		vf = m[1]
	}
	if m := flagOpcode.FindStringSubmatch(ex); m != nil {
		op = m[1]
	}
	cmd, out, done := background(t, dir, env, ex)
	poke := func() {
		c := exec.Command(filepath.Join(binDir, "vfctl"), "cmd", "--vf", vf, op)
		c.Env = env
		_ = c.Run() // refused or not, it is traced
	}
	if err, ok := awaitOutput(out, done, regexp.MustCompile(`vf`+vf+`\b.*`+op+`|"vf":`+vf+`,.*"`+op+`"`), poke); !ok {
		t.Errorf("%s: no record of VF %s's %s (%v):\n%s", ex, vf, op, err, out)
		return
	}
	_ = cmd.Process.Signal(os.Interrupt)
	if err := <-done; err != nil {
		t.Errorf("%s: after SIGINT: %v\n%s", ex, err, out)
	}
}
