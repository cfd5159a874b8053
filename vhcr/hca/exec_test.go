package hca

import (
	"testing"

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
		c      *mlx4.Cmd
		status mlx4.Status
		reason mlx4.Reason
	}{
		{"unknown opcode", v.cmd(mlx4.INIT_HCA, 0, 0, 0, nil, false), mlx4.BAD_PARAM, mlx4.ReasonUnknownOpcode},
		{"EPERM row", v.cmd(mlx4.MAD_DEMUX, 0, 0, 0, nil, false), mlx4.BAD_OP, mlx4.ReasonPrivileged},
		{"VF out of range", &mlx4.Cmd{VF: 2, Op: mlx4.NOP}, mlx4.INTERNAL_ERR, mlx4.ReasonNotFound},
		{"negative VF", &mlx4.Cmd{VF: -1, Op: mlx4.NOP}, mlx4.INTERNAL_ERR, mlx4.ReasonNotFound},
		{"inbox row without inbox", v.cmd(mlx4.SW2HW_CQ, 0, 0, 0, nil, false), mlx4.INTERNAL_ERR, mlx4.ReasonInboxDMA},
		{"outbox row without outbox", v.cmd(mlx4.QUERY_FW, 0, 0, 0, nil, false), mlx4.INTERNAL_ERR, mlx4.ReasonContext},
		{"both, inbox missing", v.cmd(mlx4.MAD_IFC, 0, 0, 0, nil, true), mlx4.INTERNAL_ERR, mlx4.ReasonInboxDMA},
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
