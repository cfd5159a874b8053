// Package sysfs owns the sysfs backend of bar: a bar.Region over
// /sys/bus/pci/devices/BDF/resourceN, mapped MAP_SHARED with the BAR's size
// and flags taken from the device's "resource" file.
//
// It needs no driver and no IOMMU, but it needs root, memory decoding
// enabled on the device, a kernel that is not locked down, and a BAR that no
// driver has claimed: with CONFIG_IO_STRICT_DEVMEM a BAR that vfio-pci has
// mapped cannot be mapped here (mmap fails with EINVAL), and an existing
// mapping is revoked when vfio-pci claims it. I/O-port BARs are refused.
//
// The sysfs root is a parameter, so tests point it at a fake tree whose
// resourceN is a regular file (package bar/pci/pcitest) and run the real
// mmap path.
package sysfs
