package vhcr

import "github.com/vhcrd/vhcrd/vhcr/mlx4"

// Comm page register offsets (mlx4.h struct mlx4_comm, MLX4_COMM_CHAN_CAPS,
// MLX4_COMM_CHAN_FLAGS), at offset 0 of a VF BAR region
// (MLX4_SLAVE_COMM_BASE). Each is a big-endian 32-bit register.
const (
	RegSlaveWrite = 0x0 // VF → PF: toggle | cmd<<16 | param
	RegSlaveRead  = 0x4 // PF → VF: toggle | bit 17 | version
	RegCaps       = 0x8 // PF: bit 30 = VF reset supported
	RegFlags      = 0xc // bit 9 offline (PF), bit 16 reset request (VF), bit 8 reset ack (PF)
)

// EQ doorbells in a VF BAR region, where mlx4 puts them: the region is the
// VF's UAR space (mlx4.EQDoorbellOffset); the PF reads a doorbell with one
// 32-bit load.
const (
	UARPageSize   = mlx4.UARPageSize
	RegEQDoorbell = mlx4.MLX4_EQ_DOORBELL
	// MaxEQDoorbells is the number of EQ doorbells a VF BAR region holds:
	// four per UAR page.
	MaxEQDoorbells = 4 * VFBARSize / UARPageSize
)

// EQDoorbell is the offset of EQ eqn's doorbell word in a VF BAR region.
func EQDoorbell(eqn int) int64 { return mlx4.EQDoorbellOffset(eqn) }

// Register bits.
const (
	ToggleBit      = 1 << 31 // the only toggle bit of slave_write and slave_read
	InternalErrBit = 1 << 17 // COMM_CHAN_EVENT_INTERNAL_ERR in slave_read
	CapsVFReset    = 1 << 30 // COMM_CHAN_RST_OFFSET: VF reset supported
	FlagsOffline   = 1 << 9  // COMM_CHAN_OFFLINE_OFFSET
	FlagsResetReq  = 1 << 16 // COM_CHAN_RST_REQ_OFFSET, toggled by the VF
	FlagsResetAck  = 1 << 8  // COM_CHAN_RST_ACK_OFFSET, copied from bit 16 by the PF
	CommVersion    = 0x0101  // (CMD_CHAN_IF_REV << 8) | CMD_CHAN_VER
	CommPageSize   = 0x1000  // MLX4_COMM_PAGESIZE
	commCmdShift   = 16
	commParamMask  = 0xffff
	commCmdMask    = 0xff
	// SlaveWriteValid are the bits of slave_write that mean something: the
	// toggle, the command (bits 23:16) and its parameter; the PF ignores
	// bits 30:24, as mlx4_master_comm_channel does.
	SlaveWriteValid = ToggleBit | commCmdMask<<commCmdShift | commParamMask
)

// CommCmd is a comm channel command (MLX4_COMM_CMD_*).
type CommCmd uint8

const (
	CommReset    CommCmd = 0
	CommVHCR0    CommCmd = 1
	CommVHCR1    CommCmd = 2
	CommVHCR2    CommCmd = 3
	CommVHCREn   CommCmd = 4
	CommVHCRPost CommCmd = 5
	CommFLR      CommCmd = 254 // master-internal: FLR in progress; never valid on the wire
)

func (c CommCmd) String() string {
	switch c {
	case CommReset:
		return "RESET"
	case CommVHCR0:
		return "VHCR0"
	case CommVHCR1:
		return "VHCR1"
	case CommVHCR2:
		return "VHCR2"
	case CommVHCREn:
		return "VHCR_EN"
	case CommVHCRPost:
		return "VHCR_POST"
	case CommFLR:
		return "FLR"
	}
	return "comm_cmd_" + itoa(int(c))
}

// CommWord builds a slave_write value.
func CommWord(toggle uint32, cmd CommCmd, param uint16) uint32 {
	return toggle&1<<31 | uint32(cmd)<<commCmdShift | uint32(param)
}

// SplitCommWord is CommWord's inverse for the command and its parameter
// (the toggle is w&ToggleBit; bits outside SlaveWriteValid are ignored).
func SplitCommWord(w uint32) (CommCmd, uint16) {
	return CommCmd(w >> commCmdShift & commCmdMask), uint16(w & commParamMask)
}

// VHCRPostWord is slave_write for VHCR_POST without its toggle.
const VHCRPostWord = uint32(CommVHCRPost) << commCmdShift

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
