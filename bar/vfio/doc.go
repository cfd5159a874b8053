// Package vfio owns the vfio-pci backend of bar: opening a device through
// the VFIO container and group API (type1 or type1v2 IOMMU) or through the
// iommufd character device (/dev/vfio/devices/vfioN with /dev/iommu) where
// the kernel offers it; reading device and region info, including
// capability chains with sparse mmap areas; mapping the mappable areas of a
// region and reaching the rest with pread/pwrite, behind bar.Region; and
// VFIO_IOMMU_MAP_DMA/UNMAP_DMA (or IOMMU_IOAS_MAP/UNMAP) for DMA memory.
//
// ABI: abi.go mirrors include/uapi/linux/vfio.h and iommufd.h with the
// kernel's names (gVisor style); the ioctl numbers are pinned by a golden
// test. Every ioctl, open, close, mmap, munmap, pread and pwrite goes
// through one seam, the Sys interface, so that package vfiotest can stand in
// for the kernel and enforce its rules in unit tests (a group must be viable,
// one opener per group, no mmap of an area that is not mmappable, no DMA
// mapping before an IOMMU is set) and check that every fd and mapping was
// released. Code that needs package unsafe lives in *_unsafe.go files.
//
// Memory type and lifetime: region mappings are MAP_SHARED device memory
// (Shared reports false: no futex waits, no atomic read-modify-write). They
// are valid until the Region or its Device is closed; a vfio-pci device
// keeps its BARs claimed while its fd is open, so a sysfs mapping of the
// same BAR fails (or is revoked) meanwhile.
package vfio
