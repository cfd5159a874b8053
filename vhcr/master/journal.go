package master

import (
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/internal/crashpoint"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Persistence is a layer behind the journal: the post path, the comm path
// and the poller call it the same way with a state file or without one,
// and it alone knows whether anything is written. Its two implementations:
// the state file's (fileJournal: records in the journal of pfstate.go,
// checkpoints) and the no-op journal (noJournal: no state file, or one
// whose checkpoint failed and was dropped). The crash tier's named kill
// points (crashpoint) and the tests' in-process kill (PF.CrashAt) are hit
// here only, at the same moments in both.
//
// A VHCR_POST goes: tx := journal.Begin (the intent, durable before
// anything the VF can see) → [the early acknowledgement] →
// tx.Accepted (post-accepted) → execute → tx.Commit (post-executing, then
// the result committed) → deliver: outbox, write-back, EQE →
// tx.Delivered (post-written-back) → the toggle. The transaction is a
// value naming the journal that holds the command's record, if any.

// journal is where the PF puts what a restarted PF needs to continue.
type journal interface {
	// Begin writes the intent of VF i's command c, admitted or refused
	// with status (e its row, nil for an opcode without one), completed
	// the way way, acknowledged with toggle, read from the vHCR words w,
	// where the command needs one: one that may change the model (status
	// OK and a journaled row) or whose completion token counts (an EQ
	// completion). It returns the command's transaction.
	Begin(i int, c *hca.Cmd, e *Entry, status mlx4.Status, way completion, toggle uint32, w *[4]uint64) tx
	// Record journals a change of the model that is not a command: a
	// function reset (recReset), an activation at VHCR_EN (recActivate).
	Record(kind uint8, i int)
	// Scanned is called between scans: a half-full journal is
	// checkpointed.
	Scanned()
	// Requested is called after the operator's requests ran: firmware
	// state they changed is checkpointed before they return.
	Requested()
	// Checkpoint writes the model and empties the journal now.
	Checkpoint()
	// ChannelTorn is the moment a channel record is half written
	// (persist.go's persistVF).
	ChannelTorn()
	// ResetAcked is the moment a RESET has been acknowledged.
	ResetAcked()
	// points are the journal's kill points (the tests set their hook).
	points() *points
}

// tx is one command's transaction, from Begin to its delivery: the
// journal holding the command's record (nil: nothing was recorded) and the
// kill points. A value, so that the calls of a command not journaled cost
// no more than their kill points (nothing, without -tags crashpoints and
// a test's hook).
type tx struct {
	rec *fileJournal
	k   *points
}

// Accepted: the intent is durable (and, the early way, the toggle
// acknowledged); the command is about to execute.
func (t tx) Accepted() { t.k.hit(crashpoint.PostAccepted) }

// Commit makes c's result r durable (c's immediate output and outbox
// shadow): nothing of it is visible to the VF before.
func (t tx) Commit(c *hca.Cmd, r result) {
	crashpoint.Hit(crashpoint.PostExecuting)
	if t.rec != nil || t.k.test != nil {
		t.commit(c, r) // (one call, so that a command not journaled inlines Commit)
	}
}

func (t tx) commit(c *hca.Cmd, r result) {
	if t.k.test != nil {
		t.k.test(crashpoint.PostExecuting)
	}
	if t.rec != nil {
		t.rec.commit(c, r)
	}
}

// Delivered: the result is written back (or its EQE posted); the toggle,
// if any, is next.
func (t tx) Delivered() { t.k.hit(crashpoint.PostWrittenBack) }

// completion is how a command's completion reaches the VF.
type completion uint8

const (
	polled  completion = iota // the write-back and the toggle (no 'e' bit)
	byEQE                     // mlx4's way: write-back, EQE with the next token, toggle
	byEarly                   // the early way: toggle at once, EQE with the result
)

// result is what a command's commit records besides the command itself.
type result struct {
	status mlx4.Status
	token  uint16 // the completion EQE's token
	imm    bool   // the row's output is immediate (c.OutParam)
	event  bool   // completed by EQE (byEQE, byEarly)
}

// points are the named kill points: the crash tier's (crashpoint, built
// with -tags crashpoints) and the tests' in-process one (test, set by
// PF.CrashAt).
type points struct{ test func(string) }

func (k *points) hit(name string) {
	crashpoint.Hit(name)
	if k != nil && k.test != nil {
		k.test(name)
	}
}

// noJournal writes nothing: its transactions record nothing and pass the
// kill points.
type noJournal struct{ k *points }

func (j *noJournal) Begin(int, *hca.Cmd, *Entry, mlx4.Status, completion, uint32, *[4]uint64) tx {
	return tx{k: j.k}
}
func (j *noJournal) Record(uint8, int) {}
func (j *noJournal) Scanned()          {}
func (j *noJournal) Requested()        {}
func (j *noJournal) Checkpoint()       {}
func (j *noJournal) ChannelTorn()      { j.k.hit(crashpoint.CommitTorn) }
func (j *noJournal) ResetAcked()       { j.k.hit(crashpoint.ResetAcked) }
func (j *noJournal) points() *points   { return j.k }

// fileJournal is the state file's journal (pfstate.go): intent and result
// records, the records of resets and activations, checkpoints. The
// transaction of a command it does not journal records nothing, as the
// no-op journal's.
type fileJournal struct {
	noJournal // the kill points, and the journal once this one is dropped
	ps        *pstate
	p         *PF
}

func newFileJournal(p *PF, ps *pstate, k *points) *fileJournal {
	ps.kill = k
	return &fileJournal{noJournal: noJournal{k: k}, ps: ps, p: p}
}

// Begin writes the intent record, checkpointing first if the journal has
// no room for it.
func (j *fileJournal) Begin(i int, c *hca.Cmd, e *Entry, status mlx4.Status, way completion, toggle uint32, w *[4]uint64) tx {
	if way == polled && (status != mlx4.OK || !e.journal) {
		return tx{k: j.k}
	}
	var flags uint8
	switch way {
	case byEarly:
		flags |= flagEarly | flagEvent
	case byEQE:
		flags |= flagEvent
	}
	if status == mlx4.OK {
		flags |= flagExec
	}
	var in []byte
	if c.Inbox != nil {
		// As much as the executor reads (the row's inbox read), in words.
		flags |= flagInbox
		in = c.Inbox[:inboxLen(c.Inbox[:min(mlx4.MailboxSize, (e.Inbox.Bytes(c.InMod)+7)&^7)])]
	}
	if !j.makeRoom(recHdr + int64(len(in))) {
		return tx{k: j.k}
	}
	j.ps.intent(recCmd, i, flags, toggle, w, in)
	return tx{rec: j, k: j.k}
}

// commit appends the command's result to its record, commits it, and
// makes it the VF's last result.
func (j *fileJournal) commit(c *hca.Cmd, r result) {
	ps := j.ps
	i := ps.curVF
	res := LastResult{Status: r.status, Out: c.OutParam, Token: r.token, EQN: -1}
	var out []byte
	if r.status == mlx4.OK && c.Outbox != nil {
		res.Flags |= flagOutbox
		out = c.Outbox[:inboxLen(c.Outbox[:])]
	}
	if r.event {
		if eqn := j.p.hca.EventEQ(i, EventTypeCmd); eqn >= 0 {
			res.EQN = int32(eqn)
			res.ProdBefore, _ = j.p.hca.EQProd(i, eqn)
		}
	}
	if r.imm {
		res.Flags |= flagImm
	}
	ps.commit(&res, out)
	ps.setLast(i)
}

// Record writes and commits a reset's or an activation's record.
func (j *fileJournal) Record(kind uint8, i int) {
	if !j.makeRoom(recHdr) {
		return
	}
	j.ps.record(kind, i)
	if kind == recReset {
		// The VF's last result is of its previous life: a command it
		// posts after the reset must never be taken for it.
		j.ps.forget(i)
	}
}

func (j *fileJournal) Scanned() {
	if j.ps.half {
		j.Checkpoint()
	}
}

func (j *fileJournal) Requested() {
	if j.p.hca.AdminChanges() != j.ps.admin {
		j.Checkpoint()
	}
}

// makeRoom checkpoints if a record of n bytes would not fit (between
// commands: everything journaled so far is committed). If the checkpoint
// fails, persistence is turned off with an error in the log rather than
// let the journal overflow: the PF's journal is the no-op one from then
// on, and makeRoom reports false.
func (j *fileJournal) makeRoom(n int64) bool {
	ps := j.ps
	if ps.fits(n) {
		return true
	}
	j.Checkpoint()
	if ps.fits(n) {
		return true
	}
	j.p.log.Error("PF state file: the journal is full and no checkpoint could be written; objects will not survive a restart", "err", ps.ckErr)
	j.p.journal = &j.noJournal
	return false
}

// Checkpoint writes the model and the token counters and empties the
// journal (not between a record's intent and its result).
func (j *fileJournal) Checkpoint() {
	p, ps := j.p, j.ps
	if ps.pending {
		return
	}
	c := &Checkpoint{Seq: ps.seq, HCA: p.hca.Image(), Tokens: make([]uint16, len(p.vfs)), Last: ps.lastResults()}
	ps.admin = p.hca.AdminChanges()
	for i := range p.vfs {
		c.Tokens[i] = p.vfs[i].cmdToken
	}
	if err := ps.writeCheckpoint(c); err != nil {
		if ps.ckErr == nil {
			p.log.Error("PF state file: checkpoint not written", "err", err)
		}
		ps.ckErr = err
		return
	}
	ps.ckErr = nil
	p.stats.Checkpoints++
}
