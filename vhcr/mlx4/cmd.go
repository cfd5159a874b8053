package mlx4

import "github.com/vhcrd/vhcrd/dma"

// Cmd is one command as an executor sees it: decoded from the PF's private
// shadow of the vHCR, with the shadow inbox already copied in and checked
// against its cmd_info[] row (hca.HCA.Exec). Executors read only Cmd and the
// shadows, never the VF's memory, except through Mem for data the command
// itself addresses (EQ rings, MTT-described buffers), each access checked by
// the window.
type Cmd struct {
	VF       int    // 0-based VF index (mlx4 slave = VF+1)
	InParam  uint64 // immediate input (inbox commands: the masked inbox address)
	OutParam uint64 // immediate output, in and out (Imm commands)
	InMod    uint32
	Op       Opcode
	OpMod    uint8
	EBit     bool
	Token    uint16

	Inbox  *[MailboxSize]byte // shadow inbox; nil if the opcode has none
	Outbox *[MailboxSize]byte // zeroed outbox; nil if the opcode has none
	Mem    *dma.Window        // the VF's DMA window

	// Reason says why a command was refused (for metrics); executors set it
	// with the status they return.
	Reason Reason
}

// Refuse sets the reason and returns the status, for one-line refusals:
// return c.Refuse(mlx4.BAD_PARAM, mlx4.ReasonPort).
func (c *Cmd) Refuse(s Status, r Reason) Status { c.Reason = r; return s }

// Reason classifies a refusal for the validation-refusal counter. The set is
// closed so that it can be a metric label.
type Reason uint8

const (
	ReasonNone          Reason = iota
	ReasonUnknownOpcode        // not in the command table
	ReasonPrivileged           // EPERM entry or privileged operation
	ReasonOpModifier           // op_modifier not accepted
	ReasonInModifier           // in_modifier out of range
	ReasonInboxDMA             // inbox address unreadable
	ReasonEventsNoEQ           // 'e' bit without an EQ mapped for command completions
	ReasonNotOwner             // object belongs to another function
	ReasonNotFound             // object does not exist
	ReasonBadState             // object or QP in the wrong state
	ReasonBusy                 // object busy or referenced
	ReasonQuota                // quota or pool exhausted
	ReasonRange                // resource range or index out of bounds
	ReasonPKey                 // P_Key index outside the function's table
	ReasonPort                 // port the function does not have
	ReasonGID                  // GID index outside the function's range
	ReasonMTT                  // MTT range not owned or out of bounds
	ReasonEQ                   // EQ not owned or not in HW
	ReasonContext              // malformed context or parameter
	ReasonFLR                  // function is being reset
	ReasonMAD                  // MAD refused by the VF policy
	ReasonNotModelled          // in the table but not executed by this model
	reasonCount
)

var reasonNames = [...]string{
	ReasonNone: "none", ReasonUnknownOpcode: "unknown_opcode", ReasonPrivileged: "privileged",
	ReasonOpModifier: "op_modifier", ReasonInModifier: "in_modifier", ReasonInboxDMA: "inbox_dma",
	ReasonEventsNoEQ: "events_no_eq", ReasonNotOwner: "not_owner", ReasonNotFound: "not_found",
	ReasonBadState: "bad_state", ReasonBusy: "busy", ReasonQuota: "quota", ReasonRange: "range",
	ReasonPKey: "pkey", ReasonPort: "port", ReasonGID: "gid", ReasonMTT: "mtt", ReasonEQ: "eq",
	ReasonContext: "context", ReasonFLR: "flr", ReasonMAD: "mad_policy", ReasonNotModelled: "not_modelled",
}

// NumReasons is the number of Reason values (for counter arrays).
const NumReasons = int(reasonCount)

func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "unknown"
}
