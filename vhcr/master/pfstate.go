package master

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/vhcrd/vhcrd/bar"
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/internal/crashpoint"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
	"github.com/vhcrd/vhcrd/vhcr/pfstate"
	"github.com/vhcrd/vhcrd/vhcr/wire"
)

// The PF-private state file (<bar>.pfstate, tmpfs by default, covered by
// the regions' one-owner claim) holds what a PF killed at any instruction
// needs to continue as if it had not died: the software HCA and its
// tracker (a checkpoint), every command since (a redo journal), each VF's
// last command with its result (exactly once), and the EQs' producer
// positions. Plain stores into a shared mapping survive the death of the
// process, so committing costs stores and no syscall.
//
// The layout, every offset and bit of it, is package pfstate's (the
// header; the channel records, two slots per VF, persist.go; the last
// sequences, one word per VF: the last record committed for it, so that a
// journal that ends before it lost records; the EQ positions; the journal;
// two checkpoint slots).
//
// A command whose effect or reply the VF depends on (every command that may
// change the model, and every 'e' command, whose completion token counts)
// goes: intent record (VF, toggle, the vHCR shadow, the inbox shadow; CRC;
// commit word last) → [the early acknowledgement] → execute → the
// record's result, appended to it (status, immediate output, outbox up to
// its last non-zero word, token, completion EQ and its producer index
// before the EQE; CRC; commit word last) → outbox, write-back, EQE,
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

// The PF's short names for the format's record sizes, kinds and flags.
const (
	recHdr = pfstate.RecHdr
	resHdr = pfstate.ResHdr
	resMax = pfstate.ResMax

	recCmd      = pfstate.KindCmd
	recReset    = pfstate.KindReset
	recActivate = pfstate.KindActivate

	flagInbox  = pfstate.FlagInbox
	flagEarly  = pfstate.FlagEarly
	flagEvent  = pfstate.FlagEvent
	flagOutbox = pfstate.FlagOutbox
	flagImm    = pfstate.FlagImm
	flagExec   = pfstate.FlagExec

	noRecord = -1 // no record of the VF since the checkpoint
)

// ErrStateFile is a state file that cannot be used (too small, unmapped).
var ErrStateFile = errors.New("master: state file")

// StateFileSize is the size of the state file for a layout with eqsPerVF
// EQ numbers per VF.
func StateFileSize(l wire.Layout, eqsPerVF int) int64 {
	return pfstate.NewGeometry(l.NumVFs, eqsPerVF).Size
}

// pstate is the PF's handle on its state file; only the poller uses it.
type pstate struct {
	b     []byte
	g     pfstate.Geometry
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
	// to the heap through crc32's dispatch in pfstate.Checksum)
	hdr   [recHdr]byte
	res   [resHdr]byte
	ckGen uint32
	ckErr error   // the last checkpoint's failure (logged once)
	kill  *points // the journal's kill points (journal.go)
	admin uint64  // the HCA's AdminChanges at the last checkpoint
}

func openState(r bar.Region, l wire.Layout, eqs int) (*pstate, error) {
	g := pfstate.NewGeometry(l.NumVFs, eqs)
	if r.Size() < g.Size {
		return nil, fmt.Errorf("%s: %w: %d VFs need %#x bytes, the file has %#x", r.Name(), ErrStateFile, l.NumVFs, g.Size, r.Size())
	}
	b, err := r.Bytes()
	if err != nil || !r.Shared() {
		return nil, fmt.Errorf("%s: %w: not mapped shared memory (%v)", r.Name(), ErrStateFile, err)
	}
	ps := newPState(b, g, l.NumVFs, eqs)
	if ps.act, err = bar.Word(r, pfstate.HdrActive); err != nil {
		return nil, err
	}
	return ps, nil
}

func newPState(b []byte, g pfstate.Geometry, nvf, eqs int) *pstate {
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
// tmpfs page (a few microseconds every few dozen commands), and of the
// data path's region (its position entries: the first WQE of each new
// object's would take one); adding 0 writes the word it reads.
func (ps *pstate) prefault() {
	for off := ps.g.Seqs.Off; off < ps.g.Journal.End(); off += 4096 {
		atomic.AddUint32(ps.word(off), 0)
	}
	for off := ps.g.DP.Off; off < ps.g.DP.End(); off += 4096 {
		atomic.AddUint32(ps.word(off), 0)
	}
}

// headerBytes is the header this PF writes, before its check word.
func (ps *pstate) headerBytes(l wire.Layout) []byte {
	h := pfstate.Header(ps.nvf, ps.eqs, ps.g.Journal.Size, ps.g.Ckpt.Size, pfstate.LayoutCheck(l.Window, l.DMABase, l.DMASize))
	return h[:]
}

// checkHeader says why the file's header is not this PF's ("" if it is);
// fresh reports a file never written.
func (ps *pstate) checkHeader(l wire.Layout) (cause string, fresh bool) {
	b := ps.b
	if bytes.Equal(b[:pfstate.HdrGen+4], make([]byte, pfstate.HdrGen+4)) {
		return "", true
	}
	want := ps.headerBytes(l)
	le := binary.LittleEndian
	if m := b[pfstate.HdrMagic : pfstate.HdrMagic+len(pfstate.Magic)]; string(m) != pfstate.Magic {
		return fmt.Sprintf("state file magic %q", m), false
	}
	if le.Uint32(b[pfstate.HdrCheck:]) != pfstate.Checksum(b[:pfstate.HdrFields]) {
		return "state file header checksum mismatch", false
	}
	if v := le.Uint32(b[pfstate.HdrVersion:]); v != pfstate.Version {
		return fmt.Sprintf("state file version %d, this build writes %d", v, pfstate.Version), false
	}
	if !bytes.Equal(b[:pfstate.HdrFields], want) {
		return fmt.Sprintf("state file of another PF (%d VFs, %d EQs per VF, other sizes or windows)", le.Uint32(b[pfstate.HdrNumVFs:]), le.Uint32(b[pfstate.HdrEQsPerVF:])), false
	}
	return "", false
}

// format writes a new header and empties the channel records, the last sequences,
// the positions and the journal (a first start, or state that was not
// trusted). The journal is emptied by its sequence: records are numbered
// on from the clock's nanoseconds, beyond any number an earlier life of
// the file (which numbered fewer commands than nanoseconds passed) can
// have left in it, so that no stale record continues the new journal.
func (ps *pstate) format(l wire.Layout) {
	atomic.StoreUint32(ps.act, 0)
	clear(ps.b[ps.g.Chans.Off:ps.g.Pos.End()])
	clear(ps.b[ps.g.DP.Off:ps.g.DP.End()])
	for i := range ps.last {
		ps.forget(i)
	}
	clear(ps.jslice(0, recHdr))
	h := ps.headerBytes(l)
	copy(ps.b, h)
	binary.LittleEndian.PutUint32(ps.b[pfstate.HdrCheck:], pfstate.Checksum(h))
	ps.seq, ps.jused, ps.ckGen = uint64(time.Now().UnixNano()), 0, 0
}

// setGen stores the PF_GEN the file is written under.
func (ps *pstate) setGen(gen uint32) { atomic.StoreUint32(ps.word(pfstate.HdrGen), gen) }

func (ps *pstate) gen() uint32 { return atomic.LoadUint32(ps.word(pfstate.HdrGen)) }

// --- the journal ---

func (ps *pstate) jslice(off, n int64) []byte {
	base := ps.g.Journal.Off + off
	return ps.b[base : base+n]
}

// fits reports whether a record whose intent has n bytes fits in the
// journal, with any result.
func (ps *pstate) fits(n int64) bool { return ps.jused+n+resMax <= ps.g.Journal.Size }

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
	le.PutUint64(h[pfstate.RecSeq:], ps.seq)
	le.PutUint32(h[pfstate.RecVF:], uint32(vf)|uint32(in/8)<<pfstate.RecInShift)
	le.PutUint32(h[pfstate.RecKind:], uint32(kind)|uint32(flags)<<pfstate.RecFlagShift|toggle&pfstate.RecToggle)
	for k := range w {
		le.PutUint64(h[pfstate.RecVHCR+8*k:], w[k])
	}
	c := pfstate.Checksum(h[pfstate.RecSeq:pfstate.RecChecked])
	if in > 0 {
		c ^= pfstate.Checksum(inbox[:in]) // (the check of no bytes is 0)
	}
	r := ps.jslice(ps.jused, n)
	copy(r[pfstate.RecSeq:recHdr], h[pfstate.RecSeq:])
	if in > 0 {
		copy(r[recHdr:], inbox[:in])
	}
	ps.kill.hit(crashpoint.CommitTorn)
	le.PutUint32(r[pfstate.RecCheck:], c)
	// A plain store: the check covers the record, so a kill that lands the
	// word before the bytes leaves a record that fails it (the journal's
	// end); the stores that follow (the VF's acknowledgement, effects) are
	// in program order after it.
	le.PutUint32(r[pfstate.RecCommit:], pfstate.MagicIntent^uint32(ps.seq))
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
	le.PutUint64(x[pfstate.ResOut:], res.Out)
	le.PutUint32(x[pfstate.ResToken:], uint32(res.Token)|uint32(outLen/8)<<pfstate.ResOutShift)
	le.PutUint32(x[pfstate.ResEQN:], uint32(res.EQN))
	le.PutUint32(x[pfstate.ResProdBefore:], res.ProdBefore)
	le.PutUint32(x[pfstate.ResStatus:], uint32(res.Status)|uint32(res.Flags&pfstate.ResFlags)<<pfstate.RecFlagShift)
	c := pfstate.Checksum(x[:])
	if outLen > 0 {
		c = pfstate.Update(c, outbox)
	}
	copy(ps.jslice(ps.curEnd, resHdr+int64(outLen)), x[:])
	if outLen > 0 {
		copy(ps.jslice(ps.curEnd+resHdr, int64(outLen)), outbox)
	}
	r := ps.jslice(ps.cur, recHdr)
	le.PutUint32(r[pfstate.RecResCheck:], c^uint32(ps.curSeq)^pfstate.MagicCommit)
	ps.kill.hit(crashpoint.CommitTorn)
	// A plain store, as the intent's: the result's check covers the result,
	// so a commit word that landed before it would leave a torn result (the
	// intent stands); a kill lands a prefix of the stores in program order.
	le.PutUint32(r[pfstate.RecCommit:], pfstate.MagicCommit^uint32(ps.curSeq))
	ps.pending = false
	le.PutUint64(ps.b[ps.g.SeqWord(ps.curVF):], ps.curSeq)
	ps.jused = (ps.curEnd + resHdr + int64(outLen) + pfstate.RecAlign - 1) &^ (pfstate.RecAlign - 1)
	if ps.jused > ps.g.Journal.Size/2 {
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
	return binary.LittleEndian.Uint64(ps.b[ps.g.SeqWord(vf):])
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
	cw := le.Uint32(r[pfstate.RecCommit:])
	committed := cw == pfstate.MagicCommit^uint32(seq)
	if !committed && cw != pfstate.MagicIntent^uint32(seq) {
		return rec, false
	}
	if le.Uint64(r[pfstate.RecSeq:]) != seq {
		return rec, false
	}
	rec.seq = seq
	v := le.Uint32(r[pfstate.RecVF:])
	rec.vf = int(v & pfstate.RecVFMask)
	in := int64(v>>pfstate.RecInShift) * 8
	x := le.Uint32(r[pfstate.RecKind:])
	rec.kind, rec.flags, rec.toggle = uint8(x), uint8(x>>pfstate.RecFlagShift), x&pfstate.RecToggle
	if rec.vf < 0 || rec.vf >= nvf || rec.kind < recCmd || rec.kind > recActivate || x&^(pfstate.RecToggle|pfstate.RecKindFlags) != 0 {
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
		rec.w[k] = le.Uint64(r[pfstate.RecVHCR+8*k:])
	}
	rec.inbox = r[recHdr:rec.size]
	if le.Uint32(r[pfstate.RecCheck:]) != pfstate.Checksum(r[pfstate.RecSeq:pfstate.RecChecked])^pfstate.Checksum(rec.inbox) {
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
	t := le.Uint32(rb[pfstate.ResToken:])
	outLen := int64(t>>pfstate.ResOutShift) * 8
	if outLen > mlx4.MailboxSize || off+rec.size+resHdr+outLen > int64(len(j)) {
		return rec, true
	}
	rb = rb[:resHdr+outLen]
	if le.Uint32(r[pfstate.RecResCheck:]) != pfstate.Checksum(rb)^uint32(seq)^pfstate.MagicCommit {
		return rec, true
	}
	f := le.Uint32(rb[pfstate.ResStatus:])
	if f>>pfstate.RecFlagShift&^pfstate.ResFlags != 0 || f&^pfstate.ResStatusFlags != 0 {
		return rec, true
	}
	rec.committed = true
	rec.res = LastResult{Seq: seq, Flags: rec.flags&(flagEarly|flagEvent) | uint8(f>>pfstate.RecFlagShift), Toggle: rec.toggle,
		Status: mlx4.Status(f), W: rec.w, Out: le.Uint64(rb[pfstate.ResOut:]), Token: uint16(t), EQN: int32(le.Uint32(rb[pfstate.ResEQN:])),
		ProdBefore: le.Uint32(rb[pfstate.ResProdBefore:]), Outbox: rb[resHdr:]}
	// the next record starts on the next 64-byte boundary (the padding is
	// not read)
	rec.size = min((rec.size+resHdr+outLen+pfstate.RecAlign-1)&^(pfstate.RecAlign-1), int64(len(j))-off)
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
		j := ps.b[ps.g.Journal.Off:ps.g.Journal.End()]
		seq := binary.LittleEndian.Uint64(j[off+pfstate.RecSeq:])
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

func (ps *pstate) setPos(vf, eqn int, prod uint32, live bool) {
	if vf < 0 || vf >= ps.nvf || eqn < 0 || eqn >= ps.eqs {
		return
	}
	v := prod & mlx4.EQIndexMask
	if live {
		v |= pfstate.PosLive
	}
	atomic.StoreUint32(ps.word(ps.g.PosWord(vf, eqn, ps.eqs)), v)
}

func (ps *pstate) pos(vf, eqn int) (uint32, bool) {
	v := atomic.LoadUint32(ps.word(ps.g.PosWord(vf, eqn, ps.eqs)))
	return v & mlx4.EQIndexMask, v&pfstate.PosLive != 0
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
	off := ps.g.CkptSlot(i)
	return ps.b[off : off+ps.g.Ckpt.Size]
}

// writeCheckpoint writes c into the inactive slot and then switches the
// active word; the journal restarts empty after it.
func (ps *pstate) writeCheckpoint(c *Checkpoint) error {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(c); err != nil {
		return fmt.Errorf("%w: encoding the checkpoint: %w", ErrStateFile, err)
	}
	if int64(buf.Len()) > ps.g.Ckpt.Size-pfstate.CkptHdr {
		return fmt.Errorf("%w: checkpoint of %d bytes exceeds its slot of %d", ErrStateFile, buf.Len(), ps.g.Ckpt.Size-pfstate.CkptHdr)
	}
	gen := ps.ckGen + 1
	next := (atomic.LoadUint32(ps.act) & 1) ^ 1
	if ps.ckGen == 0 {
		next = 0
	}
	s := ps.ckptSlot(next)
	le := binary.LittleEndian
	le.PutUint32(s[pfstate.CkptZero:], 0)
	copy(s[pfstate.CkptHdr:], buf.Bytes())
	le.PutUint64(s[pfstate.CkptSeq:], c.Seq)
	le.PutUint64(s[pfstate.CkptLen:], uint64(buf.Len()))
	le.PutUint32(s[pfstate.CkptGen:], gen)
	le.PutUint32(s[pfstate.CkptCRC:], pfstate.Checksum(s[pfstate.CkptSeq:pfstate.CkptChecked])^pfstate.Checksum(buf.Bytes()))
	ps.kill.hit(crashpoint.CommitTorn)
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
	if len(s) < pfstate.CkptHdr {
		return nil, errors.New("checkpoint slot too small")
	}
	le := binary.LittleEndian
	n := le.Uint64(s[pfstate.CkptLen:])
	if g := le.Uint32(s[pfstate.CkptGen:]); g != gen {
		return nil, fmt.Errorf("checkpoint slot of generation %d, the header names %d", g, gen)
	}
	if n > uint64(len(s)-pfstate.CkptHdr) {
		return nil, fmt.Errorf("checkpoint length %d exceeds its slot", n)
	}
	data := s[pfstate.CkptHdr : pfstate.CkptHdr+int(n)]
	if le.Uint32(s[pfstate.CkptCRC:]) != pfstate.Checksum(s[pfstate.CkptSeq:pfstate.CkptChecked])^pfstate.Checksum(data) {
		return nil, errors.New("checkpoint checksum mismatch")
	}
	var c Checkpoint
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&c); err != nil {
		return nil, fmt.Errorf("decoding the checkpoint: %w", err)
	}
	if c.Seq != le.Uint64(s[pfstate.CkptSeq:]) || c.HCA == nil {
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
