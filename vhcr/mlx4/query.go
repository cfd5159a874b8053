package mlx4

// DevCapUARSize is QUERY_DEV_CAP's uar_size field: the UAR space is
// 1 << (DevCapUARSize + 20) bytes (UARSize), which a VF's BAR2 must hold
// (mlx4_slave_cap). vhcrd sizes every VF BAR region from the same constant.
const (
	DevCapUARSize = 3
	UARSize       = 1 << (DevCapUARSize + 20) // 8 MiB
)

// QUERY_FW outbox: drivers/net/ethernet/mellanox/mlx4/fw.c QUERY_FW_*
// (mlx4_QUERY_FW, mlx4_QUERY_FW_wrapper).
const (
	QUERY_FW_OUT_SIZE   = 0x100
	QUERY_FW_VER_OFFSET = 0x00 // BE64: major 47:32, subminor 31:16, minor 15:0
	QUERY_FW_PPF_ID     = 0x09
	INVALID_SLAVE_ID    = 0xff // MLX4_INVALID_SLAVE_ID: the PPF id a VF reads
)

// QUERY_DEV_CAP outbox: drivers/net/ethernet/mellanox/mlx4/fw.c
// QUERY_DEV_CAP_* (mlx4_QUERY_DEV_CAP), the fields the model answers.
const (
	QUERY_DEV_CAP_MAX_SRQ_SZ_OFFSET      = 0x10
	QUERY_DEV_CAP_MAX_QP_SZ_OFFSET       = 0x11
	QUERY_DEV_CAP_RSVD_QP_OFFSET         = 0x12
	QUERY_DEV_CAP_MAX_QP_OFFSET          = 0x13
	QUERY_DEV_CAP_RSVD_SRQ_OFFSET        = 0x14
	QUERY_DEV_CAP_MAX_SRQ_OFFSET         = 0x15
	QUERY_DEV_CAP_MAX_CQ_SZ_OFFSET       = 0x19
	QUERY_DEV_CAP_RSVD_CQ_OFFSET         = 0x1a
	QUERY_DEV_CAP_MAX_CQ_OFFSET          = 0x1b
	QUERY_DEV_CAP_MAX_MPT_OFFSET         = 0x1d
	QUERY_DEV_CAP_RSVD_EQ_OFFSET         = 0x1e
	QUERY_DEV_CAP_MAX_EQ_OFFSET          = 0x1f
	QUERY_DEV_CAP_RSVD_MTT_OFFSET        = 0x20
	QUERY_DEV_CAP_MAX_MRW_SZ_OFFSET      = 0x21
	QUERY_DEV_CAP_RSVD_MRW_OFFSET        = 0x22
	QUERY_DEV_CAP_MAX_MTT_SEG_OFFSET     = 0x23
	QUERY_DEV_CAP_MAX_AV_OFFSET          = 0x27
	QUERY_DEV_CAP_MAX_REQ_QP_OFFSET      = 0x29
	QUERY_DEV_CAP_MAX_RES_QP_OFFSET      = 0x2b
	QUERY_DEV_CAP_MAX_RDMA_OFFSET        = 0x2f
	QUERY_DEV_CAP_ACK_DELAY_OFFSET       = 0x35
	QUERY_DEV_CAP_MTU_WIDTH_OFFSET       = 0x36
	QUERY_DEV_CAP_VL_PORT_OFFSET         = 0x37
	QUERY_DEV_CAP_MAX_MSG_SZ_OFFSET      = 0x38
	QUERY_DEV_CAP_MAX_GID_OFFSET         = 0x3b
	QUERY_DEV_CAP_MAX_PKEY_OFFSET        = 0x3f
	QUERY_DEV_CAP_EXT_FLAGS_OFFSET       = 0x40 // BE32: dev_cap flags 63:32
	QUERY_DEV_CAP_FLAGS_OFFSET           = 0x44 // BE32: dev_cap flags 31:0
	QUERY_DEV_CAP_RSVD_UAR_OFFSET        = 0x48
	QUERY_DEV_CAP_UAR_SZ_OFFSET          = 0x49
	QUERY_DEV_CAP_PAGE_SZ_OFFSET         = 0x4b
	QUERY_DEV_CAP_BF_OFFSET              = 0x4c
	QUERY_DEV_CAP_MAX_SG_SQ_OFFSET       = 0x51
	QUERY_DEV_CAP_MAX_DESC_SZ_SQ_OFFSET  = 0x52
	QUERY_DEV_CAP_MAX_SG_RQ_OFFSET       = 0x55
	QUERY_DEV_CAP_MAX_DESC_SZ_RQ_OFFSET  = 0x56
	QUERY_DEV_CAP_MAX_QP_MCG_OFFSET      = 0x61
	QUERY_DEV_CAP_RSVD_MCG_OFFSET        = 0x62
	QUERY_DEV_CAP_MAX_MCG_OFFSET         = 0x63
	QUERY_DEV_CAP_RSVD_PD_OFFSET         = 0x64
	QUERY_DEV_CAP_MAX_PD_OFFSET          = 0x65
	QUERY_DEV_CAP_RSVD_XRC_OFFSET        = 0x66
	QUERY_DEV_CAP_MAX_XRC_OFFSET         = 0x67
	QUERY_DEV_CAP_MAX_COUNTERS_OFFSET    = 0x68 // BE32
	QUERY_DEV_CAP_RDMARC_ENTRY_SZ_OFFSET = 0x80
	QUERY_DEV_CAP_QPC_ENTRY_SZ_OFFSET    = 0x82
	QUERY_DEV_CAP_AUX_ENTRY_SZ_OFFSET    = 0x84
	QUERY_DEV_CAP_ALTC_ENTRY_SZ_OFFSET   = 0x86
	QUERY_DEV_CAP_EQC_ENTRY_SZ_OFFSET    = 0x88
	QUERY_DEV_CAP_CQC_ENTRY_SZ_OFFSET    = 0x8a
	QUERY_DEV_CAP_SRQ_ENTRY_SZ_OFFSET    = 0x8c
	QUERY_DEV_CAP_C_MPT_ENTRY_SZ_OFFSET  = 0x8e
	QUERY_DEV_CAP_MTT_ENTRY_SZ_OFFSET    = 0x90
	QUERY_DEV_CAP_D_MPT_ENTRY_SZ_OFFSET  = 0x92
	QUERY_DEV_CAP_RSVD_LKEY_OFFSET       = 0x98
	QUERY_DEV_CAP_MAX_ICM_SZ_OFFSET      = 0xa0 // BE64
)

// Device capability flags: include/linux/mlx4/device.h MLX4_DEV_CAP_FLAG_*
// (QUERY_DEV_CAP's FLAGS word is bits 31:0, EXT_FLAGS bits 63:32).
const (
	DEV_CAP_FLAG_RC              = 1 << 0
	DEV_CAP_FLAG_UC              = 1 << 1
	DEV_CAP_FLAG_UD              = 1 << 2
	DEV_CAP_FLAG_XRC             = 1 << 3
	DEV_CAP_FLAG_SRQ             = 1 << 6
	DEV_CAP_FLAG_IPOIB_CSUM      = 1 << 7
	DEV_CAP_FLAG_BAD_PKEY_CNTR   = 1 << 8
	DEV_CAP_FLAG_BAD_QKEY_CNTR   = 1 << 9
	DEV_CAP_FLAG_APM             = 1 << 17
	DEV_CAP_FLAG_ATOMIC          = 1 << 18
	DEV_CAP_FLAG_UD_AV_PORT      = 1 << 20
	DEV_CAP_FLAG_UD_MCAST        = 1 << 21
	DEV_CAP_FLAG_IBOE            = 1 << 30 // RoCE on the Ethernet ports (mlx4_port_immutable)
	DEV_CAP_FLAG_COUNTERS        = 1 << 48
	DEV_CAP_FLAG_PORT_MNG_CHG_EV = 1 << 59 // forced on by mlx4_QUERY_DEV_CAP_wrapper
)

// QUERY_FUNC_CAP outbox: drivers/net/ethernet/mellanox/mlx4/fw.c
// QUERY_FUNC_CAP_* (mlx4_QUERY_FUNC_CAP_wrapper). op_modifier 0 (general):
const (
	QUERY_FUNC_CAP_FLAGS_OFFSET         = 0x0
	QUERY_FUNC_CAP_NUM_PORTS_OFFSET     = 0x1
	QUERY_FUNC_CAP_PF_BHVR_OFFSET       = 0x4
	QUERY_FUNC_CAP_FMR_OFFSET           = 0x8
	QUERY_FUNC_CAP_QP_QUOTA_OFFSET_DEP  = 0x10
	QUERY_FUNC_CAP_CQ_QUOTA_OFFSET_DEP  = 0x14
	QUERY_FUNC_CAP_SRQ_QUOTA_OFFSET_DEP = 0x18
	QUERY_FUNC_CAP_MPT_QUOTA_OFFSET_DEP = 0x20
	QUERY_FUNC_CAP_MTT_QUOTA_OFFSET_DEP = 0x24
	QUERY_FUNC_CAP_MCG_QUOTA_OFFSET_DEP = 0x28
	QUERY_FUNC_CAP_MAX_EQ_OFFSET        = 0x2c
	QUERY_FUNC_CAP_RESERVED_EQ_OFFSET   = 0x30
	QUERY_FUNC_CAP_QP_RESD_LKEY_OFFSET  = 0x48
	QUERY_FUNC_CAP_QP_QUOTA_OFFSET      = 0x50
	QUERY_FUNC_CAP_CQ_QUOTA_OFFSET      = 0x54
	QUERY_FUNC_CAP_SRQ_QUOTA_OFFSET     = 0x58
	QUERY_FUNC_CAP_MPT_QUOTA_OFFSET     = 0x60
	QUERY_FUNC_CAP_MTT_QUOTA_OFFSET     = 0x64
	QUERY_FUNC_CAP_MCG_QUOTA_OFFSET     = 0x68
	QUERY_FUNC_CAP_EXTRA_FLAGS_OFFSET   = 0x6c

	QUERY_FUNC_CAP_FLAG_RDMA          = 0x40
	QUERY_FUNC_CAP_FLAG_ETH           = 0x80
	QUERY_FUNC_CAP_FLAG_QUOTAS        = 0x10
	QUERY_FUNC_CAP_FLAG_RESD_LKEY     = 0x08
	QUERY_FUNC_CAP_FLAG_VALID_MAILBOX = 0x04

	QUERY_FUNC_CAP_EXTRA_FLAGS_BF_QP_ALLOC_FLAG = 1 << 31
	QUERY_FUNC_CAP_EXTRA_FLAGS_A0_QP_ALLOC_FLAG = 1 << 30

	// in_modifier bits of a general query: what the VF supports.
	QUERY_FUNC_CAP_SUPPORTS_VST_QINQ               = 1 << 30
	QUERY_FUNC_CAP_SUPPORTS_NON_POWER_OF_2_NUM_EQS = 1 << 31
)

// QUERY_FUNC_CAP outbox, op_modifier 1 (per port).
const (
	QUERY_FUNC_CAP_PHYS_PORT_OFFSET = 0x3
	// QUERY_FUNC_CAP_PRIV_VF_QKEY_OFFSET is the BE32 Q_Key of the VF's
	// proxy QP0 (mlx4_get_parav_qkey), given with QUERY_FUNC_CAP_VF_ENABLE_QP0.
	QUERY_FUNC_CAP_PRIV_VF_QKEY_OFFSET = 0x4
	QUERY_FUNC_CAP_FLAGS0_OFFSET       = 0x8
	QUERY_FUNC_CAP_FLAGS1_OFFSET       = 0xc
	QUERY_FUNC_CAP_QP0_TUNNEL          = 0x10
	QUERY_FUNC_CAP_QP0_PROXY           = 0x14
	QUERY_FUNC_CAP_QP1_TUNNEL          = 0x18
	QUERY_FUNC_CAP_QP1_PROXY           = 0x1c
	QUERY_FUNC_CAP_PHYS_PORT_ID        = 0x28 // BE64

	QUERY_FUNC_CAP_FLAGS1_NIC_INFO = 0x10
	QUERY_FUNC_CAP_VF_ENABLE_QP0   = 0x08 // FLAGS1: the VF owns its QP0 (mlx4_vf_smi_enabled)
)

// QUERY_PORT outbox: drivers/net/ethernet/mellanox/mlx4/fw.c QUERY_PORT_*
// (mlx4_QUERY_PORT, mlx4_QUERY_PORT_wrapper).
const (
	QUERY_PORT_SUPPORTED_TYPE_OFFSET = 0x00
	QUERY_PORT_MTU_OFFSET            = 0x01
	QUERY_PORT_ETH_MTU_OFFSET        = 0x02 // BE16
	QUERY_PORT_WIDTH_OFFSET          = 0x06
	QUERY_PORT_MAX_GID_PKEY_OFFSET   = 0x07
	QUERY_PORT_MAX_MACVLAN_OFFSET    = 0x0a
	QUERY_PORT_MAX_VL_OFFSET         = 0x0b
	QUERY_PORT_CUR_MAX_PKEY_OFFSET   = 0x0c // BE16
	QUERY_PORT_CUR_MAX_GID_OFFSET    = 0x0e // BE16
	QUERY_PORT_MAC_OFFSET            = 0x10 // BE64

	PORT_LINK_UP_MASK          = 0x80 // MLX4_PORT_LINK_UP_MASK
	VF_PORT_NO_LINK_SENSE_MASK = 0xe0 // MLX4_VF_PORT_NO_LINK_SENSE_MASK
	PORT_TYPE_IB               = 1    // enum mlx4_port_type
	PORT_TYPE_ETH              = 2
	// The port type bits of QUERY_PORT_SUPPORTED_TYPE (the wrapper keeps
	// dev->caps.port_type & 0x3 under VF_PORT_NO_LINK_SENSE_MASK).
	PORT_TYPE_MASK = 0x3
)

// How mlx4_QUERY_DEV_CAP (fw.c) reads QUERY_DEV_CAP's packed fields: a
// log2 or a count in the low bits (field & MASK) or in the high nibble
// (field >> 4). reserved_qps = 1 << (field & 0xf), max_qps = 1 << (field &
// 0x1f), reserved_srqs = 1 << (field >> 4), max_mpts = 1 << (field & 0x3f),
// num_ports = VL_PORT & 0xf and max_vl = VL_PORT >> 4 (old port commands),
// ib_mtu = MTU_WIDTH >> 4 and max_port_width = MTU_WIDTH & 0xf,
// reserved_uars and reserved_pds = field >> 4.
const (
	QUERY_DEV_CAP_RSVD_QP_MASK   = 0x0f
	QUERY_DEV_CAP_MAX_QP_MASK    = 0x1f
	QUERY_DEV_CAP_RSVD_SRQ_SHIFT = 4
	QUERY_DEV_CAP_MAX_SRQ_MASK   = 0x1f
	QUERY_DEV_CAP_RSVD_CQ_MASK   = 0x0f
	QUERY_DEV_CAP_MAX_CQ_MASK    = 0x1f
	QUERY_DEV_CAP_MAX_MPT_MASK   = 0x3f
	QUERY_DEV_CAP_RSVD_EQ_MASK   = 0x0f
	QUERY_DEV_CAP_MAX_EQ_MASK    = 0x0f
	QUERY_DEV_CAP_RSVD_MTT_SHIFT = 4
	QUERY_DEV_CAP_RSVD_MRW_MASK  = 0x0f
	QUERY_DEV_CAP_NUM_PORTS_MASK = 0x0f
	QUERY_DEV_CAP_MAX_VL_SHIFT   = 4
	QUERY_DEV_CAP_IB_MTU_SHIFT   = 4
	QUERY_DEV_CAP_RSVD_UAR_SHIFT = 4
	QUERY_DEV_CAP_RSVD_PD_SHIFT  = 4
)

// QUERY_ADAPTER outbox: drivers/net/ethernet/mellanox/mlx4/fw.c
// QUERY_ADAPTER_* and get_board_id's VSD_OFFSET_*.
const (
	QUERY_ADAPTER_INTA_PIN_OFFSET = 0x10
	QUERY_ADAPTER_VSD_OFFSET      = 0x20
	VSD_OFFSET_MLX_BOARD_ID       = 0xd0 // in the VSD: 4 words, each byte-swapped
	BOARD_ID_LEN                  = 16   // MLX4_BOARD_ID_LEN
)

// QUERY_HCA outbox: the INIT_HCA parameters, drivers/net/ethernet/mellanox/
// mlx4/fw.c INIT_HCA_* (mlx4_INIT_HCA, mlx4_QUERY_HCA). The multicast
// entry and hash sizes are the low bytes of their words (0x13, 0x17), as
// "net/mlx4_core: Fix init_hca fields offset" (Linux 5.10, in stable from
// 5.0) corrected them; a VF's mlx4_slave_cap turns LOG_MC_ENTRY_SZ into
// caps.num_qp_per_mgm, which mlx4_ib reports as max_mcast_qp_attach.
// INIT_HCA_LOG_RD_OFFSET holds log_rd_per_qp (& 0x7), the RDMA read and
// atomic responder resources per QP: a VF's mlx4_slave_cap sets
// caps.max_qp_dest_rdma = 1 << it (ibv_devinfo's max_qp_rd_atom).
const (
	INIT_HCA_VERSION_OFFSET      = 0x000
	INIT_HCA_VERSION             = 2
	INIT_HCA_CACHELINE_SZ_OFFSET = 0x0e
	INIT_HCA_FLAGS_OFFSET        = 0x014
	// INIT_HCA_DEVICE_MANAGED_FLOW_STEERING_EN is a bit of the big-endian
	// word at INIT_HCA_FLAGS_OFFSET; clear, the steering mode is A0 or B0
	// (bit 3 of INIT_HCA_UC_STEERING_OFFSET) and the multicast sizes below
	// apply.
	INIT_HCA_DEVICE_MANAGED_FLOW_STEERING_EN = 6
	INIT_HCA_QPC_OFFSET                      = 0x020
	INIT_HCA_LOG_QP_OFFSET                   = INIT_HCA_QPC_OFFSET + 0x17
	INIT_HCA_LOG_SRQ_OFFSET                  = INIT_HCA_QPC_OFFSET + 0x2f
	INIT_HCA_LOG_CQ_OFFSET                   = INIT_HCA_QPC_OFFSET + 0x37
	INIT_HCA_EQE_CQE_OFFSETS                 = INIT_HCA_QPC_OFFSET + 0x38
	INIT_HCA_LOG_EQ_OFFSET                   = INIT_HCA_QPC_OFFSET + 0x67
	INIT_HCA_LOG_RD_OFFSET                   = INIT_HCA_QPC_OFFSET + 0x77
	INIT_HCA_MCAST_OFFSET                    = 0x0c0
	INIT_HCA_LOG_MC_ENTRY_SZ_OFFSET          = INIT_HCA_MCAST_OFFSET + 0x13
	INIT_HCA_LOG_MC_HASH_SZ_OFFSET           = INIT_HCA_MCAST_OFFSET + 0x17
	INIT_HCA_UC_STEERING_OFFSET              = INIT_HCA_MCAST_OFFSET + 0x18
	// INIT_HCA_UC_STEERING_B0 is the byte at INIT_HCA_UC_STEERING_OFFSET
	// mlx4_INIT_HCA writes in B0 steering (1 << 3); mlx4_QUERY_HCA reads it
	// back as MLX4_STEERING_MODE_B0, else A0.
	INIT_HCA_UC_STEERING_B0         = 1 << 3
	INIT_HCA_LOG_MC_TABLE_SZ_OFFSET = INIT_HCA_MCAST_OFFSET + 0x1b
	INIT_HCA_TPT_OFFSET             = 0x0f0
	INIT_HCA_LOG_MPT_SZ_OFFSET      = INIT_HCA_TPT_OFFSET + 0x0b
	INIT_HCA_UAR_OFFSET             = 0x120
	INIT_HCA_LOG_UAR_SZ_OFFSET      = INIT_HCA_UAR_OFFSET + 0x0a
	INIT_HCA_UAR_PAGE_SZ_OFFSET     = INIT_HCA_UAR_OFFSET + 0x0b
)

// PortInModMask selects the port number in the in_modifier of the port
// commands that carry more above it (SET_PORT's type in 15:8, and
// SET_VLAN_FLTR, SET_MCAST_FLTR, DUMP_ETH_STATS, QUERY_PORT: their
// wrappers take vhcr->in_modifier & 0xff). CounterInModMask selects
// QUERY_IF_STAT's counter index (mlx4_QUERY_IF_STAT_wrapper:
// vhcr->in_modifier & 0xffff).
const (
	PortInModMask    = 0xff
	CounterInModMask = 0xffff
)

// SET_PORT (mlx4_common_set_port, drivers/net/ethernet/mellanox/mlx4/port.c;
// include/linux/mlx4/cmd.h, device.h): a non-zero op_modifier
// (MLX4_SET_PORT_ETH_OPCODE) is an Ethernet SET_PORT whose type is the
// in_modifier's bits 15:8; a zero op_modifier is the IB SET_PORT, whose
// mailbox has the port's new capability mask at bytes 4..7 (firmware
// without MLX4_FLAG_OLD_PORT_CMDS). A VF may use the Ethernet types
// GENERAL and GID_TABLE only. The RoCE GID table has MLX4_ROCE_MAX_GIDS
// entries of 16 bytes per port: the PF's first MLX4_ROCE_PF_GIDS, the VFs
// sharing the rest (mlx4_get_slave_num_gids, mlx4_get_base_gid_ix).
const (
	SET_PORT_ETH_OPCODE    = 0x1
	SET_PORT_BEACON_OPCODE = 0x4
	SET_PORT_GENERAL       = 0x0
	SET_PORT_RQP_CALC      = 0x1
	SET_PORT_GID_TABLE     = 0x5
	SET_PORT_ROCE_ADDR     = 0xD
	SetPortTypeShift       = 8
	SetPortIBCapMaskOffset = 4
	PORT_CAP_IS_SM         = 1 << 1
	PORT_CAP_DEV_MGMT_SUP  = 1 << 19
	ROCE_MAX_GIDS          = 128
	ROCE_PF_GIDS           = 16
	ROCE_GID_ENTRY_SIZE    = 16
)
