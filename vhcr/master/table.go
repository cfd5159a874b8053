package master

import (
	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// Entry is one row of the command table: the opcode's row of mlx4's
// cmd_info[] (mailboxes, immediate output, EPERM, legal op_modifiers) and
// what the PF derives from it. The executor is the software HCA's
// (hca.HCA.Exec), which holds one per row that is not EPERM.
type Entry struct {
	mlx4.Info

	index int  // dense index for counters; 0 is "not in the table"
	plain bool // no mailbox, not EPERM: VHCR_POST's fast path may run it
	// journal: the command may change the model, so with a state file it
	// is journaled (pfstate.go) and takes the general path
	journal bool
}

// readOnly are the commands that change nothing in the model: with a
// state file they are not journaled unless they carry the 'e' bit (whose
// completion token counts), and a replay does not execute them. QUERY_IF_STAT
// is not among them: it may clear the counters it reads. MAD_IFC is: the
// VF policy refuses every Set (hca.HCA.MAD_IFC), and a replay must not
// record its MADs into a capture twice.
var readOnly = map[mlx4.Opcode]bool{mlx4.NOP: true, mlx4.QUERY_DEV_CAP: true, mlx4.QUERY_FW: true, mlx4.QUERY_DDR: true,
	mlx4.QUERY_ADAPTER: true, mlx4.QUERY_HCA: true, mlx4.QUERY_PORT: true, mlx4.QUERY_FUNC: true, mlx4.QUERY_FUNC_CAP: true,
	mlx4.QUERY_MPT: true, mlx4.QUERY_EQ: true, mlx4.QUERY_CQ: true, mlx4.QUERY_SRQ: true, mlx4.QUERY_QP: true,
	mlx4.MAD_IFC: true}

// Table is the command table indexed by opcode: cmd_info[] of mlx4 cmd.c
// (66 rows), in its order. Opcodes absent from it answer BAD_PARAM (0x03),
// as mlx4 answers them.
type Table struct {
	byOp    [4096]*Entry
	entries []Entry
}

// NumOps is the number of dense opcode indexes (0 = not in the table).
func (t *Table) NumOps() int { return len(t.entries) + 1 }

// OpAt returns the opcode of dense index i (i >= 1).
func (t *Table) OpAt(i int) mlx4.Opcode { return t.entries[i-1].Op }

// Lookup returns the entry for op, or nil.
func (t *Table) Lookup(op mlx4.Opcode) *Entry { return t.byOp[op&0xfff] }

// Entries returns the rows in table order.
func (t *Table) Entries() []Entry { return t.entries }

// NewTable builds the table from mlx4's cmd_info[].
func NewTable() *Table {
	infos := mlx4.CmdInfos()
	t := &Table{entries: make([]Entry, len(infos))}
	for i, in := range infos {
		e := &t.entries[i]
		e.Info, e.index = in, i+1
		e.journal = !in.EPERM && hca.Executes(in.Op) && !readOnly[in.Op]
		e.plain = !in.EPERM && !in.HasInbox && !in.HasOutbox && hca.Executes(in.Op)
		t.byOp[in.Op] = e
	}
	return t
}

// Index is the entry's dense counter index (1..NumOps-1).
func (e *Entry) Index() int { return e.index }
