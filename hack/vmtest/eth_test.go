package vmtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/hack/testenv"
	"github.com/vhcrd/vhcrd/tap/taptest"
)

// The Ethernet guests' addresses and their VST.
const (
	ethAddr0, ethAddr1 = "10.79.0.1", "10.79.0.2"
	ethAbsent          = "10.79.0.9"
	ethBcast           = "10.79.0.255"
	ethVLAN, ethQoS    = 100, 2
	ethDatagrams       = 5
	ethSpoofMAC        = "02:c9:03:0f:ff:01"
	// The host's side of the uplink: the TAP device vhcrd makes in the
	// test's network namespace (an access port of VST's VLAN: the host's
	// kernel need not have 802.1Q), and its address there.
	ethTAP, ethHost = "vhup1", "10.79.0.254"
	// ethRXRings: the first guest's mlx4_en with two RX rings (two
	// vCPUs), its receive steering an RSS indirection QP over them; the
	// second's with one.
	ethRXRings = 2
)

// ethConfig is the default configuration with port 1 Ethernet (off the
// IB fabric's switch), its uplink a capture file and, with a namespace,
// the TAP device ethTAP in it, and VF 0 (the guest's) and VF 1 (the two
// guests') in VST with VLAN ethVLAN and priority ethQoS, VF 1 with spoof
// check.
func ethConfig(t *testing.T, bin, dir, uplink string, ns *taptest.NetNS) string {
	t.Helper()
	return editedConfig(t, bin, dir, "eth.json", func(cfg map[string]any) {
		p1 := cfg["ports"].([]any)[0].(map[string]any)
		up := map[string]any{"pcap": uplink}
		if ns != nil {
			up["tap"], up["netns"], up["vlan"] = ethTAP, ns.Path, ethVLAN
		}
		p1["link_layer"], p1["uplink"] = "eth", up
		delete(cfg["fabric"].(map[string]any)["cables"].(map[string]any), "1")
		ov := cfg["vfs"].(map[string]any)["overrides"].(map[string]any)
		for _, vf := range []int{guestVF, bystanderVF} {
			ov[strconv.Itoa(vf)] = map[string]any{"vst": map[string]any{"vlan": ethVLAN, "qos": ethQoS}}
		}
		ov[strconv.Itoa(bystanderVF)].(map[string]any)["spoof_check"] = true
	})
}

// TestLinuxMLX4Eth: Debian's unmodified mlx4_en in two guests, each with
// a VF whose Ethernet port 1 is in VST (VLAN 100, priority 2): their
// netdevs come up with the VFs' MACs and link, each pings the other over
// IPv4 and over IPv6 (the all-nodes group, answered from the peer's
// link-local address) through vhcrd's switch, every frame they send
// completes (the transmit queue drains, no watchdog), and the port's
// uplink capture, read by tshark, has their broadcasts and ARP requests
// with the VST tag the switch inserted and none of the unicast frames
// between them, which stay in the device. The uplink is also a TAP device
// in a network namespace the test makes, an access port of VLAN 100: each
// guest pings the host's address there, and the host pings the first
// guest.
func TestLinuxMLX4Eth(t *testing.T) {
	e, recs := setupVerbs(t)
	if _, err := os.Stat(filepath.Join(e.mods, "mlx4_en.ko")); err != nil {
		testenv.SkipOrFail(t, "Ethernet guests: no mlx4_en.ko in %s (run hack/fetch-vmkernel.sh)", e.mods)
	}
	testenv.LookPath(t, "tshark", "tshark")
	dir := filepath.Join(e.tmp, "eth")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(e.tmp, "vhcrd")
	uplink := filepath.Join(dir, "uplink.pcap")
	ns := ethHostSide(t)
	v := startVhcrdGuests(t, bin, dir, nil, true, "--config", ethConfig(t, bin, dir, uplink, ns))
	e.vhcrd = v
	host := ""
	if ns != nil {
		host = ethHost
		ethHostUp(ns)
	}
	cfg := func(addr, peer string) MLX4Config {
		c := DefaultMLX4Config()
		c.Modules = []string{"mlx4_core", "mlx4_en", "mlx4_ib"}
		c.Scenario = ScenarioEth
		c.Eth = EthConfig{Addr: addr, Prefix: 24, Absent: ethAbsent, Broadcasts: ethDatagrams, Ping: peer, Host: host}
		return c
	}
	c0 := cfg(ethAddr0, ethAddr1)
	c0.Eth.TCPRole, c0.Eth.Verbs, c0.Eth.RXRings = "server", roceConfig("server"), ethRXRings
	// Two vCPUs: mlx4_en allows as many RX rings as CPUs.
	g0 := e.bootWith(t, c0, bootOpts{name: "eth0", extra: recs, timeout: verbsBootTimeout, cpus: ethRXRings})
	c1 := cfg(ethAddr1, ethAddr0)
	c1.Eth.SpoofMAC, c1.Eth.LinkCycle, c1.Eth.TCPRole, c1.Eth.Verbs = ethSpoofMAC, true, "client", roceConfig("client")
	g1 := e.bootWith(t, c1, bootOpts{name: "eth1", extra: recs, timeout: verbsBootTimeout, ram: v.ram1, socket: v.socket1})
	var l0, l1 consoleLog
	g0.step("eth up", l0.keep(g0))
	g1.step("eth up", l1.keep(g1))
	// TCP: the server's guest listens before the client's dials.
	g0.step("tcp listening", l0.keep(g0))
	g1.step("tcp dial", l1.keep(g1))
	roceRun(t, v, g0, g1, &l0, &l1, c0.Eth.Verbs.Pingpongs)
	ethSpoofAndLink(t, v, g1, &l1)
	// Both guests done sending before either unbinds: the other may
	// still be pinging it.
	var fwd, recv [2]float64
	g0.expect("vmtest: wait eth sent")
	g1.expect("vmtest: wait eth sent")
	l0.keep(g0)()
	l1.keep(g1)()
	if ns != nil {
		ethHostPing(t, v, ns)
	}
	m := v.metrics(t)
	for i, vf := range []int{guestVF, bystanderVF} {
		fwd[i] = m.sum("vhcrd_eth_sent_frames_total", map[string]string{"vf": strconv.Itoa(vf), "verdict": "forward"})
		recv[i] = m.sum("vhcrd_eth_received_frames_total", map[string]string{"vf": strconv.Itoa(vf), "verdict": "forward"})
	}
	g0.goOn()
	g1.goOn()
	t0, t1 := g0.finish(), g1.finish()
	// The one refused command of the guest with one RX ring, at its
	// unbind: mlx4_en's second release of its RX QP (consoleExpected);
	// with RSS (two rings) the driver's steering QP is its own and
	// nothing is refused.
	m = v.metrics(t)
	for i, vf := range []int{guestVF, bystanderVF} {
		want := []float64{0, 1}[i]
		all := m.sum("vhcrd_command_refusals_total", map[string]string{"vf": strconv.Itoa(vf)})
		nf := m.sum("vhcrd_command_refusals_total", map[string]string{"vf": strconv.Itoa(vf), "reason": "not_found"})
		if all != want || nf != want {
			t.Errorf("VF %d: %v refused commands (%v not_found), want %v (the second release of a lone RX ring's QP)", vf, all, nf, want)
		}
	}
	if err := v.terminate(); err != nil { // the uplink's capture file closed
		t.Fatalf("vhcrd serve: %v\n%s", err, v.logText())
	}
	v.cmd = nil
	t.Logf("eth: %.1fs and %.1fs of QEMU; vhcrd_eth_sent_frames_total{verdict=\"forward\"} VF 0 %v, VF 1 %v; vhcrd_eth_received_frames_total{verdict=\"forward\"} VF 0 %v, VF 1 %v",
		t0.Seconds(), t1.Seconds(), fwd[0], fwd[1], recv[0], recv[1])
	macs := [2]string{ethSaid(t, l0.lines, ethMACLine, "netdev MAC"), ethSaid(t, l1.lines, ethMACLine, "netdev MAC")}
	lls := [2]string{ethSaid(t, l0.lines, ethLLLine, "link-local address"), ethSaid(t, l1.lines, ethLLLine, "link-local address")}
	for i, c := range []struct {
		lines []string
		peer  string
	}{{l0.lines, ethAddr1}, {l1.lines, ethAddr0}} {
		checkEthPing(t, c.lines, c.peer, lls[1-i])
		if want := fmt.Sprintf("got %q", "hello from "+c.peer); !hasLine(c.lines, want) {
			t.Errorf("guest %d: no TCP line %s from its peer", i, want)
		}
		checkEthtool(t, i, c.lines)
		if ns != nil {
			checkHostPing(t, i, c.lines)
		}
		if recv[i] == 0 {
			t.Errorf("VF %d received no frame through the switch", i)
		}
	}
	checkUplink(t, uplink, macs)
}

// ethSpoofAndLink runs the second guest's spoofed MAC (its VF has spoof
// check: the switch drops every frame, counted) and its link forced down
// (`vhcrd vf set 1 --link-state disable`: mlx4_en loses its carrier,
// nothing passes the switch) and given back.
func ethSpoofAndLink(t *testing.T, v *vhcrdProc, g *vm, l *consoleLog) {
	t.Helper()
	vf := strconv.Itoa(bystanderVF)
	count := func(verdict string) float64 {
		return v.metrics(t).sum("vhcrd_eth_sent_frames_total", map[string]string{"vf": vf, "verdict": verdict})
	}
	vfSet := func(state string) {
		out, err := exec.Command(v.bin, "vf", "set", vf, "--link-state", state, "--admin-socket", filepath.Join(v.dir, "admin.sock")).CombinedOutput()
		if err != nil {
			t.Fatalf("vhcrd vf set %s --link-state %s: %v\n%s", vf, state, err, out)
		}
		t.Logf("vhcrd vf set %s --link-state %s: %s", vf, state, strings.TrimSpace(string(out)))
	}
	g.step("eth spoofed", func() {
		l.keep(g)()
		if n := count("spoof"); n < ethDatagrams {
			t.Errorf("VF %s with MAC %s: %v frames dropped by spoof check, want at least its %d broadcasts", vf, ethSpoofMAC, n, ethDatagrams)
		} else {
			t.Logf("vhcrd_eth_sent_frames_total{vf=%q,verdict=\"spoof\"} %v", vf, n)
		}
	})
	g.step("eth link", func() { vfSet("disable") })
	var fwd float64
	g.step("eth carrier down", func() { fwd = count("forward") })
	g.step("eth down", func() {
		l.keep(g)()
		if n := count("forward"); n != fwd {
			t.Errorf("VF %s's link down: %v frames passed the switch", vf, n-fwd)
		}
		vfSet("auto")
	})
}

var (
	ethMACLine = regexp.MustCompile(`vmtest: eth: \S+ \(mlx4_core\) MAC ([0-9a-f:]{17})`)
	ethLLLine  = regexp.MustCompile(`vmtest: eth: \S+ up with \S+ and (fe80::\S+),`)
)

// ethSaid is the first submatch of re in the guest's lines (what its
// netdev reported: its MAC, its link-local address).
func ethSaid(t *testing.T, lines []string, re *regexp.Regexp, what string) string {
	t.Helper()
	for _, l := range lines {
		if m := re.FindStringSubmatch(l); m != nil {
			return m[1]
		}
	}
	t.Fatalf("a guest reported no %s", what)
	return ""
}

// checkEthtool: `ethtool -S` in the guest shows mlx4_en's ring counters
// moved: packets sent and received through vhcrd's switch.
func checkEthtool(t *testing.T, guest int, lines []string) {
	t.Helper()
	var quote []string
	got := map[string]int{}
	for _, l := range lines {
		if !strings.HasPrefix(l, "vmtest: ethtool| ") {
			continue
		}
		f := strings.Fields(strings.TrimPrefix(l, "vmtest: ethtool| "))
		if len(f) == 2 && strings.HasSuffix(f[0], ":") {
			k := strings.TrimSuffix(f[0], ":")
			got[k], _ = strconv.Atoi(f[1])
			if strings.HasSuffix(k, "_packets") && (strings.HasPrefix(k, "tx") || strings.HasPrefix(k, "rx")) {
				quote = append(quote, strings.TrimPrefix(l, "vmtest: "))
			}
		}
	}
	t.Logf("guest %d's ethtool -S eth0 (its rings):\n%s", guest, strings.Join(quote, "\n"))
	// Its rings' packets: each ring's rxN_packets, txN_packets.
	rings := func(dir string) (n, total int) {
		for ; ; n++ {
			c, ok := got[fmt.Sprintf("%s%d_packets", dir, n)]
			if !ok {
				return n, total
			}
			total += c
		}
	}
	nrx, rx := rings("rx")
	_, tx := rings("tx")
	want := []int{ethRXRings, 1}[guest]
	if tx == 0 || rx == 0 || got["tx_packets"] != tx || got["rx_packets"] != rx || nrx != want {
		t.Errorf("guest %d's ethtool -S: %d RX rings with %d packets (rx_packets %d), %d sent on the TX rings (tx_packets %d): want them moved on %d RX rings",
			guest, nrx, rx, got["rx_packets"], tx, got["tx_packets"], want)
	}
}

// checkEthPing: the guest's ping of its peer's IPv4 address got every
// reply, and its IPv6 ping of ff02::1 a reply from the peer's link-local
// address.
func checkEthPing(t *testing.T, lines []string, peer, peerLL string) {
	t.Helper()
	var quote []string
	v4, v6 := false, false
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "vmtest: ping| "):
			quote = append(quote, l)
			v4 = v4 || strings.Contains(l, "3 packets transmitted, 3 received")
		case strings.HasPrefix(l, "vmtest: ping6| "):
			quote = append(quote, l)
			v6 = v6 || strings.Contains(l, "from "+peerLL)
		}
	}
	t.Logf("ping of %s and of ff02::1:\n%s", peer, strings.Join(quote, "\n"))
	if !v4 || !v6 {
		t.Errorf("ping of %s: every reply %v; ping of ff02::1: a reply from %s %v", peer, v4, peerLL, v6)
	}
}

// checkUplink reads the uplink capture with tshark: each guest's UDP
// broadcasts and its ARP requests for the absent address, from its MAC,
// with the VST tag; no frame of theirs without it, and no ICMP between
// them (their unicast stays in the device).
func checkUplink(t *testing.T, path string, macs [2]string) {
	t.Helper()
	cmd := exec.Command("timeout", "60", "tshark", "-r", path, "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE", "-T", "fields", "-E", "separator=,",
		"-e", "eth.src", "-e", "eth.dst", "-e", "vlan.id", "-e", "vlan.priority", "-e", "arp.opcode", "-e", "arp.src.proto_ipv4",
		"-e", "arp.dst.proto_ipv4", "-e", "ip.dst", "-e", "udp.dstport", "-e", "frame.len", "-e", "icmp.type",
		"-e", "ip.checksum.status", "-e", "udp.checksum.status")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark -r %s: %v\n%s", path, err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	t.Logf("the uplink capture (tshark -r uplink.pcap, %d frames; eth.src, eth.dst, vlan.id, vlan.priority, arp.opcode, arp.src, arp.dst, ip.dst, udp.dstport, frame.len, icmp.type, ip and udp checksum status, 1 good):\n%s",
		len(lines), strings.Join(lines[:min(len(lines), 16)], "\n"))
	for _, l := range lines {
		if strings.HasPrefix(l, ethSpoofMAC+",") {
			t.Errorf("a frame from the spoofed MAC %s left the port: %s", ethSpoofMAC, l)
		}
	}
	for i, mac := range macs {
		var bcasts, arps, untagged, icmp, badCsum int
		addr := []string{ethAddr0, ethAddr1}[i]
		for _, l := range lines {
			f := strings.Split(l, ",")
			if len(f) < 13 || f[0] != mac {
				continue
			}
			if f[2] != strconv.Itoa(ethVLAN) || f[3] != strconv.Itoa(ethQoS) {
				untagged++
			}
			if f[7] == ethBcast && f[8] == "9" {
				bcasts++
				// The device computed both checksums (mlx4_en leaves
				// them to it): tshark's 1 is good.
				if f[11] != "1" || f[12] != "1" {
					badCsum++
				}
			}
			if f[4] == "1" && f[5] == addr && f[6] == ethAbsent {
				arps++
			}
			if f[10] != "" && f[7] != ethHost { // the host's pings go out
				icmp++
			}
		}
		if bcasts != ethDatagrams || arps == 0 || untagged != 0 || icmp != 0 || badCsum != 0 {
			t.Errorf("from %s: %d broadcasts to %s:9 (want %d; %d with a checksum not good), %d ARP requests for %s (want some), %d frames without VLAN %d priority %d, %d ICMP (want none)",
				mac, bcasts, ethBcast, ethDatagrams, badCsum, arps, ethAbsent, untagged, ethVLAN, ethQoS, icmp)
		}
	}
}

// ethHostSide makes the network namespace of the uplink's TAP device, or
// returns nil where TAP devices cannot be made (not root: the host's side
// is left out, logged; under CI a failure).
func ethHostSide(t *testing.T) *taptest.NetNS {
	t.Helper()
	if err := taptest.Available(); err != nil {
		if testenv.CI() {
			t.Fatalf("the uplink's TAP device: %v; required under CI=true", err)
		}
		t.Logf("the uplink's TAP device left out: %v", err)
		return nil
	}
	testenv.LookPath(t, "ping", "iputils-ping")
	return taptest.New(t)
}

// ethHostUp gives the host's side of the TAP device (made by vhcrd as it
// started, an access port of VLAN ethVLAN: the VST VFs' network, untagged)
// the address ethHost.
func ethHostUp(ns *taptest.NetNS) {
	ns.IP("addr", "add", ethHost+"/24", "dev", ethTAP)
	ns.IP("link", "set", "lo", "up")
}

// ethHostPing pings the first guest from the host's side of the uplink
// (the second's MAC is spoofed by now): in through the TAP device, the
// switch's ingress and VST's strip, and the replies out again; the
// uplink's counters show both directions.
func ethHostPing(t *testing.T, v *vhcrdProc, ns *taptest.NetNS) {
	t.Helper()
	out, err := ns.Exec("timeout", "60", "ping", "-n", "-c", "3", "-i", "0.5", "-W", "5", ethAddr0).CombinedOutput()
	t.Logf("ip netns exec %s ping %s:\n%s", ns.Name, ethAddr0, strings.TrimSpace(string(out)))
	if err != nil || !strings.Contains(string(out), "3 packets transmitted, 3 received") {
		t.Errorf("the host's ping of guest 0 through the TAP uplink: %v", err)
	}
	m := v.metrics(t)
	in := m.sum("vhcrd_eth_uplink_frames_total", map[string]string{"port": "1", "direction": "in", "verdict": "delivered"})
	sent := m.sum("vhcrd_eth_uplink_frames_total", map[string]string{"port": "1", "direction": "out", "verdict": "sent"})
	t.Logf("vhcrd_eth_uplink_frames_total{port=\"1\"}: in delivered %v, out sent %v", in, sent)
	if in < 3 || sent < 3 {
		t.Errorf("the uplink's counters: in delivered %v, out sent %v: want the pings' at least", in, sent)
	}
}

// checkHostPing: the guest's ping of the host's address on the uplink got
// every reply.
func checkHostPing(t *testing.T, guest int, lines []string) {
	t.Helper()
	var quote []string
	ok := false
	for _, l := range lines {
		if strings.HasPrefix(l, "vmtest: pinghost| ") {
			quote = append(quote, l)
			ok = ok || strings.Contains(l, "3 packets transmitted, 3 received")
		}
	}
	t.Logf("guest %d's ping of the host's %s through the TAP uplink:\n%s", guest, ethHost, strings.Join(quote, "\n"))
	if !ok {
		t.Errorf("guest %d's ping of the host's %s: not every reply", guest, ethHost)
	}
}
