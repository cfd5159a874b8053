package refusal

import "strconv"

// Reason classifies a refusal for the validation-refusal counter. The set is
// closed so that it can be a metric label.
type Reason uint8

const (
	None          Reason = iota
	UnknownOpcode        // not in the command table
	Privileged           // EPERM entry or privileged operation
	OpModifier           // op_modifier not accepted
	InModifier           // in_modifier out of range
	InboxDMA             // inbox address unreadable
	EventsNoEQ           // 'e' bit without an EQ mapped for command completions
	NotOwner             // object belongs to another function
	NotFound             // object does not exist
	BadState             // object or QP in the wrong state
	Busy                 // object busy or referenced
	Quota                // quota or pool exhausted
	Range                // resource range or index out of bounds
	PKey                 // P_Key index outside the function's table
	Port                 // port the function does not have
	GID                  // GID index outside the function's range
	MTT                  // MTT range not owned or out of bounds
	EQ                   // EQ not owned or not in HW
	Context              // malformed context or parameter
	FLR                  // function is being reset
	MAD                  // MAD refused by the VF policy
	NotModelled          // in the table but not executed by this model
	MADDropped           // MAD consumed without a reply (a key violation, a trap repress): firmware's BAD_PKT
	Injected             // an injected fault's status (vhcr/faultinj's status kind)
	count
)

var reasonNames = [...]string{
	None: "none", UnknownOpcode: "unknown_opcode", Privileged: "privileged",
	OpModifier: "op_modifier", InModifier: "in_modifier", InboxDMA: "inbox_dma",
	EventsNoEQ: "events_no_eq", NotOwner: "not_owner", NotFound: "not_found",
	BadState: "bad_state", Busy: "busy", Quota: "quota", Range: "range",
	PKey: "pkey", Port: "port", GID: "gid", MTT: "mtt", EQ: "eq",
	Context: "context", FLR: "flr", MAD: "mad_policy", NotModelled: "not_modelled",
	MADDropped: "mad_dropped", Injected: "fault_injected",
}

// reasonTexts say in words what each reason's name stands for.
var reasonTexts = [...]string{
	None: "no refusal", UnknownOpcode: "the opcode is not in the command table",
	Privileged:  "the command or operation is the PF's only",
	OpModifier:  "the op_modifier is not one the command accepts",
	InModifier:  "the in_modifier is out of range",
	InboxDMA:    "the inbox address is not readable in the VF's DMA window",
	EventsNoEQ:  "the 'e' bit is set but no EQ of the VF is mapped for command completions",
	NotOwner:    "the object belongs to another function",
	NotFound:    "the object does not exist",
	BadState:    "the object (or QP) is in the wrong state for this command",
	Busy:        "the object is busy or still referenced",
	Quota:       "the VF's quota or the pool is exhausted",
	Range:       "a resource number or index is out of bounds",
	PKey:        "the P_Key index is outside the function's table",
	Port:        "the function does not have that port",
	GID:         "the GID index is outside the function's range",
	MTT:         "the MTT range is not the VF's or out of bounds",
	EQ:          "the EQ is not the VF's or not in hardware ownership",
	Context:     "a context field or parameter is malformed",
	FLR:         "the function is being reset",
	MAD:         "the VF policy of MAD_IFC refuses this MAD",
	NotModelled: "the command is in the table but this model does not execute it",
	MADDropped:  "the MAD was consumed without a reply, the firmware's BAD_PKT: a key violation, whose trap goes to the SM",
	Injected:    "an injected fault answered the command with this status (vhcrd fault list)",
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
const NumReasons = int(count)

func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "unknown"
}
