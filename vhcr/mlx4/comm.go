package mlx4

import "strconv"

// The comm channel (drivers/net/ethernet/mellanox/mlx4/mlx4.h, cmd.c,
// main.c, catas.c): each function's pair of 32-bit big-endian registers,
// struct mlx4_comm { u32 slave_write; u32 slave_read; }, at
// MLX4_SLAVE_COMM_BASE of the VF's BAR2, beside the channel's CAPS and FLAGS
// words, in one MLX4_COMM_PAGESIZE page.
const (
	MLX4_SLAVE_COMM_BASE = 0x0    // offset of the comm page in the VF's BAR2
	MLX4_COMM_PAGESIZE   = 0x1000 // one page per function
	CommSlaveWrite       = 0x0    // struct mlx4_comm.slave_write: VF → PF, toggle | cmd<<16 | param
	CommSlaveRead        = 0x4    // struct mlx4_comm.slave_read: PF → VF, toggle | COMM_CHAN_EVENT_INTERNAL_ERR | version
	MLX4_COMM_CHAN_CAPS  = 0x8    // firmware: bit COMM_CHAN_RST_OFFSET = VF reset supported
	MLX4_COMM_CHAN_FLAGS = 0xc    // offline (firmware), reset request (VF) and reset ack (firmware)
)

// Bits of the comm registers.
const (
	// CommToggle is bit 31 of slave_write and slave_read, the toggle: a
	// command is pending while they differ (cmd.c mlx4_comm_cmd_post,
	// comm_pending).
	CommToggle      = 1 << CommToggleShift
	CommToggleShift = 31
	// COMM_CHAN_EVENT_INTERNAL_ERR (cmd.h) in slave_read: the PF tells the
	// VF to reset itself (mlx4_master_comm_channel on a bad toggle; the VF's
	// reset flow on an FLR).
	COMM_CHAN_EVENT_INTERNAL_ERR = 1 << 17
	// CommSlaveReadDriverBits are the bits of slave_read a Linux 6.1 VF
	// reads: the toggle (cmd.c comm_pending, sync_toggles), bit 17
	// (catas.c mlx4_comm_internal_err, from poll_catas and intf.c) and the
	// interface revision, bits 15:8 (main.c mlx4_init_slave's
	// MLX4_COMM_GET_IF_REV after RESET); beyond them only sync_toggles'
	// test of the whole word against 0xffffffff (PCI offline). A PF
	// (mlx4_master_do_cmd) writes the toggle, bit 17 and the version, 15:0.
	CommSlaveReadDriverBits = CommToggle | COMM_CHAN_EVENT_INTERNAL_ERR | 0xff<<8

	COMM_CHAN_RST_OFFSET     = 0x1e // bit of MLX4_COMM_CHAN_CAPS: VF reset supported (main.c mlx4_reset_vf_support)
	COMM_CHAN_OFFLINE_OFFSET = 0x09 // bit of MLX4_COMM_CHAN_FLAGS: the channel is offline (main.c mlx4_comm_check_offline)
	COM_CHAN_RST_REQ_OFFSET  = 0x10 // bit of MLX4_COMM_CHAN_FLAGS the VF toggles to request a reset (catas.c mlx4_reset_slave)
	COM_CHAN_RST_ACK_OFFSET  = 0x08 // bit of MLX4_COMM_CHAN_FLAGS the firmware sets to the request bit's value

	// The same bits as masks of their registers.
	CommCapsVFReset   = 1 << COMM_CHAN_RST_OFFSET
	CommFlagsOffline  = 1 << COMM_CHAN_OFFLINE_OFFSET
	CommFlagsResetReq = 1 << COM_CHAN_RST_REQ_OFFSET // toggled by the VF
	CommFlagsResetAck = 1 << COM_CHAN_RST_ACK_OFFSET // copied from the request bit by the PF

	// CMD_CHAN_VER and CMD_CHAN_IF_REV (cmd.c): slave_read's low 16 bits
	// in the RESET acknowledgement are mlx4_comm_get_version(),
	// CommVersion; a VF checks the interface revision (bits 15:8).
	CMD_CHAN_VER    = 1
	CMD_CHAN_IF_REV = 1
	CommVersion     = CMD_CHAN_IF_REV<<8 | CMD_CHAN_VER

	commCmdShift  = 16
	commCmdMask   = 0xff
	commParamMask = 0xffff
	// CommSlaveWriteValid are the bits of slave_write that mean something:
	// the toggle, the command (bits 23:16) and its parameter (15:0);
	// mlx4_master_comm_channel ignores bits 30:24.
	CommSlaveWriteValid = CommToggle | commCmdMask<<commCmdShift | commParamMask
)

// CommCmd is a comm channel command (mlx4.h MLX4_COMM_CMD_*), bits 23:16 of
// slave_write.
type CommCmd uint8

const (
	MLX4_COMM_CMD_RESET     CommCmd = 0
	MLX4_COMM_CMD_VHCR0     CommCmd = 1 // in_param bits 63:48 of the vHCR's DMA address
	MLX4_COMM_CMD_VHCR1     CommCmd = 2 // bits 47:32
	MLX4_COMM_CMD_VHCR2     CommCmd = 3 // bits 31:16
	MLX4_COMM_CMD_VHCR_EN   CommCmd = 4 // bits 15:0; the vHCR is enabled
	MLX4_COMM_CMD_VHCR_POST CommCmd = 5 // a command is in the vHCR
	// MLX4_COMM_CMD_FLR is never valid on the wire: the master's marker of
	// an FLR in progress (slave_state.last_cmd).
	MLX4_COMM_CMD_FLR CommCmd = 254
)

func (c CommCmd) String() string {
	switch c {
	case MLX4_COMM_CMD_RESET:
		return "RESET"
	case MLX4_COMM_CMD_VHCR0:
		return "VHCR0"
	case MLX4_COMM_CMD_VHCR1:
		return "VHCR1"
	case MLX4_COMM_CMD_VHCR2:
		return "VHCR2"
	case MLX4_COMM_CMD_VHCR_EN:
		return "VHCR_EN"
	case MLX4_COMM_CMD_VHCR_POST:
		return "VHCR_POST"
	case MLX4_COMM_CMD_FLR:
		return "FLR"
	}
	return "comm_cmd_" + strconv.Itoa(int(c))
}

// CommWord builds a slave_write value (cmd.c mlx4_comm_cmd_post: toggle
// in bit 31, the command in 23:16, the parameter in 15:0).
func CommWord(toggle uint32, cmd CommCmd, param uint16) uint32 {
	return toggle&1<<31 | uint32(cmd)<<commCmdShift | uint32(param)
}

// SplitCommWord is CommWord's inverse for the command and its parameter
// (the toggle is w&CommToggle; bits outside CommSlaveWriteValid are
// ignored).
func SplitCommWord(w uint32) (CommCmd, uint16) {
	return CommCmd(w >> commCmdShift & commCmdMask), uint16(w & commParamMask)
}

// CommVHCRShift is where the 16-bit parameter of VHCR0, VHCR1, VHCR2 and
// VHCR_EN sits in the vHCR's 64-bit DMA address: bits 63:48, 47:32, 31:16
// and 15:0 (cmd.c mlx4_master_do_cmd: vhcr_dma = param << 48, |= param <<
// 32, |= param << 16, |= param; mlx4_multi_func_init sends them in that
// order). It is 0 for any other command.
func CommVHCRShift(c CommCmd) uint {
	if c < MLX4_COMM_CMD_VHCR0 || c > MLX4_COMM_CMD_VHCR_EN {
		return 0
	}
	return 16 * uint(MLX4_COMM_CMD_VHCR_EN-c)
}

// CommIfRev is MLX4_COMM_GET_IF_REV (main.c): the interface revision in a
// version word, bits 15:8, the part of slave_read's RESET acknowledgement
// mlx4_multi_func_init compares with its own.
func CommIfRev(w uint32) uint8 { return uint8(w >> 8) }

// CommVHCRPostWord is slave_write for VHCR_POST without its toggle.
const CommVHCRPostWord = uint32(MLX4_COMM_CMD_VHCR_POST) << commCmdShift
