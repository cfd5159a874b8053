package vfiotest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/bar/pci"
	"github.com/vhcrd/vhcrd/bar/pci/pcitest"
	"github.com/vhcrd/vhcrd/bar/vfio"
)

// DevRoot is the fake /dev. Paths under it exist only inside the fake.
const DevRoot = "/vfiotest/dev"

// Region describes a device region.
type Region struct {
	Index  int
	Size   uint64
	Flags  uint32      // VFIO_REGION_INFO_FLAG_*; default READ|WRITE|MMAP
	Sparse []vfio.Area // with MMAP: only these areas are mmappable (a SPARSE_MMAP capability)
}

// Device describes a PCI device behind the fake kernel.
type Device struct {
	Addr    string
	Group   int
	Driver  string // default "vfio-pci"
	Cdev    string // e.g. "vfio0": the device also has an iommufd cdev
	Regions []Region

	mem map[int][]byte
}

// Mem returns the memory behind region index (what the device sees).
func (d *Device) Mem(index int) []byte { return d.mem[index] }

// Kernel is the fake. Its exported fields may be changed before the code
// under test runs.
type Kernel struct {
	Tree *pcitest.Tree
	// Type1 and Type1v2 are the IOMMU extensions offered (both by default).
	Type1, Type1v2 bool
	// Loaded is false to model a missing vfio module: /dev/vfio/vfio and
	// /dev/iommu do not exist.
	Loaded bool

	mu     sync.Mutex
	nextFD int
	fds    map[int]*file
	maps   map[*byte]int
	devs   map[string]*Device
	counts Counts
	nextID uint32
	opened map[string]bool // open group and cdev paths
	cdevs  map[int]int     // open cdevs per group
}

// Counts says how often each data path was used.
type Counts struct {
	Mmaps, Munmaps, Preads, Pwrites, MapDMA, UnmapDMA int
}

type kind int

const (
	kContainer kind = iota
	kGroup
	kDevice
	kIommufd
	kCdev
)

type file struct {
	kind kind
	path string

	// container
	groups []*file
	iommu  int
	dma    map[uint64]uint64 // iova -> size (container, or iommufd's IOAS)

	// group
	group     int
	container *file

	// device / cdev
	dev     *Device
	grp     *file // device fd: its group
	iommufd *file // cdev: bound iommufd
	ioas    uint32

	// iommufd
	ioasIDs map[uint32]map[uint64]uint64
}

// New returns a fake kernel with an empty fake sysfs tree, the vfio module
// loaded, type1 and type1v2 offered, and a leak check at cleanup.
func New(t testing.TB) *Kernel {
	t.Helper()
	k := &Kernel{
		Tree: pcitest.New(t), Type1: true, Type1v2: true, Loaded: true,
		nextFD: 100, fds: map[int]*file{}, maps: map[*byte]int{}, devs: map[string]*Device{},
		opened: map[string]bool{}, cdevs: map[int]int{}, nextID: 1,
	}
	t.Cleanup(func() {
		if err := k.Leaks(); err != nil {
			t.Error(err)
		}
	})
	return k
}

// Options returns the vfio options that route a vfio.Open to this fake.
func (k *Kernel) Options(extra ...vfio.Option) []vfio.Option {
	return append([]vfio.Option{vfio.WithSys(k), vfio.WithSysfs(k.Tree.Root), vfio.WithDev(DevRoot)}, extra...)
}

// AddDevice adds a device to the fake sysfs tree and the kernel. Regions
// are placed at index<<40 in the device fd, as vfio-pci does.
func (k *Kernel) AddDevice(d Device) *Device {
	if d.Driver == "" {
		d.Driver = pci.VFIODriver
	}
	dd := d
	dd.mem = map[int][]byte{}
	var bars []pcitest.BAR
	for i, r := range dd.Regions {
		if r.Flags == 0 {
			dd.Regions[i].Flags = vfio.VFIO_REGION_INFO_FLAG_READ | vfio.VFIO_REGION_INFO_FLAG_WRITE | vfio.VFIO_REGION_INFO_FLAG_MMAP
		}
		dd.mem[r.Index] = make([]byte, r.Size)
		if r.Index < pci.NumBARs {
			bars = append(bars, pcitest.BAR{Index: r.Index, Size: r.Size})
		}
	}
	drv := dd.Driver
	if drv == "none" {
		drv = ""
	}
	k.Tree.Add(pcitest.Dev{Addr: dd.Addr, Vendor: 0x1af4, Device: 0x1110, Class: 0x050000, Driver: drv, Group: dd.Group, VFIODev: dd.Cdev, BARs: bars})
	k.mu.Lock()
	k.devs[dd.Addr] = &dd
	k.mu.Unlock()
	return &dd
}

// Counts returns the data-path counters.
func (k *Kernel) Counts() Counts {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.counts
}

// Leaks reports fds and mappings still open.
func (k *Kernel) Leaks() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	var s []string
	for fd, f := range k.fds {
		s = append(s, fmt.Sprintf("fd %d (%s)", fd, f.path))
	}
	n := 0
	for _, c := range k.maps {
		n += c
	}
	if n > 0 {
		s = append(s, fmt.Sprintf("%d mappings", n))
	}
	if len(s) == 0 {
		return nil
	}
	sort.Strings(s)
	return fmt.Errorf("vfiotest: leaked %s", strings.Join(s, ", "))
}

func (k *Kernel) newFD(f *file) int {
	fd := k.nextFD
	k.nextFD++
	k.fds[fd] = f
	return fd
}

func perr(path string, e unix.Errno) error { return &os.PathError{Op: "open", Path: path, Err: e} }

// driverOf reads the device's driver from the fake sysfs tree, so tests
// can rebind devices with Tree.SetDriver.
func (k *Kernel) driverOf(addr string) string {
	d, _ := pci.Driver(k.Tree.Root, addr)
	return d
}

// groupHasVFIO reports whether a device of group n is bound to vfio-pci
// (the kernel creates /dev/vfio/N then).
func (k *Kernel) groupHasVFIO(n int) bool {
	devs, _ := pci.GroupDevices(k.Tree.Root, n)
	for _, a := range devs {
		if k.driverOf(a) == pci.VFIODriver {
			return true
		}
	}
	return false
}

// viable: every device of the group is bound to vfio-pci or to nothing.
func (k *Kernel) viable(n int) bool {
	devs, _ := pci.GroupDevices(k.Tree.Root, n)
	for _, a := range devs {
		if d := k.driverOf(a); d != "" && d != pci.VFIODriver {
			return false
		}
	}
	return true
}

func (k *Kernel) Open(path string, flags int) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	rel, err := filepath.Rel(DevRoot, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return -1, perr(path, unix.ENOENT)
	}
	switch {
	case rel == "vfio/vfio":
		if !k.Loaded {
			return -1, perr(path, unix.ENOENT)
		}
		return k.newFD(&file{kind: kContainer, path: path, dma: map[uint64]uint64{}}), nil
	case rel == "iommu":
		if !k.Loaded {
			return -1, perr(path, unix.ENOENT)
		}
		return k.newFD(&file{kind: kIommufd, path: path, ioasIDs: map[uint32]map[uint64]uint64{}}), nil
	case strings.HasPrefix(rel, "vfio/devices/"):
		name := strings.TrimPrefix(rel, "vfio/devices/")
		for _, d := range k.devs {
			if d.Cdev == name && k.driverOf(d.Addr) == pci.VFIODriver {
				if k.opened[path] || k.opened[groupPath(d.Group)] {
					return -1, perr(path, unix.EBUSY)
				}
				k.opened[path] = true
				k.cdevs[d.Group]++
				return k.newFD(&file{kind: kCdev, path: path, dev: d}), nil
			}
		}
		return -1, perr(path, unix.ENOENT)
	case strings.HasPrefix(rel, "vfio/"):
		n, err := strconv.Atoi(strings.TrimPrefix(rel, "vfio/"))
		if err != nil || !k.Loaded || !k.groupHasVFIO(n) {
			return -1, perr(path, unix.ENOENT)
		}
		if k.opened[groupPath(n)] || k.cdevs[n] > 0 {
			return -1, perr(path, unix.EBUSY) // one opener; not while a cdev of the group is open
		}
		k.opened[groupPath(n)] = true
		return k.newFD(&file{kind: kGroup, path: path, group: n}), nil
	}
	return -1, perr(path, unix.ENOENT)
}

func groupPath(n int) string { return "group/" + strconv.Itoa(n) }

func (k *Kernel) Close(fd int) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	f, ok := k.fds[fd]
	if !ok {
		return unix.EBADF
	}
	delete(k.fds, fd)
	switch f.kind {
	case kGroup:
		delete(k.opened, groupPath(f.group))
		if c := f.container; c != nil {
			for i, g := range c.groups {
				if g == f {
					c.groups = append(c.groups[:i], c.groups[i+1:]...)
					break
				}
			}
			if len(c.groups) == 0 { // the last group leaving drops the IOMMU
				c.iommu = 0
				c.dma = map[uint64]uint64{}
			}
		}
	case kCdev:
		delete(k.opened, f.path)
		k.cdevs[f.dev.Group]--
	}
	return nil
}

func (k *Kernel) Ioctl(fd int, req uint, arg uintptr) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	f, ok := k.fds[fd]
	if !ok {
		return -1, unix.EBADF
	}
	switch {
	case f.kind == kContainer && req == vfio.VFIO_GET_API_VERSION:
		return vfio.VFIO_API_VERSION, nil
	case f.kind == kContainer && req == vfio.VFIO_CHECK_EXTENSION:
		switch arg {
		case vfio.VFIO_TYPE1_IOMMU:
			return b2i(k.Type1), nil
		case vfio.VFIO_TYPE1v2_IOMMU:
			return b2i(k.Type1v2), nil
		}
		return 0, nil
	case f.kind == kContainer && req == vfio.VFIO_SET_IOMMU:
		if len(f.groups) == 0 {
			return -1, unix.EINVAL // no group attached yet
		}
		if f.iommu != 0 {
			return -1, unix.EBUSY
		}
		if (arg == vfio.VFIO_TYPE1_IOMMU && k.Type1) || (arg == vfio.VFIO_TYPE1v2_IOMMU && k.Type1v2) {
			f.iommu = int(arg)
			return 0, nil
		}
		return -1, unix.EINVAL
	case (f.kind == kDevice || f.kind == kCdev) && req == vfio.VFIO_DEVICE_RESET:
		return 0, nil
	}
	return -1, unix.ENOTTY
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// argsz reads the leading u32 of a struct argument and checks it against
// the minimum size.
func argsz(arg []byte, min int) (uint32, error) {
	if len(arg) < 4 {
		return 0, unix.EFAULT
	}
	var n uint32
	if err := vfio.Unmarshal(arg, &n); err != nil {
		return 0, unix.EFAULT
	}
	if int(n) < min || int(n) > len(arg) {
		return 0, unix.EINVAL
	}
	return n, nil
}

func put(arg []byte, v any) { copy(arg, vfio.Marshal(v)) }

func (k *Kernel) IoctlBuf(fd int, req uint, arg []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	f, ok := k.fds[fd]
	if !ok {
		return -1, unix.EBADF
	}
	switch f.kind {
	case kGroup:
		return k.groupIoctl(f, req, arg)
	case kContainer:
		return k.containerIoctl(f, req, arg)
	case kDevice, kCdev:
		return k.deviceIoctl(f, req, arg)
	case kIommufd:
		return k.iommufdIoctl(f, req, arg)
	}
	return -1, unix.ENOTTY
}

func (k *Kernel) groupIoctl(f *file, req uint, arg []byte) (int, error) {
	switch req {
	case vfio.VFIO_GROUP_GET_STATUS:
		if _, err := argsz(arg, 8); err != nil {
			return -1, err
		}
		st := vfio.VFIOGroupStatus{Argsz: 8}
		if k.viable(f.group) {
			st.Flags |= vfio.VFIO_GROUP_FLAGS_VIABLE
		}
		if f.container != nil {
			st.Flags |= vfio.VFIO_GROUP_FLAGS_CONTAINER_SET
		}
		put(arg, st)
		return 0, nil
	case vfio.VFIO_GROUP_SET_CONTAINER:
		var cfd int32
		if err := vfio.Unmarshal(arg, &cfd); err != nil {
			return -1, unix.EFAULT
		}
		c, ok := k.fds[int(cfd)]
		if !ok || c.kind != kContainer {
			return -1, unix.EBADF
		}
		if f.container != nil {
			return -1, unix.EINVAL
		}
		if !k.viable(f.group) {
			return -1, unix.EPERM
		}
		f.container = c
		c.groups = append(c.groups, f)
		return 0, nil
	case vfio.VFIO_GROUP_GET_DEVICE_FD:
		if f.container == nil || f.container.iommu == 0 {
			return -1, unix.EINVAL
		}
		if !k.viable(f.group) {
			return -1, unix.EPERM
		}
		name := string(arg)
		i := strings.IndexByte(name, 0)
		if i < 0 {
			return -1, unix.EINVAL
		}
		name = name[:i]
		d, ok := k.devs[name]
		if !ok || d.Group != f.group {
			return -1, unix.ENODEV
		}
		return k.newFD(&file{kind: kDevice, path: f.path + ":" + name, dev: d, grp: f}), nil
	}
	return -1, unix.ENOTTY
}

func aligned(v uint64) bool { return v%4096 == 0 }

func (k *Kernel) containerIoctl(f *file, req uint, arg []byte) (int, error) {
	switch req {
	case vfio.VFIO_IOMMU_MAP_DMA:
		if f.iommu == 0 {
			return -1, unix.EINVAL // no IOMMU driver: the container passes nothing on
		}
		if _, err := argsz(arg, 32); err != nil {
			return -1, err
		}
		var m vfio.VFIOIommuType1DmaMap
		vfio.Unmarshal(arg, &m)
		if m.Size == 0 || !aligned(m.Vaddr) || !aligned(m.Iova) || !aligned(m.Size) || m.Flags&^3 != 0 {
			return -1, unix.EINVAL
		}
		if overlaps(f.dma, m.Iova, m.Size) {
			return -1, unix.EEXIST
		}
		f.dma[m.Iova] = m.Size
		k.counts.MapDMA++
		return 0, nil
	case vfio.VFIO_IOMMU_GET_INFO:
		if f.iommu == 0 {
			return -1, unix.EINVAL
		}
		if _, err := argsz(arg, 16); err != nil {
			return -1, err
		}
		put(arg, vfio.VFIOIommuType1Info{Argsz: 24, Flags: 1, IovaPgsizes: 0x40201000}) // 4K, 2M, 1G
		return 0, nil
	case vfio.VFIO_IOMMU_UNMAP_DMA:
		if f.iommu == 0 {
			return -1, unix.EINVAL
		}
		if _, err := argsz(arg, 24); err != nil {
			return -1, err
		}
		var u vfio.VFIOIommuType1DmaUnmap
		vfio.Unmarshal(arg, &u)
		u.Size = unmap(f.dma, u.Iova, u.Size)
		put(arg, u)
		k.counts.UnmapDMA++
		return 0, nil
	}
	return -1, unix.ENOTTY
}

func overlaps(m map[uint64]uint64, iova, size uint64) bool {
	for a, n := range m {
		if iova < a+n && a < iova+size {
			return true
		}
	}
	return false
}

func unmap(m map[uint64]uint64, iova, size uint64) uint64 {
	var done uint64
	for a, n := range m {
		if a >= iova && a+n <= iova+size {
			delete(m, a)
			done += n
		}
	}
	return done
}

const regionShift = 40

// deviceIoctl is a device fd's ioctls: on a cdev first the iommufd bind
// and attach (cdevIoctl), which the rest need; then the device's info and
// its regions' (regionInfo).
func (k *Kernel) deviceIoctl(f *file, req uint, arg []byte) (int, error) {
	if f.kind == kCdev {
		if ok, r, err := k.cdevIoctl(f, req, arg); ok {
			return r, err
		}
		if f.iommufd == nil || f.ioas == 0 {
			return -1, unix.EINVAL // a cdev is usable only once bound and attached
		}
	}
	switch req {
	case vfio.VFIO_DEVICE_GET_INFO:
		if _, err := argsz(arg, 16); err != nil {
			return -1, err
		}
		n := 0
		for _, r := range f.dev.Regions {
			n = max(n, r.Index+1)
		}
		put(arg, vfio.VFIODeviceInfo{Argsz: 20, Flags: vfio.VFIO_DEVICE_FLAGS_PCI | vfio.VFIO_DEVICE_FLAGS_RESET, NumRegions: uint32(max(n, vfio.VFIO_PCI_NUM_REGIONS)), NumIrqs: 5})
		return 0, nil
	case vfio.VFIO_DEVICE_GET_REGION_INFO:
		return regionInfo(f.dev, arg)
	}
	return -1, unix.ENOTTY
}

// cdevIoctl is a cdev's VFIO_DEVICE_BIND_IOMMUFD and
// VFIO_DEVICE_ATTACH_IOMMUFD_PT; handled is false for any other request.
func (k *Kernel) cdevIoctl(f *file, req uint, arg []byte) (handled bool, r int, err error) {
	switch req {
	case vfio.VFIO_DEVICE_BIND_IOMMUFD:
		if _, err := argsz(arg, 16); err != nil {
			return true, -1, err
		}
		var b vfio.VFIODeviceBindIommufd
		vfio.Unmarshal(arg, &b)
		ifd, ok := k.fds[int(b.Iommufd)]
		if !ok || ifd.kind != kIommufd {
			return true, -1, unix.EBADF
		}
		if f.iommufd != nil {
			return true, -1, unix.EINVAL
		}
		if !k.viable(f.dev.Group) {
			return true, -1, unix.EPERM
		}
		f.iommufd = ifd
		b.OutDevid = k.nextID
		k.nextID++
		put(arg, b)
		return true, 0, nil
	case vfio.VFIO_DEVICE_ATTACH_IOMMUFD_PT:
		if _, err := argsz(arg, 12); err != nil {
			return true, -1, err
		}
		var a vfio.VFIODeviceAttachIommufdPt
		vfio.Unmarshal(arg, &a)
		if f.iommufd == nil {
			return true, -1, unix.EINVAL
		}
		if _, ok := f.iommufd.ioasIDs[a.PtID]; !ok {
			return true, -1, unix.ENOENT
		}
		f.ioas = a.PtID
		return true, 0, nil
	}
	return false, 0, nil
}

// regionInfo is VFIO_DEVICE_GET_REGION_INFO: a region the device lacks
// below VFIO_PCI_NUM_REGIONS reads as size 0; a sparse mmappable region
// carries its capability chain when argsz leaves room for it.
func regionInfo(d *Device, arg []byte) (int, error) {
	sz, err := argsz(arg, 32)
	if err != nil {
		return -1, err
	}
	var ri vfio.VFIORegionInfo
	vfio.Unmarshal(arg, &ri)
	r, ok := d.region(int(ri.Index))
	if !ok {
		if ri.Index >= vfio.VFIO_PCI_NUM_REGIONS {
			return -1, unix.EINVAL
		}
		put(arg, vfio.VFIORegionInfo{Argsz: 32, Index: ri.Index, Offset: uint64(ri.Index) << regionShift})
		return 0, nil
	}
	out := vfio.VFIORegionInfo{Argsz: 32, Index: ri.Index, Flags: r.Flags, Size: r.Size, Offset: uint64(r.Index) << regionShift}
	if r.Sparse != nil && r.Flags&vfio.VFIO_REGION_INFO_FLAG_MMAP != 0 {
		sparseCaps(r, &out, sz, arg)
	}
	put(arg, out)
	return 0, nil
}

// sparseCaps adds a SPARSE_MMAP capability, behind a TYPE capability to
// test the chain walk, to a region's info: argsz says how much room the
// chain needs, which it fills if the caller's argsz gives that room.
func sparseCaps(r Region, out *vfio.VFIORegionInfo, sz uint32, arg []byte) {
	capType := vfio.Marshal(struct {
		H       vfio.VFIOInfoCapHeader
		Typ, ST uint32
	}{H: vfio.VFIOInfoCapHeader{ID: vfio.VFIO_REGION_INFO_CAP_TYPE, Version: 1}})
	sp := vfio.Marshal(vfio.VFIORegionInfoCapSparseMmap{Header: vfio.VFIOInfoCapHeader{ID: vfio.VFIO_REGION_INFO_CAP_SPARSE_MMAP, Version: 1}, NrAreas: uint32(len(r.Sparse))})
	for _, a := range r.Sparse {
		sp = append(sp, vfio.Marshal(vfio.VFIORegionSparseMmapArea(a))...)
	}
	out.Flags |= vfio.VFIO_REGION_INFO_FLAG_CAPS
	need := 32 + len(capType) + len(sp)
	out.Argsz = uint32(need)
	if int(sz) >= need {
		out.CapOffset = 32
		// chain: TYPE at 32 -> SPARSE after it
		capType2 := vfio.Marshal(struct {
			H       vfio.VFIOInfoCapHeader
			Typ, ST uint32
		}{H: vfio.VFIOInfoCapHeader{ID: vfio.VFIO_REGION_INFO_CAP_TYPE, Version: 1, Next: uint32(32 + len(capType))}})
		copy(arg[32:], capType2)
		copy(arg[32+len(capType):], sp)
	}
}

func (d *Device) region(i int) (Region, bool) {
	for _, r := range d.Regions {
		if r.Index == i && r.Size > 0 {
			return r, true
		}
	}
	return Region{}, false
}

func (k *Kernel) iommufdIoctl(f *file, req uint, arg []byte) (int, error) {
	switch req {
	case vfio.IOMMU_IOAS_ALLOC:
		if _, err := argsz(arg, 12); err != nil {
			return -1, err
		}
		var a vfio.IommuIoasAlloc
		vfio.Unmarshal(arg, &a)
		a.OutIoasID = k.nextID
		k.nextID++
		f.ioasIDs[a.OutIoasID] = map[uint64]uint64{}
		put(arg, a)
		return 0, nil
	case vfio.IOMMU_IOAS_MAP:
		if _, err := argsz(arg, 40); err != nil {
			return -1, err
		}
		var m vfio.IommuIoasMap
		vfio.Unmarshal(arg, &m)
		as, ok := f.ioasIDs[m.IoasID]
		if !ok {
			return -1, unix.ENOENT
		}
		if m.Length == 0 || !aligned(m.UserVa) || !aligned(m.Iova) || !aligned(m.Length) {
			return -1, unix.EINVAL
		}
		if overlaps(as, m.Iova, m.Length) {
			return -1, unix.EEXIST
		}
		as[m.Iova] = m.Length
		k.counts.MapDMA++
		return 0, nil
	case vfio.IOMMU_IOAS_UNMAP:
		if _, err := argsz(arg, 24); err != nil {
			return -1, err
		}
		var u vfio.IommuIoasUnmap
		vfio.Unmarshal(arg, &u)
		as, ok := f.ioasIDs[u.IoasID]
		if !ok {
			return -1, unix.ENOENT
		}
		u.Length = unmap(as, u.Iova, u.Length)
		put(arg, u)
		k.counts.UnmapDMA++
		return 0, nil
	}
	return -1, unix.ENOTTY
}

// locate finds the region and offset behind a device fd position.
func (k *Kernel) locate(f *file, pos int64, n int) (Region, []byte, uint64, error) {
	if f.kind != kDevice && f.kind != kCdev {
		return Region{}, nil, 0, unix.EINVAL
	}
	if f.kind == kCdev && f.ioas == 0 {
		return Region{}, nil, 0, unix.EINVAL
	}
	idx := int(uint64(pos) >> regionShift)
	off := uint64(pos) & (1<<regionShift - 1)
	r, ok := f.dev.region(idx)
	if !ok || off > r.Size || uint64(n) > r.Size-off {
		return Region{}, nil, 0, unix.EINVAL
	}
	return r, f.dev.mem[idx], off, nil
}

func (k *Kernel) Mmap(fd int, offset int64, length int, prot, flags int) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	f, ok := k.fds[fd]
	if !ok {
		return nil, unix.EBADF
	}
	r, mem, off, err := k.locate(f, offset, length)
	if err != nil {
		return nil, err
	}
	if length <= 0 || !aligned(off) || flags&unix.MAP_SHARED == 0 || r.Flags&vfio.VFIO_REGION_INFO_FLAG_MMAP == 0 {
		return nil, unix.EINVAL
	}
	if prot&unix.PROT_WRITE != 0 && r.Flags&vfio.VFIO_REGION_INFO_FLAG_WRITE == 0 {
		return nil, unix.EINVAL
	}
	if r.Sparse != nil {
		in := false
		for _, a := range r.Sparse {
			if off >= a.Offset && off+uint64(length) <= a.Offset+a.Size {
				in = true
			}
		}
		if !in {
			return nil, unix.EINVAL
		}
	}
	b := mem[off : off+uint64(length) : off+uint64(length)]
	k.maps[&b[0]]++
	k.counts.Mmaps++
	return b, nil
}

func (k *Kernel) Munmap(b []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(b) == 0 || k.maps[&b[0]] == 0 {
		return unix.EINVAL
	}
	k.maps[&b[0]]--
	if k.maps[&b[0]] == 0 {
		delete(k.maps, &b[0])
	}
	k.counts.Munmaps++
	return nil
}

func (k *Kernel) rw(fd int, p []byte, pos int64, write bool) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	f, ok := k.fds[fd]
	if !ok {
		return 0, unix.EBADF
	}
	r, mem, off, err := k.locate(f, pos, len(p))
	if err != nil {
		return 0, err
	}
	if write {
		if r.Flags&vfio.VFIO_REGION_INFO_FLAG_WRITE == 0 {
			return 0, unix.EINVAL
		}
		k.counts.Pwrites++
		return copy(mem[off:], p), nil
	}
	k.counts.Preads++
	return copy(p, mem[off:]), nil
}

func (k *Kernel) Pread(fd int, p []byte, off int64) (int, error)  { return k.rw(fd, p, off, false) }
func (k *Kernel) Pwrite(fd int, p []byte, off int64) (int, error) { return k.rw(fd, p, off, true) }
