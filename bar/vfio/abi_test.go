package vfio_test

import (
	"encoding/binary"
	"testing"

	"github.com/vhcrd/vhcrd/bar/vfio"
)

// The ioctl numbers, checked against linux/vfio.h (6.1) with a C program
// for the VFIO ones, and computed from iommufd.h's _IO(';', 0x80+n) for
// the iommufd ones. x/sys does not define them.
func TestIoctlNumbersGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		got  uint
		want uint
	}{
		{"VFIO_GET_API_VERSION", vfio.VFIO_GET_API_VERSION, 0x3b64},
		{"VFIO_CHECK_EXTENSION", vfio.VFIO_CHECK_EXTENSION, 0x3b65},
		{"VFIO_SET_IOMMU", vfio.VFIO_SET_IOMMU, 0x3b66},
		{"VFIO_GROUP_GET_STATUS", vfio.VFIO_GROUP_GET_STATUS, 0x3b67},
		{"VFIO_GROUP_SET_CONTAINER", vfio.VFIO_GROUP_SET_CONTAINER, 0x3b68},
		{"VFIO_GROUP_UNSET_CONTAINER", vfio.VFIO_GROUP_UNSET_CONTAINER, 0x3b69},
		{"VFIO_GROUP_GET_DEVICE_FD", vfio.VFIO_GROUP_GET_DEVICE_FD, 0x3b6a},
		{"VFIO_DEVICE_GET_INFO", vfio.VFIO_DEVICE_GET_INFO, 0x3b6b},
		{"VFIO_DEVICE_GET_REGION_INFO", vfio.VFIO_DEVICE_GET_REGION_INFO, 0x3b6c},
		{"VFIO_DEVICE_GET_IRQ_INFO", vfio.VFIO_DEVICE_GET_IRQ_INFO, 0x3b6d},
		{"VFIO_DEVICE_SET_IRQS", vfio.VFIO_DEVICE_SET_IRQS, 0x3b6e},
		{"VFIO_DEVICE_RESET", vfio.VFIO_DEVICE_RESET, 0x3b6f},
		{"VFIO_IOMMU_GET_INFO", vfio.VFIO_IOMMU_GET_INFO, 0x3b70},
		{"VFIO_IOMMU_MAP_DMA", vfio.VFIO_IOMMU_MAP_DMA, 0x3b71},
		{"VFIO_IOMMU_UNMAP_DMA", vfio.VFIO_IOMMU_UNMAP_DMA, 0x3b72},
		{"VFIO_DEVICE_BIND_IOMMUFD", vfio.VFIO_DEVICE_BIND_IOMMUFD, 0x3b76},
		{"VFIO_DEVICE_ATTACH_IOMMUFD_PT", vfio.VFIO_DEVICE_ATTACH_IOMMUFD_PT, 0x3b77},
		{"VFIO_DEVICE_DETACH_IOMMUFD_PT", vfio.VFIO_DEVICE_DETACH_IOMMUFD_PT, 0x3b78},
		{"IOMMU_DESTROY", vfio.IOMMU_DESTROY, 0x3b80},
		{"IOMMU_IOAS_ALLOC", vfio.IOMMU_IOAS_ALLOC, 0x3b81},
		{"IOMMU_IOAS_MAP", vfio.IOMMU_IOAS_MAP, 0x3b85},
		{"IOMMU_IOAS_UNMAP", vfio.IOMMU_IOAS_UNMAP, 0x3b86},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
}

// Wire sizes of the ABI structs (sizeof in C; the marshalled size here).
func TestStructSizesGolden(t *testing.T) {
	for _, c := range []struct {
		v    any
		want int
	}{
		{vfio.VFIOGroupStatus{}, 8},
		{vfio.VFIODeviceInfo{}, 20},
		{vfio.VFIORegionInfo{}, 32},
		{vfio.VFIOInfoCapHeader{}, 8},
		{vfio.VFIORegionInfoCapSparseMmap{}, 16},
		{vfio.VFIORegionSparseMmapArea{}, 16},
		{vfio.VFIOIommuType1Info{}, 24},
		{vfio.VFIOIommuType1DmaMap{}, 32},
		{vfio.VFIOIommuType1DmaUnmap{}, 24},
		{vfio.VFIODeviceBindIommufd{}, 16},
		{vfio.VFIODeviceAttachIommufdPt{}, 12},
		{vfio.IommuIoasAlloc{}, 12},
		{vfio.IommuIoasMap{}, 40},
		{vfio.IommuIoasUnmap{}, 24},
		{vfio.IommuDestroy{}, 8},
	} {
		if got := binary.Size(c.v); got != c.want {
			t.Errorf("%T: %d bytes, want %d", c.v, got, c.want)
		}
		if got := len(vfio.Marshal(c.v)); got != c.want {
			t.Errorf("%T: marshals to %d bytes, want %d", c.v, got, c.want)
		}
	}
	// Field offsets that matter: region info size/offset, dma map vaddr.
	b := vfio.Marshal(vfio.VFIORegionInfo{Size: 0x1111, Offset: 0x2222})
	if binary.NativeEndian.Uint64(b[16:]) != 0x1111 || binary.NativeEndian.Uint64(b[24:]) != 0x2222 {
		t.Errorf("vfio_region_info layout: % x", b)
	}
	b = vfio.Marshal(vfio.VFIOIommuType1DmaMap{Vaddr: 0x3333, Iova: 0x4444})
	if binary.NativeEndian.Uint64(b[8:]) != 0x3333 || binary.NativeEndian.Uint64(b[16:]) != 0x4444 {
		t.Errorf("vfio_iommu_type1_dma_map layout: % x", b)
	}
	b = vfio.Marshal(vfio.IommuIoasMap{UserVa: 0x5555, Iova: 0x6666})
	if binary.NativeEndian.Uint64(b[16:]) != 0x5555 || binary.NativeEndian.Uint64(b[32:]) != 0x6666 {
		t.Errorf("iommu_ioas_map layout: % x", b)
	}
}
