// Package pci owns what vhcrd knows about PCI devices from sysfs: the table
// of devices with their BARs (size, flags, whether they can be mapped), the
// bound driver, the IOMMU group, the iommufd character device and the SR-IOV
// state (sriov_numvfs, sriov_totalvfs, VF to PF links); and binding a device
// to vfio-pci through driver_override and drivers_probe, loading the VFIO
// modules with u-root's kmodule when they are missing.
//
// Every function takes the sysfs root ("/sys" on a host) so that tests run
// against a fake tree made of ordinary files and symlinks. The SR-IOV numbers
// and ids come from github.com/prometheus/procfs/sysfs; resource, driver,
// iommu_group, physfn and vfio-dev are read here.
//
// pci knows nothing about mapping memory: packages bar/sysfs and bar/vfio do
// that, using this package to find a device's resources and group.
package pci
