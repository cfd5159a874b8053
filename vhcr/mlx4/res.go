package mlx4

import "strconv"

// ALLOC_RES and FREE_RES (mlx4_ALLOC_RES_wrapper, mlx4_FREE_RES_wrapper in
// resource_tracker.c): in_modifier[7:0] is the resource type, for MAC and
// VLAN in_modifier[15:8] the VF's port; op_modifier is the allocation mode.

// Resource is a resource type, enum mlx4_resource of mlx4.h.
type Resource uint8

const (
	RES_QP       Resource = 0
	RES_CQ       Resource = 1
	RES_SRQ      Resource = 2
	RES_XRCD     Resource = 3
	RES_MPT      Resource = 4
	RES_MTT      Resource = 5
	RES_MAC      Resource = 6
	RES_VLAN     Resource = 7
	RES_NPORT_ID Resource = 8
	RES_COUNTER  Resource = 9
	RES_FS_RULE  Resource = 10
	RES_EQ       Resource = 11

	// NUM_OF_RESOURCE_TYPE is MLX4_NUM_OF_RESOURCE_TYPE.
	NUM_OF_RESOURCE_TYPE = 12
)

// ResTypeMask selects the resource type in ALLOC_RES/FREE_RES in_modifier
// (the wrappers switch on vhcr->in_modifier & 0xFF); ResPortShift is where
// MAC and VLAN find the port (get_param_l's in_modifier >> 8).
const (
	ResTypeMask  = 0xff
	ResPortShift = 8
)

// The value of a MAC or VLAN in ALLOC_RES/FREE_RES's in_param
// (include/linux/mlx4/device.h MLX4_MAC_MASK; port.c MLX4_VLAN_MASK) and the
// size of a port's MAC and VLAN tables (device.h MLX4_MAX_MAC_NUM,
// MLX4_MAX_VLAN_NUM).
const (
	MLX4_MAC_MASK     = 0xffffffffffff
	MLX4_VLAN_MASK    = 0xfff
	MLX4_MAX_MAC_NUM  = 128
	MLX4_MAX_VLAN_NUM = 128
)

var resourceNames = [NUM_OF_RESOURCE_TYPE]string{"RES_QP", "RES_CQ", "RES_SRQ", "RES_XRCD", "RES_MPT",
	"RES_MTT", "RES_MAC", "RES_VLAN", "RES_NPORT_ID", "RES_COUNTER", "RES_FS_RULE", "RES_EQ"}

// String is the kernel's name of the type ("RES_QP"), or "RES_17" for a
// value mlx4 does not define.
func (r Resource) String() string {
	if int(r) < len(resourceNames) {
		return resourceNames[r]
	}
	return "RES_" + strconv.Itoa(int(r))
}

// AllocMode is ALLOC_RES/FREE_RES's op_modifier, enum mlx4_alloc_mode of
// mlx4.h.
type AllocMode uint8

// AllocResQPCountMask: ALLOC_RES(RES_QP, RES_OP_RESERVE) carries the count
// in in_param[23:0] and the reservation flags in [31:24] (qp_alloc_res).
const AllocResQPCountMask = 0xffffff

const (
	RES_OP_RESERVE         AllocMode = 0
	RES_OP_RESERVE_AND_MAP AllocMode = 1
	RES_OP_MAP_ICM         AllocMode = 2
)

var allocModeNames = [...]string{"RES_OP_RESERVE", "RES_OP_RESERVE_AND_MAP", "RES_OP_MAP_ICM"}

// String is the kernel's name of the mode ("RES_OP_MAP_ICM"), or
// "RES_OP_5" for a value mlx4 does not define.
func (m AllocMode) String() string {
	if int(m) < len(allocModeNames) {
		return allocModeNames[m]
	}
	return "RES_OP_" + strconv.Itoa(int(m))
}
