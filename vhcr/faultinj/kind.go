package faultinj

import (
	"strconv"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Kind is one fault of the catalogue. The set is closed: a kind is
// carried out by the PF (vhcr/master's faults.go) at the point it names,
// and a rule with an unknown kind is refused when it is compiled.
type Kind uint8

// The catalogue, by group. Each kind's documentation (Info) says what the
// PF does and which driver path it aims at; docs/faults.md has the table.
const (
	KindNone Kind = iota

	// The answer to a command (VHCR_POST, or a comm command where the
	// kind allows one).
	Status      // the command answered with a status instead of executed
	Delay       // the answer held back for a time
	Never       // the command never answered
	ToggleNever // executed and written back, slave_read's toggle never flipped
	ToggleTwice // the toggle flipped, then flipped back
	NoWriteback // executed, the toggle flipped, the vHCR not written back
	OutboxField // a QUERY_* outbox field set out of range
	OutParam    // the immediate output replaced
	FLRMid      // an FLR begins while the command runs
	InternalErr // bit 17 raised in slave_read
	VFReset     // the PF resets the VF's function (bit 17, resources released)

	// The completion EQE of an 'e' command.
	EQEDrop   // the completion EQE not written
	EQEDup    // the completion EQE written twice
	EQEToken  // the completion EQE with another token
	EQEStatus // the completion EQE with a status the vHCR does not have

	// Probe and the comm channel's registers.
	ResetVersion // RESET acknowledged with another interface revision
	PFOffline    // the comm channel offline (FLAGS bit 9) for a time
	NoVFResetCap // COMM_CHAN_CAPS without the VF reset capability

	// The FLAGS reset handshake.
	FlagsNoAck      // a reset request never acknowledged
	FlagsLateAck    // a reset request acknowledged late
	FlagsAckNoReset // acknowledged without the function reset

	// Events and interrupts.
	EQOverrun    // an EQ_OVERFLOW event to the VF
	EQFull       // the VF's next events dropped as on a full EQ
	MSIXDrop     // the VF's next interrupts not raised
	MSIXSpurious // an MSI-X vector raised without an EQE

	// The physical port, as an SM or the link would change it.
	PortFlap        // port down, then up, count times
	LIDChange       // the port's LID changed (PORT_MNG_CHG LID_CHANGE)
	SMLIDChange     // the master SM's LID changed
	PKeyChange      // a P_Key table entry changed (PORT_MNG_CHG PKEY_TABLE)
	GUIDChange      // a VF's alias GUID changed (PORT_MNG_CHG GUID_INFO)
	ClientRereg     // the SM asks for client reregistration (CLIENT_REREG)
	GIDPrefixChange // the port's GID prefix changed (GID_PFX_CHANGE)

	// The data path's completions.
	CQEError  // a successful completion written as an error CQE with a syndrome
	CQEDrop   // a CQE not written
	CQEDup    // a CQE written twice
	CQOverrun // the CQ overruns at a CQE (CQ_ERROR, overrun syndrome)

	NumKinds
)

// Group is a kind's family; the data path's faults join GroupDataPath.
type Group uint8

const (
	GroupCommand Group = iota + 1
	GroupCompletion
	GroupProbe
	GroupFlags
	GroupEvents
	GroupPort
	// GroupDataPath is the data path's faults: error CQEs by syndrome, a
	// CQE dropped or duplicated, a CQ overrun. The work-request engine
	// (vhcr/hca) asks the PF at PointCQE, keyed by the completed work
	// request's opcode (CQEKey), for every CQE it writes, and carries the
	// kind out there.
	GroupDataPath
)

var groupNames = [...]string{GroupCommand: "command", GroupCompletion: "completion", GroupProbe: "probe",
	GroupFlags: "flags", GroupEvents: "events", GroupPort: "port", GroupDataPath: "data_path"}

func (g Group) String() string {
	if int(g) < len(groupNames) && groupNames[g] != "" {
		return groupNames[g]
	}
	return "group_" + strconv.Itoa(int(g))
}

// Point is where a rule is asked: the PF's hooks.
type Point uint8

const (
	// PointPost is a VHCR_POST, keyed by its opcode (the general post
	// path; the fast path steps aside while a PointPost rule is armed).
	PointPost Point = 1 << iota
	// PointComm is a comm command other than VHCR_POST, keyed by the
	// command (mlx4.CommCmd).
	PointComm
	// PointFlags is a FLAGS reset request (bit 16 toggled).
	PointFlags
	// PointNow fires once, when the rule is armed (an admin request, the
	// configuration at start).
	PointNow
	// PointCQE is the data path's completion step (GroupDataPath): a CQE
	// the engine writes, keyed by CQEKey (the work request's opcode, or
	// CQERecv).
	PointCQE
)

// CQERecv is PointCQE's key of a receive completion; a send completion's
// key is its WQE's opcode (mlx4.OPCODE_*, 5 bits).
const CQERecv = 0x100

// CQEKey is PointCQE's key of a completion: CQERecv for a receive, the
// WQE's opcode for a send.
func CQEKey(recv bool, op uint8) int {
	if recv {
		return CQERecv
	}
	return int(op & mlx4.WQEOpcodeMask)
}

// CQEKeyName names a PointCQE key: RECV, the send opcode's mlx4 name
// (SEND, RDMA_WRITE), or its number.
func CQEKeyName(key int) string {
	if key == CQERecv {
		return "RECV"
	}
	if n, ok := mlx4.WQEOpcodeNames[uint8(key)]; ok && key >= 0 && key <= mlx4.WQEOpcodeMask {
		return n
	}
	return "0x" + strconv.FormatUint(uint64(key), 16)
}

var pointNames = map[Point]string{PointPost: "post", PointComm: "comm", PointFlags: "flags", PointNow: "now", PointCQE: "cqe"}

func (p Point) String() string {
	if n, ok := pointNames[p]; ok {
		return n
	}
	return "point_" + strconv.Itoa(int(p))
}

// Info documents a kind: its name, group, the points it may fire at
// (Default when the rule names none), its parameters, what the PF does
// and the driver path it aims at (Linux 6.1's mlx4_core and mlx4_ib).
type Info struct {
	Name    string
	Group   Group
	Points  Point // the points it may fire at
	Default Point // the point of a rule that names no opcode or comm command
	// Event: fires only at a VHCR_POST with the 'e' bit (its occurrences
	// count only those).
	Event bool
	// Success: fires only at a successful completion (PointCQE; its
	// occurrences count only those).
	Success bool
	Params  []string // the names of its arguments (ParamInfo)
	Does    string   // what the PF does
	Driver  string   // the driver path it aims at
}

var infos = [NumKinds]Info{
	Status: {Name: "status", Group: GroupCommand, Points: PointPost, Default: PointPost, Params: []string{"status"},
		Does:   "answers the command with the status (any byte; mlx4's names: INTERNAL_ERR, BAD_OP, BAD_PARAM, ...), not executing it",
		Driver: "cmd.c mlx4_slave_cmd → mlx4_status_to_errno; the caller's error path (main.c mlx4_slave_cap, mlx4_init_hca; mlx4_ib's verbs)"},
	Delay: {Name: "delay", Group: GroupCommand, Points: PointPost | PointComm, Default: PointPost, Params: []string{"us"},
		Does:   "serves the command us µs late: a deadline the poller checks between scans, serving the other VFs meanwhile; the VF writing another command first cancels it",
		Driver: "cmd.c mlx4_comm_cmd_poll/_wait: within the timeout a slow command; past it \"communication channel command 0x%x timed out\" and mlx4_enter_error_state (a RESET: MLX4_DELAY_RESET_SLAVE, probe deferred)"},
	Never: {Name: "never", Group: GroupCommand, Points: PointPost | PointComm, Default: PointPost,
		Does:   "never serves the command: no execution, no write-back, no toggle, no EQE (the VF's next comm command is served)",
		Driver: "cmd.c comm_pending never clears: the command times out (MLX4_COMM_TIME plus the command's timeout) → error state; at RESET, main.c \"slave is currently in the middle of FLR - Deferring probe\""},
	ToggleNever: {Name: "toggle_never", Group: GroupCommand, Points: PointPost | PointComm, Default: PointPost,
		Does:   "executes and writes the answer back (and the EQE) but leaves slave_read's toggle as it was",
		Driver: "cmd.c: in poll mode mlx4_comm_cmd_poll times out (\"Communication channel command 0x%x timed out\") and enters the error state; in event mode mlx4_comm_cmd_wait takes the EQE, waits out its timeout for the toggle and returns success; either way the VF's next comm_toggle repeats the PF's (a violation: reset with bit 17)"},
	ToggleTwice: {Name: "toggle_twice", Group: GroupCommand, Points: PointPost | PointComm, Default: PointPost,
		Does:   "acknowledges (toggle flipped), then flips the toggle back: a VF polling between the two stores sees the answer, one that is not sees none",
		Driver: "cmd.c comm_pending: a timeout, or the next command looking complete before the PF ran it (mlx4_slave_cmd reads a stale vHCR status)"},
	NoWriteback: {Name: "no_writeback", Group: GroupCommand, Points: PointPost, Default: PointPost,
		Does:   "executes and acknowledges the command but writes neither the status nor the immediate output into the vHCR",
		Driver: "cmd.c mlx4_slave_cmd sets vhcr->status = 0 and out_param to its own input before posting and reads both back: success, the output its own input (an ALLOC_RES base of 0)"},
	OutboxField: {Name: "outbox_field", Group: GroupCommand, Points: PointPost, Default: PointPost, Params: []string{"field", "value"},
		Does:   "executes the QUERY_* command and sets one outbox field (Fields: the bits the driver reads) to value before the outbox is copied out; fires only at the field's opcode",
		Driver: "fw.c mlx4_QUERY_FUNC_CAP, mlx4_QUERY_DEV_CAP, mlx4_QUERY_PORT; main.c mlx4_slave_cap's checks (\"HCA minimum page size ... bigger than kernel PAGE_SIZE\", \"uar size ... bigger than BAR\", \"Invalid ... num_eqs\")"},
	OutParam: {Name: "out_param", Group: GroupCommand, Points: PointPost, Default: PointPost, Params: []string{"value"},
		Does:   "executes the command and replaces its immediate output (out_param of an out_is_imm command: ALLOC_RES's base number, QUERY_*'s immediates) with value",
		Driver: "resource_tracker callers in the VF (qp.c __mlx4_qp_reserve_range's ALLOC_RES, cq.c, srq.c): a number the VF does not own"},
	FLRMid: {Name: "flr_mid", Group: GroupCommand, Points: PointPost | PointComm, Default: PointPost, Params: []string{"us"},
		Does:   "begins an FLR of the VF instead of answering the command (resources released, bit 17 with the toggle unflipped, comm commands but RESET dropped) and ends it us µs later",
		Driver: "cmd.c: the command times out; main.c mlx4_init_slave's RESET during the FLR: MLX4_DELAY_RESET_SLAVE, \"Deferring probe\"; catas.c poll_catas finds bit 17"},
	InternalErr: {Name: "internal_err", Group: GroupCommand, Points: PointPost | PointComm | PointNow, Default: PointNow,
		Does:   "raises COMM_CHAN_EVENT_INTERNAL_ERR (bit 17) in slave_read: at a command, in its acknowledgement; now, next to the toggle as it stands; the function is not reset",
		Driver: "catas.c poll_catas (every 5 s, MLX4_CATAS_POLL_INTERVAL): \"Internal error detected on the communication channel\" → mlx4_enter_error_state → mlx4_reset_slave (the FLAGS handshake) → mlx4_restart_one"},
	VFReset: {Name: "vf_reset", Group: GroupCommand, Points: PointPost | PointComm | PointNow, Default: PointNow,
		Does:   "resets the VF's function as a violation does (resources released, channel back to RESET, bit 17 in slave_read), reason fault",
		Driver: "catas.c poll_catas → error state → mlx4_reset_slave → mlx4_restart_one: the driver's whole restart, against a PF that freed its objects"},

	EQEDrop: {Name: "eqe_drop", Group: GroupCompletion, Points: PointPost, Default: PointPost, Event: true,
		Does:   "does not write the command's completion EQE (mlx4's way: the write-back and the toggle still happen; the early way: the command's only completion is lost)",
		Driver: "cmd.c mlx4_comm_cmd_wait: wait_for_completion_timeout expires, \"communication channel command 0x%x (op=0x%x) timed out\" → error state"},
	EQEDup: {Name: "eqe_dup", Group: GroupCompletion, Points: PointPost, Default: PointPost, Event: true,
		Does:   "writes the command's completion EQE twice",
		Driver: "eq.c mlx4_eq_int → cmd.c mlx4_cmd_event: the second EQE completes a finished context again (reinit_completion clears that at the context's next use) or, once the context is reused, meets a token advanced by token_mask + 1 and is ignored"},
	EQEToken: {Name: "eqe_token", Group: GroupCompletion, Points: PointPost, Default: PointPost, Event: true, Params: []string{"xor"},
		Does:   "writes the completion EQE with its token XORed with xor (default 1)",
		Driver: "cmd.c mlx4_cmd_event: a token other than the context's is ignored (\"previously timed out command completing at long last\"); mlx4_comm_cmd_wait times out → mlx4_enter_error_state"},
	EQEStatus: {Name: "eqe_status", Group: GroupCompletion, Points: PointPost, Default: PointPost, Event: true, Params: []string{"status"},
		Does:   "writes the completion EQE with the status (the vHCR's write-back keeps the command's own)",
		Driver: "cmd.c mlx4_cmd_event sets context->result from the EQE's status; mlx4_comm_cmd_wait: \"command 0x%x failed: fw status = 0x%x\", then mlx4_slave_cmd: \"failed execution of VHCR_POST command opcode 0x%x\""},

	ResetVersion: {Name: "reset_version", Group: GroupProbe, Points: PointComm, Default: PointComm, Params: []string{"version"},
		Does:   "acknowledges RESET with the version word version (default: interface revision 2) instead of mlx4.CommVersion; fires at RESET only",
		Driver: "main.c mlx4_init_slave: MLX4_COMM_GET_IF_REV differs → \"slave driver version is not supported by the master\", probe fails"},
	PFOffline: {Name: "pf_offline", Group: GroupProbe, Points: PointComm | PointNow, Default: PointNow, Params: []string{"us"},
		Does:   "sets COMM_CHAN_FLAGS bit 9 (offline) for us µs (default 40 s) and serves none of the VF's comm commands meanwhile; at a comm command, that command waits too",
		Driver: "main.c mlx4_comm_check_offline (MLX4_COMM_OFFLINE_TIME_OUT, 30 s): \"PF is not responsive, skipping initialization\""},
	NoVFResetCap: {Name: "no_vf_reset_cap", Group: GroupProbe, Points: PointNow, Default: PointNow,
		Does:   "clears COMM_CHAN_CAPS bit 30 (VF reset supported) until the rule is cleared",
		Driver: "main.c mlx4_reset_vf_support reads it at probe; catas.c mlx4_reset_slave: \"VF reset is not supported\" → mlx4_enter_error_state's BUG_ON(1)"},

	FlagsNoAck: {Name: "flags_no_ack", Group: GroupFlags, Points: PointFlags, Default: PointFlags,
		Does:   "never acknowledges the reset request (bit 8 left as it was); the function is not reset",
		Driver: "catas.c mlx4_reset_slave waits MLX4_COMM_TIME (10 s): \"Fail to send reset over the communication channel\" → BUG_ON(1) in mlx4_enter_error_state"},
	FlagsLateAck: {Name: "flags_late_ack", Group: GroupFlags, Points: PointFlags, Default: PointFlags, Params: []string{"us"},
		Does:   "resets the function and acknowledges the request us µs late (a deadline between scans)",
		Driver: "catas.c mlx4_reset_slave: within 10 s \"VF Reset succeed\", past it the BUG_ON(1) path"},
	FlagsAckNoReset: {Name: "flags_ack_no_reset", Group: GroupFlags, Points: PointFlags, Default: PointFlags,
		Does:   "acknowledges the reset request without resetting the function: the VF's objects and channel state stay",
		Driver: "catas.c mlx4_reset_slave succeeds; mlx4_restart_one's probe then meets a PF that still holds its old objects (RESET releases them)"},

	EQOverrun: {Name: "eq_overrun", Group: GroupEvents, Points: PointPost | PointNow, Default: PointNow, Params: []string{"eqn"},
		Does:   "posts an EQ_OVERFLOW event (type 0x0f) for EQ eqn to the VF's EQ mapped for it",
		Driver: "eq.c mlx4_eq_int: MLX4_EVENT_TYPE_EQ_OVERFLOW → \"EQ overrun on EQN %d\""},
	EQFull: {Name: "eq_full", Group: GroupEvents, Points: PointPost | PointNow, Default: PointNow, Params: []string{"count"},
		Does:   "drops the VF's next count EQEs (default 1) as the HCA drops events into a full EQ (counted as overruns)",
		Driver: "eq.c: the lost event — a command completion that never comes (cmd.c timeout), a port event never seen"},
	MSIXDrop: {Name: "msix_drop", Group: GroupEvents, Points: PointPost | PointNow, Default: PointNow, Params: []string{"count"},
		Does:   "does not raise the VF's next count MSI-X interrupts (default 1); the EQEs are written",
		Driver: "eq.c mlx4_msi_x_interrupt never runs for them: the EQ is polled only at the next interrupt; cmd.c event-mode waits time out"},
	MSIXSpurious: {Name: "msix_spurious", Group: GroupEvents, Points: PointPost | PointNow, Default: PointNow, Params: []string{"vector"},
		Does:   "raises MSI-X vector vector (default 0) of the VF with no EQE behind it",
		Driver: "eq.c mlx4_msi_x_interrupt → mlx4_eq_int finds no software-owned EQE and re-arms"},

	PortFlap: {Name: "port_flap", Group: GroupPort, Points: PointPost | PointComm | PointNow, Default: PointNow, Params: []string{"port", "us", "count"},
		Does:   "takes physical port port (default 1) down, brings it up us µs later (default 1000), count times (default 1): PORT_CHANGE down and up to every VF on the port with link policy auto",
		Driver: "eq.c MLX4_EVENT_TYPE_PORT_CHANGE → mlx4_dispatch_event → mlx4_ib_event (IB_EVENT_PORT_ERR / PORT_ACTIVE), mlx4_en's link state"},
	LIDChange: {Name: "lid_change", Group: GroupPort, Points: PointPost | PointComm | PointNow, Default: PointNow, Params: []string{"port", "lid"},
		Does:   "sets the port's LID to lid and sends PORT_MNG_CHG PORT_INFO with LID_CHANGE to the port's VFs",
		Driver: "mlx4_ib mad.c handle_port_mgmt_change_event: IB_EVENT_LID_CHANGE; the VF rereads PortInfo by MAD_IFC"},
	SMLIDChange: {Name: "sm_lid_change", Group: GroupPort, Points: PointPost | PointComm | PointNow, Default: PointNow, Params: []string{"port", "lid"},
		Does:   "sets the port's master SM LID to lid (what MAD_IFC PortInfo shows the VFs); no event, as mlx4's PF sends none for it",
		Driver: "mlx4_ib's SA and CM traffic (its sm_ah) after the VF's next PortInfo query"},
	PKeyChange: {Name: "pkey_change", Group: GroupPort, Points: PointPost | PointComm | PointNow, Default: PointNow, Params: []string{"port", "index", "pkey"},
		Does:   "sets physical P_Key index index of the port to pkey and sends PORT_MNG_CHG PKEY_TABLE to the VFs whose virtual table maps it",
		Driver: "mlx4_ib mad.c handle_port_mgmt_change_event: IB_EVENT_PKEY_CHANGE → ib_cache refresh"},
	GUIDChange: {Name: "guid_change", Group: GroupPort, Points: PointPost | PointComm | PointNow, Default: PointNow, Params: []string{"port", "guid"},
		Does:   "sets the VF's alias GUID on the port (GUID index vf+1) to guid and sends PORT_MNG_CHG GUID_INFO to the VF",
		Driver: "mlx4_ib mad.c: IB_EVENT_GID_CHANGE for the VF's GID 0; ib_cache"},
	ClientRereg: {Name: "client_rereg", Group: GroupPort, Points: PointPost | PointComm | PointNow, Default: PointNow, Params: []string{"port"},
		Does:   "sends PORT_MNG_CHG PORT_INFO with CLIENT_REREG to the port's VFs",
		Driver: "mlx4_ib mad.c: IB_EVENT_CLIENT_REREGISTER → the SA clients (multicast, ipoib) rejoin"},
	GIDPrefixChange: {Name: "gid_prefix_change", Group: GroupPort, Points: PointPost | PointComm | PointNow, Default: PointNow, Params: []string{"port", "prefix"},
		Does:   "sets the port's GID prefix and sends PORT_MNG_CHG PORT_INFO with GID_PFX_CHANGE to the port's VFs",
		Driver: "mlx4_ib mad.c handle_port_mgmt_change_event: IB_EVENT_GID_CHANGE"},

	CQEError: {Name: "cqe_error", Group: GroupDataPath, Points: PointCQE, Default: PointCQE, Success: true, Params: []string{"syndrome", "vendor"},
		Does:   "writes the successful completion as an error CQE (opcode MLX4_CQE_OPCODE_ERROR, the QPN, wqe_index and send bit kept) with the syndrome and vendor_err_syndrome vendor (default 0, as the model's own error CQEs), then does what hardware does after an error completion: the QP leaves RTS (RC to ERR, UD and UC send errors to SQER; a receive to ERR) and the rest of its work requests complete with WR_FLUSH_ERR, now and as the VF posts more",
		Driver: "userspace: libmlx4 cq.c mlx4_poll_one → mlx4_handle_error_cqe: ibv_wc.status from the syndrome (IBV_WC_REM_ACCESS_ERR, ...; an unnamed one IBV_WC_GENERAL_ERR), vendor_err; ibv_rc_pingpong: \"Failed status %s (%d) for wr_id %d\"; kernel consumers: mlx4_ib cq.c mlx4_ib_poll_one → mlx4_ib_handle_error_cqe (ib_wc.status, vendor_err; LOCAL_QP_OP_ERR also a pr_debug \"local QP operation err\" with the CQE dumped), then the ULP's handler (IPoIB ipoib_ib.c: \"failed send event (status=%d, wrid=%d vend_err %#x)\", \"failed recv event ...\")"},
	CQEDrop: {Name: "cqe_drop", Group: GroupDataPath, Points: PointCQE, Default: PointCQE,
		Does:   "does not write the CQE: the CQ's producer index does not advance and its arm is not served by it; for the device the work request is complete (its WQE consumed, the QP's state as it was)",
		Driver: "libmlx4 cq.c mlx4_poll_cq (the kernel's mlx4_ib_poll_cq alike) never sees the completion: ibv_rc_pingpong waits for it in ibv_poll_cq (ibv_get_cq_event with -e) for good; a later send CQE retires the dropped WQE with it (mlx4_poll_one moves the SQ tail to the CQE's wqe_index), a later receive CQE takes the dropped receive's wr_id (the RQ tail moves one per CQE)"},
	CQEDup: {Name: "cqe_dup", Group: GroupDataPath, Points: PointCQE, Default: PointCQE,
		Does:   "writes the CQE twice: the second at the next producer index with that index's owner bit",
		Driver: "libmlx4 cq.c mlx4_poll_one takes both: a send CQE's copy reports the same wr_id again and, its wqe_index behind the SQ tail, adds 65535 to the 32-bit tail (tail += (uint16_t)(wqe_index - tail)): the SQ looks full and every later ibv_post_send fails with ENOMEM, a receive CQE's copy the next receive's wr_id (the RQ tail moves one per CQE) while that receive is still posted; ibv_rc_pingpong: \"Couldn't post send\" at its next send"},
	CQOverrun: {Name: "cq_overrun", Group: GroupDataPath, Points: PointCQE, Default: PointCQE,
		Does:   "makes the CQ overrun at the CQE, as a full CQ does: the CQE not written, the CQ in error (no CQE written to it until it is destroyed), the CQ error async event (MLX4_EVENT_TYPE_CQ_ERROR, syndrome overrun) to the VF's EQ mapped for it",
		Driver: "mlx4_core eq.c mlx4_eq_int: \"CQ overrun on CQN %06x\" → cq.c mlx4_cq_event → mlx4_ib cq.c mlx4_ib_cq_event → IB_EVENT_CQ_ERR to the CQ's event handler (userspace: uverbs ib_uverbs_cq_event_handler → ibv_get_async_event IBV_EVENT_CQ_ERR); the CQ's completions stop"},
}

// Info returns k's documentation (the zero Info for an unknown kind).
func (k Kind) Info() Info {
	if k > KindNone && k < NumKinds {
		return infos[k]
	}
	return Info{}
}

// String is the kind's name ("eqe_drop").
func (k Kind) String() string {
	if k > KindNone && k < NumKinds {
		return infos[k].Name
	}
	return "kind_" + strconv.Itoa(int(k))
}

// Valid reports whether k is a kind of the catalogue.
func (k Kind) Valid() bool { return k > KindNone && k < NumKinds }

// Kinds lists the catalogue in order.
func Kinds() []Kind {
	out := make([]Kind, 0, NumKinds-1)
	for k := KindNone + 1; k < NumKinds; k++ {
		out = append(out, k)
	}
	return out
}

// ParseKind finds a kind by its name.
func ParseKind(s string) (Kind, bool) {
	for k := KindNone + 1; k < NumKinds; k++ {
		if infos[k].Name == s {
			return k, true
		}
	}
	return KindNone, false
}
