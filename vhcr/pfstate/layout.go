package pfstate

import (
	"encoding/binary"

	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// The state file (little-endian; written by its PF only):
//
//	0x0000  the header (HeaderSize): HdrMagic..HdrCheck, then the active
//	        word (HdrActive) and the PF_GEN word (HdrGen)
//	Geometry.Chans    channel records, SlotsPerVF slots of RecordSize per VF
//	Geometry.Seqs     last sequences, one 8-byte word per VF
//	Geometry.Pos      EQ positions, one 4-byte word per VF and EQ number
//	Geometry.Journal  the journal: records of RecHdr bytes of intent, the
//	                  inbox kept, ResHdr bytes of result and the outbox kept,
//	                  padded to RecAlign
//	Geometry.Ckpt     two checkpoint slots of CkptHdr bytes and a gob
//	Geometry.DP       the data path's step records, atomic intent and
//	                  positions (datapath.go)
const (
	Magic = "VHCRPFS1"
	// Version 6: two step record slots, each with the objects' state
	// after its step (the last applied record the newest copy of its
	// positions), the intent and the table 0x1000 further. Version 5: the data path's region (Geometry.DP) after the
	// checkpoint slots. Version 4: the checkpoint's HCA image is the
	// firmware's hca.State (tables keyed by object number); version 3's
	// layout is unchanged.
	Version = 6

	HeaderSize = 0x1000

	HdrMagic      = 0x00 // 8 bytes: Magic
	HdrVersion    = 0x08 // Version
	HdrNumVFs     = 0x0c
	HdrEQsPerVF   = 0x10
	HdrJournalKiB = 0x14 // the journal's size in KiB
	HdrCkptKiB    = 0x18 // one checkpoint slot's size in KiB
	HdrLayoutCRC  = 0x1c // CRC32C of the regions' layout (LayoutCheck)
	HdrCheck      = 0x20 // CRC32C of the bytes before it
	HdrFields     = HdrCheck
	HdrActive     = 0x40 // checkpoint generation << 1 | slot (0: none), switched last
	HdrGen        = 0x44 // the PF_GEN the file was last written under

	// DefJournal and DefCkpt are the journal's and each checkpoint slot's
	// sizes.
	DefJournal = 16 << 20
	DefCkpt    = 16 << 20
)

// Header encodes the header's fields before HdrCheck.
func Header(nvf, eqs int, journal, ckpt int64, layoutCRC uint32) [HdrFields]byte {
	var h [HdrFields]byte
	le := binary.LittleEndian
	copy(h[HdrMagic:], Magic)
	le.PutUint32(h[HdrVersion:], Version)
	le.PutUint32(h[HdrNumVFs:], uint32(nvf))
	le.PutUint32(h[HdrEQsPerVF:], uint32(eqs))
	le.PutUint32(h[HdrJournalKiB:], uint32(journal>>10))
	le.PutUint32(h[HdrCkptKiB:], uint32(ckpt>>10))
	le.PutUint32(h[HdrLayoutCRC:], layoutCRC)
	return h
}

// LayoutCheck is the header's check of the regions' layout it was written
// for: their window size, DMA base and DMA size.
func LayoutCheck(window, dmaBase, dmaSize int64) uint32 {
	var b [24]byte
	le := binary.LittleEndian
	le.PutUint64(b[0:], uint64(window))
	le.PutUint64(b[8:], uint64(dmaBase))
	le.PutUint64(b[16:], uint64(dmaSize))
	return Checksum(b[:])
}

// Region is a part of the state file: its offset and size.
type Region struct{ Off, Size int64 }

// End is the offset after r.
func (r Region) End() int64 { return r.Off + r.Size }

// Geometry places the state file's parts for a PF of nvf VFs with eqs EQ
// numbers each, every part page-aligned.
type Geometry struct {
	Chans, Seqs, Pos, Journal Region
	Ckpt                      Region // slot 0; slot 1 follows
	DP                        Region // the data path's (datapath.go)
	Size                      int64
}

func pageUp(n int64) int64 { return (n + 0xfff) &^ 0xfff }

// NewGeometry is the geometry of the state file of nvf VFs with eqs EQ
// numbers each.
func NewGeometry(nvf, eqs int) Geometry {
	var g Geometry
	off := int64(HeaderSize)
	next := func(size int64) Region { r := Region{off, size}; off += size; return r }
	g.Chans = next(pageUp(int64(nvf) * SlotsPerVF * RecordSize))
	g.Seqs = next(pageUp(int64(nvf) * SeqSize))
	g.Pos = next(pageUp(int64(nvf*eqs) * PosSize))
	g.Journal = next(DefJournal)
	g.Ckpt = next(DefCkpt)
	off += DefCkpt // slot 1
	g.DP = next(DPSize)
	g.Size = off
	return g
}

// ChanSlot is the offset of slot s of VF vf's channel record.
func (g *Geometry) ChanSlot(vf, s int) int64 {
	return g.Chans.Off + int64(vf*SlotsPerVF+s)*RecordSize
}

// SeqWord is the offset of VF vf's last sequence.
func (g *Geometry) SeqWord(vf int) int64 { return g.Seqs.Off + int64(vf)*SeqSize }

// PosWord is the offset of VF vf's EQ eqn's position (eqs EQ numbers per VF).
func (g *Geometry) PosWord(vf, eqn, eqs int) int64 { return g.Pos.Off + int64(vf*eqs+eqn)*PosSize }

// CkptSlot is the offset of checkpoint slot i (0 or 1).
func (g *Geometry) CkptSlot(i uint32) int64 { return g.Ckpt.Off + int64(i&1)*g.Ckpt.Size }

// Last sequences and EQ positions.
const (
	SeqSize = 8       // a VF's last sequence: the last record committed for it
	PosSize = 4       // an EQ's position: its producer index | PosLive
	PosLive = 1 << 31 // the EQ lives
)

// A journal record's intent (RecHdr bytes, then the inbox it keeps).
const (
	RecCommit    = 0x00 // commit word, stored last: MagicIntent or MagicCommit ^ the sequence
	RecCheck     = 0x04 // CRC32C of RecSeq..RecChecked, XOR that of the inbox kept
	RecSeq       = 0x08 // 8 bytes: the record's sequence
	RecVF        = 0x10 // VF | the inbox kept, in 8-byte words << RecInShift
	RecKind      = 0x14 // kind | flags << RecFlagsShift | the toggle (RecToggle)
	RecVHCR      = 0x18 // the vHCR shadow, four 8-byte words
	RecChecked   = 0x38 // the end of what RecCheck covers
	RecResCheck  = 0x3c // the result's check: its CRC32C ^ the sequence ^ MagicCommit
	RecHdr       = 0x40
	RecAlign     = 64 // the next record starts on this boundary
	RecInShift   = 16
	RecVFMask    = 0xffff
	RecFlagShift = 8       // RecKind: the flags byte
	RecKindFlags = 0xffff  // RecKind: the kind and flags bytes (the rest is zero but the toggle)
	RecToggle    = 1 << 31 // the comm channel's toggle (mlx4.CommToggle)

	MagicIntent = 0x494e5431 // "INT1" ^ seq
	MagicCommit = 0x434d5431 // "CMT1" ^ seq
)

// Record kinds.
const (
	KindCmd      = 1 // a command
	KindReset    = 2 // a function reset
	KindActivate = 3 // VHCR_EN's activation
)

// Record flags (the intent's, and in the result's ResStatus the outbox and
// immediate bits).
const (
	FlagInbox  = 1 << 0 // the intent keeps the inbox
	FlagEarly  = 1 << 1 // accepted the early way ('e' bit, early acknowledgement)
	FlagEvent  = 1 << 2 // completes by EQE
	FlagOutbox = 1 << 3 // the result keeps the outbox
	FlagImm    = 1 << 4 // immediate output
	FlagExec   = 1 << 5 // the command executes (else only its token counts)

	ResFlags = FlagOutbox | FlagImm // the flags a result carries
)

// A record's result, appended after the inbox kept (ResHdr bytes, then the
// outbox it keeps); ResMax is the most it adds to its intent.
const (
	ResOut        = 0x00 // 8 bytes: the immediate output (out_param)
	ResToken      = 0x08 // token | the outbox kept, in 8-byte words << ResOutShift
	ResEQN        = 0x0c // the completion EQ (-1: none)
	ResProdBefore = 0x10 // its producer index before the EQE
	ResStatus     = 0x14 // status | result flags << RecFlagShift
	ResHdr        = 0x18
	ResOutShift   = 16
	// ResStatus: the status and flags bytes (the rest is zero)
	ResStatusFlags = 0xffff
	ResMax         = ResHdr + mlx4.MailboxSize + RecAlign - 1
)

// A checkpoint slot: CkptHdr bytes, then the gob.
const (
	CkptZero    = 0x00 // 0 (cleared before the slot is written)
	CkptCRC     = 0x04 // CRC32C of CkptSeq..CkptChecked, XOR that of the gob
	CkptSeq     = 0x08 // 8 bytes: the last record the checkpoint covers
	CkptLen     = 0x10 // 8 bytes: the gob's length
	CkptGen     = 0x18 // the checkpoint's generation (the active word's)
	CkptChecked = 0x1c // the end of what CkptCRC covers
	CkptHdr     = 0x40
)
