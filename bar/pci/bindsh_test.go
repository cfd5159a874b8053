package pci_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/bar/pci/pcitest"
)

// hack/vfio-bind.sh does for shell users what Binder does; run it against a
// fake sysfs tree for the cases a tree of plain files can answer.
func TestBindScript(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	tr := pcitest.New(t)
	tr.Add(pcitest.Dev{Addr: "0000:00:01.0", Vendor: 0x1af4, Device: 0x1110, Driver: "vfio-pci", Group: 1})
	tr.Add(pcitest.Dev{Addr: "0000:00:02.0", Vendor: 0x8086, Device: 0x10d3, Driver: "e1000e", Group: -1})
	run := func(args ...string) (string, error) {
		cmd := exec.Command("bash", append([]string{"../../hack/vfio-bind.sh"}, args...)...)
		cmd.Env = append(os.Environ(), "SYSFS="+tr.Root)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, c := range []struct {
		args []string
		ok   bool
		say  string
	}{
		{[]string{"0000:00:09.0"}, false, "no such device"},
		{[]string{"nonsense"}, false, "want a PCI address"},
		{[]string{"00:01.0"}, true, "already bound to vfio-pci"},
		{[]string{"0000:00:02.0"}, false, "no IOMMU group"},
	} {
		out, err := run(c.args...)
		if (err == nil) != c.ok || !strings.Contains(out, c.say) {
			t.Errorf("vfio-bind.sh %v: %v, want ok=%v and %q:\n%s", c.args, err, c.ok, c.say, out)
		}
	}
	out, err := run("-u", "0000:00:02.0")
	if err != nil {
		t.Fatalf("-u: %v\n%s", err, out)
	}
	if got := tr.Read("bus/pci/drivers/e1000e/unbind"); got != "0000:00:02.0\n" {
		t.Errorf("unbind file %q", got)
	}
	if got := tr.Read("bus/pci/devices/0000:00:02.0/driver_override"); got != "\n" {
		t.Errorf("driver_override %q", got)
	}
	if got := tr.Read("bus/pci/drivers_probe"); got != "0000:00:02.0\n" {
		t.Errorf("drivers_probe %q", got)
	}
}
