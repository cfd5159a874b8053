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

// TestTableDerivesFromEffects: what the PF once kept in hand lists (the
// read-only commands that are not journaled, the resource tracker's and
// the QP state machine's latency classes, the inbox bytes the journal
// keeps) now follows from the rows' effects and inbox reads, and comes out
// as those lists had it.
func TestTableDerivesFromEffects(t *testing.T) {
	readOnly := map[mlx4.Opcode]bool{mlx4.NOP: true, mlx4.QUERY_DEV_CAP: true, mlx4.QUERY_FW: true,
		mlx4.QUERY_ADAPTER: true, mlx4.QUERY_HCA: true, mlx4.QUERY_PORT: true, mlx4.QUERY_FUNC_CAP: true,
		mlx4.QUERY_MPT: true, mlx4.QUERY_EQ: true, mlx4.QUERY_CQ: true, mlx4.QUERY_SRQ: true, mlx4.QUERY_QP: true,
		mlx4.MAD_IFC: true}
	class := map[mlx4.Opcode]Class{mlx4.MAD_IFC: ClassMAD}
	for _, op := range []mlx4.Opcode{mlx4.ALLOC_RES, mlx4.FREE_RES, mlx4.MAP_EQ,
		mlx4.SW2HW_EQ, mlx4.HW2SW_EQ, mlx4.QUERY_EQ,
		mlx4.SW2HW_MPT, mlx4.HW2SW_MPT, mlx4.QUERY_MPT, mlx4.READ_MTT, mlx4.WRITE_MTT, mlx4.SYNC_TPT,
		mlx4.SW2HW_CQ, mlx4.HW2SW_CQ, mlx4.QUERY_CQ, mlx4.MODIFY_CQ,
		mlx4.SW2HW_SRQ, mlx4.HW2SW_SRQ, mlx4.QUERY_SRQ, mlx4.ARM_SRQ,
		mlx4.QP_ATTACH, mlx4.QP_FLOW_STEERING_ATTACH, mlx4.QP_FLOW_STEERING_DETACH} {
		class[op] = ClassResource
	}
	for _, op := range []mlx4.Opcode{mlx4.RST2INIT_QP, mlx4.INIT2INIT_QP, mlx4.INIT2RTR_QP, mlx4.RTR2RTS_QP,
		mlx4.RTS2RTS_QP, mlx4.SQERR2RTS_QP, mlx4.TWO_ERR_QP, mlx4.RTS2SQD_QP, mlx4.SQD2SQD_QP,
		mlx4.SQD2RTS_QP, mlx4.TWO_RST_QP, mlx4.QUERY_QP, mlx4.SUSPEND_QP, mlx4.UNSUSPEND_QP, mlx4.UPDATE_QP} {
		class[op] = ClassQP
	}
	inbox := map[mlx4.Opcode]int{mlx4.SW2HW_CQ: mlx4.CQContextSize, mlx4.MODIFY_CQ: mlx4.CQContextSize,
		mlx4.SW2HW_EQ: mlx4.EQContextSize, mlx4.SW2HW_SRQ: mlx4.SRQContextSize, mlx4.SW2HW_MPT: mlx4.MPTEntrySize,
		mlx4.WRITE_MTT: mlx4.MTTMailboxEntries + mlx4.MTTEntrySize*5}
	for _, op := range []mlx4.Opcode{mlx4.RST2INIT_QP, mlx4.INIT2INIT_QP, mlx4.INIT2RTR_QP, mlx4.RTR2RTS_QP,
		mlx4.RTS2RTS_QP, mlx4.SQERR2RTS_QP, mlx4.RTS2SQD_QP, mlx4.SQD2SQD_QP, mlx4.SQD2RTS_QP} {
		inbox[op] = mlx4.QPMailboxSize
	}
	tab := NewTable()
	for _, e := range tab.Entries() {
		if want := !e.EPERM && !readOnly[e.Op]; e.journal != want {
			t.Errorf("%v: journaled %v, want %v", e.Op, e.journal, want)
		}
		want, ok := class[e.Op]
		switch {
		case ok:
		case e.EPERM:
			want = ClassDenied
		case e.HasInbox || e.HasOutbox:
			want = ClassMailbox
		default:
			want = ClassPlain
		}
		if classOf(&e) != want || ClassOf(e.Op) != want {
			t.Errorf("%v: class %v (ClassOf %v), want %v", e.Op, classOf(&e), ClassOf(e.Op), want)
		}
		if e.HasInbox {
			w, ok := inbox[e.Op]
			if !ok {
				w = mlx4.MailboxSize
			}
			if got := e.Inbox.Bytes(5); got != w {
				t.Errorf("%v: journals %d inbox bytes, want %d", e.Op, got, w)
			}
		}
	}
}
