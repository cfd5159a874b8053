package vfio

// Mirrors of include/uapi/linux/vfio.h and include/uapi/linux/iommufd.h.
// Names keep the kernel's spelling so they grep against the headers.
const (
	VFIO_API_VERSION = 0

	VFIO_TYPE = ';'
	VFIO_BASE = 100

	// Extensions (VFIO_CHECK_EXTENSION, VFIO_SET_IOMMU).
	VFIO_TYPE1_IOMMU      = 1
	VFIO_SPAPR_TCE_IOMMU  = 2
	VFIO_TYPE1v2_IOMMU    = 3
	VFIO_NOIOMMU_IOMMU    = 8
	VFIO_UNMAP_ALL        = 9
	VFIO_UPDATE_VADDR     = 10
	VFIO_TYPE1_NESTING_IO = 6

	VFIO_GROUP_FLAGS_VIABLE        = 1 << 0
	VFIO_GROUP_FLAGS_CONTAINER_SET = 1 << 1

	VFIO_DEVICE_FLAGS_RESET = 1 << 0
	VFIO_DEVICE_FLAGS_PCI   = 1 << 1
	VFIO_DEVICE_FLAGS_CAPS  = 1 << 7

	VFIO_REGION_INFO_FLAG_READ  = 1 << 0
	VFIO_REGION_INFO_FLAG_WRITE = 1 << 1
	VFIO_REGION_INFO_FLAG_MMAP  = 1 << 2
	VFIO_REGION_INFO_FLAG_CAPS  = 1 << 3

	VFIO_REGION_INFO_CAP_SPARSE_MMAP   = 1
	VFIO_REGION_INFO_CAP_TYPE          = 2
	VFIO_REGION_INFO_CAP_MSIX_MAPPABLE = 3

	VFIO_PCI_BAR0_REGION_INDEX   = 0
	VFIO_PCI_BAR5_REGION_INDEX   = 5
	VFIO_PCI_ROM_REGION_INDEX    = 6
	VFIO_PCI_CONFIG_REGION_INDEX = 7
	VFIO_PCI_VGA_REGION_INDEX    = 8
	VFIO_PCI_NUM_REGIONS         = 9

	VFIO_DMA_MAP_FLAG_READ  = 1 << 0
	VFIO_DMA_MAP_FLAG_WRITE = 1 << 1

	IOMMUFD_TYPE              = ';'
	IOMMUFD_CMD_BASE          = 0x80
	IOMMU_IOAS_MAP_FIXED_IOVA = 1 << 0
	IOMMU_IOAS_MAP_WRITEABLE  = 1 << 1
	IOMMU_IOAS_MAP_READABLE   = 1 << 2
)

// _IO(type, nr) from include/uapi/asm-generic/ioctl.h: no direction and no
// size bits, so the number is type<<8 | nr.
func _IO(typ, nr uint) uint { return typ<<8 | nr }

// VFIO ioctls. Each struct argument carries its own argsz. The same number
// can mean different things on different fds (VFIO_BASE+13 is
// VFIO_IOMMU_MAP_DMA on a container and VFIO_DEVICE_PCI_HOT_RESET on a
// device).
var (
	VFIO_GET_API_VERSION        = _IO(VFIO_TYPE, VFIO_BASE+0)
	VFIO_CHECK_EXTENSION        = _IO(VFIO_TYPE, VFIO_BASE+1)
	VFIO_SET_IOMMU              = _IO(VFIO_TYPE, VFIO_BASE+2)
	VFIO_GROUP_GET_STATUS       = _IO(VFIO_TYPE, VFIO_BASE+3)
	VFIO_GROUP_SET_CONTAINER    = _IO(VFIO_TYPE, VFIO_BASE+4)
	VFIO_GROUP_UNSET_CONTAINER  = _IO(VFIO_TYPE, VFIO_BASE+5)
	VFIO_GROUP_GET_DEVICE_FD    = _IO(VFIO_TYPE, VFIO_BASE+6)
	VFIO_DEVICE_GET_INFO        = _IO(VFIO_TYPE, VFIO_BASE+7)
	VFIO_DEVICE_GET_REGION_INFO = _IO(VFIO_TYPE, VFIO_BASE+8)
	VFIO_DEVICE_GET_IRQ_INFO    = _IO(VFIO_TYPE, VFIO_BASE+9)
	VFIO_DEVICE_SET_IRQS        = _IO(VFIO_TYPE, VFIO_BASE+10)
	VFIO_DEVICE_RESET           = _IO(VFIO_TYPE, VFIO_BASE+11)
	VFIO_IOMMU_GET_INFO         = _IO(VFIO_TYPE, VFIO_BASE+12)
	VFIO_IOMMU_MAP_DMA          = _IO(VFIO_TYPE, VFIO_BASE+13)
	VFIO_IOMMU_UNMAP_DMA        = _IO(VFIO_TYPE, VFIO_BASE+14)

	VFIO_DEVICE_BIND_IOMMUFD      = _IO(VFIO_TYPE, VFIO_BASE+18)
	VFIO_DEVICE_ATTACH_IOMMUFD_PT = _IO(VFIO_TYPE, VFIO_BASE+19)
	VFIO_DEVICE_DETACH_IOMMUFD_PT = _IO(VFIO_TYPE, VFIO_BASE+20)

	IOMMU_DESTROY    = _IO(IOMMUFD_TYPE, IOMMUFD_CMD_BASE+0)
	IOMMU_IOAS_ALLOC = _IO(IOMMUFD_TYPE, IOMMUFD_CMD_BASE+1)
	IOMMU_IOAS_MAP   = _IO(IOMMUFD_TYPE, IOMMUFD_CMD_BASE+5)
	IOMMU_IOAS_UNMAP = _IO(IOMMUFD_TYPE, IOMMUFD_CMD_BASE+6)
)

// VFIOGroupStatus mirrors struct vfio_group_status.
type VFIOGroupStatus struct {
	Argsz uint32
	Flags uint32
}

// VFIODeviceInfo mirrors struct vfio_device_info (6.1 layout, 20 bytes;
// later kernels append a pad word, which argsz makes optional).
type VFIODeviceInfo struct {
	Argsz      uint32
	Flags      uint32
	NumRegions uint32
	NumIrqs    uint32
	CapOffset  uint32
}

// VFIORegionInfo mirrors struct vfio_region_info. With
// VFIO_REGION_INFO_FLAG_CAPS, CapOffset is the offset of the first
// capability from the start of this struct.
type VFIORegionInfo struct {
	Argsz     uint32
	Flags     uint32
	Index     uint32
	CapOffset uint32
	Size      uint64
	Offset    uint64
}

// VFIOInfoCapHeader mirrors struct vfio_info_cap_header. Next is the offset
// of the next capability from the start of the info struct; 0 ends the
// chain.
type VFIOInfoCapHeader struct {
	ID      uint16
	Version uint16
	Next    uint32
}

// VFIORegionInfoCapSparseMmap mirrors struct
// vfio_region_info_cap_sparse_mmap without its flexible array of
// VFIORegionSparseMmapArea.
type VFIORegionInfoCapSparseMmap struct {
	Header   VFIOInfoCapHeader
	NrAreas  uint32
	Reserved uint32
}

// VFIORegionSparseMmapArea mirrors struct vfio_region_sparse_mmap_area.
type VFIORegionSparseMmapArea struct {
	Offset uint64
	Size   uint64
}

// VFIOIommuType1Info mirrors struct vfio_iommu_type1_info.
type VFIOIommuType1Info struct {
	Argsz       uint32
	Flags       uint32
	IovaPgsizes uint64
	CapOffset   uint32
	Pad         uint32
}

// VFIOIommuType1DmaMap mirrors struct vfio_iommu_type1_dma_map.
type VFIOIommuType1DmaMap struct {
	Argsz uint32
	Flags uint32
	Vaddr uint64
	Iova  uint64
	Size  uint64
}

// VFIOIommuType1DmaUnmap mirrors struct vfio_iommu_type1_dma_unmap.
type VFIOIommuType1DmaUnmap struct {
	Argsz uint32
	Flags uint32
	Iova  uint64
	Size  uint64
}

// VFIODeviceBindIommufd mirrors struct vfio_device_bind_iommufd.
type VFIODeviceBindIommufd struct {
	Argsz    uint32
	Flags    uint32
	Iommufd  int32
	OutDevid uint32
}

// VFIODeviceAttachIommufdPt mirrors struct vfio_device_attach_iommufd_pt.
type VFIODeviceAttachIommufdPt struct {
	Argsz uint32
	Flags uint32
	PtID  uint32
}

// IommuIoasAlloc mirrors struct iommu_ioas_alloc.
type IommuIoasAlloc struct {
	Size      uint32
	Flags     uint32
	OutIoasID uint32
}

// IommuIoasMap mirrors struct iommu_ioas_map.
type IommuIoasMap struct {
	Size     uint32
	Flags    uint32
	IoasID   uint32
	Reserved uint32
	UserVa   uint64
	Length   uint64
	Iova     uint64
}

// IommuIoasUnmap mirrors struct iommu_ioas_unmap.
type IommuIoasUnmap struct {
	Size   uint32
	IoasID uint32
	Iova   uint64
	Length uint64
}

// IommuDestroy mirrors struct iommu_destroy.
type IommuDestroy struct {
	Size uint32
	ID   uint32
}
