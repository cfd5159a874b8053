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
