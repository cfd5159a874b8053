package master

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"hash/crc32"
	"sync/atomic"
	"time"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr"
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/internal/crashpoint"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// The PF-private state file (<bar>.pfstate, tmpfs by default, covered by
// the regions' one-owner claim) holds what a PF killed at any instruction
// needs to continue as if it had not died: the software HCA and its
// tracker (a checkpoint), every command since (a redo journal), each VF's
// last command with its result (exactly once), and the EQs' producer
// positions. Plain stores into a shared mapping survive the death of the
// process, so committing costs stores and no syscall.
//
// Layout (little-endian; the region is written by this PF only):
//
//	0x0000  header: magic "VHCRPFS1", version, VF count, EQs per VF, journal
//	        and checkpoint sizes, layout check, CRC32C of these; at 0x40 the
//	        active word (checkpoint generation << 1 | slot), switched last
//	0x1000  channel records, two slots of 16 bytes per VF (persist.go)
//	        last sequences, one 8-byte word per VF: the last record
//	        committed for it (a journal that ends before it lost records)
//	        EQ positions, one word per VF and EQ number (bit 31: the EQ lives)
//	        the journal
//	        two checkpoint slots
//
// A command whose effect or reply the VF depends on (every command that may
// change the model, and every 'e' command, whose completion token counts)
// goes: intent record (VF, toggle, the vHCR shadow, the inbox shadow; CRC;
// commit word last) → [the seed's early acknowledgement] → execute → the
// record's result, appended to it (status, immediate output, outbox up to
// its last non-zero word, token, completion EQ and its producer index
// before the EQE; CRC; commit word last) → write-back, EQE,
// acknowledgement. A record is 64 bytes of intent, the inbox it keeps, 24
// bytes of result and the outbox it keeps, padded to 64 bytes: one command
// writes its lines of the journal and nothing else. A restarted PF loads
// the checkpoint, replays the committed records quietly (no VF memory
// written) and checks that each gives its recorded status; it then
// re-delivers a VF's last committed result the VF has not seen
// (write-back, outbox, EQE, toggle) instead of executing again, and
// executes a command whose record has no result yet. The VF's last result
// is its last committed command record since the checkpoint (the PF keeps
// its offset per VF), else the one the checkpoint carries: a checkpoint
// keeps each VF's last result (a function reset drops it). Checkpoints are
// taken between scans when the journal is half full (and before a record
// that would not fit), after an operator's request that changed firmware
// state, and at start: the journal is bounded by its size.

const (
	stateMagic   = "VHCRPFS1"
	stateVersion = 3

	hdrSize   = 0x1000
	offActive = 0x40
	recHdr    = 64
	resHdr    = 24 // a record's result, after its inbox
	recAlign  = 64
	// resMax is the most a record's result adds to its intent
	resMax      = resHdr + mlx4.MailboxSize + recAlign - 1
	ckptHdr     = 64
	defJournal  = 16 << 20
	defCkptSize = 16 << 20

	magicIntent = 0x494e5431 // "INT1" ^ seq
	magicCommit = 0x434d5431 // "CMT1" ^ seq

	recCmd      = 1
	recReset    = 2
	recActivate = 3

	flagInbox  = 1 << 0
	flagSeed   = 1 << 1
	flagEvent  = 1 << 2
	flagOutbox = 1 << 3
	flagImm    = 1 << 4
	flagExec   = 1 << 5 // the command executes (else only its token counts)

	noRecord = -1 // no record of the VF since the checkpoint
)

// ErrStateFile is a state file that cannot be used (too small, unmapped).
var ErrStateFile = errors.New("master: state file")

// StateFileSize is the size of the state file for a layout with eqsPerVF
// EQ numbers per VF.
func StateFileSize(l vhcr.Layout, eqsPerVF int) int64 {
	g := stateGeometry(l.NumVFs, eqsPerVF)
	return g.size
}

type geometry struct {
	chans, seqs, pos, journal, ckpt [2]int64 // offset, size (ckpt: slot 0; slot 1 follows)
	size                            int64
}

func stateGeometry(nvf, eqs int) geometry {
	var g geometry
	off := int64(hdrSize)
	g.chans = [2]int64{off, (int64(nvf)*2*vhcr.HdrVFStateSize + 0xfff) &^ 0xfff} // two slots per VF (persist.go)
	off += g.chans[1]
	g.seqs = [2]int64{off, (int64(nvf)*8 + 0xfff) &^ 0xfff}
	off += g.seqs[1]
	g.pos = [2]int64{off, (int64(nvf*eqs)*4 + 0xfff) &^ 0xfff}
	off += g.pos[1]
	g.journal = [2]int64{off, defJournal}
	off += defJournal
	g.ckpt = [2]int64{off, defCkptSize}
	g.size = off + 2*defCkptSize
	return g
}

var crcTab = crc32.MakeTable(crc32.Castagnoli)

// pstate is the PF's handle on its state file; only the poller uses it.
type pstate struct {
	b     []byte
	g     geometry
	nvf   int
	eqs   int
	seq   uint64  // last record written
	jused int64   // bytes of the journal in use
	half  bool    // the journal is half full: checkpoint between scans
	act   *uint32 // the active word
	// the current record: its offset, the end of its intent, and whether
	// it awaits its result
	cur     int64
	curEnd  int64
	curSeq  uint64
	curVF   int
	pending bool
	// last is the offset of each VF's last committed command record since
	// the checkpoint (noRecord: none; ckLast holds its last result)
	last   []int64
	ckLast []LastResult
	// a record's header and result as they are built and checked, then
	// copied into the journal (lines kept hot; a stack array would escape
	// to the heap through crc32's dispatch)
	hdr     [recHdr]byte
	res     [resHdr]byte
	ckGen   uint32
	ckErr   error // the last checkpoint's failure (logged once)
	testHit func(string)
	admin   uint64 // the HCA's AdminChanges at the last checkpoint
}

func (ps *pstate) hit(name string) {
	crashpoint.Hit(name)
	if ps.testHit != nil {
		ps.testHit(name)
	}
}

func openState(r bar.Region, l vhcr.Layout, eqs int) (*pstate, error) {
	g := stateGeometry(l.NumVFs, eqs)
	if r.Size() < g.size {
		return nil, fmt.Errorf("%s: %w: %d VFs need %#x bytes, the file has %#x", r.Name(), ErrStateFile, l.NumVFs, g.size, r.Size())
	}
	b, err := r.Bytes()
	if err != nil || !r.Shared() {
		return nil, fmt.Errorf("%s: %w: not mapped shared memory (%v)", r.Name(), ErrStateFile, err)
	}
	ps := newPState(b, g, l.NumVFs, eqs)
	if ps.act, err = bar.Word(r, offActive); err != nil {
		return nil, err
	}
	return ps, nil
}

func newPState(b []byte, g geometry, nvf, eqs int) *pstate {
	ps := &pstate{b: b, g: g, nvf: nvf, eqs: eqs, last: make([]int64, nvf), ckLast: make([]LastResult, nvf)}
	for i := range ps.last {
		ps.last[i] = noRecord
	}
	return ps
}

// word returns the 32-bit word at off for atomic access (commit words).
func (ps *pstate) word(off int64) *uint32 { return (*uint32)(wordPtr(ps.b, off)) }

// prefault dirties every page of the journal and the last sequences once,
// so that the post path does not take the first-write fault of a fresh
// tmpfs page (a few microseconds every few dozen commands); adding 0
// writes the word it reads.
func (ps *pstate) prefault() {
	for off := ps.g.seqs[0]; off < ps.g.journal[0]+ps.g.journal[1]; off += 4096 {
		atomic.AddUint32(ps.word(off), 0)
	}
}

// header fields
func (ps *pstate) headerBytes(l vhcr.Layout) []byte {
	var h [32]byte
	copy(h[:8], stateMagic)
	le := binary.LittleEndian
	le.PutUint32(h[8:], stateVersion)
	le.PutUint32(h[12:], uint32(ps.nvf))
	le.PutUint32(h[16:], uint32(ps.eqs))
	le.PutUint32(h[20:], uint32(ps.g.journal[1]>>10))
	le.PutUint32(h[24:], uint32(ps.g.ckpt[1]>>10))
	var lb [24]byte
	le.PutUint64(lb[0:], uint64(l.Window))
	le.PutUint64(lb[8:], uint64(l.DMABase))
	le.PutUint64(lb[16:], uint64(l.DMASize))
	le.PutUint32(h[28:], crc32.Checksum(lb[:], crcTab))
	return h[:]
}

// checkHeader says why the file's header is not this PF's ("" if it is);
// fresh reports a file never written.
func (ps *pstate) checkHeader(l vhcr.Layout) (cause string, fresh bool) {
	b := ps.b
	if bytes.Equal(b[:offGen+4], make([]byte, offGen+4)) {
		return "", true
	}
	want := ps.headerBytes(l)
	le := binary.LittleEndian
	if string(b[:8]) != stateMagic {
		return fmt.Sprintf("state file magic %q", b[:8]), false
	}
	if le.Uint32(b[32:]) != crc32.Checksum(b[:32], crcTab) {
		return "state file header checksum mismatch", false
	}
	if v := le.Uint32(b[8:]); v != stateVersion {
		return fmt.Sprintf("state file version %d, this build writes %d", v, stateVersion), false
	}
	if !bytes.Equal(b[:32], want) {
		return fmt.Sprintf("state file of another PF (%d VFs, %d EQs per VF, other sizes or windows)", le.Uint32(b[12:]), le.Uint32(b[16:])), false
	}
	return "", false
}

// format writes a new header and empties the channel records, the last sequences,
// the positions and the journal (a first start, or state that was not
// trusted). The journal is emptied by its sequence: records are numbered
// on from the clock's nanoseconds, beyond any number an earlier life of
// the file (which numbered fewer commands than nanoseconds passed) can
// have left in it, so that no stale record continues the new journal.
func (ps *pstate) format(l vhcr.Layout) {
	atomic.StoreUint32(ps.act, 0)
	clear(ps.b[ps.g.chans[0] : ps.g.pos[0]+ps.g.pos[1]])
	for i := range ps.last {
		ps.forget(i)
	}
	clear(ps.jslice(0, recHdr))
	h := ps.headerBytes(l)
	copy(ps.b, h)
	binary.LittleEndian.PutUint32(ps.b[32:], crc32.Checksum(h, crcTab))
	ps.seq, ps.jused, ps.ckGen = uint64(time.Now().UnixNano()), 0, 0
}

// offGen is the word holding the PF_GEN the file was last written under.
const offGen = offActive + 4

func (ps *pstate) setGen(gen uint32) { atomic.StoreUint32(ps.word(offGen), gen) }

func (ps *pstate) gen() uint32 { return atomic.LoadUint32(ps.word(offGen)) }

// --- the journal ---

func (ps *pstate) jslice(off, n int64) []byte {
	base := ps.g.journal[0] + off
	return ps.b[base : base+n]
}

// fits reports whether a record whose intent has n bytes fits in the
// journal, with any result.
func (ps *pstate) fits(n int64) bool { return ps.jused+n+resMax <= ps.g.journal[1] }

// intent writes a record of kind for VF vf: flags, toggle, the vHCR shadow
// and, with flagInbox, the inbox shadow; the commit word last. The caller
// made sure it fits.
// inbox is the part of the inbox shadow the record keeps (up to its last
// non-zero word within what the executor reads: replay zeroes the rest).
func (ps *pstate) intent(kind uint8, vf int, flags uint8, toggle uint32, w *[4]uint64, inbox []byte) {
	n := int64(recHdr)
	in := 0
	if flags&flagInbox != 0 {
		in = len(inbox)
		n += int64(in)
	}
	ps.seq++
	// The record is built and checked in h and the check taken of inbox
	// as the caller holds it: the journal's lines are only written, never
	// read back (a load of bytes just stored into a line not yet fetched
	// waits for the fetch).
	h := &ps.hdr
	le := binary.LittleEndian
	le.PutUint64(h[8:], ps.seq)
	le.PutUint32(h[16:], uint32(vf)|uint32(in/8)<<16)
	le.PutUint32(h[20:], uint32(kind)|uint32(flags)<<8|toggle&vhcr.ToggleBit)
	for k := range w {
		le.PutUint64(h[24+8*k:], w[k])
	}
	c := crc32.Checksum(h[8:56], crcTab)
	if in > 0 {
		c ^= crc32.Checksum(inbox[:in], crcTab) // (the check of no bytes is 0)
	}
	r := ps.jslice(ps.jused, n)
	copy(r[8:recHdr], h[8:])
	if in > 0 {
		copy(r[recHdr:], inbox[:in])
	}
	ps.hit(crashpoint.CommitTorn)
	le.PutUint32(r[4:], c)
	// A plain store: the check covers the record, so a kill that lands the
	// word before the bytes leaves a record that fails it (the journal's
	// end); the stores that follow (the VF's acknowledgement, effects) are
	// in program order after it.
	le.PutUint32(r, magicIntent^uint32(ps.seq))
	ps.cur, ps.curEnd, ps.curSeq, ps.curVF, ps.pending = ps.jused, ps.jused+n, ps.seq, vf, true
	ps.jused += n
}

// commit appends the current record's result (res's status, immediate
// output, token, completion EQ and producer index, and the first outLen
// bytes of outbox, a multiple of 8 up to its last non-zero word) and
// commits it: the result's check word, then the commit word.
func (ps *pstate) commit(res *LastResult, outbox []byte) {
	le := binary.LittleEndian
	outLen := len(outbox)
	x := &ps.res // built and checked here, only written to the journal
	le.PutUint64(x[0:], res.Out)
	le.PutUint32(x[8:], uint32(res.Token)|uint32(outLen/8)<<16)
	le.PutUint32(x[12:], uint32(res.EQN))
	le.PutUint32(x[16:], res.ProdBefore)
	le.PutUint32(x[20:], uint32(res.Status)|uint32(res.Flags&(flagOutbox|flagImm))<<8)
	c := crc32.Checksum(x[:], crcTab)
	if outLen > 0 {
		c = crc32.Update(c, crcTab, outbox)
	}
	copy(ps.jslice(ps.curEnd, resHdr+int64(outLen)), x[:])
	if outLen > 0 {
		copy(ps.jslice(ps.curEnd+resHdr, int64(outLen)), outbox)
	}
	r := ps.jslice(ps.cur, recHdr)
	le.PutUint32(r[60:], c^uint32(ps.curSeq)^magicCommit)
	ps.hit(crashpoint.CommitTorn)
	// A plain store, as the intent's: the result's check covers the result,
	// so a commit word that landed before it would leave a torn result (the
	// intent stands); a kill lands a prefix of the stores in program order.
	le.PutUint32(r, magicCommit^uint32(ps.curSeq))
	ps.pending = false
	le.PutUint64(ps.b[ps.g.seqs[0]+int64(ps.curVF)*8:], ps.curSeq)
	ps.jused = (ps.curEnd + resHdr + int64(outLen) + recAlign - 1) &^ (recAlign - 1)
	if ps.jused > ps.g.journal[1]/2 {
		ps.half = true
	}
}

// record writes and commits a record that has no result of its own (RESET,
// VHCR_EN's activation): both its phases at once.
func (ps *pstate) record(kind uint8, vf int) {
	var w [4]uint64
	ps.intent(kind, vf, 0, 0, &w, nil)
	ps.commit(&LastResult{EQN: -1}, nil)
}

// lastSeq is the sequence of the last record committed for VF vf.
func (ps *pstate) lastSeq(vf int) uint64 {
	return binary.LittleEndian.Uint64(ps.b[ps.g.seqs[0]+int64(vf)*8:])
}

// jrec is a decoded journal record.
type jrec struct {
	seq       uint64
	vf        int
	kind      uint8
	flags     uint8
	toggle    uint32
	w         [4]uint64
	inbox     []byte // aliases the file
	committed bool
	res       LastResult // committed: its result (Outbox aliases the file)
	size      int64
}

// readRecord decodes the record at off that must carry seq; ok is false at
// the journal's end (nothing there, another sequence, a torn or corrupt
// record: an intent whose check fails was never acted on).
func readRecord(j []byte, off int64, seq uint64, nvf int) (rec jrec, ok bool) {
	if off < 0 || off+recHdr > int64(len(j)) {
		return rec, false
	}
	r := j[off:]
	le := binary.LittleEndian
	cw := le.Uint32(r)
	committed := cw == magicCommit^uint32(seq)
	if !committed && cw != magicIntent^uint32(seq) {
		return rec, false
	}
	if le.Uint64(r[8:]) != seq {
		return rec, false
	}
	rec.seq = seq
	v := le.Uint32(r[16:])
	rec.vf = int(v & 0xffff)
	in := int64(v>>16) * 8
	x := le.Uint32(r[20:])
	rec.kind, rec.flags, rec.toggle = uint8(x), uint8(x>>8), x&vhcr.ToggleBit
	if rec.vf < 0 || rec.vf >= nvf || rec.kind < recCmd || rec.kind > recActivate || x&^(vhcr.ToggleBit|0xffff) != 0 {
		return rec, false
	}
	if in > mlx4.MailboxSize || in > 0 && rec.flags&flagInbox == 0 {
		return rec, false
	}
	rec.size = recHdr + in
	if off+rec.size > int64(len(j)) {
		return rec, false
	}
	for k := range rec.w {
		rec.w[k] = le.Uint64(r[24+8*k:])
	}
	rec.inbox = r[recHdr:rec.size]
	if le.Uint32(r[4:]) != crc32.Checksum(r[8:56], crcTab)^crc32.Checksum(rec.inbox, crcTab) {
		return rec, false
	}
	if !committed {
		return rec, true
	}
	// The result: a torn one (its check fails) leaves the intent standing.
	if off+rec.size+resHdr > int64(len(j)) {
		return rec, true
	}
	rb := r[rec.size:]
	t := le.Uint32(rb[8:])
	outLen := int64(t>>16) * 8
	if outLen > mlx4.MailboxSize || off+rec.size+resHdr+outLen > int64(len(j)) {
		return rec, true
	}
	rb = rb[:resHdr+outLen]
	if le.Uint32(r[60:]) != crc32.Checksum(rb, crcTab)^uint32(seq)^magicCommit {
		return rec, true
	}
	f := le.Uint32(rb[20:])
	if f>>8&^(flagOutbox|flagImm) != 0 || f>>16 != 0 {
		return rec, true
	}
	rec.committed = true
	rec.res = LastResult{Seq: seq, Flags: rec.flags&(flagSeed|flagEvent) | uint8(f>>8), Toggle: rec.toggle,
		Status: mlx4.Status(f), W: rec.w, Out: le.Uint64(rb[0:]), Token: uint16(t), EQN: int32(le.Uint32(rb[12:])),
		ProdBefore: le.Uint32(rb[16:]), Outbox: rb[resHdr:]}
	// the next record starts on the next 64-byte boundary (the padding is
	// not read)
	rec.size = min((rec.size+resHdr+outLen+recAlign-1)&^(recAlign-1), int64(len(j))-off)
	return rec, true
}

// --- last results ---

// LastResult is a VF's last command and its result, as a restarted PF
// re-delivers it: the command's identity (sequence, toggle, the vHCR
// shadow), its status, immediate output, completion token and EQ with the
// producer index before its EQE, and its outbox up to the last non-zero
// word (the rest is zero). A checkpoint keeps one per VF (Seq 0: none).
type LastResult struct {
	Seq        uint64
	Flags      uint8
	Toggle     uint32
	Status     mlx4.Status
	W          [4]uint64
	Out        uint64
	Token      uint16
	EQN        int32
	ProdBefore uint32
	Outbox     []byte
}

// committed records the current record, just committed, as VF vf's last
// result.
func (ps *pstate) setLast(vf int) { ps.last[vf] = ps.cur }

// forget drops VF vf's last result (a function reset: a command it posts
// after the reset must never be taken for one before).
func (ps *pstate) forget(vf int) {
	ps.last[vf] = noRecord
	ps.ckLast[vf] = LastResult{}
}

// lastResult is VF vf's last result (its Outbox aliases the file or the
// checkpoint's copy); ok is false if there is none.
func (ps *pstate) lastResult(vf int) (LastResult, bool) {
	if off := ps.last[vf]; off != noRecord {
		j := ps.b[ps.g.journal[0] : ps.g.journal[0]+ps.g.journal[1]]
		seq := binary.LittleEndian.Uint64(j[off+8:])
		if rec, ok := readRecord(j, off, seq, ps.nvf); ok && rec.committed {
			return rec.res, true
		}
		return LastResult{}, false
	}
	r := ps.ckLast[vf]
	return r, r.Seq != 0
}

// lastResults copies every VF's last result for a checkpoint.
func (ps *pstate) lastResults() []LastResult {
	out := make([]LastResult, ps.nvf)
	for vf := range out {
		if r, ok := ps.lastResult(vf); ok {
			r.Outbox = append([]byte(nil), r.Outbox...)
			out[vf] = r
		}
	}
	return out
}

// --- EQ positions ---

const posLive = 1 << 31

func (ps *pstate) setPos(vf, eqn int, prod uint32, live bool) {
	if vf < 0 || vf >= ps.nvf || eqn < 0 || eqn >= ps.eqs {
		return
	}
	v := prod & mlx4.EQIndexMask
	if live {
		v |= posLive
	}
	atomic.StoreUint32(ps.word(ps.g.pos[0]+int64(vf*ps.eqs+eqn)*4), v)
}

func (ps *pstate) pos(vf, eqn int) (uint32, bool) {
	v := atomic.LoadUint32(ps.word(ps.g.pos[0] + int64(vf*ps.eqs+eqn)*4))
	return v & mlx4.EQIndexMask, v&posLive != 0
}

// --- checkpoints ---

// Checkpoint is what a checkpoint slot holds (gob): the HCA's image, the
// per-VF completion token counters and last results, and the last record
// it covers.
type Checkpoint struct {
	Seq    uint64
	HCA    *hca.Image
	Tokens []uint16
	Last   []LastResult
}

func (ps *pstate) ckptSlot(i uint32) []byte {
	off := ps.g.ckpt[0] + int64(i&1)*ps.g.ckpt[1]
	return ps.b[off : off+ps.g.ckpt[1]]
}

// writeCheckpoint writes c into the inactive slot and then switches the
// active word; the journal restarts empty after it.
func (ps *pstate) writeCheckpoint(c *Checkpoint) error {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(c); err != nil {
		return fmt.Errorf("%w: encoding the checkpoint: %w", ErrStateFile, err)
	}
	if int64(buf.Len()) > ps.g.ckpt[1]-ckptHdr {
		return fmt.Errorf("%w: checkpoint of %d bytes exceeds its slot of %d", ErrStateFile, buf.Len(), ps.g.ckpt[1]-ckptHdr)
	}
	gen := ps.ckGen + 1
	next := (atomic.LoadUint32(ps.act) & 1) ^ 1
	if ps.ckGen == 0 {
		next = 0
	}
	s := ps.ckptSlot(next)
	le := binary.LittleEndian
	le.PutUint32(s[0:], 0)
	copy(s[ckptHdr:], buf.Bytes())
	le.PutUint64(s[8:], c.Seq)
	le.PutUint64(s[16:], uint64(buf.Len()))
	le.PutUint32(s[24:], gen)
	le.PutUint32(s[4:], crc32.Checksum(s[8:28], crcTab)^crc32.Checksum(buf.Bytes(), crcTab))
	ps.hit(crashpoint.CommitTorn)
	atomic.StoreUint32(ps.act, gen<<1|next)
	ps.ckGen, ps.jused, ps.half = gen, 0, false
	if len(c.Last) == ps.nvf {
		copy(ps.ckLast, c.Last)
		for i := range ps.last {
			ps.last[i] = noRecord
		}
	}
	return nil
}

// readCheckpoint decodes the active checkpoint.
func (ps *pstate) readCheckpoint() (*Checkpoint, error) {
	a := atomic.LoadUint32(ps.act)
	if a == 0 {
		return nil, errors.New("no checkpoint")
	}
	c, err := decodeCheckpoint(ps.ckptSlot(a&1), a>>1)
	if err == nil {
		ps.ckGen = a >> 1
	}
	return c, err
}

// decodeCheckpoint decodes a checkpoint slot written under gen.
func decodeCheckpoint(s []byte, gen uint32) (*Checkpoint, error) {
	if len(s) < ckptHdr {
		return nil, errors.New("checkpoint slot too small")
	}
	le := binary.LittleEndian
	n := le.Uint64(s[16:])
	if g := le.Uint32(s[24:]); g != gen {
		return nil, fmt.Errorf("checkpoint slot of generation %d, the header names %d", g, gen)
	}
	if n > uint64(len(s)-ckptHdr) {
		return nil, fmt.Errorf("checkpoint length %d exceeds its slot", n)
	}
	data := s[ckptHdr : ckptHdr+int(n)]
	if le.Uint32(s[4:]) != crc32.Checksum(s[8:28], crcTab)^crc32.Checksum(data, crcTab) {
		return nil, errors.New("checkpoint checksum mismatch")
	}
	var c Checkpoint
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&c); err != nil {
		return nil, fmt.Errorf("decoding the checkpoint: %w", err)
	}
	if c.Seq != le.Uint64(s[8:]) || c.HCA == nil {
		return nil, errors.New("checkpoint header and contents disagree")
	}
	return &c, nil
}

// zeroChunk is compared against (the runtime's vectorised memequal).
var zeroChunk [512]byte

// inboxLen is the length of in up to its last non-zero 8-byte word (in's
// length a multiple of 8): 512-byte chunks from the end, then 64-byte
// blocks, then words.
func inboxLen(in []byte) int {
	le := binary.LittleEndian
	n := len(in) &^ 7
	for ; n >= len(zeroChunk); n -= len(zeroChunk) {
		if !bytes.Equal(in[n-len(zeroChunk):n], zeroChunk[:]) {
			break
		}
	}
	for ; n >= 64; n -= 64 {
		if !bytes.Equal(in[n-64:n], zeroChunk[:64]) {
			break
		}
	}
	for ; n > 0; n -= 8 {
		if le.Uint64(in[n-8:n]) != 0 {
			return n
		}
	}
	return 0
}
