package hca

import "github.com/vhcrd/vhcrd/vhcr/mlx4"

// State is the firmware's persistent state as plain values: the tables a
// checkpoint holds beside the tracker's image. The live firmware keeps the
// same values (each live object embeds its XState, each function's vfFW
// embeds its VFState, the port tables are PortState), so Image and Load
// copy whole values and cannot leave a field behind. The maps and slices
// below are the only references; Image and Load clone each of them
// (TestStateIsPlainValues lists them), so an image never aliases the live
// HCA. Everything the live HCA holds besides is transient and documented
// where it is declared (TestStateCoversTheFirmware keeps both lists
// complete).
type State struct {
	MTT         map[uint64][]uint64   // MTT allocation base → entries
	QPs         map[uint32]QPState    // QPN (tracker id)
	CQs         map[uint32]CQState    // CQN
	SRQs        map[uint32]SRQState   // SRQN
	MPTs        map[uint64]MPTState   // tracker id (index & mask)
	EQs         map[uint64]EQState    // restrack.EQID(vf, eqn)
	Ports       []PortState           // per physical port
	VFs         []VFState             // per function
	CounterPort map[uint64]int        // counter index → physical port it counts
	MCG         map[uint32][][16]byte // QPN → multicast groups attached
	NextRegID   uint64                // next flow-steering rule id
}

// QPState is one QP's firmware state.
type QPState struct {
	State     mlx4.QPState
	Port      int // physical port of the primary path
	Suspended bool
	Ctx       [mlx4.QPMailboxSize]byte // the last context written (rewritten fields included)
	Vport     bool                     // VST or spoof check rewrote its context (vport.go)
	SQHead    uint32                   // send WQEs the device consumed (sq_wqe_counter, 16 bits; wq.go)
	RQHead    uint32                   // receive WQEs consumed (16 bits, against the doorbell record)
}

// CQState is one CQ's firmware state: its context, its EQ, and the
// ring's positions and arm (cqring.go).
type CQState struct {
	Ctx [mlx4.CQContextSize]byte
	EQN int

	Prod    uint32 // producer index: CQEs written (24 bits)
	Cons    uint32 // consumer index last read from the doorbell record (set_ci)
	ArmDB   uint32 // the doorbell record's arm_db word last applied
	Arm     uint32 // the arm pending: MLX4_CQ_DB_REQ_NOT, _REQ_NOT_SOL, or 0 (disarmed)
	ArmCI   uint32 // the consumer index of that arm
	SolProd uint32 // producer index after the last solicited or error CQE
	Sol     bool   // a solicited or error CQE was written
	Err     uint8  // CQ error syndrome (mlx4.CQErr*): the CQ writes no more CQEs; 0 none
}

// SRQState is one SRQ's firmware state.
type SRQState struct {
	Ctx   [mlx4.SRQContextSize]byte
	Limit uint16
	Head  uint16 // the next WQE the device takes (rq.go)
	Taken uint16 // WQEs taken, against the doorbell record's counter
}

// MPTState is one MPT's firmware state.
type MPTState struct {
	Entry [mlx4.MPTEntrySize]byte
	Valid bool // entry written by SW2HW_MPT at least once
}

// EQState is one EQ's firmware state.
type EQState struct {
	VF, EQN   int
	Ctx       [mlx4.EQContextSize]byte
	Nent      uint32
	PageShift uint
	Pages     []uint64 // IOVA of each ring page in the VF's window
	Prod      uint32   // producer index (EQEs written)
	Cons      uint32   // consumer index the VF reported (24 bits)
	Armed     bool

	DBAtCreate uint32 // doorbell word when the EQ was created
	DBStale    bool   // the word has not changed since: ignore it
}

// PortState is one physical port's MAC and VLAN tables.
type PortState struct {
	MAC  [macTableSize]TableEntry
	VLAN [vlanTableSize]TableEntry
	// RoCEGIDs is an Ethernet port's GID table: the PF's, then each VF's
	// slice (roce.go).
	RoCEGIDs [mlx4.ROCE_MAX_GIDS][mlx4.ROCE_GID_ENTRY_SIZE]byte
}

// TableEntry is one MAC or VLAN table entry and its reference count.
type TableEntry struct {
	Value uint64
	Refs  int
}

// VFState is one function's firmware state.
type VFState struct {
	EventEQ  [numEventTypes]int16 // event type → eqn, -1 = not mapped
	PortOpen [2]bool              // INIT_PORT done (physical port index)
	OldVLAN  bool                 // used the old VLAN API (mlx4's old_vlan_api)
	Promisc  [2]bool
	VLANFltr [2][128]uint32
	McastOn  [2]bool
	Vport    [2]VportState // physical port index (vport.go)
	AdminMAC [2]uint64     // operator's MAC per physical port, 0 = default (vfadmin.go)
}
