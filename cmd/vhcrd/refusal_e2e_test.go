package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// vfctl says why the PF refused a command: the reason the PF recorded,
// from vhcrd's admin socket (vf.show's last_refusal); without an admin
// socket, the status alone. The README's bm-set line: VF 7 is
// SMI-privileged, its Set with a wrong B_Key is consumed by the BMA (the
// firmware's BAD_PKT, BAD_PARAM to the VF, reason mad_dropped) and Trap 259
// goes to the SM.
func TestRefusalReasons(t *testing.T) {
	dir := shmDir(t)
	barPath, dmaPath := filepath.Join(dir, "bar"), filepath.Join(dir, "dma")
	d := startDaemon(t, barPath, dmaPath, "--num-vfs", "8")

	out, code := vfctl(t, barPath, "cmd", "--vf", "3", "MAD_DEMUX")
	if code != 1 || !strings.Contains(out, "VF 3 MAD_DEMUX: BAD_OP (0x02): privileged (the command or operation is the PF's only) in ") {
		t.Errorf("vfctl cmd MAD_DEMUX: exit %d\n%s", code, out)
	}
	out, code = vfctl(t, barPath, "cmd", "--vf", "3", "--json", "QUERY_FUNC_CAP", "--op-mod", "9")
	if code != 1 || !strings.Contains(out, `"reason":"op_modifier"`) || !strings.Contains(out, `"status":"BAD_PARAM"`) {
		t.Errorf("vfctl cmd --json QUERY_FUNC_CAP --op-mod 9: exit %d\n%s", code, out)
	}
	out, code = vfctlAct(t, barPath, "cq", "create", "--vf", "0", "--eqn", "5")
	if code != 1 || !strings.Contains(out, "SW2HW_CQ      BAD_PARAM (0x03)       poll  reason: eq (") {
		t.Errorf("vfctl cq create on an EQ that does not exist: exit %d\n%s", code, out)
	}
	// The README's line, as it stands there, and what its comment promises.
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^bin/vfctl (mad --vf 7 bm-set [^#\n]*)#(.*)$`).FindStringSubmatch(string(readme))
	if line == nil || !strings.Contains(line[2], "BAD_PARAM (0x03): mad_dropped") || !strings.Contains(line[2], "Trap 259") {
		t.Fatalf("README.md's bm-set line: %q", line)
	}
	out, code = vfctl(t, barPath, strings.Fields(line[1])...)
	if code != 1 || !strings.Contains(out, "VF 7 MAD_IFC: BAD_PARAM (0x03): mad_dropped (") {
		t.Errorf("vfctl %s (the README's line): exit %d\n%s", line[1], code, out)
	}
	m := get(t, d.metrics+"/metrics")
	for _, want := range []string{`vhcrd_traps_sent_total{trap="259"} 1`, `vhcrd_key_violations_total{key="b_key"} 1`,
		`vhcrd_command_refusals_total{reason="mad_dropped",vf="7"} 1`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	out, code = vhcrdCmd(t, "vf", "show", "7", "--bar", "file:"+barPath)
	if code != 0 || !strings.Contains(out, "last refused command: MAD_IFC, BAD_PARAM (0x03), reason mad_dropped (") {
		t.Errorf("vhcrd vf show 7: exit %d\n%s", code, out)
	}

	// Opcode names in any case; an unknown one is a usage error in both tools.
	if out, code = vfctl(t, barPath, "cmd", "--vf", "3", "query_fw"); code != 0 || !strings.Contains(out, "QUERY_FW: OK (0x00)") {
		t.Errorf("vfctl cmd query_fw: exit %d\n%s", code, out)
	}
	if out, code = vfctl(t, barPath, "cmd", "--vf", "3", "bogus"); code != 2 || !strings.Contains(out, "run 'vfctl cmd --help' for usage") {
		t.Errorf("vfctl cmd bogus: exit %d, want 2\n%s", code, out)
	}
	if out, code = vhcrdCmd(t, "trace", "--opcode", "bogus", "--bar", "file:"+barPath); code != 2 {
		t.Errorf("vhcrd trace --opcode bogus: exit %d, want 2\n%s", code, out)
	}

	// vfctl flr prints its line; the daemon's JSON only with --json.
	if out, code = vfctl(t, barPath, "flr", "--vf", "3"); code != 0 || out != "FLR of VF 3 done\n" {
		t.Errorf("vfctl flr: exit %d, output %q", code, out)
	}
	if out, code = vfctl(t, barPath, "flr", "--vf", "3", "--json"); code != 0 || strings.TrimSpace(out) != `{"flr":"done","vf":3}` {
		t.Errorf("vfctl flr --json: exit %d, output %q", code, out)
	}

	// With no admin socket to ask, the status alone.
	if err := os.Remove(barPath + ".sock"); err != nil {
		t.Fatal(err)
	}
	if out, code = vfctl(t, barPath, "cmd", "--vf", "3", "MAD_DEMUX"); code != 1 || !strings.Contains(out, "VF 3 MAD_DEMUX: BAD_OP (0x02) in ") {
		t.Errorf("vfctl cmd MAD_DEMUX without the admin socket: exit %d\n%s", code, out)
	}
}

// vhcrd config --check FILE: exit 0 and what the file configures for a
// good file, exit 1 and the reason for a bad one, as serve --config would
// refuse it.
func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	ex, _, code := runTool(t, "vhcrd", "config")
	if code != 0 {
		t.Fatal("vhcrd config failed")
	}
	if err := os.WriteFile(good, []byte(ex), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runTool(t, "vhcrd", "config", "--check", good, "--num-vfs", "16")
	if code != 0 || errOut != "" || out != good+": valid: 16 VFs, 2 ports, 2 VF overrides, a fabric: a switch of 8 ports, 2 cables, 0 peers\n" {
		t.Errorf("config --check of the example: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(strings.Replace(ex, `"state": "active"`, `"state": "sleepy"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runTool(t, "vhcrd", "config", "--check", bad)
	if code != 1 || out != "" || !strings.Contains(errOut, "invalid configuration") || !strings.Contains(errOut, "sleepy") {
		t.Errorf("config --check of a bad state: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// serve refuses the same file for the same reason.
	_, sErr, sCode := runTool(t, "vhcrd", "serve", "--config", bad, "--bar", "file:"+filepath.Join(dir, "bar"),
		"--dma", "file:"+filepath.Join(dir, "dma"), "--metrics-addr", "")
	if sCode != 1 || !strings.Contains(sErr, strings.TrimPrefix(strings.TrimSpace(errOut), "vhcrd config: ")) {
		t.Errorf("serve --config of the bad file: exit %d, stderr %q; config --check said %q", sCode, sErr, errOut)
	}
	if _, errOut, code = runTool(t, "vhcrd", "config", "--check", bad, "--num-vfs", "0"); code != 2 {
		t.Errorf("config --check --num-vfs 0: exit %d, want 2 (%s)", code, errOut)
	}
}

// vfctlAct runs `vfctl CMD ACTION --bar file:barPath ARGS...`.
func vfctlAct(t *testing.T, barPath, cmd, act string, args ...string) (string, int) {
	t.Helper()
	c := exec.Command(filepath.Join(binDir, "vfctl"), append([]string{cmd, act, "--bar", "file:" + barPath}, args...)...)
	out, err := c.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}
