package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/bar/pci"
	"github.com/vhcrd/vhcrd/bar/pci/pcitest"
	"github.com/vhcrd/vhcrd/bar/vfio"
	"github.com/vhcrd/vhcrd/bar/vfio/vfiotest"
)

func TestDevicesCommand(t *testing.T) {
	tr := pcitest.New(t)
	tr.Add(pcitest.Dev{Addr: "0000:00:01.0", Vendor: 0x1af4, Device: 0x1110, Class: 0x050000, Driver: "vfio-pci", Group: 1,
		BARs: []pcitest.BAR{{Index: 2, Size: 1 << 20, Flags: pci.IORESOURCE_MEM | pci.IORESOURCE_MEM_64 | pci.IORESOURCE_PREFETCH}}})
	var out bytes.Buffer
	if err := runDevices(&out, []string{"--sysfs", tr.Root}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"0000:00:01.0", "1af4:1110", "vfio-pci", "2:1M mem64 pref*"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := runDevices(&out, []string{"--sysfs", tr.Root, "--json"}); err != nil {
		t.Fatal(err)
	}
	var js []map[string]any
	if err := json.Unmarshal(out.Bytes(), &js); err != nil {
		t.Fatalf("devices --json: %v\n%s", err, out.String())
	}
	if len(js) != 1 || js[0]["addr"] != "0000:00:01.0" || js[0]["vendor"] != "0x1af4" || js[0]["device"] != "0x1110" ||
		js[0]["driver"] != "vfio-pci" || js[0]["iommu_group"] != float64(1) || js[0]["sriov"] != nil {
		t.Errorf("devices --json: %s", out.String())
	}
	if bars, _ := js[0]["bars"].([]any); len(bars) != 1 || bars[0].(map[string]any)["size"] != float64(1<<20) || bars[0].(map[string]any)["index"] != float64(2) {
		t.Errorf("devices --json BARs: %s", out.String())
	}
	if err := runBind([]string{"--sysfs", tr.Root}); err == nil {
		t.Error("bind without an address succeeded")
	}
	if err := runBind([]string{"--sysfs", tr.Root, "0000:00:09.0"}); !errors.Is(err, pci.ErrNoDevice) {
		t.Errorf("bind of a missing device: %v", err)
	}
	// Already bound: nothing to do.
	if err := runBind([]string{"--sysfs", tr.Root, "00:01.0"}); err != nil {
		t.Errorf("bind of a bound device: %v", err)
	}
}

func TestOpenDeviceSysfs(t *testing.T) {
	tr := pcitest.New(t)
	tr.Add(pcitest.Dev{Addr: "0000:00:01.0", Vendor: 0x1af4, Device: 0x1110, Group: 1,
		BARs: []pcitest.BAR{{Index: 2, Size: 64 << 10, File: true}}})
	defer func(old string) { sysfsRoot = old }(sysfsRoot)
	sysfsRoot = tr.Root
	sp, err := bar.ParseSpec("sysfs:0000:00:01.0#resource2@0x1000")
	if err != nil {
		t.Fatal(err)
	}
	r, err := openRegion(sp, 0x2000)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Size() != 64<<10-0x1000 || r.Shared() {
		t.Fatalf("%s: size %#x shared %v", r.Name(), r.Size(), r.Shared())
	}
	sp.Offset = 64 << 10
	if _, err := openRegion(sp, 0x1000); !errors.Is(err, bar.ErrTooSmall) {
		t.Fatalf("offset past the BAR: %v", err)
	}
}

func TestOpenDeviceVFIO(t *testing.T) {
	k := vfiotest.New(t)
	dev := k.AddDevice(vfiotest.Device{Addr: "0000:00:01.0", Group: 1, Regions: []vfiotest.Region{{Index: 2, Size: 1 << 20}}})
	defer func(old string, o []vfio.Option) { sysfsRoot, vfioOptions = old, o }(sysfsRoot, vfioOptions)
	vfioOptions = k.Options()
	for _, spec := range []string{"vfio:0000:00:01.0", "vfio:0000:00:01.0#region2@0x10000"} {
		sp, err := bar.ParseSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		r, err := openRegion(sp, 0x1000)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Store32(0, 0xabcd0001); err != nil {
			t.Fatal(err)
		}
		if got := binary.BigEndian.Uint32(dev.Mem(2)[sp.Offset:]); got != 0xabcd0001 {
			t.Fatalf("%s: device sees %#x", spec, got)
		}
		// Closing the region releases the device: the leak check at
		// cleanup and a second open prove it.
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	sp, _ := bar.ParseSpec("vfio:0000:00:01.0#region1")
	if _, err := openRegion(sp, 0x1000); !errors.Is(err, bar.ErrNotSupported) {
		t.Fatalf("region1: %v", err)
	}
}
