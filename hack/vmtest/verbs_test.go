package vmtest

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/u-root/u-root/pkg/cpio"

	"github.com/vhcrd/vhcrd/hack/testenv"
	"github.com/vhcrd/vhcrd/vhcr/master/trace"
)

// The verbs tier: on a subnet OpenSM brought up (fabric_test.go), Debian's
// unmodified rdma-core userspace (libibverbs, the
// mlx4 provider of ibverbs-providers, ibverbs-utils; glibc and the loader
// Debian's too, from hack/fetch-vmuserspace.sh) in the Linux-driver guest:
// `ibv_devinfo -v` against mlx4_0, then ibv_rc_pingpong and
// ibv_ud_pingpong with and without -e, server and client on one VF, and
// between two guests, each with its own VF of one vhcrd, their
// out-of-band TCP over a QEMU socket netdev on 127.0.0.1. The pingpongs
// are their own subtests ("pingpong/..."): they need vhcrd's data path
// (work requests, CQEs); a run that does not end within the time limit is
// killed and reported with its last lines and the verbs commands vhcrd
// traced for it.

const (
	// pingpongLimit bounds each pingpong (both ends). 1000 round trips of
	// 4 KiB take well under a second of TCG against a data path; it stays
	// under mlx4Silence, as the ends say nothing while they wait.
	pingpongLimit = 15 * time.Second
	// verbsBootTimeout is a verbs guest's hard limit: the boot, the bind,
	// ibv_devinfo and four pingpongs that may each run to their limit.
	verbsBootTimeout = 4 * time.Minute
	// netAddr0 and netAddr1 are the two guests' virtio-net addresses.
	netAddr0, netAddr1 = "10.77.0.1", "10.77.0.2"
)

// ipoibAddr is each guest's ib0 address, by its virtio-net address.
var ipoibAddr = map[string]string{netAddr0: "10.78.0.1", netAddr1: "10.78.0.2"}

// pingpongResult is "N bytes in T seconds = X Mbit/sec" and "N iters in T
// seconds = U usec/iter", each end's.
var (
	pingpongBW  = regexp.MustCompile(`\d+ bytes in [\d.]+ seconds = [\d.]+ Mbit/sec`)
	pingpongLat = regexp.MustCompile(`\d+ iters in [\d.]+ seconds = [\d.]+ usec/iter`)
)

// setupVerbs is setupMLX4 with the rdma-core userspace's records.
func setupVerbs(t *testing.T) (*mlx4Env, []cpio.Record) {
	e := setupMLX4(t)
	root := filepath.Join(e.root, ".cache", "vmuser", "root")
	if dir := os.Getenv("VHCRD_VMTEST_USERSPACE"); dir != "" {
		root = dir
	}
	if _, err := os.Stat(filepath.Join(root, "usr/bin/ibv_devinfo")); err != nil {
		testenv.SkipOrFail(t, "verbs tier: no rdma-core userspace in %s (run hack/fetch-vmuserspace.sh)", root)
	}
	recs, paths, err := Userspace(root, VerbsFiles)
	if err != nil {
		t.Fatal(err)
	}
	pk, _ := os.ReadFile(filepath.Join(filepath.Dir(root), "packages"))
	t.Logf("guest userspace: %d files from %s (Debian, unmodified: %s)", len(paths), root, strings.Join(strings.Fields(strings.ReplaceAll(string(pk), "\n", ",")), " "))
	return e, recs
}

// verbsConfig is the verbs scenario with role's pingpongs.
func verbsConfig(role string, nc *NetConfig) MLX4Config {
	cfg := DefaultMLX4Config()
	cfg.Scenario = ScenarioVerbs
	cfg.Verbs = VerbsConfig{Devinfo: role != "client", Pingpongs: DefaultPingpongs(), TimeLimitMS: int(pingpongLimit / time.Millisecond), Role: role, Net: nc}
	cfg.Modules = append(cfg.Modules, "ib_umad")
	switch role {
	case "":
		cfg.Verbs.Diags = tunnelDiags()
	case "client":
		cfg.Verbs.Diags = smiDiags()
		cfg.Verbs.BM = bmRun()
	}
	if nc != nil {
		cfg.Modules = append(cfg.Modules, "virtio_pci", "virtio_net", "ib_ipoib", "rdma_ucm")
		cfg.Verbs.IPoIB = &NetConfig{Addr: ipoibAddr[nc.Addr], Prefix: 24, Peer: ipoibAddr[nc.Peer]}
		cfg.Verbs.CM = DefaultCMRuns()
	}
	return cfg
}

// consoleLog keeps every "vmtest: " line of a guest across steps.
type consoleLog struct{ lines []string }

func (c *consoleLog) keep(v *vm) func() {
	return func() { c.lines = append(c.lines, v.said...) }
}

func TestLinuxMLX4Verbs(t *testing.T) {
	base, recs := setupVerbs(t)
	// One vhcrd for both scenarios: VF 0 and VF 1 are guests', its ports
	// fresh until OpenSM brings them up.
	e := *base
	e.vhcrd = base.startVerbsFabric(t)
	t0 := time.Now()
	defer func() { t.Logf("verbs tier: %.1fs of scenarios (after the build)", time.Since(t0).Seconds()) }()

	// One guest, both ends of every pingpong on its VF.
	t.Run("onevf", func(t *testing.T) {
		cfg := verbsConfig("", nil)
		v := e.bootWith(t, cfg, bootOpts{extra: recs, timeout: verbsBootTimeout})
		var log consoleLog
		v.step("bound 1", log.keep(v))
		v.step("devinfo", func() {
			log.keep(v)()
			t.Run("devinfo", func(t *testing.T) { checkDevinfo(t, log.lines) })
			v.tolerate = true // the pingpongs' and diags' own failure lines are theirs to report
		})
		v.step("diags", func() {
			log.keep(v)()
			t.Run("diags", func(t *testing.T) { checkDiags(t, log.lines, e.vhcrd) })
		})
		traceFrom := map[string]int64{}
		for _, pp := range cfg.Verbs.Pingpongs {
			v.step("pingpong "+pp.Name, func() {
				log.keep(v)()
				traceFrom[pp.Name] = traceSize(e.vhcrd)
			})
		}
		v.step("pingpongs", func() {
			log.keep(v)()
			v.tolerate = false
			t.Run("pingpong", func(t *testing.T) {
				checkPingpongs(t, cfg.Verbs.Pingpongs, map[string][]string{"": log.lines}, e.vhcrd, traceFrom)
			})
		})
		v.step("unbound 1", func() { e.vhcrd.assertReleased(t, guestVF, "unbind after the pingpongs") })
		took := v.finish()
		t.Logf("onevf: %.1fs of QEMU", took.Seconds())
	})

	// Two guests, each with its own VF of one vhcrd, and a virtio-net
	// socket netdev between them: the server's ends in guest 0, the
	// client's in guest 1.
	t.Run("twoguests", func(t *testing.T) {
		if _, err := os.Stat(filepath.Join(e.mods, "virtio_net.ko")); err != nil {
			testenv.SkipOrFail(t, "two guests: no virtio_net.ko in %s (run hack/fetch-vmkernel.sh)", e.mods)
		}
		pe := e
		port := freePort(t)
		srvCfg := verbsConfig("server", &NetConfig{Addr: netAddr0, Prefix: 24, Peer: netAddr1})
		cliCfg := verbsConfig("client", &NetConfig{Addr: netAddr1, Prefix: 24, Peer: netAddr0})
		// The server's QEMU listens on the socket netdev; the client's
		// connects once the server's QEMU runs (QEMU opens the listening
		// socket before it starts the guest).
		srv := pe.bootWith(t, srvCfg, bootOpts{name: "verbs-server", extra: recs, timeout: verbsBootTimeout,
			qemuArgs: netdevArgs(fmt.Sprintf("listen=127.0.0.1:%d", port), "52:54:00:77:00:01")})
		srv.expect("vmtest: init at uptime")
		cli := pe.bootWith(t, cliCfg, bootOpts{name: "verbs-client", extra: recs, timeout: verbsBootTimeout,
			ram: pe.vhcrd.ram1, socket: pe.vhcrd.socket1,
			qemuArgs: netdevArgs(fmt.Sprintf("connect=127.0.0.1:%d", port), "52:54:00:77:00:02")})
		var sl, cl consoleLog
		srv.step("bound 1", sl.keep(srv))
		// The class drops before the SMI guest's diags (the onevf run's
		// are in the same vhcrd): its perfquery must add one.
		var classDrops float64
		cli.step("bound 1", func() {
			cl.keep(cli)()
			classDrops = pe.vhcrd.metrics(t).sum("vhcrd_mad_tunnel_drops_total", map[string]string{"reason": "class"})
		})
		srv.step("devinfo", sl.keep(srv))
		t.Run("devinfo", func(t *testing.T) { checkDevinfo(t, sl.lines) })
		cli.tolerate = true // a failing diag's lines are its own to report
		cli.step("diags", func() {
			cl.keep(cli)()
			cli.tolerate = false
			t.Run("smi", func(t *testing.T) { checkSMIDiags(t, cl.lines, pe.vhcrd, classDrops) })
		})
		// The TCP check over the socket netdev.
		srv.step("tcp listening", sl.keep(srv))
		cli.step("tcp dial", cl.keep(cli))
		srv.step("tcp", sl.keep(srv))
		cli.step("tcp", cl.keep(cli))
		t.Run("tcp", func(t *testing.T) {
			for _, c := range []struct {
				log        *consoleLog
				from, peer string
			}{{&sl, netAddr0, netAddr1}, {&cl, netAddr1, netAddr0}} {
				want := fmt.Sprintf("got %q", "hello from "+c.peer)
				if !hasLine(c.log.lines, want) {
					t.Errorf("guest %s: no TCP line %s from its peer", c.from, want)
				}
			}
		})
		// IPoIB: both guests' ib0 up (the broadcast group joined through
		// the tunnel, OpenSM's SA knowing each VF's alias GID), then the
		// client pings the server's ib0.
		srv.step("ipoib up", sl.keep(srv))
		cli.tolerate = true // a failing ping's lines are its own to report
		cli.step("ipoib up", cl.keep(cli))
		cli.step("ipoib", func() {
			cl.keep(cli)()
			cli.tolerate = false
			t.Run("ipoib", func(t *testing.T) { checkIPoIB(t, cl.lines, pe.vhcrd) })
		})
		srv.step("ipoib", sl.keep(srv))
		// rping over the RDMA CM: the CM's REQ, REP and RTU and the
		// DREQ/DREP cross the PF's tunnel (its comm ID remapping), the
		// pings are RDMA READs and WRITEs between the two VFs.
		srv.tolerate, cli.tolerate = true, true // a failing tool's lines are its own to report
		for _, c := range srvCfg.Verbs.CM {
			srv.step("cm listening "+c.Name, sl.keep(srv))
			cli.step("cm connect "+c.Name, cl.keep(cli))
			cli.step("cm "+c.Name, cl.keep(cli))
			srv.step("cm "+c.Name, sl.keep(srv))
		}
		srv.tolerate, cli.tolerate = false, false
		t.Run("rping", func(t *testing.T) { checkRping(t, sl.lines, cl.lines, pe.vhcrd) })
		t.Run("ib_write_bw -R", func(t *testing.T) { checkWriteBW(t, sl.lines, cl.lines) })
		srv.tolerate, cli.tolerate = true, true
		traceFrom := pairPingpongs(pe.vhcrd, srv, cli, &sl, &cl, srvCfg.Verbs.Pingpongs)
		srv.step("pingpongs", sl.keep(srv))
		cli.step("pingpongs", cl.keep(cli))
		srv.tolerate, cli.tolerate = false, false
		t.Run("pingpong", func(t *testing.T) {
			checkPingpongs(t, srvCfg.Verbs.Pingpongs, map[string][]string{"server": sl.lines, "client": cl.lines}, pe.vhcrd, traceFrom)
		})
		srv.step("unbound 1", func() { pe.vhcrd.assertReleased(t, guestVF, "unbind of the server's guest") })
		cli.step("unbound 1", func() { pe.vhcrd.assertReleased(t, bystanderVF, "unbind of the client's guest") })
		ts, tc := srv.finish(), cli.finish()
		t.Logf("twoguests: %.1fs and %.1fs of QEMU", ts.Seconds(), tc.Seconds())
	})

	// A guest's processes and then its QEMU killed mid-transfer beside a
	// guest whose transfer goes on (verbskill_test.go).
	t.Run("killguest", func(t *testing.T) { e.killGuest(t, recs) })
}

// pairPingpongs runs each pingpong between the server's guest srv and the
// client's cli (their console logs sl and cl): both wait at the
// pingpong's step, where nothing of it has run on either side, then the
// client connects once the server listens. It returns where vhcrd's trace
// was as each began.
func pairPingpongs(v *vhcrdProc, srv, cli *vm, sl, cl *consoleLog, pps []Pingpong) map[string]int64 {
	traceFrom := map[string]int64{}
	for _, pp := range pps {
		srv.expect("vmtest: wait pingpong " + pp.Name)
		cli.expect("vmtest: wait pingpong " + pp.Name)
		traceFrom[pp.Name] = traceSize(v)
		sl.keep(srv)()
		cl.keep(cli)()
		srv.goOn()
		cli.goOn()
		srv.step("listening "+pp.Name, sl.keep(srv))
		cli.step("connect "+pp.Name, cl.keep(cli))
	}
	return traceFrom
}

// goOn lets a guest waiting at a step (its "vmtest: wait" line read with
// expect) go on, as step does after its check.
func (v *vm) goOn() {
	v.t.Helper()
	v.said = v.said[:0]
	if _, err := io.WriteString(v.stdin, "go\n"); err != nil {
		v.t.Fatalf("writing go to the guest: %v", err)
	}
}

// netdevArgs is a virtio-net device on a QEMU socket netdev.
func netdevArgs(sock, mac string) []string {
	return []string{"-netdev", "socket,id=n0," + sock, "-device", "virtio-net-pci,netdev=n0,mac=" + mac}
}

func hasLine(lines []string, sub string) bool {
	for _, l := range lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

// devinfo is `ibv_devinfo -v` as the guest printed it: the lines before
// the first "port:" and each port's lines, "key: value" with blanks folded.
type devinfo struct {
	dev   map[string]string
	ports map[string]map[string]string
	text  string
}

func parseDevinfo(lines []string) devinfo {
	d := devinfo{dev: map[string]string{}, ports: map[string]map[string]string{}}
	var sb strings.Builder
	cur := d.dev
	for _, l := range lines {
		rest, ok := strings.CutPrefix(l, DevinfoPrefix)
		if !ok {
			continue
		}
		sb.WriteString(rest + "\n")
		k, val, ok := strings.Cut(strings.TrimSpace(rest), ":")
		if !ok {
			continue
		}
		k, val = strings.TrimSpace(k), strings.Join(strings.Fields(val), " ")
		if k == "port" {
			cur = map[string]string{}
			d.ports[val] = cur
			continue
		}
		if _, dup := cur[k]; !dup {
			cur[k] = val
		}
	}
	d.text = sb.String()
	return d
}

// checkDevinfo asserts ibv_devinfo -v's identity and port lines, and the
// device attributes mlx4_ib_query_device derives from vhcrd's
// QUERY_DEV_CAP and QUERY_FUNC_CAP for a VF (values of the default config,
// each with its source).
func checkDevinfo(t *testing.T, lines []string) {
	d := parseDevinfo(lines)
	if d.text == "" {
		t.Fatal("the guest printed no ibv_devinfo -v output")
	}
	t.Logf("ibv_devinfo -v in the guest:\n%s", d.text)
	p1 := d.ports["1"]
	if p1 == nil {
		t.Fatalf("ibv_devinfo -v shows no port 1")
	}
	for _, c := range []struct {
		m         map[string]string
		key, want string
	}{
		{d.dev, "hca_id", "mlx4_0"},
		{d.dev, "transport", "InfiniBand (0)"},
		{d.dev, "vendor_id", "0x02c9"},
		// mlx4_ib_query_device: the PCI device's id, here QEMU's
		// ivshmem-doorbell 1af4:1110 (a ConnectX-3 VF is 0x1004, 4100).
		{d.dev, "vendor_part_id", "4368"},
		{d.dev, "board_id", "MT_1090110019"},
		{d.dev, "phys_port_cnt", "2"},
		{p1, "state", "PORT_ACTIVE (4)"},
		{p1, "link_layer", "InfiniBand"},
		{p1, "max_mtu", "4096 (5)"},
		{p1, "active_mtu", "4096 (5)"},
	} {
		if got := c.m[c.key]; got != c.want {
			t.Errorf("ibv_devinfo -v: %s %q, want %q", c.key, got, c.want)
		}
	}
	if lid := p1["port_lid"]; lid == "" || lid == "0" {
		t.Errorf("ibv_devinfo -v: port 1 port_lid %q, want a nonzero LID", lid)
	}
	// OpenSM runs on port 1: the master SM's LID is the port's own.
	if p1["sm_lid"] != p1["port_lid"] {
		t.Errorf("ibv_devinfo -v: port 1 sm_lid %q, port_lid %q: want OpenSM (on port 1) as the master SM", p1["sm_lid"], p1["port_lid"])
	}
	for key, want := range devinfoWant {
		if got := d.dev[key]; got != want {
			t.Errorf("ibv_devinfo -v: %s %q, want %q", key, got, want)
		}
	}
}

// devinfoWant are ibv_devinfo -v's device attributes against vhcrd's
// default config, as mlx4_ib_query_device (Linux 6.1) computes them for a
// VF: the quotas of QUERY_FUNC_CAP and the limits of QUERY_DEV_CAP.
var devinfoWant = map[string]string{
	"max_mr_size": "0xffffffffffffffff", // ~0ull
	"max_qp_wr":   "16351",              // max_wqes 16384 - MLX4_IB_SQ_MAX_SPARE (33)
	"max_sge":     "32",                 // min(max_sq_sg, max_rq_sg)
	"max_sge_rd":  "30",
	"max_cqe":     "4194303", // max_cqes: 2^22 - 1
	"atomic_cap":  "ATOMIC_HCA (1)",
	"max_ah":      "2147483647", // INT_MAX
	"max_srq_sge": "31",
	// ConnectX-3 firmware's limits behind Linux's PF (vhcr/hca's
	// TestVFDeviceAttributesAsConnectX3 decodes them as the driver does).
	"page_size_cap":       "0xfffffe00", // QUERY_DEV_CAP log_pg_sz 9
	"max_srq_wr":          "16383",      // max_srq_sz 2^14, less one
	"max_qp_init_rd_atom": "128",        // max_requester_per_qp 2^7
	"max_qp_rd_atom":      "16",         // QUERY_HCA log_rd_per_qp 4, as the PF's INIT_HCA
	"max_res_rd_atom":     "1386656",    // max_qp_rd_atom * max_qp
	// The VF's quotas of QUERY_FUNC_CAP, as Linux's PF computes them
	// (mlx4_init_quotas: half the free objects plus the VF's guaranteed
	// share, total / (2 * (num_vfs + 1))), for --num-vfs 2 and the
	// default config's log_qps 17, log_cqs 16, log_mpts 19, log_srqs 16.
	"max_qp":  "86666",
	"max_cq":  "43605",  // (65536 - 128 reserved) * 2/3
	"max_mr":  "349514", // (524288 - 16 reserved) * 2/3
	"max_srq": "43648",  // (65536 - 64 reserved) * 2/3
	// A VF has no multicast groups of its own; the attach limit is
	// QUERY_HCA's entry size (slave_adjust_steering_mode).
	"max_mcast_grp":       "0",
	"max_mcast_qp_attach": "120",
	"local_ca_ack_delay":  "15",
}

// checkPingpongs asserts each pingpong's result and throughput and latency
// lines, one subtest each; a pingpong that did not pass is reported with
// the verbs commands vhcrd traced from traceFrom[its name] to the next
// pingpong's.
func checkPingpongs(t *testing.T, pps []Pingpong, logs map[string][]string, v *vhcrdProc, traceFrom map[string]int64) {
	for i, pp := range pps {
		// The pingpong's commands end where the next one's begin.
		traceTo := int64(-1)
		if i+1 < len(pps) {
			traceTo = traceFrom[pps[i+1].Name]
		}
		t.Run(strings.ReplaceAll(pp.Name, " ", ""), func(t *testing.T) {
			failed := false
			defer func() {
				if failed {
					t.Logf("vhcrd's verbs commands during %s:\n%s", pp.Name, verbsTrace(v, traceFrom[pp.Name], traceTo))
				}
			}()
			for _, who := range []string{"", "server", "client"} {
				lines, ok := logs[who]
				if !ok {
					continue
				}
				res := ""
				var out []string
				for _, l := range lines {
					if r, ok := strings.CutPrefix(l, PingpongPrefix+pp.Name+": "); ok {
						res = r
					}
					for _, end := range []string{"server", "client"} {
						if r, ok := strings.CutPrefix(l, "vmtest: "+pp.Name+" "+end+"| "); ok && (pingpongBW.MatchString(r) || pingpongLat.MatchString(r)) {
							out = append(out, end+": "+r)
						}
					}
				}
				where := "the guest"
				if who != "" {
					where = "the " + who + "'s guest"
				}
				if !strings.HasPrefix(res, "ok") {
					if res == "" {
						res = "no result line"
					}
					t.Errorf("%s in %s: %s", pp.Name, where, res)
					failed = true
					continue
				}
				for _, l := range out {
					t.Logf("%s (%s): %s", pp.Name, where, l)
				}
				ends := []string{"server", "client"}
				if who != "" {
					ends = []string{who}
				}
				for _, end := range ends {
					bw, lat := false, false
					for _, l := range out {
						if strings.HasPrefix(l, end+": ") {
							bw = bw || pingpongBW.MatchString(l)
							lat = lat || pingpongLat.MatchString(l)
						}
					}
					if !bw || !lat {
						t.Errorf("%s in %s: the %s printed no throughput and latency lines (have %q)", pp.Name, where, end, out)
						failed = true
					}
				}
			}
		})
	}
}

// traceSize is how far vhcrd's trace file is written now.
func traceSize(v *vhcrdProc) int64 {
	fi, err := os.Stat(v.trace)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// verbsOpcodes are the commands the verbs of a pingpong issue through
// mlx4_ib: PD and MR, CQ, QP and its transitions, and their teardown.
var verbsOpcodes = regexp.MustCompile(`_CQ|_QP|_MPT|_MTT|WRITE_MTT|ALLOC_RES|FREE_RES|_SRQ|MAD_IFC`)

// verbsTrace is the verbs commands of vhcrd's trace from byte off to byte
// end (-1: to its end), as text.
func verbsTrace(v *vhcrdProc, off, end int64) string {
	b, err := os.ReadFile(v.trace)
	if err != nil {
		return err.Error()
	}
	if end >= 0 && end < int64(len(b)) {
		b = b[:end]
	}
	if off > int64(len(b)) {
		off = 0
	}
	var out []byte
	n, shown := 0, 0
	for _, l := range bytes.Split(b[off:], []byte("\n")) {
		e, err := trace.ParseJSON(bytes.TrimSpace(l))
		if err != nil || e.Kind != "post" || !verbsOpcodes.MatchString(e.Opcode) {
			continue
		}
		n++
		if e.Opcode == "MAD_IFC" || shown >= 80 {
			continue
		}
		shown++
		out = trace.AppendText(out, &e)
	}
	if n == 0 {
		return "(none: the trace has no CQ, QP or MPT command since then)"
	}
	return fmt.Sprintf("%s(%d records, MAD_IFC and past the 80th not shown)", out, n)
}

// freePort is a TCP port on 127.0.0.1 that nothing listens on now (the
// server's QEMU listens on it next).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
