package trace

import (
	"strconv"

	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Kind says what a record describes.
type Kind uint8

const (
	KindComm    Kind = iota + 1 // a comm channel command other than VHCR_POST
	KindPost                    // VHCR_POST: one vHCR command, completed
	KindEQE                     // an EQE posted to one of the VF's EQs
	KindIRQ                     // an interrupt raised (MSI-X vector)
	KindReset                   // the PF reset the VF's channel state
	KindFLR                     // a function-level reset began or ended
	KindRestart                 // a PF (re)start found the VF's channel state
	KindFault                   // the PF injected a fault (package faultinj)
	numKinds
)

var kindNames = [...]string{KindComm: "comm", KindPost: "post", KindEQE: "eqe", KindIRQ: "irq",
	KindReset: "reset", KindFLR: "flr", KindRestart: "restart", KindFault: "fault"}

// String is the kind's JSON name ("post").
func (k Kind) String() string {
	if k > 0 && k < numKinds {
		return kindNames[k]
	}
	return "kind_" + strconv.Itoa(int(k))
}

// Valid reports whether k is one of the defined kinds.
func (k Kind) Valid() bool { return k > 0 && k < numKinds }

func parseKind(s string) (Kind, bool) {
	for k := KindComm; k < numKinds; k++ {
		if kindNames[k] == s {
			return k, true
		}
	}
	return 0, false
}

// Comm command values (mlx4.CommCmd's, as the uint8 a record holds).
const (
	CommReset    = uint8(mlx4.MLX4_COMM_CMD_RESET)
	CommVHCR0    = uint8(mlx4.MLX4_COMM_CMD_VHCR0)
	CommVHCR1    = uint8(mlx4.MLX4_COMM_CMD_VHCR1)
	CommVHCR2    = uint8(mlx4.MLX4_COMM_CMD_VHCR2)
	CommVHCREn   = uint8(mlx4.MLX4_COMM_CMD_VHCR_EN)
	CommVHCRPost = uint8(mlx4.MLX4_COMM_CMD_VHCR_POST)
	CommFLR      = uint8(mlx4.MLX4_COMM_CMD_FLR)
)

// CommName is the mlx4 name of a comm command ("VHCR_EN"): mlx4.CommCmd's.
func CommName(c uint8) string { return mlx4.CommCmd(c).String() }

// resetReasonNames mirrors master.ResetReason's names, in value order (a test
// checks that they match).
var resetReasonNames = [...]string{"vf_reset", "sequence", "unknown_comm_cmd", "toggle", "vhcr_address",
	"dma", "flr", "reset_request", "admin_state", "saved_state", "region_lost", "fault"}

// ResetReasonName is the name of a reset reason (master.ResetReason) as the
// metrics label it: "toggle".
func ResetReasonName(r uint8) string {
	if int(r) < len(resetReasonNames) {
		return resetReasonNames[r]
	}
	return "reset_reason_" + strconv.Itoa(int(r))
}

// Record flags.
const (
	FlagToggle = 1 << 0 // the toggle bit of the slave_write word
	FlagE      = 1 << 1 // VHCR_POST: the 'e' bit (completion by EQE)
	FlagTimed  = 1 << 2 // VHCR_POST: Latency was measured
)

// Record is one trace record, unpacked. Which fields mean something depends
// on Kind:
//
//	all       Seq, Ticks, Kind, VF
//	COMM      Comm, Flags (toggle), Arg (the 16-bit comm parameter)
//	POST      Comm (VHCR_POST), Flags (toggle, 'e', timed), Op, OpMod, Arg
//	          (in_modifier), InParam, OutParam, Token, Status, Reason,
//	          Latency (if timed), Inbox (a command with an inbox)
//	EQE       Aux (event type), Arg (EQ number), Token
//	IRQ       Arg (vector)
//	RESET     Aux (master.ResetReason)
//	FLR       Aux (1: begin, 0: end)
//	RESTART   Aux (1: the VF's state was adopted, 0: started afresh)
//	FAULT     Aux (faultinj.Kind), Arg (the rule's ID), InParam (the
//	          faultinj.Point it fired at), Op (at a VHCR_POST: its opcode),
//	          Comm (at a comm command: the command)
//
// A record packs into eight 64-bit words without loss (Pack, Unpack).
type Record struct {
	Seq      uint64 // position in the ring's stream, from 0
	Ticks    uint64 // cycle counter when the step began
	Latency  uint64 // POST: ticks from detection to completion
	InParam  uint64
	OutParam uint64
	// Inbox is the head of a POST's inbox as the PF copied it, two
	// big-endian words: bytes 0..7 and 16..23 (for MAD_IFC the MAD's base
	// version, class, class version, method, status and class-specific
	// word; its attribute ID, reserved word and attribute modifier). The
	// writer copies them; a reader decodes them (EntryOf). Zero for a
	// command without an inbox.
	Inbox  [2]uint64
	Arg    uint32
	VF     uint16
	Op     mlx4.Opcode // 12 bits
	Token  uint16
	Kind   Kind
	Comm   uint8
	OpMod  uint8 // 4 bits
	Status mlx4.Status
	Reason refusal.Reason
	Flags  uint8
	Aux    uint8
}

// Toggle is the toggle bit of the comm command (0 or 1).
func (r *Record) Toggle() uint8 { return r.Flags & FlagToggle }

// EBit reports the 'e' bit of a VHCR_POST.
func (r *Record) EBit() bool { return r.Flags&FlagE != 0 }

// Timed reports whether a VHCR_POST's Latency was measured.
func (r *Record) Timed() bool { return r.Flags&FlagTimed != 0 }

// Words is a record's packed form: what a ring slot holds.
type Words [8]uint64

// Word layout. Word 0 is the time, 1 and 2 the in/out parameters, 3 the
// latency; word 4 is kind | comm<<8 | vf<<16 | (op | op_mod<<12)<<32 |
// token<<48 and word 5 is arg | status<<32 | reason<<40 | flags<<48 |
// aux<<56; words 6 and 7 are the inbox's head.
func hdr(k Kind, comm uint8, vf uint16, opAndMod uint16, token uint16) uint64 {
	return uint64(k) | uint64(comm)<<8 | uint64(vf)<<16 | uint64(opAndMod)<<32 | uint64(token)<<48
}

func misc(arg uint32, status mlx4.Status, reason refusal.Reason, flags, aux uint8) uint64 {
	return uint64(arg) | uint64(status)<<32 | uint64(reason)<<40 | uint64(flags)<<48 | uint64(aux)<<56
}

// Pack packs r (all but Seq) into its words (Words).
func (r *Record) Pack() Words {
	return Words{r.Ticks, r.InParam, r.OutParam, r.Latency,
		hdr(r.Kind, r.Comm, r.VF, uint16(r.Op)&mlx4.OpcodeMask|uint16(r.OpMod&0xf)<<12, r.Token),
		misc(r.Arg, r.Status, r.Reason, r.Flags, r.Aux), r.Inbox[0], r.Inbox[1]}
}

// Unpack is the inverse of Pack; Seq is left zero. Every word pattern
// unpacks to some record (Kind may then not be Valid).
func Unpack(w *Words) Record {
	h, m := w[4], w[5]
	return Record{
		Ticks: w[0], InParam: w[1], OutParam: w[2], Latency: w[3],
		Kind: Kind(h), Comm: uint8(h >> 8), VF: uint16(h >> 16),
		Op: mlx4.Opcode(h>>32) & mlx4.OpcodeMask, OpMod: uint8(h>>44) & 0xf, Token: uint16(h >> 48),
		Arg: uint32(m), Status: mlx4.Status(m >> 32), Reason: refusal.Reason(m >> 40),
		Flags: uint8(m >> 48), Aux: uint8(m >> 56), Inbox: [2]uint64{w[6], w[7]},
	}
}
