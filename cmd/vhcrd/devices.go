package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/vhcrd/vhcrd/bar/pci"
	"github.com/vhcrd/vhcrd/cmd/internal/cli"
	"github.com/vhcrd/vhcrd/cmd/internal/clidoc"
)

func init() {
	register("devices", "list PCI devices: BARs, driver, IOMMU group, SR-IOV state", func(args []string) error { return runDevices(os.Stdout, args) })
	register("bind", "bind a PCI device to vfio-pci (loads the VFIO modules if needed)", runBind)
	register("unbind", "release a PCI device from its driver and clear driver_override", runUnbind)
}

// devicesFlags parses the flags of devices, bind and unbind; more adds a
// command's own flags.
func devicesFlags(name string, args []string, usage string, more ...func(*flag.FlagSet)) (*flag.FlagSet, *string, error) {
	fs := clidoc.NewFlagSet(name, flag.ContinueOnError)
	root := fs.String("sysfs", sysfsRoot, "sysfs mount point")
	for _, m := range more {
		m(fs)
	}
	h := &cli.Help{Usage: "vhcrd " + name + " " + usage, About: commands[name].summary, Examples: devicesExamples[name], Exit: exitStatus}
	if err := cli.Parse(fs, args, h); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return fs, root, err
		}
		return fs, root, usageError{err}
	}
	return fs, root, nil
}

// devicesExamples are the --help examples of devices, bind and unbind.
var devicesExamples = map[string][]string{
	"devices": {"vhcrd devices", "vhcrd devices --json"},
	"bind":    {"vhcrd bind 0000:03:00.1", "vhcrd serve --bar vfio:0000:03:00.1#region2 --dma bar@0x40000 --num-vfs 1 --vf-bar 0=vfio:0000:03:00.1#region2@8M"},
	"unbind":  {"vhcrd unbind 0000:03:00.1"},
}

func runDevices(w io.Writer, args []string) error {
	var asJSON bool
	_, root, err := devicesFlags("devices", args, "[--sysfs DIR] [--json]", func(fs *flag.FlagSet) {
		fs.BoolVar(&asJSON, "json", false, "a JSON array, one object per device")
	})
	if err != nil {
		return err
	}
	devs, err := pci.Devices(*root)
	if err != nil {
		return err
	}
	if asJSON {
		return writeDevicesJSON(w, devs)
	}
	return pci.WriteTable(w, devs)
}

// deviceJSON is one PCI function in `vhcrd devices --json`.
type deviceJSON struct {
	Addr       string    `json:"addr"`
	Vendor     string    `json:"vendor"`
	Device     string    `json:"device"`
	Class      string    `json:"class"`
	Driver     string    `json:"driver"`
	Override   string    `json:"driver_override"`
	IOMMUGroup *int      `json:"iommu_group"` // null without one
	VFIODev    string    `json:"vfio_cdev"`
	BARs       []barJSON `json:"bars"`
	SRIOV      *struct {
		NumVFs   uint32   `json:"num_vfs"`
		TotalVFs uint32   `json:"total_vfs"`
		VFs      []string `json:"vfs"`
	} `json:"sriov"` // null unless an SR-IOV physical function
	PhysFn string `json:"phys_fn"`
}

type barJSON struct {
	Index int    `json:"index"`
	Start string `json:"start"`
	Size  uint64 `json:"size"`
	Flags string `json:"flags"`
}

func writeDevicesJSON(w io.Writer, devs []pci.Device) error {
	out := make([]deviceJSON, 0, len(devs))
	for _, d := range devs {
		j := deviceJSON{Addr: d.Addr, Vendor: fmt.Sprintf("0x%04x", d.Vendor), Device: fmt.Sprintf("0x%04x", d.DeviceID),
			Class: fmt.Sprintf("0x%06x", d.Class), Driver: d.Driver, Override: d.Override, VFIODev: d.VFIODev,
			BARs: []barJSON{}, PhysFn: d.PhysFn}
		if d.IOMMUGroup >= 0 {
			g := d.IOMMUGroup
			j.IOMMUGroup = &g
		}
		for _, b := range d.BARs {
			j.BARs = append(j.BARs, barJSON{Index: b.Index, Start: fmt.Sprintf("%#x", b.Start), Size: b.Size(), Flags: fmt.Sprintf("%#x", b.Flags)})
		}
		if d.SRIOV != nil {
			j.SRIOV = &struct {
				NumVFs   uint32   `json:"num_vfs"`
				TotalVFs uint32   `json:"total_vfs"`
				VFs      []string `json:"vfs"`
			}{d.SRIOV.NumVFs, d.SRIOV.TotalVFs, append([]string{}, d.SRIOV.VFs...)}
		}
		out = append(out, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func oneAddr(fs *flag.FlagSet) (string, error) {
	if fs.NArg() != 1 {
		return "", usageError{fmt.Errorf("want one PCI address, like 0000:00:01.0 (see 'vhcrd devices')")}
	}
	return fs.Arg(0), nil
}

func runBind(args []string) error {
	fs, root, err := devicesFlags("bind", args, "[--sysfs DIR] BDF")
	if err != nil {
		return err
	}
	addr, err := oneAddr(fs)
	if err != nil {
		return err
	}
	return (&pci.Binder{Root: *root, Modules: &pci.Modules{SysRoot: *root}}).Bind(addr, pci.VFIODriver)
}

func runUnbind(args []string) error {
	fs, root, err := devicesFlags("unbind", args, "[--sysfs DIR] BDF")
	if err != nil {
		return err
	}
	addr, err := oneAddr(fs)
	if err != nil {
		return err
	}
	return (&pci.Binder{Root: *root}).Unbind(addr)
}
