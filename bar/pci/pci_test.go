package pci_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/u-root/u-root/pkg/kmodule"
	"github.com/vhcrd/vhcrd/bar/pci"
	"github.com/vhcrd/vhcrd/bar/pci/pcitest"
)

func tree(t *testing.T) *pcitest.Tree {
	tr := pcitest.New(t)
	tr.Add(pcitest.Dev{Addr: "0000:00:01.0", Vendor: 0x1af4, Device: 0x1110, Class: 0x050000, Group: 1,
		BARs: []pcitest.BAR{{Index: 0, Size: 256}, {Index: 2, Size: 1 << 20, Flags: pci.IORESOURCE_MEM | pci.IORESOURCE_MEM_64 | pci.IORESOURCE_PREFETCH, File: true}}})
	tr.Add(pcitest.Dev{Addr: "0000:03:00.0", Vendor: 0x15b3, Device: 0x1003, Class: 0x028000, Driver: "mlx4_core", Group: 7, TotalVFs: 8,
		VFs:  []string{"0000:03:00.1", "0000:03:00.2"},
		BARs: []pcitest.BAR{{Index: 0, Size: 1 << 20}, {Index: 4, Size: 32, Flags: pci.IORESOURCE_IO}}})
	for _, vf := range []string{"0000:03:00.1", "0000:03:00.2"} {
		tr.Add(pcitest.Dev{Addr: vf, Vendor: 0x15b3, Device: 0x1004, Class: 0x028000, Driver: "vfio-pci", Group: 8, VFIODev: "vfio0", PhysFn: "0000:03:00.0",
			BARs: []pcitest.BAR{{Index: 2, Size: 8 << 20, Flags: pci.IORESOURCE_MEM | pci.IORESOURCE_MEM_64 | pci.IORESOURCE_PREFETCH}}})
	}
	return tr
}

func TestDevices(t *testing.T) {
	tr := tree(t)
	devs, err := pci.Devices(tr.Root)
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 4 {
		t.Fatalf("got %d devices", len(devs))
	}
	iv := devs[0]
	if iv.Addr != "0000:00:01.0" || iv.Vendor != 0x1af4 || iv.DeviceID != 0x1110 || iv.Driver != "" || iv.IOMMUGroup != 1 {
		t.Errorf("ivshmem: %+v", iv)
	}
	if len(iv.BARs) != 2 || iv.BARs[1].Index != 2 || iv.BARs[1].Size() != 1<<20 || !iv.BARs[1].Mappable() || iv.BARs[1].Kind() != "mem64 pref" {
		t.Errorf("ivshmem BARs: %+v", iv.BARs)
	}
	pf := devs[1]
	if pf.SRIOV == nil || pf.SRIOV.NumVFs != 2 || pf.SRIOV.TotalVFs != 8 || strings.Join(pf.SRIOV.VFs, ",") != "0000:03:00.1,0000:03:00.2" {
		t.Errorf("PF SR-IOV: %+v", pf.SRIOV)
	}
	if pf.BARs[1].IsIO() != true || pf.BARs[1].Mappable() {
		t.Errorf("io BAR: %+v", pf.BARs[1])
	}
	vf := devs[2]
	if vf.PhysFn != "0000:03:00.0" || vf.Driver != "vfio-pci" || vf.VFIODev != "vfio0" || vf.SRIOV != nil {
		t.Errorf("VF: %+v", vf)
	}
	var buf bytes.Buffer
	if err := pci.WriteTable(&buf, devs); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"1af4:1110", "2:1M mem64 pref*", "PF 2/8 VFs", "VF of 0000:03:00.0", "4:32 io", "8 vfio0", "mlx4_core"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestNormalizeAddr(t *testing.T) {
	for in, want := range map[string]string{"00:01.0": "0000:00:01.0", "0000:AF:1f.7": "0000:af:1f.7"} {
		if got, err := pci.NormalizeAddr(in); err != nil || got != want {
			t.Errorf("%q: %q %v", in, got, err)
		}
	}
	for _, in := range []string{"", "1.0", "0000:00:20.0", "0000:00:01.8", "zz:00.0"} {
		if _, err := pci.NormalizeAddr(in); !errors.Is(err, pci.ErrBadAddress) {
			t.Errorf("%q: %v", in, err)
		}
	}
}

func TestMissingDevice(t *testing.T) {
	tr := tree(t)
	_, err := pci.Lookup(tr.Root, "0000:00:09.0")
	if !errors.Is(err, pci.ErrNoDevice) || !strings.Contains(err.Error(), "0000:00:09.0") || !strings.Contains(err.Error(), "vhcrd devices") {
		t.Fatalf("err = %v", err)
	}
	if _, err := pci.Resource(tr.Root, "0000:00:01.0", 1); !errors.Is(err, pci.ErrNoResource) {
		t.Fatalf("BAR1: %v", err)
	}
	if got, err := pci.Find(tr.Root, 0x1af4, 0x1110); err != nil || len(got) != 1 || got[0] != "0000:00:01.0" {
		t.Fatalf("Find: %v %v", got, err)
	}
}

// kernel plays the kernel's part for Binder: writing an address to
// drivers_probe binds the device to its driver_override.
func kernel(tr *pcitest.Tree) func(string, []byte) error {
	return func(name string, data []byte) error {
		rel, _ := filepath.Rel(tr.Root, name)
		switch {
		case rel == "bus/pci/drivers_probe":
			addr := string(data)
			ov := strings.TrimSpace(tr.Read("bus/pci/devices/" + addr + "/driver_override"))
			if ov != "" && ov != "(null)" {
				tr.SetDriver(addr, ov)
			}
			return nil
		case strings.HasSuffix(rel, "/driver/unbind"):
			tr.SetDriver(string(data), "")
			return nil
		}
		return os.WriteFile(name, data, 0o644)
	}
}

func TestBind(t *testing.T) {
	tr := tree(t)
	tr.Add(pcitest.Dev{Addr: "0000:00:02.0", Vendor: 0x8086, Device: 0x10d3, Driver: "e1000e", Group: 1})
	var (
		mu     sync.Mutex // kmodule loads independent dependencies in parallel
		loaded []string
	)
	b := &pci.Binder{Root: tr.Root, WriteFile: kernel(tr), Modules: &pci.Modules{SysRoot: tr.Root,
		Opts: kmodule.ProbeOpts{RootDir: modTree(t), KVer: "6.1.0-test", IgnoreProcMods: true,
			DryRunCB: func(p string) { mu.Lock(); loaded = append(loaded, filepath.Base(p)); mu.Unlock() }}}}
	if err := b.Bind("00:02.0", pci.VFIODriver); err != nil {
		t.Fatal(err)
	}
	if d, _ := pci.Driver(tr.Root, "0000:00:02.0"); d != "vfio-pci" {
		t.Fatalf("driver %q", d)
	}
	// Dependencies of one module load in parallel; check only that every
	// dependency comes before its dependent.
	pos := map[string]int{}
	for i, m := range loaded {
		pos[m] = i
	}
	for _, dep := range [][2]string{{"vfio.ko", "vfio_iommu_type1.ko"}, {"vfio.ko", "vfio-pci-core.ko"}, {"irqbypass.ko", "vfio-pci-core.ko"}, {"vfio-pci-core.ko", "vfio-pci.ko"}} {
		a, okA := pos[dep[0]]
		c, okC := pos[dep[1]]
		if !okA || !okC || a > c {
			t.Errorf("load order %v: want %s before %s", loaded, dep[0], dep[1])
		}
	}
	if err := b.Unbind("0000:00:02.0"); err != nil {
		t.Fatal(err)
	}
	if d, _ := pci.Driver(tr.Root, "0000:00:02.0"); d != "" {
		t.Fatalf("driver after unbind %q", d)
	}
	if ov := tr.Read("bus/pci/devices/0000:00:02.0/driver_override"); ov != "\n" {
		t.Fatalf("driver_override after unbind %q", ov)
	}
}

func TestBindNoProbe(t *testing.T) {
	tr := tree(t)
	tr.AddModule("vfio_pci")
	tr.AddModule("vfio_iommu_type1")
	b := &pci.Binder{Root: tr.Root, Modules: &pci.Modules{SysRoot: tr.Root}}
	// A plain file tree: drivers_probe does nothing, so the bind must be
	// reported as not having happened.
	err := b.Bind("0000:00:01.0", pci.VFIODriver)
	if !errors.Is(err, pci.ErrNotBound) || !strings.Contains(err.Error(), "0000:00:01.0") {
		t.Fatalf("err = %v", err)
	}
	if ov := tr.Read("bus/pci/devices/0000:00:01.0/driver_override"); ov != "vfio-pci" {
		t.Fatalf("driver_override %q", ov)
	}
	if p := tr.Read("bus/pci/drivers_probe"); p != "0000:00:01.0" {
		t.Fatalf("drivers_probe %q", p)
	}
}

func TestBindMissingModule(t *testing.T) {
	tr := tree(t)
	root := t.TempDir()
	dir := filepath.Join(root, "lib/modules/6.1.0-test")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "modules.dep"), []byte("kernel/drivers/vfio/vfio.ko:\n"), 0o644)
	b := &pci.Binder{Root: tr.Root, WriteFile: kernel(tr), Modules: &pci.Modules{SysRoot: tr.Root,
		Opts: kmodule.ProbeOpts{RootDir: root, KVer: "6.1.0-test", IgnoreProcMods: true, DryRunCB: func(string) {}}}}
	err := b.Bind("0000:00:01.0", pci.VFIODriver)
	if !errors.Is(err, pci.ErrModule) || !strings.Contains(err.Error(), "vfio_iommu_type1") || !strings.Contains(err.Error(), "modprobe") {
		t.Fatalf("err = %v", err)
	}
	// No modules index at all.
	b.Modules.Opts.RootDir = t.TempDir()
	if err := b.Bind("0000:00:01.0", pci.VFIODriver); !errors.Is(err, pci.ErrModule) {
		t.Fatalf("no index: %v", err)
	}
	if d, _ := pci.Driver(tr.Root, "0000:00:01.0"); d != "" {
		t.Fatalf("bound to %q despite missing modules", d)
	}
}

func TestBindNoIOMMU(t *testing.T) {
	tr := pcitest.New(t)
	tr.Add(pcitest.Dev{Addr: "0000:00:05.0", Vendor: 1, Device: 2, Group: -1})
	err := (&pci.Binder{Root: tr.Root}).Bind("0000:00:05.0", pci.VFIODriver)
	if !errors.Is(err, pci.ErrNoIOMMU) || !strings.Contains(err.Error(), "intel_iommu=on") {
		t.Fatalf("err = %v", err)
	}
}

// modTree writes a modules.dep like Debian 6.1's for the VFIO modules.
func modTree(t *testing.T) string {
	root := t.TempDir()
	dir := filepath.Join(root, "lib/modules/6.1.0-test")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	dep := `kernel/virt/lib/irqbypass.ko:
kernel/drivers/vfio/vfio.ko:
kernel/drivers/vfio/vfio_iommu_type1.ko: kernel/drivers/vfio/vfio.ko
kernel/drivers/vfio/vfio_virqfd.ko:
kernel/drivers/vfio/pci/vfio-pci-core.ko: kernel/drivers/vfio/vfio.ko kernel/drivers/vfio/vfio_virqfd.ko kernel/virt/lib/irqbypass.ko
kernel/drivers/vfio/pci/vfio-pci.ko: kernel/drivers/vfio/pci/vfio-pci-core.ko kernel/drivers/vfio/vfio.ko kernel/virt/lib/irqbypass.ko kernel/drivers/vfio/vfio_virqfd.ko
`
	if err := os.WriteFile(filepath.Join(dir, "modules.dep"), []byte(dep), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}
