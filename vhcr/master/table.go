package master

import (
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Entry is one row of the PF's command table: the software HCA's joined row
// (hca.Command: mlx4's cmd_info[] row, the executor, the effects, the inbox
// read, the QP transition) and what the PF derives from it once, so that
// VHCR_POST reads it in one place.
type Entry struct {
	hca.Command

	plain bool // no mailbox, executed: VHCR_POST's fast path may run it
	// journal: the command may change the model (hca.EffChanges), so with
	// a state file it is journaled (journal.go: an intent and a result
	// record, on the fast path as on the general one) and replayed
	journal bool
	class   Class // the latency class
}

// Table is the command table in cmd_info[]'s order (mlx4 cmd.c, 66 rows),
// indexed by mlx4.CmdIndex. Opcodes absent from it answer BAD_PARAM
// (0x03), as mlx4 answers them.
type Table struct {
	entries []Entry
}

// NumOps is the number of dense opcode indexes (0 = not in the table).
func (t *Table) NumOps() int { return len(t.entries) + 1 }

// OpAt returns the opcode of dense index i (i >= 1).
func (t *Table) OpAt(i int) mlx4.Opcode { return t.entries[i-1].Op }

// Lookup returns the entry for op, or nil: one load of cmd_info[]'s dense
// index.
func (t *Table) Lookup(op mlx4.Opcode) *Entry {
	if i := mlx4.CmdIndex(op); i != 0 {
		return &t.entries[i-1]
	}
	return nil
}

// Entries returns the rows in table order.
func (t *Table) Entries() []Entry { return t.entries }

// NewTable builds the table from the software HCA's command table.
func NewTable() *Table {
	rows := hca.Commands()
	t := &Table{entries: make([]Entry, len(rows))}
	for i := range rows {
		e := &t.entries[i]
		e.Command = rows[i]
		e.journal = e.Exec != nil && e.Effects.Journaled()
		e.plain = e.Exec != nil && !e.HasInbox && !e.HasOutbox
		e.class = classFor(&e.Command)
	}
	return t
}
