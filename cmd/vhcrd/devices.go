package main

import (
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

// devicesFlags parses the flags of devices, bind and unbind.
func devicesFlags(name string, args []string, usage string) (*flag.FlagSet, *string, error) {
	fs := clidoc.NewFlagSet(name, flag.ContinueOnError)
	root := fs.String("sysfs", sysfsRoot, "sysfs mount point")
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
	"devices": {"vhcrd devices", "vhcrd devices --sysfs /tmp/fake-sysfs"},
	"bind":    {"vhcrd bind 0000:03:00.1", "vhcrd serve --bar vfio:0000:03:00.1#region2 --dma bar@0x40000"},
	"unbind":  {"vhcrd unbind 0000:03:00.1"},
}

func runDevices(w io.Writer, args []string) error {
	_, root, err := devicesFlags("devices", args, "[--sysfs DIR]")
	if err != nil {
		return err
	}
	devs, err := pci.Devices(*root)
	if err != nil {
		return err
	}
	return pci.WriteTable(w, devs)
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
