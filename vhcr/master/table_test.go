package master

import (
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/hca"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// TestTableIsCmdInfo: the table has exactly mlx4's cmd_info[] rows, in its
// order, with dense indexes; every row that is not EPERM has an executor in
// the software HCA; the fast path's flag is set exactly for the rows with
// no mailbox that are executed.
func TestTableIsCmdInfo(t *testing.T) {
	tab := NewTable()
	infos := mlx4.CmdInfos()
	if len(tab.Entries()) != len(infos) || tab.NumOps() != len(infos)+1 {
		t.Fatalf("%d rows, cmd_info[] has %d", len(tab.Entries()), len(infos))
	}
	for i, in := range infos {
		e := tab.Lookup(in.Op)
		if e == nil || e.Info != in || e.Index() != i+1 || tab.OpAt(i+1) != in.Op {
			t.Fatalf("%v: entry %+v at %d disagrees with cmd_info[] row %d %+v", in.Op, e, e.Index(), i, in)
		}
		if !in.EPERM && !hca.Executes(in.Op) {
			t.Errorf("%v has no executor", in.Op)
		}
		if want := !in.EPERM && !in.HasInbox && !in.HasOutbox; e.plain != want {
			t.Errorf("%v: plain %v, want %v", in.Op, e.plain, want)
		}
	}
	for op := mlx4.Opcode(0); op < 4096; op++ {
		if _, ok := mlx4.CmdInfo(op); ok != (tab.Lookup(op) != nil) {
			t.Errorf("%v: in the table %v, in cmd_info[] %v", op, !ok, ok)
		}
	}
}
