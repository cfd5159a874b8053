package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A data-path fault from the outside: vhcrd fault add arms cqe_error at
// VF 0's first SEND completion; vfctl pingpong between VF 0 and VF 1
// (ibv_rc_pingpong's exchange through vfdrv's verbs) fails as
// ibv_rc_pingpong does on an error completion, naming the status, the
// syndrome and the vendor syndrome; the rule shows its hit, the fault is
// counted in /metrics and logged with the opcode, the QPN and the CQN; a
// second pingpong on another pair of VFs runs clean.
func TestFaultDataPath(t *testing.T) {
	dir := shmDir(t)
	barPath, dmaPath := filepath.Join(dir, "bar"), filepath.Join(dir, "dma")
	d := startDaemon(t, barPath, dmaPath)
	sock := "--bar=file:" + barPath
	if out, code := vhcrdCmd(t, "fault", "add", "--kind", "cqe_error", "--vf", "0", "--op", "SEND",
		"--arg", "syndrome=REM_ACCESS_ERR", "--arg", "vendor=0x51", sock); code != 0 || strings.TrimSpace(out) != "1" {
		t.Fatalf("fault add: exit %d\n%s", code, out)
	}
	out, code := vfctl(t, barPath, "pingpong", "--vf", "0", "--peer-vf", "1", "-n", "10", "-s", "64")
	if code != 1 || !strings.Contains(out, "bad work completion: remote access error (syndrome 0x13, vendor 0x51) for wr_id") {
		t.Fatalf("pingpong under cqe_error: exit %d\n%s", code, out)
	}
	if out, code := vfctl(t, barPath, "pingpong", "--vf", "2", "--peer-vf", "3", "-n", "10", "-s", "64"); code != 0 {
		t.Fatalf("pingpong of VFs 2 and 3: exit %d\n%s", code, out)
	}
	if out, code := vhcrdCmd(t, "fault", "list", sock); code != 0 ||
		!strings.Contains(out, "1    1        1        true  --kind cqe_error --vf 0 --op SEND --nth 1 --arg syndrome=REMOTE_ACCESS_ERR --arg vendor=0x51") {
		t.Fatalf("fault list: exit %d\n%s", code, out)
	}
	if out, code := vhcrdCmd(t, "fault", "kinds"); code != 0 ||
		!strings.Contains(out, "cqe_error (data_path; at cqe, successful completions only; args syndrome, vendor)") ||
		!strings.Contains(out, "cq_overrun (data_path; at cqe)") {
		t.Errorf("fault kinds: exit %d\n%s", code, out)
	}
	m := get(t, d.metrics+"/metrics")
	for _, want := range []string{`vhcrd_faults_injected_total{kind="cqe_error"} 1`, `vhcrd_faults_injected_total{kind="cq_overrun"} 0`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if log := d.logAfterStart(); !strings.Contains(log, `msg="fault injected" kind=cqe_error rule=1 vf=0 at="cqe SEND" qpn=`) {
		t.Errorf("no log line of the fault:\n%s", log)
	}
}
