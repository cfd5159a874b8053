// Package pcitest builds fake sysfs trees for tests: PCI device directories
// with the attribute files the kernel shows, driver and iommu_group
// symlinks, SR-IOV files and real regular files behind resourceN, so that
// code under test runs its production open and mmap paths against them.
package pcitest
