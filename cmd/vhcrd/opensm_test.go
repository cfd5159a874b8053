package main

// The OpenSM tier: Debian's opensm manages vhcrd's fabric (the HCA's two
// ports and a peer CA cabled to a simulated switch) through libumad2sim, as
// infiniband-diags do in TestDaemonMADInterop. It must discover the switch
// and the HCA, assign LIDs, bring every port Active, program M_Key and
// P_Keys, report a wrong-key Set as a Bad M_Key notice and repress it; a VF
// must see the port change events, and VFs on the two ports exchange RC
// and UD messages through the LFT OpenSM programmed. Every wait polls a file or a tool's
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
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/vfclient"
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

	sm := startOpenSM(t, lib, sock, fmt.Sprintf("m_key %s\nm_key_protection_level 1\nm_key_lease_period 60\n", osmMKey))
	osmDir, osmLog, env, run := sm.dir, sm.log, sm.env, sm.run
	t.Logf("OpenSM:\n%s", grepLines(osmLog, regexp.MustCompile(
		`Discovered new (Switch|Channel Adapter)|Assign(ed|ing)|going to ACTIVE|SUBNET UP|ERR `), 30))
	if errs := grepLines(osmLog, regexp.MustCompile(`ERR `), 10); errs != "" {
		t.Errorf("OpenSM logged errors:\n%s", errs)
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
	// The SM's own agents, reached from another client: SMInfo (QP0) and
	// the SA (QP1) at the SM's LID, 1 on this fabric.
	checkSMAndSA(t, run, 1, 3)
	checkAliasGUIDs(t, run, d.metrics, osmLog)

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

	// The data path routes through the switch by the LFT OpenSM
	// programmed: VFs on port 1 and port 2 exchange messages.
	checkTrafficAcross(t, run, barPath, sock)
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
	a, err := vfclient.AttachFile(barPath)
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

// openSM is an OpenSM running against a daemon's ibsim socket.
type openSM struct {
	dir, log string
	env      []string
	// run runs an infiniband-diags tool under libumad2sim, as another
	// client of the same socket, and fails the test if it fails.
	run func(args ...string) string
}

// startOpenSM runs Debian's opensm on port 1 (GUID ...c1) under
// libumad2sim with a flushed log, extra appended to its config, and waits
// for SUBNET UP.
func startOpenSM(t *testing.T, lib, sock, extra string) *openSM {
	t.Helper()
	dir := t.TempDir()
	sm := &openSM{dir: dir, log: filepath.Join(dir, "osm.log"),
		env: append(os.Environ(), "IBSIM_SOCKNAME="+sock, "LD_PRELOAD="+lib, "OSM_CACHE_DIR="+dir)}
	conf := fmt.Sprintf(`guid 0x0002c90300a0b0c1
sweep_interval %d
transaction_timeout 200
partition_config_file %s/partitions.conf
log_flags 0x0f
force_log_flush TRUE
log_file %s
dump_files_dir %s
%s`, osmSweep, dir, sm.log, dir, extra)
	parts := "Default=0x7fff, ipoib : ALL=full ;\nstorage=" + osmPKey + " : ALL=full ;\n"
	for name, body := range map[string]string{"opensm.conf": conf, "partitions.conf": parts} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("opensm", "-F", filepath.Join(dir, "opensm.conf"))
	cmd.Env, cmd.Dir = sm.env, dir
	out, err := os.Create(filepath.Join(dir, "opensm.out"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close() })
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitFor(t, "SUBNET UP in OpenSM's log", fileHas(sm.log, regexp.MustCompile(`SUBNET UP`)))
	sm.run = func(args ...string) string {
		t.Helper()
		c := exec.Command("timeout", append([]string{"20"}, args...)...)
		c.Env, c.Dir = sm.env, dir
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	return sm
}

// checkSMAndSA runs sminfo and saquery as a second client of the socket:
// SMInfo goes to the SM's LID on QP0, the SA queries on QP1, and OpenSM,
// on port 1 with LID smLID, answers them. other is port 2's LID.
func checkSMAndSA(t *testing.T, run func(...string) string, smLID, other int) {
	t.Helper()
	testenv.LookPath(t, "sminfo", "infiniband-diags")
	testenv.LookPath(t, "saquery", "infiniband-diags")
	out := run("sminfo")
	t.Logf("sminfo:\n%s", out)
	if !regexp.MustCompile(fmt.Sprintf(`(?m)^sminfo: sm lid %d sm guid 0x2c90300a0b0c1, activity count \d+ priority 0 state 3 SMINFO_MASTER$`, smLID)).MatchString(out) {
		t.Errorf("sminfo does not show OpenSM as master at LID %d:\n%s", smLID, out)
	}
	out = run("saquery", strconv.Itoa(smLID)) // NodeRecord of the SM's LID
	t.Logf("saquery %d:\n%s", smLID, out)
	for _, w := range []string{fmt.Sprintf("lid.....................%d\n", smLID), "node_type...............Channel Adapter",
		"port_guid...............0x0002c90300a0b0c1", "NodeDescription.........vhcrd model HCA"} {
		if !strings.Contains(out, w) {
			t.Errorf("saquery NodeRecord lacks %q", w)
		}
	}
	pr := fmt.Sprintf("%d:%d", smLID, other)
	out = run("saquery", "--src-to-dst", pr)
	t.Logf("saquery --src-to-dst %s:\n%s", pr, out)
	for _, w := range []string{"PathRecord dump:", "dgid....................fe80::2:c903:a0:b0c2", "sgid....................fe80::2:c903:a0:b0c1",
		fmt.Sprintf("dlid....................%d\n", other), fmt.Sprintf("slid....................%d\n", smLID), "mtu.....................0x85"} {
		if !strings.Contains(out, w) {
			t.Errorf("saquery PathRecord lacks %q", w)
		}
	}
	// A P_Key both ports share: one of partitions.conf's (full members).
	if !regexp.MustCompile(`pkey\.+0x(FFFF|7FFF|` + strings.ToUpper(osmPKey[2:]) + `)\n`).MatchString(out) {
		t.Errorf("saquery PathRecord has no P_Key of the partitions")
	}
}

// TestOpenSMDefault: the embedded default is a fabric OpenSM manages with
// no editing: a switch cabled to both ports, the subnet as a sweep left it
// (switch LID 1, ports 5 and 6 Active). OpenSM, started on port 1, takes
// it over: SUBNET UP without errors, the LIDs kept, itself the master SM
// every port points to; sminfo and saquery reach it.
func TestOpenSMDefault(t *testing.T) {
	lib := umad2sim(t)
	testenv.LookPath(t, "opensm", "opensm")
	testenv.LookPath(t, "iblinkinfo", "infiniband-diags")
	dir := shmDir(t)
	sock := fmt.Sprintf("vhcrd-osmdef-%d", os.Getpid())
	d := startDaemon(t, filepath.Join(dir, "bar"), filepath.Join(dir, "dma"), "--ibsim", sock)
	fl := regexp.MustCompile(`(?m)^.*msg=fabric .*$`).FindString(d.stderr.String())
	t.Logf("vhcrd: %s", fl)
	for _, w := range []string{`switch="0x0002c90300f00000 \"vhcrd switch\""`, "switch_ports=8",
		`cables="port 1 (LID 5) - switch port 1 (Active), port 2 (LID 6) - switch port 2 (Active)"`, "subnet=\"swept (switch LID 1"} {
		if !strings.Contains(fl, w) {
			t.Errorf("the fabric log line lacks %s", w)
		}
	}
	sm := startOpenSM(t, lib, sock, "")
	t.Logf("OpenSM:\n%s", grepLines(sm.log, regexp.MustCompile(`Discovered new|LID|going to ACTIVE|SUBNET UP|ERR `), 20))
	if errs := grepLines(sm.log, regexp.MustCompile(`ERR `), 10); errs != "" {
		t.Errorf("OpenSM logged errors:\n%s", errs)
	}
	links := sm.run("iblinkinfo")
	t.Logf("iblinkinfo:\n%s", links)
	for _, l := range []string{"5    1", "6    2"} {
		re := regexp.MustCompile(`(?m)^\s+1\s+\d\[  \] ==\( 4X\s+10.0 Gbps Active/  LinkUp\)==>\s+` + l + `\[  \] "vhcrd model HCA"`)
		if !re.MatchString(links) {
			t.Errorf("iblinkinfo: no Active link from switch LID 1 to HCA LID/port %s", l)
		}
	}
	// Both ports: the LIDs kept, OpenSM's port (LID 5) the master SM.
	for port, path := range map[string]string{"1": "0", "2": "0,1,2"} {
		pi := sm.run("smpquery", "-D", "portinfo", path, port)
		for _, w := range []string{"LinkState:.......................Active", "PhysLinkState:...................LinkUp",
			"Lid:............................." + map[string]string{"1": "5", "2": "6"}[port], "SMLid:...........................5"} {
			if !strings.Contains(pi, w) {
				t.Errorf("port %s PortInfo lacks %q:\n%s", port, w, pi)
			}
		}
	}
	checkSMAndSA(t, sm.run, 5, 6)
}

// TestUncabledPortPolls: with a fabric that cables only port 1, port 2 is
// Down and its physical state Polling (no partner to train with), as
// smpquery reads it from the HCA; an uncabled port configured active is
// refused with the reason.
func TestUncabledPortPolls(t *testing.T) {
	lib := umad2sim(t)
	dir := shmDir(t)
	ex, err := exec.Command(filepath.Join(binDir, "vhcrd"), "config").Output()
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(ex, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["fabric"].(map[string]any)["cables"] = map[string]int{"1": 1}
	write := func(name string) string {
		b, _ := json.Marshal(cfg)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := write("active.json")
	out, err := exec.Command("timeout", "20", filepath.Join(binDir, "vhcrd"), "serve", "--config", bad, "--bar", "file:"+filepath.Join(dir, "bar0"),
		"--dma", "file:"+filepath.Join(dir, "dma0"), "--metrics-addr", "127.0.0.1:0", "--ibsim", "vhcrd-uncabled-bad").CombinedOutput()
	if err == nil || !strings.Contains(string(out), `ports[1].state: "active", but port 2 is not cabled`) {
		t.Fatalf("an active uncabled port: %v\n%s", err, out)
	}
	p2 := cfg["ports"].([]any)[1].(map[string]any)
	p2["state"], p2["lid"] = "down", 0
	sock := fmt.Sprintf("vhcrd-uncabled-%d", os.Getpid())
	d := startDaemon(t, filepath.Join(dir, "bar"), filepath.Join(dir, "dma"), "--config", write("down.json"), "--ibsim", sock)
	if !strings.Contains(d.stderr.String(), `uncabled="port 2 (Down, Polling)"`) {
		t.Errorf("the fabric log line does not name the uncabled port:\n%s", d.stderr)
	}
	cmd := exec.Command("timeout", "20", "smpquery", "-D", "portinfo", "0", "2")
	cmd.Env = append(os.Environ(), "IBSIM_SOCKNAME="+sock, "LD_PRELOAD="+lib)
	pi, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("smpquery: %v\n%s", err, pi)
	}
	t.Logf("port 2:\n%s", pi)
	for _, w := range []string{"LinkState:.......................Down", "PhysLinkState:...................Polling"} {
		if !strings.Contains(string(pi), w) {
			t.Errorf("uncabled port 2 PortInfo lacks %q", w)
		}
	}
}

// checkAliasGUIDs: once the ports are Active with an SM, the PF registers
// the VFs' GUIDs with the SA (GUIDInfoRecord Set, as mlx4_ib's
// alias_GUID.c), and the SA's GUIDInfoRecord of port 1's block 0 holds
// them at the VFs' indices (slave s at index s), the port's own at 0.
func checkAliasGUIDs(t *testing.T, run func(...string) string, metrics, osmLog string) {
	t.Helper()
	ok := regexp.MustCompile(`vhcrd_alias_guid_records_total\{result="ok"\} [1-9]`)
	waitFor(t, "the SA's answer to the PF's GUIDInfoRecord Sets", func() bool { return ok.MatchString(get(t, metrics+"/metrics")) })
	m := get(t, metrics+"/metrics")
	t.Logf("alias GUID registration: %s", strings.Join(regexp.MustCompile(`vhcrd_alias_guid_records_total\{[^}]*\} \d+`).FindAllString(m, -1), ", "))
	if regexp.MustCompile(`vhcrd_alias_guid_records_total\{result="failed"\} [1-9]`).MatchString(m) {
		t.Errorf("the SA refused a GUIDInfoRecord Set")
	}
	out := run("saquery", "GIR", "1/0")
	t.Logf("saquery GIR 1/0:\n%s\nOpenSM:\n%s", out, grepLines(osmLog, regexp.MustCompile(`(?i)alias`), 10))
	if !strings.Contains(out, "GUID 0.....................0x0002c90300a0b0c1") {
		t.Errorf("saquery GIR: no port GUID at index 0")
	}
	// The daemon's four VFs, slaves 1 to 4, each its GUID at its index.
	for i := 1; i <= 4; i++ {
		if !regexp.MustCompile(fmt.Sprintf(`GUID %d\.+0x[0-9a-f]*[1-9a-f][0-9a-f]*\n`, i)).MatchString(out) {
			t.Errorf("saquery GIR: no alias GUID at index %d", i)
		}
	}
}
