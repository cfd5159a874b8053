package hca

import (
	"fmt"
	"testing"

	"github.com/vhcrd/vhcrd/vhcr/hca/refusal"
	"github.com/vhcrd/vhcrd/vhcr/mlx4"
)

// TestExecutorsCoverCmdInfo: every row of cmd_info[] that is not EPERM has
// an executor, and no executor is installed for an opcode without a row or
// with an EPERM row.
func TestExecutorsCoverCmdInfo(t *testing.T) {
	for _, in := range mlx4.CmdInfos() {
		if Executes(in.Op) == in.EPERM {
			t.Errorf("%v: EPERM=%v but executed=%v", in.Op, in.EPERM, Executes(in.Op))
		}
	}
	for op := mlx4.Opcode(0); op < 4096; op++ {
		if _, ok := mlx4.CmdInfo(op); Executes(op) && !ok {
			t.Errorf("%v executed but not in cmd_info[]", op)
		}
	}
}

// TestExecGuarantees: Exec refuses what the row rules out before any
// executor runs, and zeroes the outbox of an outbox row.
func TestExecGuarantees(t *testing.T) {
	r := newRig(t, 2, nil)
	v := r.vf(1)
	cases := []struct {
		name   string
		c      *Cmd
		status mlx4.Status
		reason refusal.Reason
	}{
		{"unknown opcode", v.cmd(mlx4.INIT_HCA, 0, 0, 0, nil, false), mlx4.BAD_PARAM, refusal.UnknownOpcode},
		{"EPERM row", v.cmd(mlx4.MAD_DEMUX, 0, 0, 0, nil, false), mlx4.BAD_OP, refusal.Privileged},
		{"VF out of range", &Cmd{VF: 2, Op: mlx4.NOP}, mlx4.INTERNAL_ERR, refusal.NotFound},
		{"negative VF", &Cmd{VF: -1, Op: mlx4.NOP}, mlx4.INTERNAL_ERR, refusal.NotFound},
		{"inbox row without inbox", v.cmd(mlx4.SW2HW_CQ, 0, 0, 0, nil, false), mlx4.INTERNAL_ERR, refusal.InboxDMA},
		{"outbox row without outbox", v.cmd(mlx4.QUERY_FW, 0, 0, 0, nil, false), mlx4.INTERNAL_ERR, refusal.Context},
		{"both, inbox missing", v.cmd(mlx4.MAD_IFC, 0, 0, 0, nil, true), mlx4.INTERNAL_ERR, refusal.InboxDMA},
		// The PF's admission rule (Admit), applied by Exec too: QUERY_FW's
		// wrapper takes op_modifier 0 only.
		{"op_modifier the row refuses", v.cmd(mlx4.QUERY_FW, 0, 0, 1, nil, true), mlx4.BAD_PARAM, refusal.OpModifier},
		{"op_modifier ALLOC_RES refuses", v.cmd(mlx4.ALLOC_RES, 0, 1, 3, nil, false), mlx4.BAD_PARAM, refusal.OpModifier},
	}
	for _, tc := range cases {
		if s := r.h.Exec(tc.c); s != tc.status || tc.c.Reason != tc.reason {
			t.Errorf("%s: %v/%v, want %v/%v", tc.name, s, tc.c.Reason, tc.status, tc.reason)
		}
	}
	c := v.cmd(mlx4.QUERY_FW, 0, 0, 0, nil, true)
	for i := range c.Outbox {
		c.Outbox[i] = 0xa5
	}
	if s := r.h.Exec(c); s != mlx4.OK {
		t.Fatalf("QUERY_FW: %v", s)
	}
	if c.Outbox[0x100] != 0 || c.Outbox[mlx4.MailboxSize-1] != 0 {
		t.Error("Exec handed QUERY_FW an outbox it had not zeroed")
	}
}

// rowProblems lists what is wrong with a joined command table row: its
// effects unset or contradictory, its executor or inbox read disagreeing
// with its cmd_info[] row, a QP flag without the tracker's, a transition of
// qp.c's op[][] outside the QP state machine.
func rowProblems(x *Command) []string {
	var p []string
	kinds := 0
	for _, e := range []Effects{EffReadOnly, EffChanges, EffPrivileged} {
		if x.Effects&e != 0 {
			kinds++
		}
	}
	switch {
	case x.Effects == 0:
		p = append(p, "no effects (EffReadOnly, EffChanges or EffPrivileged)")
	case kinds != 1:
		p = append(p, "effects "+x.Effects.String()+": want exactly one of read-only, changes, privileged")
	}
	if x.Effects>>len(effectNames) != 0 {
		p = append(p, "undefined effect bits")
	}
	if priv := x.Effects&EffPrivileged != 0; priv != x.EPERM || priv != (x.Exec == nil) {
		p = append(p, fmt.Sprintf("privileged %v, EPERM %v, executor %v", priv, x.EPERM, x.Exec != nil))
	}
	if x.Effects&EffPrivileged != 0 && x.Effects != EffPrivileged {
		p = append(p, "a privileged row has other effects: "+x.Effects.String())
	}
	if x.Effects&EffQP != 0 && x.Effects&EffTracked == 0 {
		p = append(p, "qp without tracked")
	}
	if x.QP.From != 0 && x.Effects&EffQP == 0 {
		p = append(p, "a transition of qp.c's op[][] outside the QP state machine")
	}
	if x.HasInbox != (x.Inbox != InboxRead{}) {
		p = append(p, fmt.Sprintf("has_inbox %v but inbox read %+v", x.HasInbox, x.Inbox))
	}
	if x.HasInbox && (x.Inbox.Bytes(0) == 0 || x.Inbox.Bytes(^uint32(0)) > mlx4.MailboxSize) {
		p = append(p, fmt.Sprintf("inbox read %+v outside (0, a mailbox]", x.Inbox))
	}
	for m := range 256 {
		if want := !x.EPERM && x.OpModOK(uint8(m)); (x.admits&(1<<min(m, 16)) != 0) != want {
			p = append(p, fmt.Sprintf("op_modifier %d admitted %v, cmd_info[] says %v", m, !want, want))
		}
	}
	if x.qp != 0 && x.QP.From == 0 {
		p = append(p, "QP checks on a command that is no transition")
	}
	return p
}

// TestCommandTable: every row of cmd_info[] has its row in the command
// table, at its dense index, with its effects set and consistent; the
// table has no row cmd_info[] lacks.
func TestCommandTable(t *testing.T) {
	rows := Commands()
	if len(rows) != len(mlx4.CmdInfos()) {
		t.Fatalf("%d rows, cmd_info[] has %d", len(rows), len(mlx4.CmdInfos()))
	}
	for i, in := range mlx4.CmdInfos() {
		x := Lookup(in.Op)
		if x == nil || x.Info != in || x.Index() != i+1 || rows[i].Op != in.Op {
			t.Fatalf("%v: row %+v disagrees with cmd_info[] row %d", in.Op, x, i)
		}
		for _, p := range rowProblems(x) {
			t.Errorf("%v: %s", in.Op, p)
		}
	}
	for op := mlx4.Opcode(0); op < 4096; op++ {
		if _, ok := mlx4.CmdInfo(op); ok != (Lookup(op) != nil) {
			t.Errorf("%v: a row %v, cmd_info[] %v", op, Lookup(op) != nil, ok)
		}
	}
	// The check catches a row added to cmd_info[] and left without
	// effects here, and a row whose effects contradict each other.
	good := *Lookup(mlx4.SW2HW_CQ)
	if p := rowProblems(&good); len(p) != 0 {
		t.Fatalf("SW2HW_CQ: %v", p)
	}
	for name, spoil := range map[string]func(*Command){
		"no effects":            func(x *Command) { x.Effects = 0 },
		"read-only and changes": func(x *Command) { x.Effects |= EffReadOnly },
		"no inbox read":         func(x *Command) { x.Inbox = InboxRead{} },
		"no executor":           func(x *Command) { x.Exec = nil },
		"qp without tracked":    func(x *Command) { x.Effects = EffChanges | EffQP },
		"admits EPERM":          func(x *Command) { x.EPERM = true; x.Exec = nil; x.Effects = EffPrivileged },
	} {
		bad := good
		spoil(&bad)
		if len(rowProblems(&bad)) == 0 {
			t.Errorf("a row with %s passes the check", name)
		}
	}
}

// TestInboxRead: a row's inbox read, WRITE_MTT's counted by in_modifier and
// bounded by a mailbox.
func TestInboxRead(t *testing.T) {
	for _, tc := range []struct {
		op    mlx4.Opcode
		inMod uint32
		want  int
	}{
		{mlx4.SW2HW_CQ, 0, 0x40}, {mlx4.SW2HW_EQ, 0, 0x40}, {mlx4.SW2HW_SRQ, 0, 0x30}, {mlx4.SW2HW_MPT, 0, 0x40},
		{mlx4.RST2INIT_QP, 0, mlx4.QPMailboxSize}, {mlx4.SET_PORT, 0, 4096},
		{mlx4.WRITE_MTT, 0, 0x10}, {mlx4.WRITE_MTT, 3, 0x10 + 3*8}, {mlx4.WRITE_MTT, 1 << 31, 4096},
		{mlx4.NOP, 0, 0},
	} {
		if got := Lookup(tc.op).Inbox.Bytes(tc.inMod); got != tc.want {
			t.Errorf("%v in_modifier %d: %d bytes, want %d", tc.op, tc.inMod, got, tc.want)
		}
	}
}

// TestAdmit: the one admission rule, in mlx4's order.
func TestAdmit(t *testing.T) {
	for _, tc := range []struct {
		op     mlx4.Opcode
		opMod  uint8
		status mlx4.Status
		reason refusal.Reason
	}{
		{mlx4.INIT_HCA, 0, mlx4.BAD_PARAM, refusal.UnknownOpcode},
		{mlx4.MAD_DEMUX, 0, mlx4.BAD_OP, refusal.Privileged},
		{mlx4.QUERY_FW, 1, mlx4.BAD_PARAM, refusal.OpModifier},
		{mlx4.QUERY_FUNC_CAP, 1, mlx4.OK, refusal.None},
		{mlx4.NOP, 7, mlx4.OK, refusal.None},
		// A listed row admits nothing from 16: 0x11 is not 1, 0x10 not 0.
		{mlx4.QUERY_FUNC_CAP, 0x11, mlx4.BAD_PARAM, refusal.OpModifier},
		{mlx4.QUERY_FW, 0x10, mlx4.BAD_PARAM, refusal.OpModifier},
		{mlx4.NOP, 0xff, mlx4.OK, refusal.None},
	} {
		c := &Cmd{Op: tc.op, OpMod: tc.opMod}
		if s := Admit(c, Lookup(tc.op)); s != tc.status || c.Reason != tc.reason {
			t.Errorf("%v op_modifier %d: %v (%v), want %v (%v)", tc.op, tc.opMod, s, c.Reason, tc.status, tc.reason)
		}
	}
	// The zero row (an opcode without one, as Exec finds it) is unknown.
	c := &Cmd{Op: mlx4.INIT_HCA}
	if s := Admit(c, &Command{}); s != mlx4.BAD_PARAM || c.Reason != refusal.UnknownOpcode {
		t.Errorf("the zero row: %v (%v), want BAD_PARAM (unknown opcode)", s, c.Reason)
	}
}
