package mlx4

import (
	"fmt"
	"strconv"
	"strings"
)

// Status is a command status (CMD_STAT_* of mlx4 cmd.c), the byte the PF
// writes at vHCR offset 0x1c.
type Status uint8

const (
	OK             Status = 0x00 // command completed successfully
	INTERNAL_ERR   Status = 0x01 // internal error (such as a bus error)
	BAD_OP         Status = 0x02 // operation/opcode modifier not supported
	BAD_PARAM      Status = 0x03 // parameter not supported or out of range
	BAD_SYS_STATE  Status = 0x04 // system not enabled or bad system state
	BAD_RESOURCE   Status = 0x05 // reserved or unallocated resource
	RESOURCE_BUSY  Status = 0x06 // resource busy
	EXCEED_LIM     Status = 0x08 // exceeds device limits
	BAD_RES_STATE  Status = 0x09 // bad resource state
	BAD_INDEX      Status = 0x0a // index out of range
	BAD_NVMEM      Status = 0x0b // FW image corrupted
	ICM_ERROR      Status = 0x0c // error in ICM mapping
	BAD_QP_STATE   Status = 0x10 // QP not in the presumed state
	BAD_SEG_PARAM  Status = 0x20 // bad segment parameters (address/size)
	REG_BOUND      Status = 0x21 // memory region has memory windows bound
	LAM_NOT_PRE    Status = 0x22 // HCA local attached memory not present
	BAD_PKT        Status = 0x30 // bad management packet (silently discarded)
	BAD_SIZE       Status = 0x40 // more outstanding CQEs in CQ than new CQ size
	MULTI_FUNC_REQ Status = 0x50 // multi-function device support required
)

var statusNames = map[Status]string{
	OK: "OK", INTERNAL_ERR: "INTERNAL_ERR", BAD_OP: "BAD_OP", BAD_PARAM: "BAD_PARAM",
	BAD_SYS_STATE: "BAD_SYS_STATE", BAD_RESOURCE: "BAD_RESOURCE", RESOURCE_BUSY: "RESOURCE_BUSY",
	EXCEED_LIM: "EXCEED_LIM", BAD_RES_STATE: "BAD_RES_STATE", BAD_INDEX: "BAD_INDEX",
	BAD_NVMEM: "BAD_NVMEM", ICM_ERROR: "ICM_ERROR", BAD_QP_STATE: "BAD_QP_STATE",
	BAD_SEG_PARAM: "BAD_SEG_PARAM", REG_BOUND: "REG_BOUND", LAM_NOT_PRE: "LAM_NOT_PRE",
	BAD_PKT: "BAD_PKT", BAD_SIZE: "BAD_SIZE", MULTI_FUNC_REQ: "MULTI_FUNC_REQ",
}

// Name is the mlx4 name of the status ("BAD_OP"), or "STATUS_0xNN".
func (s Status) Name() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("STATUS_%#02x", uint8(s))
}

// String is the name with the code, as vfctl prints it: "BAD_OP (0x02)".
func (s Status) String() string { return fmt.Sprintf("%s (%#02x)", s.Name(), uint8(s)) }

// Error makes a non-zero Status usable as an error on the VF side.
func (s Status) Error() string { return "command status " + s.String() }

// Statuses lists the named statuses in code order.
func Statuses() []Status {
	return []Status{OK, INTERNAL_ERR, BAD_OP, BAD_PARAM, BAD_SYS_STATE, BAD_RESOURCE, RESOURCE_BUSY,
		EXCEED_LIM, BAD_RES_STATE, BAD_INDEX, BAD_NVMEM, ICM_ERROR, BAD_QP_STATE, BAD_SEG_PARAM,
		REG_BOUND, LAM_NOT_PRE, BAD_PKT, BAD_SIZE, MULTI_FUNC_REQ}
}

func parseUint(s string) (uint64, error) {
	return strconv.ParseUint(strings.TrimSpace(s), 0, 64)
}
