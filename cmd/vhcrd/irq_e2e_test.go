package main

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/cmd/internal/adminc"
)

// TestVFIRQAcrossProcesses: vhcrd hands a VF's MSI-X eventfds over its
// admin socket (vf.irq, SCM_RIGHTS); a vfctl process waiting on vector 0
// completes its 'e' commands; vhcrd counts the interrupts it raised for
// that VF and for no other.
func TestVFIRQAcrossProcesses(t *testing.T) {
	dir := shmDir(t)
	barPath, dmaPath := filepath.Join(dir, "bar"), filepath.Join(dir, "dma")
	d := startDaemon(t, barPath, dmaPath)
	sock := barPath + ".sock"

	line, fds, err := adminc.CallFDs(adminc.Socket{Path: sock}, map[string]any{"cmd": "vf.irq", "vf": 2}, 10*time.Second, 64)
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		unix.Close(fd)
	}
	var ans struct{ VF, Vectors int }
	if err := json.Unmarshal(line, &ans); err != nil || ans.VF != 2 || ans.Vectors != len(fds) || len(fds) < 2 {
		t.Fatalf("vf.irq: %q with %d descriptors (%v); want VF 2's vectors, at least 2", line, len(fds), err)
	}
	if _, _, err := adminc.CallFDs(adminc.Socket{Path: sock}, map[string]any{"cmd": "vf.irq", "vf": 4}, 10*time.Second, 64); !errors.Is(err, adminc.ErrRefused) {
		t.Fatalf("vf.irq of VF 4 of 4: %v, want a refusal", err)
	}
	if _, _, err := adminc.CallFDs(adminc.Socket{Path: sock}, map[string]any{"cmd": "vf.irq"}, 10*time.Second, 64); !errors.Is(err, adminc.ErrRefused) {
		t.Fatalf("vf.irq without vf: %v, want a refusal", err)
	}

	if out, code := vfctlAction(t, barPath, "eq", "create", "--vf", "1", "--eqn", "1", "--log-size", "8", "--events"); code != 0 {
		t.Fatalf("eq create: exit %d\n%s", code, out)
	}
	out, code := vfctlAction(t, barPath, "cq", "create", "--vf", "1", "--eqn", "1", "--events", "--cmd-eqn", "1", "--irq")
	if code != 0 || !regexp.MustCompile(`SW2HW_CQ +OK \(0x00\) +event`).MatchString(out) {
		t.Fatalf("cq create --irq: exit %d\n%s", code, out)
	}
	if out, code := vfctlAction(t, barPath, "cq", "create", "--vf", "1", "--eqn", "1", "--irq"); code != 2 || !strings.Contains(out, "--irq: only with --events") {
		t.Fatalf("--irq without --events: exit %d\n%s", code, out)
	}
	m := get(t, d.metrics+"/metrics")
	got := map[string]int{}
	for _, mm := range regexp.MustCompile(`(?m)^vhcrd_interrupts_total\{vf="(\d+)"\} (\d+)$`).FindAllStringSubmatch(m, -1) {
		n, _ := strconv.Atoi(mm[2])
		got[mm[1]] = n
	}
	if got["1"] < 1 || len(got) != 1 {
		t.Fatalf("vhcrd_interrupts_total: %v, want VF 1's only\n%s", got, m)
	}
}

// vfctlAction runs vfctl COMMAND ACTION --bar BAR ARGS... (vfctl's
// resource commands take their action first).
func vfctlAction(t *testing.T, barPath, command, action string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "vfctl"), append([]string{command, action, "--bar", "file:" + barPath}, args...)...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("vfctl %s %s: %v", command, action, err)
	}
	return string(out), 0
}
