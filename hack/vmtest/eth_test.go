package vmtest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/hack/testenv"
)

// The Ethernet guest's addresses and its VST.
const (
	ethAddr, ethPeer = "10.79.0.1", "10.79.0.2"
	ethBcast         = "10.79.0.255"
	ethVLAN, ethQoS  = 100, 2
	ethDatagrams     = 5
)

// ethConfig is the default configuration with port 1 Ethernet (off the
// IB fabric's switch), its uplink a capture file, and VF 0 (the guest's)
// in VST with VLAN ethVLAN and priority ethQoS.
func ethConfig(t *testing.T, bin, dir, uplink string) string {
	t.Helper()
	ex, err := exec.Command(bin, "config").Output()
	if err != nil {
		t.Fatalf("vhcrd config: %v", err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(ex, &cfg); err != nil {
		t.Fatal(err)
	}
	p1 := cfg["ports"].([]any)[0].(map[string]any)
	p1["link_layer"], p1["uplink"] = "eth", map[string]any{"pcap": uplink}
	delete(cfg["fabric"].(map[string]any)["cables"].(map[string]any), "1")
	ov := cfg["vfs"].(map[string]any)["overrides"].(map[string]any)
	ov[strconv.Itoa(guestVF)] = map[string]any{"vst": map[string]any{"vlan": ethVLAN, "qos": ethQoS}}
	b, err := json.MarshalIndent(cfg, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "eth.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLinuxMLX4Eth: Debian's unmodified mlx4_en in a guest whose VF 0 has
// an Ethernet port 1 in VST (VLAN 100, priority 2): its netdev comes up
// with the VF's MAC and link, every frame it sends completes (its transmit
// queue drains, no watchdog), and the port's uplink capture, read by
// tshark, has the guest's broadcasts and ARP requests from the VF's MAC
// with the VST tag the switch inserted.
func TestLinuxMLX4Eth(t *testing.T) {
	e := setupMLX4Env(t)
	if _, err := os.Stat(filepath.Join(e.mods, "mlx4_en.ko")); err != nil {
		testenv.SkipOrFail(t, "Ethernet guest: no mlx4_en.ko in %s (run hack/fetch-vmkernel.sh)", e.mods)
	}
	testenv.LookPath(t, "tshark", "tshark")
	dir := filepath.Join(e.tmp, "eth")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(e.tmp, "vhcrd")
	uplink := filepath.Join(dir, "uplink.pcap")
	v := startVhcrdGuests(t, bin, dir, nil, false, "--config", ethConfig(t, bin, dir, uplink))
	e.vhcrd = v
	cfg := DefaultMLX4Config()
	cfg.Modules = []string{"mlx4_core", "mlx4_en"}
	cfg.Scenario = ScenarioEth
	cfg.Eth = EthConfig{Addr: ethAddr, Prefix: 24, Peer: ethPeer, Broadcasts: ethDatagrams}
	g := e.bootWith(t, cfg, bootOpts{name: "eth"})
	var mac string
	macLine := regexp.MustCompile(`vmtest: eth: \S+ \(mlx4_core\) MAC ([0-9a-f:]{17})`)
	var forward float64
	g.step("eth sent", func() {
		for _, l := range g.said {
			if m := macLine.FindStringSubmatch(l); m != nil {
				mac = m[1]
			}
		}
		forward = v.metrics(t).sum("vhcrd_eth_sent_frames_total", map[string]string{"vf": strconv.Itoa(guestVF), "verdict": "forward"})
	})
	took := g.finish()
	if err := v.terminate(); err != nil { // the uplink's capture file closed
		t.Fatalf("vhcrd serve: %v\n%s", err, v.logText())
	}
	v.cmd = nil
	t.Logf("eth: %.1fs of QEMU; vhcrd_eth_sent_frames_total{vf=\"0\",verdict=\"forward\"} %v", took.Seconds(), forward)
	if mac == "" {
		t.Fatal("the guest named no mlx4_en netdev and MAC")
	}
	if forward < ethDatagrams {
		t.Errorf("vhcrd forwarded %v of VF 0's frames, want at least the %d broadcasts", forward, ethDatagrams)
	}
	checkUplink(t, uplink, mac)
}

// checkUplink reads the uplink capture with tshark: the guest's UDP
// broadcasts and its ARP requests for the peer, from its MAC, each with
// the VST tag; no frame of the VF's without it.
func checkUplink(t *testing.T, path, mac string) {
	t.Helper()
	cmd := exec.Command("timeout", "60", "tshark", "-r", path, "-T", "fields", "-E", "separator=,",
		"-e", "eth.src", "-e", "eth.dst", "-e", "vlan.id", "-e", "vlan.priority", "-e", "arp.opcode", "-e", "arp.src.proto_ipv4",
		"-e", "arp.dst.proto_ipv4", "-e", "ip.dst", "-e", "udp.dstport", "-e", "frame.len")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark -r %s: %v\n%s", path, err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var bcasts, arps, untagged int
	vst := strconv.Itoa(ethVLAN) + "," + strconv.Itoa(ethQoS) + ","
	for _, l := range lines {
		f := strings.Split(l, ",")
		if len(f) < 10 || f[0] != mac {
			continue
		}
		if f[2] != strconv.Itoa(ethVLAN) || f[3] != strconv.Itoa(ethQoS) {
			untagged++
		}
		if f[7] == ethBcast && f[8] == "9" {
			bcasts++
		}
		if f[4] == "1" && f[5] == ethAddr && f[6] == ethPeer {
			arps++
		}
	}
	t.Logf("the uplink capture (tshark -r uplink.pcap, %d frames; eth.src, eth.dst, vlan.id, vlan.priority, arp.opcode, arp.src, arp.dst, ip.dst, udp.dstport, frame.len):\n%s",
		len(lines), strings.Join(lines[:min(len(lines), 12)], "\n"))
	if bcasts != ethDatagrams || arps == 0 || untagged != 0 || !strings.Contains(string(out), mac+",ff:ff:ff:ff:ff:ff,"+vst) {
		t.Errorf("from %s: %d broadcasts to %s:9 (want %d), %d ARP requests for %s (want some), %d frames without VLAN %d priority %d (want none)",
			mac, bcasts, ethBcast, ethDatagrams, arps, ethPeer, untagged, ethVLAN, ethQoS)
	}
}
