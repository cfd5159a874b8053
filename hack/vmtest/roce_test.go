package vmtest

import (
	"strings"
	"testing"
)

// rocePingpongs are the pingpongs over RoCE: RC and UD between the two
// Ethernet guests, each polling and with completion events (-e), on the
// port's GID 0 (the netdev's default GID, fe80:: and the MAC's EUI-64),
// which each guest's mlx4_ib wrote into its slice of the port's table.
func rocePingpongs() []Pingpong {
	var pp []Pingpong
	for _, p := range DefaultPingpongs() {
		p.Name = "roce " + p.Name
		p.Args = append(append([]string{}, p.Args...), "-g", "0")
		pp = append(pp, p)
	}
	return pp
}

// roceConfig is EthConfig.Verbs for one of the two Ethernet guests.
func roceConfig(role string) *VerbsConfig {
	return &VerbsConfig{Role: role, TimeLimitMS: 60000, Pingpongs: rocePingpongs()}
}

// roceRun drives the RoCE phase of the two Ethernet guests (g0 the
// pingpongs' server, g1 the client): ibv_devinfo in each, then each
// pingpong as the verbs tier's pair runs them, and checks their lines.
func roceRun(t *testing.T, v *vhcrdProc, g0, g1 *vm, l0, l1 *consoleLog, pps []Pingpong) {
	t.Helper()
	g0.step("roce devinfo", l0.keep(g0))
	g1.step("roce devinfo", l1.keep(g1))
	g0.tolerate, g1.tolerate = true, true // a failing tool's lines are its own to report
	traceFrom := pairPingpongs(v, g0, g1, l0, l1, pps)
	g0.step("roce pingpongs", l0.keep(g0))
	g1.step("roce pingpongs", l1.keep(g1))
	g0.tolerate, g1.tolerate = false, false
	t.Run("roce", func(t *testing.T) {
		for i, lines := range [][]string{l0.lines, l1.lines} {
			checkRoCEDevinfo(t, i, lines)
		}
		checkPingpongs(t, pps, map[string][]string{"server": l0.lines, "client": l1.lines}, v, traceFrom)
	})
}

// checkRoCEDevinfo: the guest's ibv_devinfo -v shows mlx4_0's port 1 as
// an ACTIVE Ethernet port with its GIDs (the default GID at index 0, the
// IPv4-mapped one of the netdev's address).
func checkRoCEDevinfo(t *testing.T, guest int, lines []string) {
	t.Helper()
	d := parseDevinfo(lines)
	p1 := d.ports["1"]
	if p1 == nil {
		t.Fatalf("guest %d: ibv_devinfo -v shows no port 1:\n%s", guest, d.text)
	}
	var gids []string
	for _, l := range strings.Split(d.text, "\n") {
		if strings.Contains(l, "GID[") {
			gids = append(gids, strings.TrimSpace(l))
		}
	}
	t.Logf("guest %d: port 1 state %q, link_layer %q, active_mtu %q; %s", guest, p1["state"], p1["link_layer"], p1["active_mtu"], strings.Join(gids, "; "))
	if !strings.HasPrefix(p1["state"], "PORT_ACTIVE") || p1["link_layer"] != "Ethernet" || len(gids) == 0 || !strings.Contains(gids[0], "fe80:") {
		t.Errorf("guest %d: port 1 state %q link_layer %q GIDs %q, want an ACTIVE Ethernet port with its default GID", guest, p1["state"], p1["link_layer"], gids)
	}
}
