package pcitest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/vhcrd/vhcrd/bar/pci"
)

// Tree is a fake sysfs root.
type Tree struct {
	Root string
	t    testing.TB
}

// New makes an empty tree in a temporary directory: bus/pci/devices,
// bus/pci/drivers_probe, kernel/iommu_groups and module.
func New(t testing.TB) *Tree {
	t.Helper()
	tr := &Tree{Root: t.TempDir(), t: t}
	for _, d := range []string{"bus/pci/devices", "bus/pci/drivers", "kernel/iommu_groups", "module", "devices/pci0000:00"} {
		tr.mkdir(d)
	}
	tr.write("bus/pci/drivers_probe", "")
	return tr
}

// BAR describes one resource line. With File set, resourceN is a regular
// file of Size bytes (a real mmap works on it); Flags default to a 32-bit
// memory BAR.
type BAR struct {
	Index int
	Size  uint64
	Flags uint64
	File  bool
}

// Dev describes a device. Group < 0 means no IOMMU group.
type Dev struct {
	Addr     string
	Vendor   uint16
	Device   uint16
	Class    uint32
	Driver   string
	Group    int
	VFIODev  string // e.g. "vfio0": adds vfio-dev/vfio0 (iommufd cdev)
	BARs     []BAR
	TotalVFs int // > 0 makes the device an SR-IOV PF
	VFs      []string
	PhysFn   string // makes the device a VF of this PF
}

func (tr *Tree) path(rel string) string { return filepath.Join(tr.Root, rel) }

func (tr *Tree) mkdir(rel string) {
	tr.t.Helper()
	if err := os.MkdirAll(tr.path(rel), 0o755); err != nil {
		tr.t.Fatal(err)
	}
}

func (tr *Tree) write(rel, data string) {
	tr.t.Helper()
	if err := os.WriteFile(tr.path(rel), []byte(data), 0o644); err != nil {
		tr.t.Fatal(err)
	}
}

func (tr *Tree) symlink(target, rel string) {
	tr.t.Helper()
	_ = os.Remove(tr.path(rel))
	if err := os.Symlink(target, tr.path(rel)); err != nil {
		tr.t.Fatal(err)
	}
}

// Dir is the device's directory (through the bus/pci/devices link).
func (tr *Tree) Dir(addr string) string { return pci.Dir(tr.Root, addr) }

// Add creates the device and returns its directory.
func (tr *Tree) Add(d Dev) string {
	tr.t.Helper()
	real := "devices/pci0000:00/" + d.Addr
	tr.mkdir(real)
	tr.symlink("../../../"+real, "bus/pci/devices/"+d.Addr)
	rel := "bus/pci/devices/" + d.Addr + "/"
	for name, v := range map[string]string{
		"vendor": fmt.Sprintf("0x%04x", d.Vendor), "device": fmt.Sprintf("0x%04x", d.Device),
		"class": fmt.Sprintf("0x%06x", d.Class), "subsystem_vendor": "0x0000",
		"subsystem_device": "0x0000", "revision": "0x00", "driver_override": "(null)",
	} {
		tr.write(rel+name, v+"\n")
	}
	lines := make([]string, 13)
	for i := range lines {
		lines[i] = "0x0000000000000000 0x0000000000000000 0x0000000000000000"
	}
	base := uint64(0xfe000000)
	for _, b := range d.BARs {
		fl := b.Flags
		if fl == 0 {
			fl = pci.IORESOURCE_MEM
		}
		lines[b.Index] = fmt.Sprintf("0x%016x 0x%016x 0x%016x", base, base+b.Size-1, fl)
		base += b.Size
		if b.File {
			f, err := os.Create(tr.path(rel + "resource" + strconv.Itoa(b.Index)))
			if err != nil {
				tr.t.Fatal(err)
			}
			if err := f.Truncate(int64(b.Size)); err != nil {
				tr.t.Fatal(err)
			}
			f.Close()
		}
	}
	var res string
	for _, l := range lines {
		res += l + "\n"
	}
	tr.write(rel+"resource", res)
	if d.Driver != "" {
		tr.SetDriver(d.Addr, d.Driver)
	}
	if d.Group >= 0 {
		g := "kernel/iommu_groups/" + strconv.Itoa(d.Group)
		tr.mkdir(g + "/devices")
		tr.symlink("../../../../"+real, g+"/devices/"+d.Addr)
		tr.symlink("../../../kernel/iommu_groups/"+strconv.Itoa(d.Group), real+"/iommu_group")
	}
	if d.VFIODev != "" {
		tr.mkdir(real + "/vfio-dev/" + d.VFIODev)
	}
	if d.TotalVFs > 0 {
		tr.write(rel+"sriov_totalvfs", strconv.Itoa(d.TotalVFs)+"\n")
		tr.write(rel+"sriov_numvfs", strconv.Itoa(len(d.VFs))+"\n")
		for i, vf := range d.VFs {
			tr.symlink("../"+vf, real+"/virtfn"+strconv.Itoa(i))
		}
	}
	if d.PhysFn != "" {
		tr.symlink("../"+d.PhysFn, real+"/physfn")
	}
	return tr.Dir(d.Addr)
}

// SetDriver binds the device to driver in the tree ("" unbinds): the driver
// link, and bus/pci/drivers/NAME with bind and unbind files.
func (tr *Tree) SetDriver(addr, driver string) {
	tr.t.Helper()
	link := "devices/pci0000:00/" + addr + "/driver"
	if driver == "" {
		_ = os.Remove(tr.path(link))
		return
	}
	d := "bus/pci/drivers/" + driver
	tr.mkdir(d)
	for _, f := range []string{"bind", "unbind"} {
		if _, err := os.Stat(tr.path(d + "/" + f)); err != nil {
			tr.write(d+"/"+f, "")
		}
	}
	tr.symlink("../../../"+d, link)
}

// AddModule marks module name as loaded (module/NAME exists).
func (tr *Tree) AddModule(name string) { tr.mkdir("module/" + name) }

// Read returns the content of a file under the root.
func (tr *Tree) Read(rel string) string {
	tr.t.Helper()
	b, err := os.ReadFile(tr.path(rel))
	if err != nil {
		tr.t.Fatal(err)
	}
	return string(b)
}
