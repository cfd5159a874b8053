package pci

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/procfs/sysfs"
)

// DefaultRoot is the sysfs mount point on a real host.
const DefaultRoot = "/sys"

// Sentinel errors, wrapped with %w and the device's address.
var (
	ErrNoDevice   = errors.New("pci: no such device")
	ErrBadAddress = errors.New("pci: bad PCI address")
	ErrNoResource = errors.New("pci: no such resource")
	ErrNoIOMMU    = errors.New("pci: device has no IOMMU group")
	ErrNotBound   = errors.New("pci: device not bound to the expected driver")
	ErrModule     = errors.New("pci: kernel module missing")
)

// Resource flags from include/linux/ioport.h, as the "resource" file shows
// them in its third column.
const (
	IORESOURCE_IO       = 0x00000100
	IORESOURCE_MEM      = 0x00000200
	IORESOURCE_PREFETCH = 0x00002000
	IORESOURCE_READONLY = 0x00004000
	IORESOURCE_MEM_64   = 0x00100000
	IORESOURCE_DISABLED = 0x10000000
	IORESOURCE_UNSET    = 0x20000000
)

// NumBARs is the number of standard BARs; the "resource" file has further
// lines (ROM, bridge windows, SR-IOV VF BARs) after them.
const NumBARs = 6

// BAR is one line of a device's "resource" file.
type BAR struct {
	Index      int
	Start, End uint64 // bus addresses, inclusive; both 0 when unused
	Flags      uint64 // IORESOURCE_* bits
}

// Size is End-Start+1, or 0 for an unused resource.
func (b BAR) Size() uint64 {
	if b.End == 0 && b.Start == 0 || b.End < b.Start {
		return 0
	}
	return b.End - b.Start + 1
}

// IsIO reports an I/O-port BAR (not mappable through sysfs or vfio mmap).
func (b BAR) IsIO() bool { return b.Flags&IORESOURCE_IO != 0 && b.Flags&IORESOURCE_MEM == 0 }

// IsMem reports a memory BAR.
func (b BAR) IsMem() bool { return b.Flags&IORESOURCE_MEM != 0 }

// Mappable reports whether resourceN can be mmapped: a memory BAR with a
// size, neither disabled nor unassigned.
func (b BAR) Mappable() bool {
	return b.IsMem() && b.Size() > 0 && b.Flags&(IORESOURCE_DISABLED|IORESOURCE_UNSET) == 0
}

// Kind is a short description for tables: "mem64 pref", "mem32", "io".
func (b BAR) Kind() string {
	switch {
	case b.IsIO():
		return "io"
	case !b.IsMem():
		return "-"
	}
	s := "mem32"
	if b.Flags&IORESOURCE_MEM_64 != 0 {
		s = "mem64"
	}
	if b.Flags&IORESOURCE_PREFETCH != 0 {
		s += " pref"
	}
	if b.Flags&IORESOURCE_READONLY != 0 {
		s += " ro"
	}
	return s
}

// SRIOV is the SR-IOV state of a physical function.
type SRIOV struct {
	NumVFs, TotalVFs uint32
	VFs              []string // addresses of the enabled VFs (virtfnN)
}

// Device is one PCI function as sysfs describes it.
type Device struct {
	Addr       string // "0000:00:01.0"
	Vendor     uint16
	DeviceID   uint16
	Class      uint32
	Driver     string // bound driver; "" if none
	Override   string // driver_override; "" if none
	IOMMUGroup int    // -1 if the device has no IOMMU group
	VFIODev    string // "vfio3" when the kernel offers the iommufd cdev; "" otherwise
	BARs       []BAR  // the standard BARs that have a size
	SRIOV      *SRIOV // nil unless the device is an SR-IOV physical function
	PhysFn     string // the PF's address if this device is a VF
}

// Dir is the device's directory under root.
func Dir(root, addr string) string { return filepath.Join(root, "bus", "pci", "devices", addr) }

// NormalizeAddr accepts "0000:00:01.0" or "00:01.0" and returns the full,
// lower-case domain:bus:device.function form.
func NormalizeAddr(s string) (string, error) {
	a := strings.ToLower(strings.TrimSpace(s))
	if strings.Count(a, ":") == 1 {
		a = "0000:" + a
	}
	var dom, bus, dev, fn uint
	if n, err := fmt.Sscanf(a, "%4x:%2x:%2x.%1x", &dom, &bus, &dev, &fn); n != 4 || err != nil || dev > 0x1f || fn > 7 {
		return "", fmt.Errorf("%q: want domain:bus:device.function like 0000:00:01.0: %w", s, ErrBadAddress)
	}
	a = fmt.Sprintf("%04x:%02x:%02x.%x", dom, bus, dev, fn)
	return a, nil
}

// Exists checks that the device is present and returns its full address.
// The error for a missing device names it and says how to find one.
func Exists(root, addr string) (string, error) {
	a, err := NormalizeAddr(addr)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(Dir(root, a)); err != nil {
		return "", fmt.Errorf("%s: not in %s (run 'vhcrd devices' for the list): %w", a, filepath.Join(root, "bus/pci/devices"), ErrNoDevice)
	}
	return a, nil
}

// ReadResources parses the device's "resource" file. The result has one
// entry per line (index = line number), unused lines included, so callers
// index it by BAR number.
func ReadResources(root, addr string) ([]BAR, error) {
	p := filepath.Join(Dir(root, addr), "resource")
	data, err := os.ReadFile(p)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("%s: %w", addr, ErrNoDevice)
		}
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	var bars []BAR
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s: resource line %d %q: want start end flags", p, i, line)
		}
		var v [3]uint64
		for j := range f {
			v[j], err = strconv.ParseUint(f[j], 0, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: resource line %d: %w", p, i, err)
			}
		}
		bars = append(bars, BAR{Index: i, Start: v[0], End: v[1], Flags: v[2]})
	}
	return bars, nil
}

// Resource returns BAR index of the device, or an error wrapping
// ErrNoResource when the device has no such BAR.
func Resource(root, addr string, index int) (BAR, error) {
	bars, err := ReadResources(root, addr)
	if err != nil {
		return BAR{}, err
	}
	if index < 0 || index >= len(bars) || index >= NumBARs || bars[index].Size() == 0 {
		return BAR{}, fmt.Errorf("%s: BAR %d is not implemented (see 'vhcrd devices'): %w", addr, index, ErrNoResource)
	}
	return bars[index], nil
}

// linkBase returns the last element of a symlink's target, or "" when the
// link does not exist.
func linkBase(p string) (string, error) {
	t, err := os.Readlink(p)
	if err != nil {
		if os.IsNotExist(err) {
			return "", nil
		}
		return "", err
	}
	return filepath.Base(t), nil
}

// Driver returns the name of the driver bound to the device, or "".
func Driver(root, addr string) (string, error) {
	return linkBase(filepath.Join(Dir(root, addr), "driver"))
}

// IOMMUGroup returns the device's IOMMU group number, or an error wrapping
// ErrNoIOMMU that says how to get one.
func IOMMUGroup(root, addr string) (int, error) {
	g, err := linkBase(filepath.Join(Dir(root, addr), "iommu_group"))
	if err != nil {
		return -1, fmt.Errorf("%s: iommu_group: %w", addr, err)
	}
	if g == "" {
		return -1, fmt.Errorf("%s: no iommu_group (boot with intel_iommu=on or amd_iommu=on, or use sysfs:%s#resourceN): %w", addr, addr, ErrNoIOMMU)
	}
	n, err := strconv.Atoi(g)
	if err != nil {
		return -1, fmt.Errorf("%s: iommu_group %q: %w", addr, g, ErrNoIOMMU)
	}
	return n, nil
}

// GroupDevices lists the addresses of the devices in IOMMU group n.
func GroupDevices(root string, n int) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(root, "kernel", "iommu_groups", strconv.Itoa(n), "devices"))
	if err != nil {
		return nil, fmt.Errorf("iommu group %d: %w", n, err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out, nil
}

// VFIODev returns the name of the device's iommufd character device
// ("vfio3" for /dev/vfio/devices/vfio3), or "" when the kernel has none.
func VFIODev(root, addr string) string {
	ents, err := os.ReadDir(filepath.Join(Dir(root, addr), "vfio-dev"))
	if err != nil {
		return ""
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "vfio") {
			return e.Name()
		}
	}
	return ""
}

func readTrim(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(string(b))
	if s == "(null)" {
		return ""
	}
	return s
}

// Devices returns every PCI device under root, sorted by address.
func Devices(root string) ([]Device, error) {
	fs, err := sysfs.NewFS(root)
	if err != nil {
		return nil, fmt.Errorf("pci: sysfs at %s: %w", root, err)
	}
	pds, err := fs.PciDevices()
	if err != nil {
		return nil, fmt.Errorf("pci: reading %s: %w", filepath.Join(root, "bus/pci/devices"), err)
	}
	var out []Device
	for _, pd := range pds {
		l := pd.Location // procfs's Location.String uses ':' before the function
		d := Device{
			Addr:       fmt.Sprintf("%04x:%02x:%02x.%x", l.Segment, l.Bus, l.Device, l.Function),
			Vendor:     uint16(pd.Vendor),
			DeviceID:   uint16(pd.Device),
			Class:      pd.Class,
			IOMMUGroup: -1,
		}
		dir := Dir(root, d.Addr)
		if d.Driver, err = Driver(root, d.Addr); err != nil {
			return nil, fmt.Errorf("%s: driver: %w", d.Addr, err)
		}
		d.Override = readTrim(filepath.Join(dir, "driver_override"))
		if g, err := IOMMUGroup(root, d.Addr); err == nil {
			d.IOMMUGroup = g
		}
		d.VFIODev = VFIODev(root, d.Addr)
		bars, err := ReadResources(root, d.Addr)
		if err != nil {
			return nil, err
		}
		for _, b := range bars {
			if b.Index < NumBARs && b.Size() > 0 {
				d.BARs = append(d.BARs, b)
			}
		}
		if pd.SriovTotalvfs != nil {
			s := &SRIOV{TotalVFs: *pd.SriovTotalvfs}
			if pd.SriovNumvfs != nil {
				s.NumVFs = *pd.SriovNumvfs
			}
			for i := uint32(0); i < s.NumVFs; i++ {
				vf, err := fs.PciDeviceVFAddress(&pd, i)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", d.Addr, err)
				}
				s.VFs = append(s.VFs, vf)
			}
			d.SRIOV = s
		}
		if d.PhysFn, err = linkBase(filepath.Join(dir, "physfn")); err != nil {
			return nil, fmt.Errorf("%s: physfn: %w", d.Addr, err)
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out, nil
}

// Lookup returns one device.
func Lookup(root, addr string) (Device, error) {
	a, err := Exists(root, addr)
	if err != nil {
		return Device{}, err
	}
	devs, err := Devices(root)
	if err != nil {
		return Device{}, err
	}
	for _, d := range devs {
		if d.Addr == a {
			return d, nil
		}
	}
	return Device{}, fmt.Errorf("%s: %w", a, ErrNoDevice)
}

// Find returns the addresses of the devices with the given vendor and
// device ids, sorted.
func Find(root string, vendor, device uint16) ([]string, error) {
	devs, err := Devices(root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range devs {
		if d.Vendor == vendor && d.DeviceID == device {
			out = append(out, d.Addr)
		}
	}
	return out, nil
}
