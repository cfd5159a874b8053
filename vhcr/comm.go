package vhcr

import "github.com/vhcrd/vhcrd/vhcr/mlx4"

// Comm page register offsets, at offset 0 of a VF BAR region
// (mlx4.MLX4_SLAVE_COMM_BASE): the names the wire contract gives mlx4's
// registers (mlx4/comm.go holds the facts). Each is a big-endian 32-bit
// register.
const (
	RegSlaveWrite = mlx4.CommSlaveWrite       // VF → PF: toggle | cmd<<16 | param
	RegSlaveRead  = mlx4.CommSlaveRead        // PF → VF: toggle | bit 17 | version
	RegCaps       = mlx4.MLX4_COMM_CHAN_CAPS  // PF: bit 30 = VF reset supported
	RegFlags      = mlx4.MLX4_COMM_CHAN_FLAGS // bit 9 offline (PF), bit 16 reset request (VF), bit 8 reset ack (PF)
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

// Register bits (mlx4/comm.go).
const (
	ToggleBit       = mlx4.CommToggle
	InternalErrBit  = mlx4.COMM_CHAN_EVENT_INTERNAL_ERR
	CapsVFReset     = 1 << mlx4.COMM_CHAN_RST_OFFSET
	FlagsOffline    = 1 << mlx4.COMM_CHAN_OFFLINE_OFFSET
	FlagsResetReq   = 1 << mlx4.COM_CHAN_RST_REQ_OFFSET // toggled by the VF
	FlagsResetAck   = 1 << mlx4.COM_CHAN_RST_ACK_OFFSET // copied from the request bit by the PF
	CommVersion     = mlx4.CommVersion
	CommPageSize    = mlx4.MLX4_COMM_PAGESIZE
	SlaveWriteValid = mlx4.CommSlaveWriteValid
)

// CommCmd is a comm channel command (mlx4.CommCmd, MLX4_COMM_CMD_*).
type CommCmd = mlx4.CommCmd

const (
	CommReset    = mlx4.MLX4_COMM_CMD_RESET
	CommVHCR0    = mlx4.MLX4_COMM_CMD_VHCR0
	CommVHCR1    = mlx4.MLX4_COMM_CMD_VHCR1
	CommVHCR2    = mlx4.MLX4_COMM_CMD_VHCR2
	CommVHCREn   = mlx4.MLX4_COMM_CMD_VHCR_EN
	CommVHCRPost = mlx4.MLX4_COMM_CMD_VHCR_POST
	CommFLR      = mlx4.MLX4_COMM_CMD_FLR // master-internal: FLR in progress; never valid on the wire
)

// CommWord builds a slave_write value (mlx4.CommWord).
func CommWord(toggle uint32, cmd CommCmd, param uint16) uint32 {
	return mlx4.CommWord(toggle, cmd, param)
}

// SplitCommWord is CommWord's inverse for the command and its parameter
// (mlx4.SplitCommWord).
func SplitCommWord(w uint32) (CommCmd, uint16) { return mlx4.SplitCommWord(w) }

// VHCRPostWord is slave_write for VHCR_POST without its toggle.
const VHCRPostWord = mlx4.CommVHCRPostWord

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
