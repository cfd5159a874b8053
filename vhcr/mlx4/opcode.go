package mlx4

import (
	"errors"
	"fmt"
	"strings"
)

// Opcode is the 12-bit command opcode (vHCR bits 11:0 of the opcode field).
type Opcode uint16

// OpcodeMask is the opcode's width: 12 bits (the vHCR's opcode field
// keeps op_modifier in bits 15:12: mlx4_master_process_vhcr's
// vhcr->op = opcode & 0xfff, op_modifier = opcode >> 12).
const OpcodeMask = 0xfff

// Opcodes of include/linux/mlx4/cmd.h used by the comm channel.
const (
	// initialization and general commands
	SYS_EN           Opcode = 0x1
	SYS_DIS          Opcode = 0x2
	MAP_FA           Opcode = 0xfff
	UNMAP_FA         Opcode = 0xffe
	RUN_FW           Opcode = 0xff6
	MOD_STAT_CFG     Opcode = 0x34
	QUERY_DEV_CAP    Opcode = 0x3
	QUERY_FW         Opcode = 0x4
	ENABLE_LAM       Opcode = 0xff8
	DISABLE_LAM      Opcode = 0xff7
	QUERY_DDR        Opcode = 0x5
	QUERY_ADAPTER    Opcode = 0x6
	INIT_HCA         Opcode = 0x7
	CLOSE_HCA        Opcode = 0x8
	INIT_PORT        Opcode = 0x9
	CLOSE_PORT       Opcode = 0xa
	QUERY_HCA        Opcode = 0xb
	QUERY_PORT       Opcode = 0x43
	SENSE_PORT       Opcode = 0x4d
	HW_HEALTH_CHECK  Opcode = 0x50
	SET_PORT         Opcode = 0xc
	SET_NODE         Opcode = 0x5a
	QUERY_FUNC       Opcode = 0x56
	ACCESS_DDR       Opcode = 0x2e // ACCESS_MEM
	MAP_ICM          Opcode = 0xffa
	UNMAP_ICM        Opcode = 0xff9
	MAP_ICM_AUX      Opcode = 0xffc
	UNMAP_ICM_AUX    Opcode = 0xffb
	SET_ICM_SIZE     Opcode = 0xffd
	INFORM_FLR_DONE  Opcode = 0x5b
	VIRT_PORT_MAP    Opcode = 0x5c
	GET_OP_REQ       Opcode = 0x59
	QUERY_FUNC_CAP   Opcode = 0xf0a
	CONFIG_DEV       Opcode = 0x3a
	ACCESS_REG       Opcode = 0x3b
	ALLOCATE_VPP     Opcode = 0x80
	SET_VPORT_QOS    Opcode = 0x81
	CONGESTION_CTRL  Opcode = 0x68
	ARM_COMM_CHANNEL Opcode = 0x57
	GEN_EQE          Opcode = 0x58

	// TPT commands
	SW2HW_MPT Opcode = 0xd
	QUERY_MPT Opcode = 0xe
	HW2SW_MPT Opcode = 0xf
	READ_MTT  Opcode = 0x10
	WRITE_MTT Opcode = 0x11
	SYNC_TPT  Opcode = 0x2f

	// EQ commands
	MAP_EQ   Opcode = 0x12
	SW2HW_EQ Opcode = 0x13
	HW2SW_EQ Opcode = 0x14
	QUERY_EQ Opcode = 0x15

	// CQ commands
	SW2HW_CQ  Opcode = 0x16
	HW2SW_CQ  Opcode = 0x17
	QUERY_CQ  Opcode = 0x18
	MODIFY_CQ Opcode = 0x2c

	// SRQ commands
	SW2HW_SRQ Opcode = 0x35
	HW2SW_SRQ Opcode = 0x36
	QUERY_SRQ Opcode = 0x37
	ARM_SRQ   Opcode = 0x40

	// QP/EE commands
	RST2INIT_QP     Opcode = 0x19
	INIT2RTR_QP     Opcode = 0x1a
	RTR2RTS_QP      Opcode = 0x1b
	RTS2RTS_QP      Opcode = 0x1c
	SQERR2RTS_QP    Opcode = 0x1d
	TWO_ERR_QP      Opcode = 0x1e // MLX4_CMD_2ERR_QP
	RTS2SQD_QP      Opcode = 0x1f
	SQD2RTS_QP      Opcode = 0x20
	TWO_RST_QP      Opcode = 0x21 // MLX4_CMD_2RST_QP
	QUERY_QP        Opcode = 0x22
	SUSPEND_QP      Opcode = 0x32
	UNSUSPEND_QP    Opcode = 0x33
	INIT2INIT_QP    Opcode = 0x2d
	SQD2SQD_QP      Opcode = 0x38
	UPDATE_QP       Opcode = 0x61
	CONF_SPECIAL_QP Opcode = 0x23
	MAD_IFC         Opcode = 0x24
	MAD_DEMUX       Opcode = 0x203

	// multicast and Ethernet commands
	READ_MCG       Opcode = 0x25
	WRITE_MCG      Opcode = 0x26
	MGID_HASH      Opcode = 0x27
	QP_ATTACH      Opcode = 0xf0b
	PROMISC        Opcode = 0xf08
	SET_VLAN_FLTR  Opcode = 0x47
	SET_MCAST_FLTR Opcode = 0x48
	DUMP_ETH_STATS Opcode = 0x49
	QUERY_IF_STAT  Opcode = 0x54
	SET_IF_STAT    Opcode = 0x55
	MCAST_ATTACH   Opcode = 0xf05
	UCAST_ATTACH   Opcode = 0xf06
	DIAG_RPRT      Opcode = 0x30
	NOP            Opcode = 0x31

	// resource allocation (SR-IOV)
	ALLOC_RES Opcode = 0xf00
	FREE_RES  Opcode = 0xf01

	// flow steering
	QP_FLOW_STEERING_ATTACH      Opcode = 0x65
	QP_FLOW_STEERING_DETACH      Opcode = 0x66
	FLOW_STEERING_IB_UC_QP_RANGE Opcode = 0x64
)

var opNames = map[Opcode]string{
	SYS_EN: "SYS_EN", SYS_DIS: "SYS_DIS", MAP_FA: "MAP_FA", UNMAP_FA: "UNMAP_FA", RUN_FW: "RUN_FW",
	MOD_STAT_CFG: "MOD_STAT_CFG", QUERY_DEV_CAP: "QUERY_DEV_CAP", QUERY_FW: "QUERY_FW",
	ENABLE_LAM: "ENABLE_LAM", DISABLE_LAM: "DISABLE_LAM", QUERY_DDR: "QUERY_DDR",
	QUERY_ADAPTER: "QUERY_ADAPTER", INIT_HCA: "INIT_HCA", CLOSE_HCA: "CLOSE_HCA", INIT_PORT: "INIT_PORT",
	CLOSE_PORT: "CLOSE_PORT", QUERY_HCA: "QUERY_HCA", QUERY_PORT: "QUERY_PORT", SENSE_PORT: "SENSE_PORT",
	HW_HEALTH_CHECK: "HW_HEALTH_CHECK", SET_PORT: "SET_PORT", SET_NODE: "SET_NODE", QUERY_FUNC: "QUERY_FUNC",
	ACCESS_DDR: "ACCESS_MEM", MAP_ICM: "MAP_ICM", UNMAP_ICM: "UNMAP_ICM", MAP_ICM_AUX: "MAP_ICM_AUX",
	UNMAP_ICM_AUX: "UNMAP_ICM_AUX", SET_ICM_SIZE: "SET_ICM_SIZE", INFORM_FLR_DONE: "INFORM_FLR_DONE",
	VIRT_PORT_MAP: "VIRT_PORT_MAP", GET_OP_REQ: "GET_OP_REQ", QUERY_FUNC_CAP: "QUERY_FUNC_CAP",
	CONFIG_DEV: "CONFIG_DEV", ACCESS_REG: "ACCESS_REG", ALLOCATE_VPP: "ALLOCATE_VPP",
	SET_VPORT_QOS: "SET_VPORT_QOS", CONGESTION_CTRL: "CONGESTION_CTRL_OPCODE",
	ARM_COMM_CHANNEL: "ARM_COMM_CHANNEL", GEN_EQE: "GEN_EQE",
	SW2HW_MPT: "SW2HW_MPT", QUERY_MPT: "QUERY_MPT", HW2SW_MPT: "HW2SW_MPT", READ_MTT: "READ_MTT",
	WRITE_MTT: "WRITE_MTT", SYNC_TPT: "SYNC_TPT", MAP_EQ: "MAP_EQ", SW2HW_EQ: "SW2HW_EQ",
	HW2SW_EQ: "HW2SW_EQ", QUERY_EQ: "QUERY_EQ", SW2HW_CQ: "SW2HW_CQ", HW2SW_CQ: "HW2SW_CQ",
	QUERY_CQ: "QUERY_CQ", MODIFY_CQ: "MODIFY_CQ", SW2HW_SRQ: "SW2HW_SRQ", HW2SW_SRQ: "HW2SW_SRQ",
	QUERY_SRQ: "QUERY_SRQ", ARM_SRQ: "ARM_SRQ", RST2INIT_QP: "RST2INIT_QP", INIT2RTR_QP: "INIT2RTR_QP",
	RTR2RTS_QP: "RTR2RTS_QP", RTS2RTS_QP: "RTS2RTS_QP", SQERR2RTS_QP: "SQERR2RTS_QP",
	TWO_ERR_QP: "2ERR_QP", RTS2SQD_QP: "RTS2SQD_QP", SQD2RTS_QP: "SQD2RTS_QP", TWO_RST_QP: "2RST_QP",
	QUERY_QP: "QUERY_QP", SUSPEND_QP: "SUSPEND_QP", UNSUSPEND_QP: "UNSUSPEND_QP",
	INIT2INIT_QP: "INIT2INIT_QP", SQD2SQD_QP: "SQD2SQD_QP", UPDATE_QP: "UPDATE_QP",
	CONF_SPECIAL_QP: "CONF_SPECIAL_QP", MAD_IFC: "MAD_IFC", MAD_DEMUX: "MAD_DEMUX",
	READ_MCG: "READ_MCG", WRITE_MCG: "WRITE_MCG", MGID_HASH: "MGID_HASH", QP_ATTACH: "QP_ATTACH",
	PROMISC: "PROMISC", SET_VLAN_FLTR: "SET_VLAN_FLTR", SET_MCAST_FLTR: "SET_MCAST_FLTR",
	DUMP_ETH_STATS: "DUMP_ETH_STATS", QUERY_IF_STAT: "QUERY_IF_STAT", SET_IF_STAT: "SET_IF_STAT",
	MCAST_ATTACH: "MCAST_ATTACH", UCAST_ATTACH: "UCAST_ATTACH", DIAG_RPRT: "DIAG_RPRT", NOP: "NOP",
	ALLOC_RES: "ALLOC_RES", FREE_RES: "FREE_RES", QP_FLOW_STEERING_ATTACH: "QP_FLOW_STEERING_ATTACH",
	QP_FLOW_STEERING_DETACH:      "QP_FLOW_STEERING_DETACH",
	FLOW_STEERING_IB_UC_QP_RANGE: "FLOW_STEERING_IB_UC_QP_RANGE",
}

var opByName = func() map[string]Opcode {
	m := make(map[string]Opcode, len(opNames))
	for op, n := range opNames {
		m[n] = op
	}
	m["ACCESS_DDR"] = ACCESS_DDR
	m["CONGESTION_CTRL"] = CONGESTION_CTRL
	return m
}()

// String returns the mlx4 name, or the hex value for unnamed opcodes.
func (op Opcode) String() string {
	if n, ok := opNames[op]; ok {
		return n
	}
	return fmt.Sprintf("%#03x", uint16(op))
}

// ErrUnknownOpcode is returned, wrapped, by ParseOpcode for a word that is
// neither an mlx4 name nor a 12-bit number.
var ErrUnknownOpcode = errors.New("mlx4: unknown opcode")

// ParseOpcode accepts an mlx4 name in any case (QUERY_FW, query_fw) or a
// number (0x31, 49).
func ParseOpcode(s string) (Opcode, error) {
	if op, ok := opByName[strings.ToUpper(s)]; ok {
		return op, nil
	}
	var v uint64
	if _, err := fmt.Sscan(s, &v); err == nil && v <= OpcodeMask {
		return Opcode(v), nil
	}
	if n, err := parseUint(s); err == nil && n <= OpcodeMask {
		return Opcode(n), nil
	}
	return 0, fmt.Errorf("%w %q (an mlx4 name such as QUERY_FUNC_CAP, or a number)", ErrUnknownOpcode, s)
}

// Opcodes returns every named opcode.
func Opcodes() []Opcode {
	out := make([]Opcode, 0, len(opNames))
	for op := range opNames {
		out = append(out, op)
	}
	return out
}
