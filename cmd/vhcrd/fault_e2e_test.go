package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// faultConfig is the example configuration with a faults section.
func faultConfig(t *testing.T, dir, faults string) string {
	t.Helper()
	ex, _ := vhcrdCmd(t, "config")
	var cfg map[string]any
	if err := json.Unmarshal([]byte(ex), &cfg); err != nil {
		t.Fatal(err)
	}
	var fs any
	if err := json.Unmarshal([]byte(faults), &fs); err != nil {
		t.Fatal(err)
	}
	cfg["faults"] = fs
	b, _ := json.Marshal(cfg)
	p := filepath.Join(dir, "faults.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Fault injection from the outside: a rule of the configuration armed at
// start fires at its command; vhcrd fault add arms another, which fires
// for its VF only; list shows the counts, clear disarms; refusals exit 1,
// usage errors 2; the faults are counted by kind in /metrics.
func TestFaultAdmin(t *testing.T) {
	dir := shmDir(t)
	barPath, dmaPath := filepath.Join(dir, "bar"), filepath.Join(dir, "dma")
	cfg := faultConfig(t, dir, `[{"kind":"status","vf":1,"op":"QUERY_FW","args":{"status":"BAD_PARAM"}}]`)
	d := startDaemon(t, barPath, dmaPath, "--config", cfg)
	sock := "--bar=file:" + barPath
	queryFW := func(vf string) (string, int) {
		if out, code := vfctl(t, barPath, "init", "--vf", vf); code != 0 {
			t.Fatalf("vfctl init --vf %s: %s", vf, out)
		}
		return vfctl(t, barPath, "cmd", "--vf", vf, "--out-len", "16", "QUERY_FW")
	}

	// The configuration's rule: VF 1's first QUERY_FW, and no other.
	if out, code := queryFW("1"); code != 1 || !strings.Contains(out, "BAD_PARAM") {
		t.Fatalf("VF 1's first QUERY_FW: exit %d\n%s", code, out)
	}
	if out, code := queryFW("1"); code != 0 {
		t.Fatalf("VF 1's second QUERY_FW: exit %d\n%s", code, out)
	}
	if out, code := vhcrdCmd(t, "fault", "list", sock); code != 0 ||
		!strings.Contains(out, "1    1        1        true  --kind status --vf 1 --op QUERY_FW --nth 1 --arg status=BAD_PARAM") {
		t.Fatalf("fault list: exit %d\n%s", code, out)
	}

	// fault add: every QUERY_FW of VF 0.
	out, code := vhcrdCmd(t, "fault", "add", "--kind", "status", "--vf", "0", "--op", "QUERY_FW", "--every", "--arg", "status=BAD_OP", sock)
	if code != 0 || strings.TrimSpace(out) != "2" {
		t.Fatalf("fault add: exit %d\n%s", code, out)
	}
	for k := 0; k < 2; k++ {
		if out, code := queryFW("0"); code != 1 || !strings.Contains(out, "BAD_OP") {
			t.Fatalf("VF 0's QUERY_FW %d: exit %d\n%s", k, code, out)
		}
	}
	if out, code := queryFW("1"); code != 0 {
		t.Fatalf("VF 1 under VF 0's rule: exit %d\n%s", code, out)
	}
	out, code = vhcrdCmd(t, "fault", "list", "--json", sock)
	var rs []struct {
		ID   int    `json:"id"`
		Hits uint64 `json:"hits"`
		Args string `json:"args"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rs) != nil || len(rs) != 2 || rs[1].ID != 2 || rs[1].Hits != 2 {
		t.Fatalf("fault list --json: exit %d\n%s", code, out)
	}
	if out, code := vhcrdCmd(t, "fault", "clear", "2", sock); code != 0 || !strings.Contains(out, "1 rules cleared") {
		t.Fatalf("fault clear 2: exit %d\n%s", code, out)
	}
	if out, code := queryFW("0"); code != 0 {
		t.Fatalf("VF 0 after clear: exit %d\n%s", code, out)
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"fault", "add", "--kind", "bogus"}, 2, `unknown kind "bogus"`},
		{[]string{"fault", "add", "--vf", "1"}, 2, "add needs --kind"},
		{[]string{"fault", "add", "--kind", "status", "--every", "--nth", "2"}, 2, "exclude each other"},
		{[]string{"fault", "add", "--kind", "delay", "--arg", "us"}, 2, "want K=V"},
		{[]string{"fault", "add", "--kind", "status", "--vf", "9"}, 1, "VFs 0..3"},
		{[]string{"fault", "clear", "7"}, 1, "no rule 7"},
		{[]string{"fault", "clear", "x"}, 2, "not a number"},
		{[]string{"fault", "frobnicate"}, 2, "unknown fault action"},
	} {
		out, code := vhcrdCmd(t, append(c.args, sock)...)
		if code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("vhcrd %v: exit %d, want %d and %q:\n%s", c.args, code, c.code, c.want, out)
		}
	}

	if out, code := vhcrdCmd(t, "fault", "kinds"); code != 0 || !strings.Contains(out, "flags_no_ack (flags; at flags)") {
		t.Errorf("fault kinds: exit %d\n%s", code, out)
	}
	m := get(t, d.metrics+"/metrics")
	for _, want := range []string{
		`vhcrd_faults_injected_total{kind="status"} 3`,
		`vhcrd_faults_injected_total{kind="delay"} 0`,
		`vhcrd_admin_changes_total{action="fault_add",result="done"} 1`,
		`vhcrd_admin_changes_total{action="fault_add",result="refused"} 1`,
		`vhcrd_admin_changes_total{action="fault_clear",result="done"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if log := d.logAfterStart(); !strings.Contains(log, `msg="fault injected" kind=status rule=1 vf=1 at="post QUERY_FW"`) {
		t.Errorf("no log line of the fault:\n%s", log)
	}
}

// A configuration whose faults section the catalogue refuses is refused
// at start, naming the entry.
func TestFaultConfigRefused(t *testing.T) {
	dir := shmDir(t)
	cfg := faultConfig(t, dir, `[{"kind":"status"},{"kind":"delay","comm":"NOT_A_COMM"}]`)
	out, code := vhcrdCmd(t, "serve", "--bar", "file:"+filepath.Join(dir, "bar"), "--dma", "file:"+filepath.Join(dir, "dma"),
		"--num-vfs", "2", "--metrics-addr", "127.0.0.1:0", "--config", cfg)
	if code == 0 || !strings.Contains(out, "faults[1]") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}
