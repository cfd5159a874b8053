package mlx4

import (
	"strconv"

	"github.com/vhcrd/vhcrd/dma"
)

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
	ReasonMADDropped           // MAD consumed without a reply (a key violation, a trap repress): firmware's BAD_PKT
	reasonCount
)

var reasonNames = [...]string{
	ReasonNone: "none", ReasonUnknownOpcode: "unknown_opcode", ReasonPrivileged: "privileged",
	ReasonOpModifier: "op_modifier", ReasonInModifier: "in_modifier", ReasonInboxDMA: "inbox_dma",
	ReasonEventsNoEQ: "events_no_eq", ReasonNotOwner: "not_owner", ReasonNotFound: "not_found",
	ReasonBadState: "bad_state", ReasonBusy: "busy", ReasonQuota: "quota", ReasonRange: "range",
	ReasonPKey: "pkey", ReasonPort: "port", ReasonGID: "gid", ReasonMTT: "mtt", ReasonEQ: "eq",
	ReasonContext: "context", ReasonFLR: "flr", ReasonMAD: "mad_policy", ReasonNotModelled: "not_modelled",
	ReasonMADDropped: "mad_dropped",
}

// reasonTexts say in words what each reason's name stands for.
var reasonTexts = [...]string{
	ReasonNone: "no refusal", ReasonUnknownOpcode: "the opcode is not in the command table",
	ReasonPrivileged:  "the command or operation is the PF's only",
	ReasonOpModifier:  "the op_modifier is not one the command accepts",
	ReasonInModifier:  "the in_modifier is out of range",
	ReasonInboxDMA:    "the inbox address is not readable in the VF's DMA window",
	ReasonEventsNoEQ:  "the 'e' bit is set but no EQ of the VF is mapped for command completions",
	ReasonNotOwner:    "the object belongs to another function",
	ReasonNotFound:    "the object does not exist",
	ReasonBadState:    "the object (or QP) is in the wrong state for this command",
	ReasonBusy:        "the object is busy or still referenced",
	ReasonQuota:       "the VF's quota or the pool is exhausted",
	ReasonRange:       "a resource number or index is out of bounds",
	ReasonPKey:        "the P_Key index is outside the function's table",
	ReasonPort:        "the function does not have that port",
	ReasonGID:         "the GID index is outside the function's range",
	ReasonMTT:         "the MTT range is not the VF's or out of bounds",
	ReasonEQ:          "the EQ is not the VF's or not in hardware ownership",
	ReasonContext:     "a context field or parameter is malformed",
	ReasonFLR:         "the function is being reset",
	ReasonMAD:         "the VF policy of MAD_IFC refuses this MAD",
	ReasonNotModelled: "the command is in the table but this model does not execute it",
	ReasonMADDropped:  "the MAD was consumed without a reply, the firmware's BAD_PKT: a key violation, whose trap goes to the SM",
}

// Text says in words why a command was refused ("the object does not
// exist"); Reason.String is the metric label.
func (r Reason) Text() string {
	if int(r) < len(reasonTexts) && reasonTexts[r] != "" {
		return reasonTexts[r]
	}
	return "reason " + strconv.Itoa(int(r))
}

// NumReasons is the number of Reason values (for counter arrays).
const NumReasons = int(reasonCount)

func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "unknown"
}
