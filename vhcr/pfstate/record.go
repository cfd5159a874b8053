package pfstate

import (
	"encoding/binary"
	"fmt"
)

// The channel record: a VF's persisted comm channel state, four 32-bit
// big-endian registers (bar.Reg). It is written in the order WordLastCmd,
// WordVHCRHi, WordVHCRLo, WordCheck: the check word last, so that a PF
// killed between two stores leaves a record whose check fails (in the state
// file, the other slot still holds the record of before).
const (
	RecordSize = 16

	WordLastCmd = 0x0 // last comm command | RecActive | sequence (state file slots) | RecValid
	WordCheck   = 0x4 // RecordCheck of the three others, the VF's number and the PF_GEN
	WordVHCRHi  = 0x8 // the vHCR's address, high word
	WordVHCRLo  = 0xc // and low word

	RecCmdMask = 0xff    // the last comm command (mlx4.CommCmd)
	RecActive  = 1 << 8  // VHCR_EN completed, the channel serves posts
	RecValid   = 1 << 31 // a record was written
	// In the state file a record's WordLastCmd carries a 7-bit sequence
	// (bits 15:9): of two intact slots the newer wins.
	RecSeqShift = 9
	RecSeqMask  = 0x7f

	// SlotsPerVF is the number of record slots per VF in the state file
	// (the header has one).
	SlotsPerVF = 2
)

// Record is the persisted part of a VF's channel state.
type Record struct {
	LastCmd uint8 // mlx4.CommCmd
	Active  bool
	VHCR    uint64
}

// Words encodes r as its WordLastCmd (with seq where slots is SlotsPerVF,
// else none), WordVHCRHi and WordVHCRLo.
func (r Record) Words(seq uint32, slots int) (w0, hi, lo uint32) {
	w0 = RecValid | uint32(r.LastCmd)
	if r.Active {
		w0 |= RecActive
	}
	if slots == SlotsPerVF {
		w0 |= (seq & RecSeqMask) << RecSeqShift
	}
	return w0, uint32(r.VHCR >> 32), uint32(r.VHCR)
}

// RecordCheck is the check word of a record of VF vf written under PF_GEN
// gen: the CRC32C of the three words, the VF's number and gen, big-endian.
func RecordCheck(w0, hi, lo uint32, vf int, gen uint32) uint32 {
	var b [20]byte
	binary.BigEndian.PutUint32(b[0:], w0)
	binary.BigEndian.PutUint32(b[4:], hi)
	binary.BigEndian.PutUint32(b[8:], lo)
	binary.BigEndian.PutUint32(b[12:], uint32(vf))
	binary.BigEndian.PutUint32(b[16:], gen)
	return Checksum(b[:])
}

// DecodeRecord decodes the words of one of VF vf's record slots (slots of
// them per VF) as written under generation gen or gen+1 (a PF that died
// while it rewrote the records at its start, before it advanced PF_GEN). An
// empty cause means the slot is intact; seq is its sequence.
func DecodeRecord(w0, check, hi, lo uint32, vf int, gen uint32, slots int) (r Record, seq uint32, cause string) {
	if w0&RecValid == 0 {
		return Record{}, 0, "no state record"
	}
	if check != RecordCheck(w0, hi, lo, vf, gen) && check != RecordCheck(w0, hi, lo, vf, gen+1) {
		return Record{}, 0, "state record checksum mismatch (corrupted, or written under another PF generation)"
	}
	r = Record{LastCmd: uint8(w0 & RecCmdMask), Active: w0&RecActive != 0, VHCR: uint64(hi)<<32 | uint64(lo)}
	known := uint32(RecValid | RecActive | RecCmdMask)
	if slots == SlotsPerVF {
		known |= RecSeqMask << RecSeqShift
	}
	if w0&^known != 0 {
		return r, 0, fmt.Sprintf("state record word %#08x has unknown bits", w0)
	}
	return r, w0 >> RecSeqShift & RecSeqMask, ""
}

// Newer reports whether sequence a is newer than b (7-bit, wrapping).
func Newer(a, b uint32) bool { return (a-b)&RecSeqMask < RecSeqMask/2 }

// LastCmd is the last comm command a record's WordLastCmd names, and
// whether a record was written at all.
func LastCmd(w0 uint32) (cmd uint8, valid bool) { return uint8(w0 & RecCmdMask), w0&RecValid != 0 }
