package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// vhcrdCmd runs the vhcrd binary and returns its output and exit status.
func vhcrdCmd(t *testing.T, args ...string) (string, int) {
	t.Helper()
	return combinedOutput(t, exec.Command(filepath.Join(binDir, "vhcrd"), args...))
}

// combinedOutput runs cmd and returns its stdout and stderr together and
// its exit status; a command that could not run fails the test.
func combinedOutput(t *testing.T, cmd *exec.Cmd) (string, int) {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	return out.String(), 0
}

// ethConfig is the example configuration with physical port 1 Ethernet.
func ethConfig(t *testing.T, dir string) string {
	t.Helper()
	ex, _ := vhcrdCmd(t, "config")
	var cfg map[string]any
	if err := json.Unmarshal([]byte(ex), &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["ports"].([]any)[0].(map[string]any)["link_layer"] = "eth"
	delete(cfg["fabric"].(map[string]any)["cables"].(map[string]any), "1") // an Ethernet port takes no IB cable
	b, _ := json.Marshal(cfg)
	p := filepath.Join(dir, "eth.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The admin plane: vf set changes a VF's VST VLAN, which the VF gets at its
// next reset; mlx4's refusals exit 1, usage errors 2; changes are counted;
// the metrics listener changes nothing. After the PF stops, vfctl says at
// once that no PF serves.
func TestAdminPlane(t *testing.T) {
	dir := shmDir(t)
	barPath, dmaPath := filepath.Join(dir, "bar"), filepath.Join(dir, "dma")
	d := startDaemon(t, barPath, dmaPath, "--config", ethConfig(t, dir))
	sock := "--bar=file:" + barPath

	out, code := vhcrdCmd(t, "vf", "set", "1", "--vlan", "100", "--qos", "2", sock)
	if code != 0 || !strings.Contains(out, "vlan 100 qos 2 (VST): at the VF's next reset") {
		t.Fatalf("vf set --vlan: exit %d\n%s", code, out)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"vf", "set", "1", "--trust", "on"}, 1, "EOPNOTSUPP"},
		{[]string{"vf", "set", "1", "--max-tx-rate", "100"}, 1, "QOS_VPP"},
		{[]string{"vf", "set", "1", "--vlan", "4096"}, 1, "EINVAL"},
		{[]string{"vf", "set", "9", "--vlan", "5"}, 1, "VFs 0..3"},
		{[]string{"vf", "set", "1", "--vlan", "x"}, 2, "invalid value"},
		{[]string{"vf", "set", "--vlan", "5"}, 2, "one VF number"},
		{[]string{"vf", "set", "1"}, 2, "nothing to set"},
		{[]string{"vf", "frobnicate"}, 2, "unknown vf command"},
		{[]string{"port", "sideways", "1"}, 2, "want up or down"},
		{[]string{"port", "down", "9"}, 1, "no port 9"},
		{[]string{"port", "down", "2"}, 0, "PORT_CHANGE sent to"},
		{[]string{"port", "up", "2"}, 0, "PORT_CHANGE sent to"},
	} {
		out, code := vhcrdCmd(t, append(c.args, sock)...)
		if code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("vhcrd %v: exit %d, want %d and %q:\n%s", c.args, code, c.code, c.want, out)
		}
	}

	// VF 1's next VHCR_EN activates the VLAN on its Ethernet port.
	if out, code := vfctl(t, barPath, "init", "--vf", "1"); code != 0 {
		t.Fatalf("vfctl init: %s", out)
	}
	out, code = vhcrdCmd(t, "vf", "show", "1", "--json", sock)
	var st vfStatus
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("vf show: exit %d\n%s", code, out)
	}
	if st.Setting.VLAN != 100 || len(st.Setting.Oper) == 0 || !st.Setting.Oper[0].VST || st.Setting.Oper[0].VLAN != 100 || st.Setting.Oper[0].QoS != 2 {
		t.Fatalf("vf show after the VF's reset: %+v", st.Setting)
	}
	for args, want := range map[string][]string{
		"init": {"init", "--vf", "1", "--json"},
		"cmd":  {"cmd", "--vf", "1", "--json", "--out-len", "16", "QUERY_FW"},
	} {
		out, code := vfctl(t, barPath, want...)
		var r map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r["vf"] != 1.0 {
			t.Errorf("vfctl %s --json: exit %d\n%s", args, code, out)
		}
		if args == "cmd" && (r["status"] != "OK" || r["outbox"] == nil) {
			t.Errorf("vfctl cmd --json: %v", r)
		}
	}
	if out, code := vhcrdCmd(t, "vf", "list", sock); code != 0 || !strings.Contains(out, "100") {
		t.Fatalf("vf list: exit %d\n%s", code, out)
	}
	if out, code := vhcrdCmd(t, "vf", "flr", "1", sock); code != 0 || !strings.Contains(out, "FLR of VF 1 done") {
		t.Fatalf("vf flr: exit %d\n%s", code, out)
	}

	m := get(t, d.metrics+"/metrics")
	for _, want := range []string{
		`vhcrd_admin_changes_total{action="vf_vlan",result="done"} 1`,
		`vhcrd_admin_changes_total{action="vf_trust",result="refused"} 1`,
		`vhcrd_admin_changes_total{action="vf_flr",result="done"} 1`,
		`vhcrd_admin_changes_total{action="port_down",result="refused"} 1`,
		`vhcrd_comm_resets_total{reason="flr",vf="1"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// The metrics listener: read-only.
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/": 200, "/admin/flr?vf=1": 404, "/admin/vfs": 404} {
		resp, err := http.Get(d.metrics + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	resp, err := http.Post(d.metrics+"/admin/flr?vf=1", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == 200 {
		t.Errorf("POST /admin/flr: 200")
	}

	// A stopped PF: vfctl fails at once (no 30 s offline wait), exit 1.
	if err := d.stop(t); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "--vf", "0"}, {"cmd", "--vf", "0", "QUERY_FW"}} {
		out, code := vfctl(t, barPath, args...)
		if code != 1 || !strings.Contains(out, "no PF is serving") || !strings.Contains(out, "PF_STATE stopped") || !strings.Contains(out, "(PF_STOPPED)") {
			t.Errorf("vfctl %v against a stopped PF: exit %d\n%s", args, code, out)
		}
	}
	if out, code := vfctl(t, barPath, "init"); code != 2 || !strings.Contains(out, "--vf N is required") {
		t.Errorf("vfctl init without --vf: exit %d\n%s", code, out)
	}
}

// --version and --help answer with status 0; an unknown command is a usage
// error.
func TestVersionAndHelp(t *testing.T) {
	if out, code := vhcrdCmd(t, "--version"); code != 0 || !strings.HasPrefix(out, "vhcrd ") || !strings.Contains(out, "revision") {
		t.Errorf("vhcrd --version: exit %d\n%s", code, out)
	}
	if out, code := vhcrdCmd(t, "--help"); code != 0 || !strings.Contains(out, "examples:") || !strings.Contains(out, "vf ") {
		t.Errorf("vhcrd --help: exit %d\n%s", code, out)
	}
	if out, code := vhcrdCmd(t, "vf", "--help"); code != 0 || !strings.Contains(out, "\n  set ") || !strings.Contains(out, "vhcrd vf set 3") {
		t.Errorf("vhcrd vf --help: exit %d\n%s", code, out)
	}
	if _, code := vhcrdCmd(t, "frobnicate"); code != 2 {
		t.Errorf("vhcrd frobnicate: exit %d, want 2", code)
	}
	vout, err := exec.Command(filepath.Join(binDir, "vfctl"), "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(vout), "vfctl ") {
		t.Errorf("vfctl --version: %v\n%s", err, vout)
	}
	out, err := exec.Command(filepath.Join(binDir, "vfctl"), "eq", "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "\nactions:\n  create ") {
		t.Errorf("vfctl eq --help: %v\n%s", err, out)
	}
}
