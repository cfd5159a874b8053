package vmtest

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The verbs guest's management tools: infiniband-diags' saquery in the
// guest, whose SA queries leave the VF's proxy QP1, cross vhcrd's MAD
// tunnel (hca/tunnel.go: mlx4_ib_multiplex_mad's checks, the slave in the
// TID), reach OpenSM's SA through the ibsim server, and come back into the
// proxy QP1 with the receive tunnel header (mlx4_ib_send_to_slave). The
// LIDs are those OpenSM's first sweep of the verbs tier's fresh subnet
// assigns, in the order it finds the ports: port 1 (the SM's, which the
// guest's VF shares) 1, the switch 2, port 2 3.

const smLID, otherLID = 1, 3

// switchLID is the switch's LID in that sweep.
const switchLID = 2

var diagDev = []string{"-C", "mlx4_0", "-P", "1"}

func diag(name, tool string, args ...string) Diag {
	return Diag{Name: name, Tool: tool, Args: append(append([]string{}, diagDev...), args...)}
}

// tunnelDiags are the guest on VF 0's (no SMI): two SA queries, and an SMP
// that mlx4_ib_multiplex_mad refuses for a VF without SMI.
func tunnelDiags() []Diag {
	return []Diag{
		diag("saquery NodeRecord", "/usr/sbin/saquery", fmt.Sprint(smLID)),
		diag("saquery PathRecord", "/usr/sbin/saquery", "--src-to-dst", fmt.Sprintf("%d:%d", smLID, otherLID)),
		diag("smpquery refused", "/usr/sbin/smpquery", "nodeinfo", fmt.Sprint(switchLID)),
		// PerfMgt: what Linux's PF drops for a VF (VF 0 has no
		// tunnel_classes).
		diag("perfquery refused", "/usr/sbin/perfquery", fmt.Sprint(switchLID), "1"),
	}
}

// smiDiags are the guest on VF 1's, which owns its SMI: an SMP to the
// switch by LID and a directed-route discovery of the subnet, from its
// proxy QP0 (an MLX QP, build_sriov_qp0_header's packets).
func smiDiags() []Diag {
	return []Diag{
		diag("smpquery switch", "/usr/sbin/smpquery", "nodeinfo", fmt.Sprint(switchLID)),
		diag("ibnetdiscover", "/usr/sbin/ibnetdiscover"),
		// A PortInfo Set to its own port's LID with a key that is not
		// the port's: the SMA drops it and traps Bad M_Key to the SM.
		diag("ibportstate wrong M_Key", "/usr/sbin/ibportstate", "-y", "0x1", fmt.Sprint(smLID), "1", "enable"),
		// VF 1's config passes PerfMgt (tunnel_classes, an extension):
		// the switch's PMA answers, and the guest's own mlx4_ib consumes
		// the answer (checkSwitchPMA).
		diag("perfquery switch", "/usr/sbin/perfquery", "-x", fmt.Sprint(switchLID), "1"),
	}
}

// portBKey is port 1's B_Key in vhcrd's default config; bmRun is the SMI
// guest's BM exchange with its own port's BMA (VF 1 passes BM: its
// tunnel_classes): the trap address set to OpenSM's LID with the B_Key,
// then a Set with a wrong one.
const portBKey = 0xb0b

func bmRun() *BMRun {
	// VF 1's P_Key index 1 is port 1's entry 1 (its pkey_map), which
	// OpenSM's default partition leaves 0.
	return &BMRun{DLID: smLID, TrapLID: smLID, BKey: portBKey, WrongBKey: 0x1, BadPKeyIndex: 1}
}

// checkSMIDiags asserts the SMI guest's tools saw the switch and the HCA;
// classDrops is the tunnel's class drops before its diags.
func checkSMIDiags(t *testing.T, lines []string, d *vhcrdProc, classDrops float64) {
	m := d.metrics(t)
	t.Logf("tunnel drops by reason %v; VF %d: MADs %v, packets dropped %v, error CQEs %v", m.byLabel("vhcrd_mad_tunnel_drops_total", "reason", nil),
		bystanderVF, m.byLabel("vhcrd_mad_tunnel_mads_total", "direction", map[string]string{"vf": fmt.Sprint(bystanderVF)}),
		m.byLabel("vhcrd_packets_dropped_total", "reason", map[string]string{"vf": fmt.Sprint(bystanderVF)}),
		m.sum("vhcrd_error_cqes_total", map[string]string{"vf": fmt.Sprint(bystanderVF)}))
	want := map[string][]string{
		"smpquery switch": {"NodeType:........................Switch", "Guid:............................0x0002c90300f00000"},
		"ibnetdiscover":   {`Switch	8 "S-0002c90300f00000"`, `Ca	2 "H-0002c90300a0b0c0"`},
	}
	checkMKeyTrap(t, lines, d)
	checkDiagLines(t, lines, smiDiags()[:2], want, "the SMI guest")
	checkSwitchPMA(t, lines, d, classDrops)
	checkBMTrap(t, lines, d)
}

// checkSwitchPMA holds what perfquery of the switch's port 1 gives in a
// VF with tunnel_classes perf_mgt: the PF passes the query and the switch's
// PMA answers (the tunnel's wire), but the guest's mlx4_ib answers the
// incoming ClassPortInfo response itself (mlx4_ib_process_mad's
// iboe_process_mad for a slave) and perfquery never sees it; the guest's
// zeroed reply is dropped as class 0, as Linux's PF drops it.
func checkSwitchPMA(t *testing.T, lines []string, d *vhcrdProc, classDrops float64) {
	out, res := diagOutput(lines, "perfquery switch")
	t.Logf("perfquery -x of switch port 1 in the guest (%s):\n%s", res, out)
	if strings.HasPrefix(res, "ok") {
		t.Errorf("perfquery in a VF saw the switch's answer: mlx4_ib's iboe_process_mad consumes it")
	}
	if !strings.Contains(out, "classportinfo query") {
		t.Errorf("perfquery did not fail on its ClassPortInfo query")
	}
	if n := d.metrics(t).sum("vhcrd_mad_tunnel_drops_total", map[string]string{"reason": "class"}); n < classDrops+1 {
		t.Errorf("the guest's reply to the PMA's response was not dropped (class drops %v, %v before its diags)", n, classDrops)
	}
}

// checkBMTrap asserts the guest's BM exchange (the right B_Key answered,
// the wrong one not) and that vhcrd's BMA saw the Set with the wrong
// B_Key with the packet's work completion and GRH: its key-violation line
// names the guest's port LID, the PF's QP1 it left from and the VF's
// GID (what Trap 259's payload carries), and Trap 259 was sent.
func checkBMTrap(t *testing.T, lines []string, d *vhcrdProc) {
	var out []string
	res, gid := "", ""
	for _, l := range lines {
		if s, ok := strings.CutPrefix(l, "vmtest: bm| "); ok {
			out = append(out, s)
			if m := regexp.MustCompile(`source GID (\S+)`).FindStringSubmatch(s); m != nil {
				gid = m[1]
			}
		}
		if s, ok := strings.CutPrefix(l, BMPrefix); ok {
			res = s
		}
	}
	t.Logf("BM exchange in the SMI guest (%s):\n%s", res, strings.Join(out, "\n"))
	if !strings.HasPrefix(res, "ok") {
		t.Errorf("bm: %s", res)
		return
	}
	want := fmt.Sprintf(`msg="mad: key violation" key=b_key port=1 slid=%d src_qp=1 sgid=%s class=5 method=2 attr=16`, smLID, gid)
	var found string
	for _, l := range strings.Split(d.logText(), "\n") {
		if strings.Contains(l, want) {
			found = l
		}
	}
	if found == "" {
		t.Errorf("vhcrd logged no %s", want)
	}
	t.Logf("vhcrd on the guest's BM Set: %s", found)
	m := d.metrics(t)
	if n := m.sum("vhcrd_traps_sent_total", map[string]string{"trap": "259"}); n < 1 {
		t.Errorf("no Trap 259 sent (traps %v)", m.byLabel("vhcrd_traps_sent_total", "trap", nil))
	}
	t.Logf("traps sent %v, key violations %v", m.byLabel("vhcrd_traps_sent_total", "trap", nil), m.byLabel("vhcrd_key_violations_total", "key", nil))
	// Trap 257, from the Get with an invalid P_Key: OpenSM logs it.
	osmLogs(t, d, regexp.MustCompile(`num:257 \(Bad P_Key\)`), "Bad P_Key trap")
	t.Logf("OpenSM on the guest's MAD with an invalid P_Key:\n%s", d.osm.lines(regexp.MustCompile(`Bad P_Key`), 4))
}

// diagOutput is what diag name printed, one line each.
func diagOutput(lines []string, name string) (out string, result string) {
	var b strings.Builder
	pre := "vmtest: diag " + name + "| "
	for _, l := range lines {
		if s, ok := strings.CutPrefix(l, pre); ok {
			b.WriteString(s + "\n")
		}
		if s, ok := strings.CutPrefix(l, DiagPrefix+name+": "); ok {
			result = s
		}
	}
	return b.String(), result
}

// checkDiags asserts the saquery answers, as cmd/vhcrd's checkSMAndSA
// asserts them for the host's saquery, and that vhcrd counted the tunnel's
// MADs both ways.
func checkDiags(t *testing.T, lines []string, d *vhcrdProc) {
	want := map[string][]string{
		"saquery NodeRecord": {fmt.Sprintf("lid.....................%d\n", smLID), "node_type...............Channel Adapter",
			"port_guid...............0x0002c90300a0b0c1", "NodeDescription.........vhcrd model HCA"},
		"saquery PathRecord": {"PathRecord dump:", fmt.Sprintf("dlid....................%d\n", otherLID),
			fmt.Sprintf("slid....................%d\n", smLID), "sgid....................fe80::2:c903:a0:b0c1", "dgid....................fe80::2:c903:a0:b0c2"},
	}
	checkDiagLines(t, lines, tunnelDiags()[:2], want, "the guest")
	out, res := diagOutput(lines, "smpquery refused")
	t.Logf("smpquery in the guest without SMI (%s):\n%s", res, out)
	if strings.HasPrefix(res, "ok") {
		t.Errorf("an SMP from a VF without SMI was answered")
	}
	out, res = diagOutput(lines, "perfquery refused")
	t.Logf("perfquery of the switch in the guest without tunnel_classes (%s):\n%s", res, out)
	if strings.HasPrefix(res, "ok") {
		t.Errorf("a PerfMgt MAD from a VF without tunnel_classes was answered")
	}
	m := d.metrics(t)
	for _, r := range []string{"smi", "class"} {
		if n := m.sum("vhcrd_mad_tunnel_drops_total", map[string]string{"reason": r}); n < 1 {
			t.Errorf("the refused %s MAD was not counted (drops by reason %v)", r, m.byLabel("vhcrd_mad_tunnel_drops_total", "reason", nil))
		}
	}
	outN := m.sum("vhcrd_mad_tunnel_mads_total", map[string]string{"direction": "out"})
	in := m.sum("vhcrd_mad_tunnel_mads_total", map[string]string{"direction": "in"})
	t.Logf("tunnel: %v MADs out, %v in; drops by reason %v", outN, in, m.byLabel("vhcrd_mad_tunnel_drops_total", "reason", nil))
	if outN < 2 || in < 2 {
		t.Errorf("the tunnel did not count the guest's MADs both ways: out %v, in %v", outN, in)
	}
}

// checkMKeyTrap asserts that the SMI guest's Set with a wrong M_Key was
// not answered and that OpenSM logged the port's Bad M_Key trap.
func checkMKeyTrap(t *testing.T, lines []string, d *vhcrdProc) {
	out, res := diagOutput(lines, "ibportstate wrong M_Key")
	t.Logf("ibportstate with a wrong M_Key in the SMI guest (%s):\n%s", res, out)
	if strings.HasPrefix(res, "ok") {
		t.Errorf("a PortInfo Set with a wrong M_Key was answered")
	}
	// OpenSM got the port's trap: its log is another process's file.
	osmLogs(t, d, regexp.MustCompile(`Bad M_Key`), "Bad M_Key notice")
	t.Logf("OpenSM on the guest's SMP:\n%s", d.osm.lines(regexp.MustCompile(`Bad M_Key|[Rr]epress`), 6))
}

// osmLogs waits up to 20 s for OpenSM's log (another process's file, which
// it flushes line by line) to have a line matching re, what.
func osmLogs(t *testing.T, d *vhcrdProc, re *regexp.Regexp, what string) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if d.osm.lines(re, 1) != "" {
			return
		}
	}
	t.Errorf("no %s in OpenSM's log:\n%s", what, d.osm.lines(regexp.MustCompile(`[Tt]rap|[Nn]otice`), 10))
}

// checkDiagLines asserts that each of diags ended ok and printed the lines
// want names for it, and logs what it printed in who.
func checkDiagLines(t *testing.T, lines []string, diags []Diag, want map[string][]string, who string) {
	t.Helper()
	for _, dg := range diags {
		out, res := diagOutput(lines, dg.Name)
		t.Logf("%s in %s (%s):\n%s", dg.Name, who, res, out)
		if !strings.HasPrefix(res, "ok") {
			t.Errorf("%s: %s", dg.Name, res)
			continue
		}
		for _, w := range want[dg.Name] {
			if !strings.Contains(out, w) {
				t.Errorf("%s lacks %q", dg.Name, w)
			}
		}
	}
}

// checkIPoIB asserts the client's ping of the server's ib0 got its
// replies, and logs ping's lines and the tunnel's counters.
func checkIPoIB(t *testing.T, lines []string, d *vhcrdProc) {
	var out []string
	var res string
	for _, l := range lines {
		if s, ok := strings.CutPrefix(l, "vmtest: ipoib ping| "); ok {
			out = append(out, s)
		}
		if s, ok := strings.CutPrefix(l, IPoIBPrefix); ok {
			res = s
		}
	}
	t.Logf("ping over IPoIB (%s):\n%s", res, strings.Join(out, "\n"))
	m := d.metrics(t)
	t.Logf("tunnel drops by reason %v; alias GUID records %v; packets dropped %v", m.byLabel("vhcrd_mad_tunnel_drops_total", "reason", nil),
		m.byLabel("vhcrd_alias_guid_records_total", "result", nil), m.byLabel("vhcrd_packets_dropped_total", "reason", nil))
	if !strings.HasPrefix(res, "ok") {
		t.Errorf("ping between the guests' ib0: %s", res)
	}
	if !regexp.MustCompile(`3 packets transmitted, 3 received`).MatchString(strings.Join(out, "\n")) {
		t.Errorf("ping did not get its 3 replies")
	}
}

// checkRping holds rping's run between the guests: both ends ok, the
// client's RpingCount validated pings and the server's as many, and the
// tunnel's comm IDs (the REQ's and the REP's at least).
func checkRping(t *testing.T, srv, cli []string, d *vhcrdProc) {
	count := func(lines []string, prefix string) (int, string, []string) {
		n, res := 0, ""
		var out []string
		for _, l := range lines {
			if s, ok := strings.CutPrefix(l, "vmtest: rping| "); ok {
				out = append(out, s)
				if strings.HasPrefix(s, prefix+"rdma-ping-") {
					n++
				}
			}
			if s, ok := strings.CutPrefix(l, CMPrefix+"rping: "); ok {
				res = s
			}
		}
		return n, res, out
	}
	sn, sres, sout := count(srv, "server ping data: ")
	cn, cres, cout := count(cli, "ping data: ")
	t.Logf("rping server (%s), %d pings:\n%s", sres, sn, strings.Join(lastN(sout, 8), "\n"))
	t.Logf("rping client (%s), %d pings:\n%s", cres, cn, strings.Join(lastN(cout, 8), "\n"))
	m := d.metrics(t)
	t.Logf("tunnel: comm IDs %v, MADs %v, drops by reason %v", m.sum("vhcrd_mad_tunnel_cm_ids_total", nil),
		m.byLabel("vhcrd_mad_tunnel_mads_total", "direction", nil), m.byLabel("vhcrd_mad_tunnel_drops_total", "reason", nil))
	if !strings.HasPrefix(sres, "ok") || !strings.HasPrefix(cres, "ok") {
		t.Errorf("rping: server %q, client %q", sres, cres)
	}
	if sn != RpingCount || cn != RpingCount {
		t.Errorf("rping: %d server and %d client pings, want %d each", sn, cn, RpingCount)
	}
	if n := m.sum("vhcrd_mad_tunnel_cm_ids_total", nil); n < 2 {
		t.Errorf("%v comm IDs given by the tunnel, want the REQ's and the REP's at least", n)
	}
}

// lastN is the last n of lines.
func lastN(lines []string, n int) []string {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

// cmLines are the lines of CM run name in lines, and its result.
func cmLines(lines []string, name string) ([]string, string) {
	var out []string
	res := ""
	for _, l := range lines {
		if s, ok := strings.CutPrefix(l, "vmtest: "+name+"| "); ok {
			out = append(out, s)
		}
		if s, ok := strings.CutPrefix(l, CMPrefix+name+": "); ok {
			res = s
		}
	}
	return out, res
}

// bwLine is perftest's result row: bytes, iterations, peak and average
// bandwidth (MB/sec), message rate.
var bwLine = regexp.MustCompile(`^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$`)

// checkWriteBW holds ib_write_bw -R between the guests: both ends ok, the
// connection made by the RDMA CM, a result row with iterations and a
// nonzero average bandwidth.
func checkWriteBW(t *testing.T, srv, cli []string) {
	sout, sres := cmLines(srv, "ib_write_bw -R")
	cout, cres := cmLines(cli, "ib_write_bw -R")
	t.Logf("ib_write_bw -R server (%s):\n%s", sres, strings.Join(lastN(sout, 6), "\n"))
	t.Logf("ib_write_bw -R client (%s):\n%s", cres, strings.Join(lastN(cout, 10), "\n"))
	if !strings.HasPrefix(sres, "ok") || !strings.HasPrefix(cres, "ok") {
		t.Errorf("ib_write_bw -R: server %q, client %q", sres, cres)
	}
	if !hasLine(cout, "Data ex. method : rdma_cm") {
		t.Errorf("ib_write_bw -R: the connection was not made by the RDMA CM")
	}
	var row []string
	for _, l := range cout {
		if m := bwLine.FindStringSubmatch(l); m != nil {
			row = m
		}
	}
	if row == nil || row[2] == "0" || row[4] == "0.00" {
		t.Fatalf("ib_write_bw -R: no result row with iterations and bandwidth (%q)", row)
	}
	t.Logf("ib_write_bw -R: %s-byte RDMA WRITEs, %s iterations, average %s MB/sec, %s Mpps", row[1], row[2], row[4], row[5])
}
