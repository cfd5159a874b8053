package vmtest

import (
	"os"
	"strings"
	"testing"
)

// testdata/ibv_devinfo-v.txt is the console of a verbs guest's `ibv_devinfo
// -v` (Debian's ibverbs-utils 44.0 against vhcrd, OpenSM on port 1): the
// parser finds the device's and each port's fields, and the checks of
// TestLinuxMLX4Verbs accept it.
func TestDevinfoParse(t *testing.T) {
	b, err := os.ReadFile("testdata/ibv_devinfo-v.txt")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	d := parseDevinfo(lines)
	for k, want := range map[string]string{"hca_id": "mlx4_0", "max_qp": "86666", "max_qp_rd_atom": "16", "num_comp_vectors": "2"} {
		if d.dev[k] != want {
			t.Errorf("device %s %q, want %q", k, d.dev[k], want)
		}
	}
	if len(d.ports) != 2 {
		t.Fatalf("ports %v, want 1 and 2", d.ports)
	}
	if d.ports["2"]["port_lid"] == d.ports["1"]["port_lid"] {
		t.Errorf("ports 1 and 2 both have LID %s: the port sections ran together", d.ports["1"]["port_lid"])
	}
	if _, ok := d.dev["state"]; ok {
		t.Error("a port's state was taken as the device's")
	}
	checkDevinfo(t, lines)
}

// A pingpong that passes as rdma-core prints it (its result line and each
// end's throughput and latency lines, in one guest and in a pair) passes
// checkPingpongs, with no trace read.
func TestCheckPingpongsAcceptsAPass(t *testing.T) {
	pps := DefaultPingpongs()
	ends := func(pp Pingpong, who ...string) []string {
		var l []string
		for _, end := range who {
			l = append(l,
				"vmtest: "+pp.Name+" "+end+"|   local address:  LID 0x0001, QPN 0x000848, PSN 0x13cc16, GID ::",
				"vmtest: "+pp.Name+" "+end+"| 8192000 bytes in 0.31 seconds = 211.40 Mbit/sec",
				"vmtest: "+pp.Name+" "+end+"| 1000 iters in 0.31 seconds = 310.00 usec/iter")
		}
		return append(l, PingpongPrefix+pp.Name+": ok in 812ms")
	}
	var one, srv, cli []string
	for _, pp := range pps {
		one = append(one, ends(pp, "server", "client")...)
		srv = append(srv, ends(pp, "server")...)
		cli = append(cli, ends(pp, "client")...)
	}
	v := &vhcrdProc{trace: "testdata/no-such-trace"}
	checkPingpongs(t, pps, map[string][]string{"": one}, v, nil)
	checkPingpongs(t, pps, map[string][]string{"server": srv, "client": cli}, v, nil)
}
