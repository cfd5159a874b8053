// Package vfiotest is a fake Linux VFIO kernel for unit tests of package
// vfio. It implements vfio.Sys over a fake sysfs tree (package
// bar/pci/pcitest) and heap memory standing in for device regions, and
// enforces the rules the real kernel enforces:
//
//   - /dev/vfio/vfio exists only while the vfio module is "loaded";
//     /dev/vfio/N only for groups with a device bound to vfio-pci;
//   - a group can be opened once at a time (EBUSY), and so can a cdev;
//   - a group that is not viable (a device in it bound to another driver)
//     cannot be attached to a container (EPERM);
//   - VFIO_SET_IOMMU needs a group attached first, and DMA mapping and
//     VFIO_GROUP_GET_DEVICE_FD need an IOMMU set (EINVAL);
//   - mmap is refused (EINVAL) outside the mmappable areas of a region;
//   - argsz is checked on every struct ioctl;
//   - region capability chains are only returned when argsz is large
//     enough, as the kernel does.
//
// New registers a cleanup that fails the test when fds or mappings are
// left open (the leak check). Counters tell tests which path (mmap or
// pread/pwrite) an access took.
package vfiotest
