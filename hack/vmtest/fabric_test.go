package vmtest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vhcrd/vhcrd/hack/testenv"
)

// The verbs tier's subnet: vhcrd's HCA ports fresh (down, LID 0) and cabled
// to the config's switch, served to OpenSM through libumad2sim (`vhcrd
// serve --ibsim`), as cmd/vhcrd's TestOpenSMFabric does; OpenSM on port 1
// assigns the LIDs and brings the ports Active before a guest boots.

// osmWait bounds OpenSM's first sweep (a few seconds).
const osmWait = 60 * time.Second

// umad2simLib is Debian's libumad2sim (ibsim-utils), or a skip (a failure
// under CI).
func umad2simLib(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so", "/usr/lib/aarch64-linux-gnu/umad2sim/libumad2sim.so"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	testenv.SkipOrFail(t, "verbs tier: libumad2sim.so not installed (Debian package ibsim-utils)")
	return ""
}

// editedConfig writes vhcrd's default config (`vhcrd config`) as edit
// changes it (the decoded JSON) to dir/name and returns its path.
func editedConfig(t *testing.T, bin, dir, name string, edit func(cfg map[string]any)) string {
	t.Helper()
	ex, err := exec.Command(bin, "config").Output()
	if err != nil {
		t.Fatalf("vhcrd config: %v", err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(ex, &cfg); err != nil {
		t.Fatal(err)
	}
	edit(cfg)
	b, err := json.MarshalIndent(cfg, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// freshFabricConfig writes vhcrd's default config with both ports fresh
// (down, LID 0, no SM) and the switch unswept (no LID).
func freshFabricConfig(t *testing.T, bin, dir string) string {
	t.Helper()
	return editedConfig(t, bin, dir, "fabric.json", func(cfg map[string]any) {
		for _, p := range cfg["ports"].([]any) {
			pm := p.(map[string]any)
			pm["lid"], pm["state"], pm["master_sm_lid"] = 0, "down", 0
		}
		sw := cfg["fabric"].(map[string]any)["switch"].(map[string]any)
		delete(sw, "lid")
		// VF 1 (the second guest's) owns its SMI, as `mlx4_core
		// enable_qp0=...` makes a VF on a Linux PF: its QP0 is a proxy QP0
		// owner and its SMPs cross the tunnel; VF 0's are refused.
		ov := cfg["vfs"].(map[string]any)["overrides"].(map[string]any)
		// It also passes PerfMgt and BM (tunnel_classes, an extension a
		// Linux PF has not): perfquery of the switch, its BM exchange.
		ov[fmt.Sprint(bystanderVF)] = map[string]any{"smi": true, "tunnel_classes": []string{"perf_mgt", "bm"}}
	})
}

// osmMKey is the M_Key OpenSM gives the ports.
const osmMKey = "0x00000000deadbeef"

// openSM is OpenSM under libumad2sim against a vhcrd's --ibsim server.
type openSM struct{ log string }

// startOpenSM runs OpenSM on port 1 (its port GUID in the default config)
// until its log says SUBNET UP; it is killed at the test's end.
func startOpenSM(t *testing.T, lib, sock, dir string) *openSM {
	t.Helper()
	if _, err := exec.LookPath("opensm"); err != nil {
		testenv.SkipOrFail(t, "verbs tier: opensm not found (apt-get install --no-install-recommends opensm)")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sm := &openSM{log: filepath.Join(dir, "osm.log")}
	// The ports' M_Key protects their PortInfo against Sets (protection
	// level 1: Gets answered, the key hidden), so that a guest's Set with
	// another key is the M_Key violation OpenSM logs (diags_test.go).
	conf := fmt.Sprintf("guid 0x0002c90300a0b0c1\nsweep_interval 10\ntransaction_timeout 200\npartition_config_file %s/partitions.conf\nlog_flags 0x0f\nforce_log_flush TRUE\nlog_file %s\ndump_files_dir %s\nm_key %s\nm_key_protection_level 1\nm_key_lease_period 0\n", dir, sm.log, dir, osmMKey)
	for name, body := range map[string]string{"opensm.conf": conf, "partitions.conf": "Default=0x7fff, ipoib : ALL=full ;\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("opensm", "-F", filepath.Join(dir, "opensm.conf"))
	cmd.Env = append(os.Environ(), "IBSIM_SOCKNAME="+sock, "LD_PRELOAD="+lib, "OSM_CACHE_DIR="+dir)
	cmd.Dir = dir
	out, err := os.Create(filepath.Join(dir, "opensm.out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		out.Close()
		if t.Failed() {
			t.Logf("OpenSM's log:\n%s", sm.lines(regexp.MustCompile(`.`), 60))
		}
	})
	up := regexp.MustCompile(`SUBNET UP`)
	for deadline := time.Now().Add(osmWait); ; {
		if b, _ := os.ReadFile(sm.log); up.Match(b) {
			break
		}
		if time.Now().After(deadline) {
			o, _ := os.ReadFile(filepath.Join(dir, "opensm.out"))
			t.Fatalf("no SUBNET UP in OpenSM's log within %v:\n%s\n%s", osmWait, sm.lines(regexp.MustCompile(`.`), 40), o)
		}
		time.Sleep(50 * time.Millisecond) // polling another process's log file
	}
	return sm
}

// lines are the last n lines of OpenSM's log that match re.
func (sm *openSM) lines(re *regexp.Regexp, n int) string {
	b, _ := os.ReadFile(sm.log)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if re.MatchString(l) {
			out = append(out, l)
		}
	}
	return strings.Join(out[max(0, len(out)-n):], "\n")
}

// startVerbsFabric starts the verbs tier's vhcrd (VF 0 and VF 1 guests',
// the fresh fabric served on --ibsim) and OpenSM, which brings its ports
// up.
func (e *mlx4Env) startVerbsFabric(t *testing.T) *vhcrdProc {
	t.Helper()
	lib := umad2simLib(t)
	dir := filepath.Join(e.tmp, "verbs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := fmt.Sprintf("vhcrd-vmtest-%d", os.Getpid())
	v := startVhcrdGuests(t, e.vhcrd.bin, dir, nil, true, "--config", freshFabricConfig(t, e.vhcrd.bin, dir), "--ibsim", sock)
	t0 := time.Now()
	sm := startOpenSM(t, lib, sock, filepath.Join(dir, "osm"))
	v.osm = sm
	t.Logf("OpenSM: SUBNET UP in %v:\n%s", time.Since(t0).Round(time.Millisecond),
		sm.lines(regexp.MustCompile(`Discovered new|Assign(ed|ing)|SUBNET UP|ERR `), 20))
	if errs := sm.lines(regexp.MustCompile(`ERR `), 10); errs != "" {
		t.Errorf("OpenSM logged errors:\n%s", errs)
	}
	return v
}
