package pfstate

// The data path's part of the state file (Geometry.DP, after the
// checkpoint slots): what a PF killed in the middle of a work request needs
// to complete it exactly once (vhcr/hca/dplog.go writes and reads it).
//
//	DPStepOff    the step records, DPStepSlots slots of DPStepSize (the
//	             record of sequence s in slot s % DPStepSlots): the CQEs
//	             of one step of the engine (a WQE's completion, a part of
//	             a flush), the CQs' runtime state before them with their
//	             EQ's producer index, and the positions after them of the
//	             QPs and SRQs the step moved; at StepAfter, written once
//	             the CQEs are, every object's state after the step. The
//	             last record applied is the newest copy of its objects'
//	             positions until their entries are stored (before a
//	             record without them, a command's store, a destroy), so
//	             that a step stores no entry in the common case; the
//	             other slot keeps the record before it while it is written
//	DPIntentOff  the atomic intent: the original value an ATOMIC read
//	             before writing its result (QPN, SQ index, value)
//	DPTableOff   the positions: DPEntries entries of two copies each, an
//	             object's runtime state (QP: state, SQ and RQ consumer
//	             indices; SRQ: head, taken, limit; CQ: producer and
//	             consumer indices, the arm, the error), the newer valid
//	             copy counting
//
// Every part ends in a check word (CRC32C) and is written check or commit
// word last, so that a kill leaves either the old or the new value; a
// record's after-state, written after its check, counts only under the
// applied commit word stored after it.
const (
	DPStepOff    = 0x0000
	DPStepSize   = 0x1000
	DPStepSlots  = 2
	DPIntentOff  = 0x2000
	DPIntentSize = 0x40
	DPTableOff   = 0x3000
	DPEntries    = 16384
	DPEntrySize  = 128 // two copies
	DPCopySize   = 64
	DPSize       = DPTableOff + DPEntries*DPEntrySize
)

// The step record.
const (
	StepCommit = 0x00 // MagicStep ^ seq (to apply), MagicApplied ^ seq (applied), MagicFlushed ^ seq (its entries stored); stored last
	StepCheck  = 0x04 // CRC32C of StepSeq .. the end of the last entry
	StepSeq    = 0x08 // 8 bytes: the step's sequence
	StepCounts = 0x10 // CQEs | CQs << 8 | QPs << 16 | SRQs << 24
	StepBody   = 0x18 // the CQE entries, then the CQ, QP and SRQ entries

	StepCQESize = 40 // cqn, flags (StepSolicited, StepOverrun), the 32-byte CQE as written
	StepCQSize  = 48 // cqn, its EQ (-1: none), the EQ's producer index, then CQWords words
	StepQPSize  = 16 // qpn, QP state, SQ consumer, RQ consumer
	StepSRQSize = 16 // srqn, head, taken, limit

	// StepAfter is the objects' state after the step, in the body's
	// order: each QP's state, SQ and RQ consumer (StepAfterQP), each
	// SRQ's head, taken and limit (StepAfterSRQ), each CQ's CQWords
	// words (StepAfterCQ).
	StepAfter    = 0x800
	StepAfterQP  = 12
	StepAfterSRQ = 12
	StepAfterCQ  = 4 * CQWords

	StepSolicited = 1 // the CQE fires a REQ_NOT_SOL arm
	StepOverrun   = 2 // no CQE: an injected CQ overrun in its place (the CQ fails, overrun syndrome)

	MaxStepCQEs = 32
	MaxStepCQs  = 8
	MaxStepQPs  = 8
	MaxStepSRQs = 4

	MagicStep    = 0x44505331 // "DPS1" ^ seq
	MagicApplied = 0x44504131 // "DPA1" ^ seq
	MagicFlushed = 0x44504631 // "DPF1" ^ seq
)

// The atomic intent.
const (
	IntCommit   = 0x00 // MagicAtomic ^ seq, stored last
	IntCheck    = 0x04 // CRC32C of IntSeq .. IntEnd
	IntSeq      = 0x08 // 8 bytes
	IntQPN      = 0x10
	IntSQ       = 0x14 // the WQE's SQ index (sq_wqe_counter)
	IntOrig     = 0x18 // 8 bytes: the original value
	IntEnd      = 0x20
	MagicAtomic = 0x44504931 // "DPI1" ^ seq
)

// A table entry's copy.
const (
	EntSeq   = 0x00 // the copy's sequence, stored last (the newer valid copy counts)
	EntCheck = 0x04 // CRC32C of EntKey .. the end of the copy, stored before the sequence
	EntKey   = 0x08 // kind << EntKindShift | object number; 0: free
	EntVals  = 0x0c // EntWords words of the object's state

	EntWords     = 13
	EntKindShift = 24
	EntNumMask   = 1<<EntKindShift - 1

	EntQP  = 1 // QP: state, SQ consumer, RQ consumer
	EntCQ  = 2 // CQ: CQWords words
	EntSRQ = 3 // SRQ: head, taken, limit

	CQWords = 8 // Prod, Cons, ArmDB, Arm, ArmCI, SolProd, Sol, Err
)
