package main

// The OpenSM tier: Debian's opensm manages vhcrd's fabric (the HCA's two
// ports and a peer CA cabled to a simulated switch) through libumad2sim, as
// infiniband-diags do in TestDaemonMADInterop. It must discover the switch
// and the HCA, assign LIDs, bring every port Active, program M_Key and
// P_Keys, report a wrong-key Set as a Bad M_Key notice and repress it; a VF
// must see the port change events. Every wait polls a file or a tool's
// output against a deadline.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/hack/testenv"
	"github.com/vhcrd/vhcrd/vhcr"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

const (
	osmMKey  = "0x00000000000000aa"
	osmPKey  = "0x8005"
	osmWait  = 60 * time.Second // bound of every wait; a run takes a few seconds
	osmSweep = 2                // seconds between OpenSM's light sweeps
)

// fabricConfig is the default config with both ports fresh (down, LID 0)
// and cabled to an 8-port switch, with a second CA on switch port 5.
func fabricConfig(t *testing.T, dir string) string {
	t.Helper()
	ex, err := exec.Command(filepath.Join(binDir, "vhcrd"), "config").Output()
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(ex, &cfg); err != nil {
		t.Fatal(err)
	}
	for _, p := range cfg["ports"].([]any) {
		pm := p.(map[string]any)
		pm["lid"], pm["state"], pm["master_sm_lid"] = 0, "down", 0
	}
	cfg["fabric"] = map[string]any{
		"switch": map[string]any{"node_guid": "0x0002c90300f00000", "node_description": "vhcrd switch", "ports": 8, "vendor_id": "0x000001"},
		"cables": map[string]int{"1": 1, "2": 2},
		"peers": []map[string]any{{"node_guid": "0x0002c90300c0ffe0", "port_guid": "0x0002c90300c0ffe1",
			"node_description": "peer HCA", "switch_port": 5}},
	}
	b, _ := json.MarshalIndent(cfg, "", " ")
	path := filepath.Join(dir, "fabric.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitFor polls f every 50 ms until it returns true or osmWait passes.
func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(osmWait)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, osmWait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func fileHas(path string, re *regexp.Regexp) func() bool {
	return func() bool {
		b, _ := os.ReadFile(path)
		return re.Match(b)
	}
}

// grepLines returns the lines of path that match re (for the test's log).
func grepLines(path string, re *regexp.Regexp, max int) string {
	b, _ := os.ReadFile(path)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if re.MatchString(l) && len(out) < max {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestOpenSMFabric(t *testing.T) {
	lib := umad2sim(t)
	testenv.LookPath(t, "opensm", "opensm")
	testenv.LookPath(t, "iblinkinfo", "infiniband-diags")
	testenv.LookPath(t, "ibportstate", "infiniband-diags")
	dir := shmDir(t)
	osmDir := t.TempDir()
	barPath, dmaPath := filepath.Join(dir, "bar"), filepath.Join(dir, "dma")
	sock := fmt.Sprintf("vhcrd-osm-%d", os.Getpid())
	d := startDaemon(t, barPath, dmaPath, "--config", fabricConfig(t, dir), "--ibsim", sock)

	// VF 0 maps PORT_CHANGE and PORT_MNG_CHG to its EQ 1 before the SM runs.
	eqOut, err := exec.Command(filepath.Join(binDir, "vfctl"), "eq", "create", "--bar", "file:"+barPath,
		"--vf", "0", "--eqn", "1", "--log-size", "6").CombinedOutput()
	m := regexp.MustCompile(`ring at IOVA (0x[0-9a-f]+)`).FindSubmatch(eqOut)
	if err != nil || m == nil {
		t.Fatalf("vfctl eq create: %v\n%s", err, eqOut)
	}
	ringIOVA, _ := strconv.ParseUint(string(m[1]), 0, 64)
	mask := uint64(1)<<mlx4.EventPortChange | uint64(1)<<mlx4.EventPortMngChg
	if out, code := vfctl(t, barPath, "cmd", "--vf", "0", "--in-param", fmt.Sprintf("%#x", mask), "--in-mod", "1", "MAP_EQ"); code != 0 {
		t.Fatalf("MAP_EQ: exit %d\n%s", code, out)
	}
	if linkUp(t, barPath) {
		t.Fatal("VF 0 sees port 1 up before an SM ran")
	}

	osmLog := filepath.Join(osmDir, "osm.log")
	conf := fmt.Sprintf(`guid 0x0002c90300a0b0c1
m_key %s
m_key_protection_level 1
m_key_lease_period 60
sweep_interval %d
transaction_timeout 200
partition_config_file %s/partitions.conf
log_flags 0x0f
force_log_flush TRUE
log_file %s
dump_files_dir %s
`, osmMKey, osmSweep, osmDir, osmLog, osmDir)
	parts := "Default=0x7fff, ipoib : ALL=full ;\nstorage=" + osmPKey + " : ALL=full ;\n"
	for name, body := range map[string]string{"opensm.conf": conf, "partitions.conf": parts} {
		if err := os.WriteFile(filepath.Join(osmDir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "IBSIM_SOCKNAME="+sock, "LD_PRELOAD="+lib, "OSM_CACHE_DIR="+osmDir)
	sm := exec.Command("opensm", "-F", filepath.Join(osmDir, "opensm.conf"))
	sm.Env, sm.Dir = env, osmDir
	smOut, err := os.Create(filepath.Join(osmDir, "opensm.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer smOut.Close()
	sm.Stdout, sm.Stderr = smOut, smOut
	if err := sm.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sm.Process.Kill(); _ = sm.Wait() })
	waitFor(t, "SUBNET UP in OpenSM's log", fileHas(osmLog, regexp.MustCompile(`SUBNET UP`)))
	t.Logf("OpenSM:\n%s", grepLines(osmLog, regexp.MustCompile(
		`Discovered new (Switch|Channel Adapter)|Assign(ed|ing)|going to ACTIVE|SUBNET UP|ERR `), 30))
	if errs := grepLines(osmLog, regexp.MustCompile(`ERR `), 10); errs != "" {
		t.Errorf("OpenSM logged errors:\n%s", errs)
	}

	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("timeout", append([]string{"20"}, args...)...)
		cmd.Env, cmd.Dir = env, osmDir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	links := run("iblinkinfo")
	t.Logf("iblinkinfo:\n%s", links)
	for _, p := range []string{"1", "2"} {
		re := regexp.MustCompile(`(?m)^\s+\d+\s+` + p + `\[  \] ==\( 4X\s+10.0 Gbps Active/  LinkUp\)==>\s+\d+\s+` + p + `\[  \] "vhcrd model HCA"`)
		if !re.MatchString(links) {
			t.Errorf("iblinkinfo: switch port %s is not an Active link to HCA port %s", p, p)
		}
	}
	if !regexp.MustCompile(`(?m)^\s+\d+\s+5\[  \] ==\( 4X\s+10.0 Gbps Active/  LinkUp\)==>\s+\d+\s+1\[  \] "peer HCA"`).MatchString(links) {
		t.Errorf("iblinkinfo: switch port 5 is not an Active link to the peer HCA")
	}
	topo := run("ibnetdiscover")
	t.Logf("ibnetdiscover:\n%s", topo)
	for _, w := range []string{`Switch	8 "S-0002c90300f00000"`, `Ca	2 "H-0002c90300a0b0c0"`, `Ca	1 "H-0002c90300c0ffe0"`} {
		if !strings.Contains(topo, w) {
			t.Errorf("ibnetdiscover lacks %q:\n%s", w, topo)
		}
	}
	for _, port := range []string{"1", "2"} {
		// Port 2 is reached through the switch: DR path 0,1,2.
		path := map[string]string{"1": "0", "2": "0,1,2"}[port]
		pi := run("smpquery", "-K", "-y", osmMKey, "-D", "portinfo", path, port)
		for _, w := range []string{"LinkState:.......................Active", "ProtectBits:.....................1",
			"Mkey:............................" + osmMKey, "MkeyLeasePeriod:.................60"} {
			if !strings.Contains(pi, w) {
				t.Errorf("port %s PortInfo lacks %q:\n%s", port, w, pi)
			}
		}
		if regexp.MustCompile(`(?m)^Lid:\.+0$`).MatchString(pi) {
			t.Errorf("port %s has no LID:\n%s", port, pi)
		}
	}
	if pk := run("smpquery", "-y", osmMKey, "-D", "pkeys", "0", "1"); !strings.Contains(pk, osmPKey) {
		t.Errorf("P_Key %s not programmed:\n%s", osmPKey, pk)
	}

	// A Set with a wrong M_Key: the port drops it, traps Bad M_Key to the
	// SM, and the SM represses the trap.
	cmd := exec.Command("timeout", "20", "ibportstate", "-y", "0x1", "-D", "0", "1", "enable")
	cmd.Env, cmd.Dir = env, osmDir
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("ibportstate with a wrong M_Key succeeded:\n%s", out)
	}
	waitFor(t, "a Bad M_Key notice in OpenSM's log", fileHas(osmLog, regexp.MustCompile(`Bad M_Key`)))
	t.Logf("OpenSM on the wrong key:\n%s", grepLines(osmLog, regexp.MustCompile(`Bad M_Key|[Rr]epress`), 6))
	waitFor(t, "the TrapRepress counted in /metrics", func() bool {
		return regexp.MustCompile(`vhcrd_mads_total\{class="subn_lid",method="trap_repress",result="[a-z_]*consumed[a-z_]*"\} [1-9]`).MatchString(get(t, d.metrics+"/metrics"))
	})

	// The VF: QUERY_PORT shows the link up; its EQ holds the events.
	if !linkUp(t, barPath) {
		t.Error("VF 0 sees port 1 down after the SM made it Active")
	}
	// Its MAD_IFC PortInfo shows the LID and SM LID the SM assigned (the
	// SM's own port is LID 1 on this fabric) and the port Active.
	out, code := vfctl(t, barPath, "mad", "--vf", "0", "get", "portinfo")
	t.Logf("VF 0 MAD_IFC PortInfo:\n%s", out)
	if lm := regexp.MustCompile(`LID (\d+) LMC \d+ SM LID (\d+) SM SL \d+ State 4`).FindStringSubmatch(out); code != 0 || lm == nil || lm[1] == "0" || lm[2] != "1" {
		t.Errorf("VF 0's MAD_IFC PortInfo does not show the SM's LIDs and Active:\n%s", out)
	}
	var evs []string
	waitFor(t, "PORT_CHANGE up and a LID change in VF 0's EQ", func() bool {
		evs = vfEvents(t, barPath, dmaPath, ringIOVA)
		s := strings.Join(evs, "\n")
		return strings.Contains(s, "PORT_CHANGE active port 1") && strings.Contains(s, "PORT_MNG_CHG PORT_INFO port 1 changed_attr 0xc")
	})
	t.Logf("VF 0's EQ 1:\n%s", strings.Join(evs, "\n"))
}

func linkUp(t *testing.T, barPath string) bool {
	t.Helper()
	out, code := vfctl(t, barPath, "cmd", "--vf", "0", "--in-mod", "1", "--out-len", "16", "QUERY_PORT")
	m := regexp.MustCompile(`00000000  ([0-9a-f]{2})`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("QUERY_PORT: exit %d\n%s", code, out)
	}
	b, _ := strconv.ParseUint(m[1], 16, 8)
	return b&0x80 != 0
}

// vfEvents reads VF 0's EQ ring from the DMA file as the VF would and
// describes each EQE written so far.
func vfEvents(t *testing.T, barPath, dmaPath string, iova uint64) []string {
	t.Helper()
	a, err := vhcr.AttachFile(barPath)
	if err != nil {
		t.Fatal(err)
	}
	l := a.Layout
	a.Close()
	f, err := os.Open(dmaPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ring := make([]byte, 64*mlx4.EQESize)
	if _, err := f.ReadAt(ring, l.DMABase+int64(iova)); err != nil {
		t.Fatal(err)
	}
	// Its MAD_IFC PortInfo shows the LID and SM LID the SM assigned (the
	// SM's own port is LID 1 on this fabric) and the port Active.
	out, code := vfctl(t, barPath, "mad", "--vf", "0", "get", "portinfo")
	t.Logf("VF 0 MAD_IFC PortInfo:\n%s", out)
	if lm := regexp.MustCompile(`LID (\d+) LMC \d+ SM LID (\d+) SM SL \d+ State 4`).FindStringSubmatch(out); code != 0 || lm == nil || lm[1] == "0" || lm[2] != "1" {
		t.Errorf("VF 0's MAD_IFC PortInfo does not show the SM's LIDs and Active:\n%s", out)
	}
	var evs []string
	for i := 0; i < 64; i++ {
		e := ring[i*mlx4.EQESize : (i+1)*mlx4.EQESize]
		switch e[mlx4.EQEType] {
		case mlx4.EventPortChange:
			evs = append(evs, fmt.Sprintf("PORT_CHANGE %s port %d", map[byte]string{1: "down", 4: "active"}[e[mlx4.EQESubtype]], e[mlx4.EQEPortChangePort]>>4))
		case mlx4.EventPortMngChg:
			sub := map[byte]string{mlx4.DEV_PMC_SUBTYPE_PORT_INFO: "PORT_INFO", mlx4.DEV_PMC_SUBTYPE_PKEY_TABLE: "PKEY_TABLE", mlx4.DEV_PMC_SUBTYPE_GUID_INFO: "GUID_INFO"}[e[mlx4.EQESubtype]]
			s := fmt.Sprintf("PORT_MNG_CHG %s port %d", sub, e[mlx4.EQEPortMngChgPort])
			if e[mlx4.EQESubtype] == mlx4.DEV_PMC_SUBTYPE_PORT_INFO {
				s += fmt.Sprintf(" changed_attr %#x", uint32(e[mlx4.EQEPortMngChgChangedAttr])<<24|uint32(e[mlx4.EQEPortMngChgChangedAttr+1])<<16|uint32(e[mlx4.EQEPortMngChgChangedAttr+2])<<8|uint32(e[mlx4.EQEPortMngChgChangedAttr+3]))
			}
			evs = append(evs, s)
		}
	}
	return evs
}
