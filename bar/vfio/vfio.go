package vfio

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/bar/pci"
)

// Sentinel errors, wrapped with %w together with the device and a hint.
var (
	ErrNotViable = errors.New("vfio: IOMMU group is not viable")
	ErrBusy      = errors.New("vfio: device or group is already open")
	ErrNoIOMMU   = errors.New("vfio: no usable IOMMU backend")
	ErrNoVFIO    = errors.New("vfio: VFIO is not available")

	errNoIommufd = errors.New("no /dev/iommu")
)

// Mode selects how a device is opened.
type Mode int

const (
	// Auto uses the iommufd cdev where the device has one and /dev/iommu
	// exists, and the container/group API otherwise.
	Auto Mode = iota
	// Group uses /dev/vfio/vfio and /dev/vfio/N.
	Group
	// Cdev uses /dev/vfio/devices/vfioN and /dev/iommu.
	Cdev
)

func (m Mode) String() string {
	return [...]string{"auto", "group", "cdev"}[m]
}

type options struct {
	sys     Sys
	sysfs   string
	dev     string
	mode    Mode
	iommu   int // 0: best available
	minSize int64
}

// Option configures Open and OpenRegion.
type Option func(*options)

// WithSys replaces the kernel (tests pass a vfiotest.Kernel).
func WithSys(s Sys) Option { return func(o *options) { o.sys = s } }

// WithSysfs sets the sysfs root (default "/sys").
func WithSysfs(root string) Option { return func(o *options) { o.sysfs = root } }

// WithDev sets the directory holding vfio/ and iommu (default "/dev").
func WithDev(dir string) Option { return func(o *options) { o.dev = dir } }

// WithMode forces the group or the cdev path.
func WithMode(m Mode) Option { return func(o *options) { o.mode = m } }

// WithIOMMU forces the container's IOMMU type (VFIO_TYPE1_IOMMU or
// VFIO_TYPE1v2_IOMMU); the default is type1v2 where offered, else type1.
func WithIOMMU(t int) Option { return func(o *options) { o.iommu = t } }

// WithMinSize makes OpenRegion fail with bar.ErrTooSmall when the region
// has fewer than n bytes (the layout the caller puts in it needs n).
func WithMinSize(n int64) Option { return func(o *options) { o.minSize = n } }

func getOptions(opts []Option) options {
	o := options{sys: Kernel{}, sysfs: pci.DefaultRoot, dev: "/dev"}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Container is an open /dev/vfio/vfio.
type Container struct {
	sys   Sys
	fd    int
	iommu int // the type set with SetIOMMU; 0 before
}

// OpenContainer opens path (normally /dev/vfio/vfio) and checks the API
// version.
func OpenContainer(s Sys, path string) (*Container, error) {
	fd, err := s.Open(path, unix.O_RDWR)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s does not exist: the vfio module is not loaded (vhcrd bind BDF loads it; or modprobe vfio-pci): %w", path, ErrNoVFIO)
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	c := &Container{sys: s, fd: fd}
	v, err := s.Ioctl(fd, VFIO_GET_API_VERSION, 0)
	if err != nil || v != VFIO_API_VERSION {
		c.Close()
		return nil, fmt.Errorf("%s: VFIO API version %d (%v), want %d: %w", path, v, err, VFIO_API_VERSION, ErrNoVFIO)
	}
	return c, nil
}

// CheckExtension reports whether the container supports ext (an IOMMU type).
func (c *Container) CheckExtension(ext int) bool {
	r, err := c.sys.Ioctl(c.fd, VFIO_CHECK_EXTENSION, uintptr(ext))
	return err == nil && r > 0
}

// SetIOMMU selects the IOMMU backend. The kernel requires a group to be
// attached first.
func (c *Container) SetIOMMU(typ int) error {
	if _, err := c.sys.Ioctl(c.fd, VFIO_SET_IOMMU, uintptr(typ)); err != nil {
		hint := ""
		if errors.Is(err, unix.EPERM) {
			hint = " (no interrupt remapping: load vfio_iommu_type1 with allow_unsafe_interrupts=1, or enable intremap)"
		}
		return fmt.Errorf("VFIO_SET_IOMMU(%d): %w%s", typ, err, hint)
	}
	c.iommu = typ
	return nil
}

// IOMMU returns the IOMMU type set, or 0.
func (c *Container) IOMMU() int { return c.iommu }

// IOMMUPageSizes returns VFIO_IOMMU_GET_INFO's iova_pgsizes: a bit per
// supported IOMMU page size. Valid once an IOMMU is set.
func (c *Container) IOMMUPageSizes() (uint64, error) {
	in := VFIOIommuType1Info{}
	in.Argsz = uint32(len(Marshal(in)))
	if _, err := ioctlStruct(c.sys, c.fd, VFIO_IOMMU_GET_INFO, &in); err != nil {
		return 0, fmt.Errorf("VFIO_IOMMU_GET_INFO: %w", err)
	}
	return in.IovaPgsizes, nil
}

// MapDMA maps buf at iova in the container's IOMMU domain.
func (c *Container) MapDMA(buf []byte, iova uint64, write bool) error {
	m := VFIOIommuType1DmaMap{Flags: VFIO_DMA_MAP_FLAG_READ, Vaddr: c.sys.Addr(buf), Iova: iova, Size: uint64(len(buf))}
	if write {
		m.Flags |= VFIO_DMA_MAP_FLAG_WRITE
	}
	m.Argsz = uint32(len(Marshal(m)))
	if _, err := ioctlStruct(c.sys, c.fd, VFIO_IOMMU_MAP_DMA, &m); err != nil {
		hint := ""
		if c.iommu == 0 && errors.Is(err, unix.EINVAL) {
			hint = ": no IOMMU set on the container (VFIO_SET_IOMMU first)"
			err = fmt.Errorf("%w: %w", err, ErrNoIOMMU)
		}
		return fmt.Errorf("VFIO_IOMMU_MAP_DMA %d bytes at iova %#x: %w%s", len(buf), iova, err, hint)
	}
	return nil
}

// UnmapDMA unmaps [iova, iova+size) and returns how many bytes the kernel
// unmapped.
func (c *Container) UnmapDMA(iova, size uint64) (uint64, error) {
	u := VFIOIommuType1DmaUnmap{Iova: iova, Size: size}
	u.Argsz = uint32(len(Marshal(u)))
	if _, err := ioctlStruct(c.sys, c.fd, VFIO_IOMMU_UNMAP_DMA, &u); err != nil {
		return 0, fmt.Errorf("VFIO_IOMMU_UNMAP_DMA %#x at iova %#x: %w", size, iova, err)
	}
	return u.Size, nil
}

// Close closes the container fd.
func (c *Container) Close() error {
	if c.fd < 0 {
		return nil
	}
	err := c.sys.Close(c.fd)
	c.fd = -1
	return err
}

// VFIOGroup is an open /dev/vfio/N.
type VFIOGroup struct {
	sys  Sys
	fd   int
	path string
}

// OpenGroup opens a group file. A group can be open in one process only.
func OpenGroup(s Sys, path string) (*VFIOGroup, error) {
	fd, err := s.Open(path, unix.O_RDWR)
	if err != nil {
		if errors.Is(err, unix.EBUSY) {
			return nil, fmt.Errorf("%s is open elsewhere (another vhcrd or VMM holds the group; stop it first): %w", path, ErrBusy)
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &VFIOGroup{sys: s, fd: fd, path: path}, nil
}

// Status returns VFIO_GROUP_GET_STATUS flags.
func (g *VFIOGroup) Status() (uint32, error) {
	st := VFIOGroupStatus{Argsz: 8}
	if _, err := ioctlStruct(g.sys, g.fd, VFIO_GROUP_GET_STATUS, &st); err != nil {
		return 0, fmt.Errorf("%s: VFIO_GROUP_GET_STATUS: %w", g.path, err)
	}
	return st.Flags, nil
}

// SetContainer attaches the group to c.
func (g *VFIOGroup) SetContainer(c *Container) error {
	if _, err := g.sys.IoctlBuf(g.fd, VFIO_GROUP_SET_CONTAINER, Marshal(int32(c.fd))); err != nil {
		return fmt.Errorf("%s: VFIO_GROUP_SET_CONTAINER: %w", g.path, err)
	}
	return nil
}

// DeviceFD returns a new fd for the named device of the group.
func (g *VFIOGroup) DeviceFD(addr string) (int, error) {
	fd, err := g.sys.IoctlBuf(g.fd, VFIO_GROUP_GET_DEVICE_FD, append([]byte(addr), 0))
	if err != nil {
		return -1, fmt.Errorf("%s: VFIO_GROUP_GET_DEVICE_FD(%s): %w", g.path, addr, err)
	}
	return fd, nil
}

// Close closes the group fd.
func (g *VFIOGroup) Close() error {
	if g.fd < 0 {
		return nil
	}
	err := g.sys.Close(g.fd)
	g.fd = -1
	return err
}

// Info is what VFIO_DEVICE_GET_INFO reports.
type Info struct {
	Flags      uint32
	NumRegions int
	NumIrqs    int
}

// Device is an open vfio-pci device with its container and group (or its
// iommufd). Close releases everything, including regions still open.
type Device struct {
	sys  Sys
	addr string
	mode Mode
	fd   int

	container *Container
	group     *VFIOGroup
	groupNum  int

	iommufd int // cdev mode
	ioasID  uint32

	info    Info
	regions []*Region
}

// Open opens the vfio-pci device at addr. The device must be bound to
// vfio-pci (vhcrd bind does that) and its IOMMU group viable.
func Open(addr string, opts ...Option) (_ *Device, err error) {
	o := getOptions(opts)
	a, err := pci.Exists(o.sysfs, addr)
	if err != nil {
		return nil, err
	}
	drv, err := pci.Driver(o.sysfs, a)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a, err)
	}
	if drv != pci.VFIODriver {
		if drv == "" {
			drv = "no driver"
		}
		return nil, fmt.Errorf("%s is bound to %s, not vfio-pci (run 'vhcrd bind %s'): %w", a, drv, a, pci.ErrNotBound)
	}
	d := &Device{sys: o.sys, addr: a, fd: -1, iommufd: -1, groupNum: -1}
	defer func() {
		if err != nil {
			d.Close() // the leak check in vfiotest holds every error path to this
		}
	}()
	cdev := pci.VFIODev(o.sysfs, a)
	switch o.mode {
	case Cdev:
		if cdev == "" {
			return nil, fmt.Errorf("%s: the kernel offers no vfio cdev for it (no vfio-dev in sysfs; use the group path): %w", a, ErrNoVFIO)
		}
		d.mode = Cdev
		err = d.openCdev(o, cdev)
	case Auto:
		if cdev != "" {
			// Prefer iommufd; fall back to the group path where the
			// kernel has the cdev but no /dev/iommu.
			d.mode = Cdev
			if err = d.openCdev(o, cdev); err == nil || !errors.Is(err, errNoIommufd) {
				break
			}
			slog.Debug("vfio: no iommufd, using the group", "dev", a, "err", err)
			d.closeFDs()
		}
		d.mode = Group
		err = d.openGroup(o)
	default:
		d.mode = Group
		err = d.openGroup(o)
	}
	if err != nil {
		return nil, err
	}
	di := VFIODeviceInfo{}
	di.Argsz = uint32(len(Marshal(di)))
	if _, err := ioctlStruct(d.sys, d.fd, VFIO_DEVICE_GET_INFO, &di); err != nil {
		return nil, fmt.Errorf("%s: VFIO_DEVICE_GET_INFO: %w", a, err)
	}
	d.info = Info{Flags: di.Flags, NumRegions: int(di.NumRegions), NumIrqs: int(di.NumIrqs)}
	slog.Debug("vfio: device open", "dev", a, "mode", d.mode, "group", d.groupNum, "regions", di.NumRegions, "flags", di.Flags)
	return d, nil
}

func (d *Device) openGroup(o options) error {
	a := d.addr
	g, err := pci.IOMMUGroup(o.sysfs, a)
	if err != nil {
		return err
	}
	d.groupNum = g
	d.container, err = OpenContainer(d.sys, filepath.Join(o.dev, "vfio", "vfio"))
	if err != nil {
		return fmt.Errorf("%s: %w", a, err)
	}
	typ := o.iommu
	if typ == 0 {
		switch {
		case d.container.CheckExtension(VFIO_TYPE1v2_IOMMU):
			typ = VFIO_TYPE1v2_IOMMU
		case d.container.CheckExtension(VFIO_TYPE1_IOMMU):
			typ = VFIO_TYPE1_IOMMU
		default:
			return fmt.Errorf("%s: the container offers neither type1 nor type1v2 (load vfio_iommu_type1): %w", a, ErrNoIOMMU)
		}
	} else if !d.container.CheckExtension(typ) {
		return fmt.Errorf("%s: IOMMU type %d not supported (load vfio_iommu_type1): %w", a, typ, ErrNoIOMMU)
	}
	d.group, err = OpenGroup(d.sys, filepath.Join(o.dev, "vfio", strconv.Itoa(g)))
	if err != nil {
		return fmt.Errorf("%s: %w", a, err)
	}
	st, err := d.group.Status()
	if err != nil {
		return fmt.Errorf("%s: %w", a, err)
	}
	if st&VFIO_GROUP_FLAGS_VIABLE == 0 {
		return fmt.Errorf("%s: IOMMU group %d is not viable: every device in it must be bound to vfio-pci or to no driver (%s): %w",
			a, g, groupDrivers(o.sysfs, g), ErrNotViable)
	}
	if err := d.group.SetContainer(d.container); err != nil {
		return fmt.Errorf("%s: %w", a, err)
	}
	if err := d.container.SetIOMMU(typ); err != nil {
		return fmt.Errorf("%s: %w", a, err)
	}
	d.fd, err = d.group.DeviceFD(a)
	if err != nil {
		return fmt.Errorf("%s: %w", a, err)
	}
	return nil
}

func groupDrivers(root string, g int) string {
	devs, err := pci.GroupDevices(root, g)
	if err != nil {
		return err.Error()
	}
	var s []string
	for _, d := range devs {
		drv, _ := pci.Driver(root, d)
		if drv == "" {
			drv = "no driver"
		}
		s = append(s, d+": "+drv)
	}
	return strings.Join(s, ", ")
}

func (d *Device) openCdev(o options, cdev string) error {
	a := d.addr
	var err error
	path := filepath.Join(o.dev, "iommu")
	if d.iommufd, err = d.sys.Open(path, unix.O_RDWR); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			err = fmt.Errorf("%w: %w", err, errNoIommufd)
		}
		return fmt.Errorf("%s: open %s (load the iommufd module, or use the group path): %w", a, path, err)
	}
	path = filepath.Join(o.dev, "vfio", "devices", cdev)
	if d.fd, err = d.sys.Open(path, unix.O_RDWR); err != nil {
		if errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("%s: %s is open elsewhere: %w", a, path, ErrBusy)
		}
		return fmt.Errorf("%s: open %s: %w", a, path, err)
	}
	b := VFIODeviceBindIommufd{Iommufd: int32(d.iommufd)}
	b.Argsz = uint32(len(Marshal(b)))
	if _, err := ioctlStruct(d.sys, d.fd, VFIO_DEVICE_BIND_IOMMUFD, &b); err != nil {
		if errors.Is(err, unix.EBUSY) {
			err = fmt.Errorf("%w: %w", err, ErrBusy)
		}
		return fmt.Errorf("%s: VFIO_DEVICE_BIND_IOMMUFD: %w", a, err)
	}
	al := IommuIoasAlloc{}
	al.Size = uint32(len(Marshal(al)))
	if _, err := ioctlStruct(d.sys, d.iommufd, IOMMU_IOAS_ALLOC, &al); err != nil {
		return fmt.Errorf("%s: IOMMU_IOAS_ALLOC: %w", a, err)
	}
	d.ioasID = al.OutIoasID
	at := VFIODeviceAttachIommufdPt{PtID: d.ioasID}
	at.Argsz = uint32(len(Marshal(at)))
	if _, err := ioctlStruct(d.sys, d.fd, VFIO_DEVICE_ATTACH_IOMMUFD_PT, &at); err != nil {
		return fmt.Errorf("%s: VFIO_DEVICE_ATTACH_IOMMUFD_PT: %w", a, err)
	}
	return nil
}

// Addr is the device's PCI address.
func (d *Device) Addr() string { return d.addr }

// Mode is the path the device was opened with (Group or Cdev).
func (d *Device) Mode() Mode { return d.mode }

// Info is the device info.
func (d *Device) Info() Info { return d.info }

// FD is the device fd (config space: pread/pwrite at the config region's
// offset). It stays owned by the Device.
func (d *Device) FD() int { return d.fd }

// IOMMUGroup is the group number in group mode, -1 in cdev mode.
func (d *Device) IOMMUGroup() int { return d.groupNum }

// Reset issues VFIO_DEVICE_RESET.
func (d *Device) Reset() error {
	if _, err := d.sys.Ioctl(d.fd, VFIO_DEVICE_RESET, 0); err != nil {
		return fmt.Errorf("%s: VFIO_DEVICE_RESET: %w", d.addr, err)
	}
	return nil
}

// Container returns the device's container in group mode, nil in cdev
// mode.
func (d *Device) Container() *Container { return d.container }

// MapDMA makes buf (page-aligned memory the caller keeps alive until
// UnmapDMA) visible to the device at iova.
func (d *Device) MapDMA(buf []byte, iova uint64, write bool) error {
	if d.mode == Cdev {
		m := IommuIoasMap{Flags: IOMMU_IOAS_MAP_FIXED_IOVA | IOMMU_IOAS_MAP_READABLE, IoasID: d.ioasID,
			UserVa: d.sys.Addr(buf), Length: uint64(len(buf)), Iova: iova}
		if write {
			m.Flags |= IOMMU_IOAS_MAP_WRITEABLE
		}
		m.Size = uint32(len(Marshal(m)))
		if _, err := ioctlStruct(d.sys, d.iommufd, IOMMU_IOAS_MAP, &m); err != nil {
			return fmt.Errorf("%s: IOMMU_IOAS_MAP %d bytes at iova %#x: %w", d.addr, len(buf), iova, err)
		}
		return nil
	}
	if err := d.container.MapDMA(buf, iova, write); err != nil {
		return fmt.Errorf("%s: %w", d.addr, err)
	}
	return nil
}

// UnmapDMA removes the mapping at [iova, iova+size) and returns the number
// of bytes unmapped.
func (d *Device) UnmapDMA(iova, size uint64) (uint64, error) {
	if d.mode == Cdev {
		u := IommuIoasUnmap{IoasID: d.ioasID, Iova: iova, Length: size}
		u.Size = uint32(len(Marshal(u)))
		if _, err := ioctlStruct(d.sys, d.iommufd, IOMMU_IOAS_UNMAP, &u); err != nil {
			return 0, fmt.Errorf("%s: IOMMU_IOAS_UNMAP %#x at iova %#x: %w", d.addr, size, iova, err)
		}
		return u.Length, nil
	}
	n, err := d.container.UnmapDMA(iova, size)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", d.addr, err)
	}
	return n, nil
}

// Close unmaps every region of the device and closes the device, group and
// container (or iommufd) fds, in that order. It is safe to call more than
// once.
func (d *Device) Close() error {
	var errs []error
	for _, r := range slices.Clone(d.regions) {
		errs = append(errs, r.Close())
	}
	d.regions = nil
	errs = append(errs, d.closeFDs())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: close: %w", d.addr, err)
	}
	return nil
}

func (d *Device) closeFDs() error {
	var errs []error
	if d.fd >= 0 {
		errs = append(errs, d.sys.Close(d.fd))
		d.fd = -1
	}
	if d.group != nil {
		errs = append(errs, d.group.Close())
		d.group = nil
	}
	if d.container != nil {
		errs = append(errs, d.container.Close())
		d.container = nil
	}
	if d.iommufd >= 0 {
		errs = append(errs, d.sys.Close(d.iommufd))
		d.iommufd = -1
	}
	return errors.Join(errs...)
}

// OpenRegion opens the device at addr and its region index (VFIO region
// index = BAR number for BAR0..5) as a bar.Region. Closing the returned
// Device closes the region too; closing only the region leaves the device
// open for DMA mapping or other regions.
func OpenRegion(addr string, index int, opts ...Option) (*Region, *Device, error) {
	d, err := Open(addr, opts...)
	if err != nil {
		return nil, nil, err
	}
	r, err := d.Region(index)
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	if o := getOptions(opts); o.minSize > 0 && r.Size() < o.minSize {
		d.Close()
		return nil, nil, fmt.Errorf("%s: %d bytes, but %d are needed (use a larger BAR, fewer VFs or smaller windows): %w", r.Name(), r.Size(), o.minSize, bar.ErrTooSmall)
	}
	return r, d, nil
}
