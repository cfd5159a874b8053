package mlx4

import "strings"

// Names of the data path's opcodes and error syndromes, as operators
// write them (vhcrd fault add's data-path kinds) and as the drivers name
// them.

// WQEOpcodeNames are the send opcodes by value, MLX4_OPCODE_* without
// the prefix (include/linux/mlx4/qp.h, mlx4dv.h).
var WQEOpcodeNames = map[uint8]string{
	OPCODE_NOP: "NOP", OPCODE_SEND_INVAL: "SEND_INVAL", OPCODE_RDMA_WRITE: "RDMA_WRITE",
	OPCODE_RDMA_WRITE_IMM: "RDMA_WRITE_IMM", OPCODE_SEND: "SEND", OPCODE_SEND_IMM: "SEND_IMM", OPCODE_LSO: "LSO",
	OPCODE_RDMA_READ: "RDMA_READ", OPCODE_ATOMIC_CS: "ATOMIC_CS", OPCODE_ATOMIC_FA: "ATOMIC_FA",
	OPCODE_MASKED_ATOMIC_CS: "MASKED_ATOMIC_CS", OPCODE_MASKED_ATOMIC_FA: "MASKED_ATOMIC_FA",
	OPCODE_BIND_MW: "BIND_MW", OPCODE_FMR: "FMR", OPCODE_LOCAL_INVAL: "LOCAL_INVAL", OPCODE_CONFIG_CMD: "CONFIG_CMD",
}

// ParseWQEOpcode reads a send opcode's name (SEND, rdma_write; the
// MLX4_OPCODE_ prefix may be given).
func ParseWQEOpcode(s string) (uint8, bool) {
	s = strings.TrimPrefix(strings.ToUpper(s), "MLX4_OPCODE_")
	for op, n := range WQEOpcodeNames {
		if n == s {
			return op, true
		}
	}
	return 0, false
}

// CQESyndromeInfo names one error CQE syndrome: the kernel's and
// libmlx4's MLX4_CQE_SYNDROME_* name without its prefix, and the work
// completion status both drivers' error-CQE handlers (mlx4_ib cq.c
// mlx4_ib_handle_error_cqe, libmlx4 cq.c mlx4_handle_error_cqe) map it
// to: enum ib_wc_status / ibv_wc_status, by name without IB_WC_/IBV_WC_
// and by value.
type CQESyndromeInfo struct {
	Syndrome uint8
	Name     string // LOCAL_LENGTH_ERR
	WC       string // LOC_LEN_ERR
	WCValue  uint8  // IBV_WC_LOC_LEN_ERR = 1
}

// CQESyndromes is every syndrome the drivers name, in value order.
var CQESyndromes = []CQESyndromeInfo{
	{CQE_SYNDROME_LOCAL_LENGTH_ERR, "LOCAL_LENGTH_ERR", "LOC_LEN_ERR", 1},
	{CQE_SYNDROME_LOCAL_QP_OP_ERR, "LOCAL_QP_OP_ERR", "LOC_QP_OP_ERR", 2},
	{CQE_SYNDROME_LOCAL_PROT_ERR, "LOCAL_PROT_ERR", "LOC_PROT_ERR", 4},
	{CQE_SYNDROME_WR_FLUSH_ERR, "WR_FLUSH_ERR", "WR_FLUSH_ERR", 5},
	{CQE_SYNDROME_MW_BIND_ERR, "MW_BIND_ERR", "MW_BIND_ERR", 6},
	{CQE_SYNDROME_BAD_RESP_ERR, "BAD_RESP_ERR", "BAD_RESP_ERR", 7},
	{CQE_SYNDROME_LOCAL_ACCESS_ERR, "LOCAL_ACCESS_ERR", "LOC_ACCESS_ERR", 8},
	{CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, "REMOTE_INVAL_REQ_ERR", "REM_INV_REQ_ERR", 9},
	{CQE_SYNDROME_REMOTE_ACCESS_ERR, "REMOTE_ACCESS_ERR", "REM_ACCESS_ERR", 10},
	{CQE_SYNDROME_REMOTE_OP_ERR, "REMOTE_OP_ERR", "REM_OP_ERR", 11},
	{CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR, "TRANSPORT_RETRY_EXC_ERR", "RETRY_EXC_ERR", 12},
	{CQE_SYNDROME_RNR_RETRY_EXC_ERR, "RNR_RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR", 13},
	{CQE_SYNDROME_REMOTE_ABORTED_ERR, "REMOTE_ABORTED_ERR", "REM_ABORT_ERR", 16},
}

// WCGeneralErr is IB_WC_GENERAL_ERR / IBV_WC_GENERAL_ERR, the status of a
// syndrome the drivers do not name.
const WCGeneralErr = 21

// CQESyndromeName is the name of syndrome s (LOCAL_PROT_ERR), or "" for
// one the drivers do not name.
func CQESyndromeName(s uint8) string {
	for _, in := range CQESyndromes {
		if in.Syndrome == s {
			return in.Name
		}
	}
	return ""
}

// ParseCQESyndrome reads a syndrome by name, case-insensitive: the mlx4
// name (REMOTE_ACCESS_ERR, with or without MLX4_CQE_SYNDROME_) or the work
// completion status it maps to (REM_ACCESS_ERR, with or without IB_WC_ or
// IBV_WC_).
func ParseCQESyndrome(s string) (uint8, bool) {
	u := strings.ToUpper(s)
	u = strings.TrimPrefix(u, "MLX4_CQE_SYNDROME_")
	for _, p := range []string{"IBV_WC_", "IB_WC_"} {
		u = strings.TrimPrefix(u, p)
	}
	for _, in := range CQESyndromes {
		if in.Name == u || in.WC == u {
			return in.Syndrome, true
		}
	}
	return 0, false
}
