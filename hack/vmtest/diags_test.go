package vmtest

import (
	"fmt"
	"strings"
	"testing"
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

func tunnelDiags() []Diag {
	dev := []string{"-C", "mlx4_0", "-P", "1"}
	return []Diag{
		{Name: "saquery NodeRecord", Tool: "/usr/sbin/saquery", Args: append(append([]string{}, dev...), fmt.Sprint(smLID))},
		{Name: "saquery PathRecord", Tool: "/usr/sbin/saquery", Args: append(append([]string{}, dev...), "--src-to-dst", fmt.Sprintf("%d:%d", smLID, otherLID))},
	}
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
	for _, dg := range tunnelDiags() {
		out, res := diagOutput(lines, dg.Name)
		t.Logf("%s in the guest (%s):\n%s", dg.Name, res, out)
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
	m := d.metrics(t)
	out := m.sum("vhcrd_mad_tunnel_mads_total", map[string]string{"direction": "out"})
	in := m.sum("vhcrd_mad_tunnel_mads_total", map[string]string{"direction": "in"})
	t.Logf("tunnel: %v MADs out, %v in; drops by reason %v", out, in, m.byLabel("vhcrd_mad_tunnel_drops_total", "reason", nil))
	if out < 2 || in < 2 {
		t.Errorf("the tunnel did not count the guest's MADs both ways: out %v, in %v", out, in)
	}
}
