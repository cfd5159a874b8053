package mlx4

import "testing"

// TestCmdInfo: 66 rows as in cmd.c, each found by its opcode, and a few
// rows checked against the kernel's flags.
func TestCmdInfo(t *testing.T) {
	rows := CmdInfos()
	if len(rows) != 66 {
		t.Fatalf("%d rows, cmd_info[] has 66", len(rows))
	}
	for _, r := range rows {
		got, ok := CmdInfo(r.Op)
		if !ok || got != r {
			t.Fatalf("CmdInfo(%v) = %+v, %v; want %+v", r.Op, got, ok, r)
		}
	}
	for _, op := range []Opcode{INIT_HCA, MAP_FA, ACCESS_DDR, GEN_EQE, SENSE_PORT, 0x0} {
		if _, ok := CmdInfo(op); ok {
			t.Errorf("%v has a row; cmd_info[] has none", op)
		}
	}
	want := map[Opcode]Info{
		MAD_IFC:   {Op: MAD_IFC, HasInbox: true, HasOutbox: true},
		ALLOC_RES: {Op: ALLOC_RES, OutIsImm: true, OpMods: 0b111},
		SW2HW_EQ:  {Op: SW2HW_EQ, HasInbox: true, EncodeSlaveID: true},
		MAD_DEMUX: {Op: MAD_DEMUX, EPERM: true},
	}
	for op, w := range want {
		if got, _ := CmdInfo(op); got != w {
			t.Errorf("%v: %+v, want %+v", op, got, w)
		}
	}
	in, _ := CmdInfo(QUERY_FUNC_CAP)
	if !in.OpModOK(0) || !in.OpModOK(1) || in.OpModOK(2) || in.OpModOK(0x10) || in.OpModOK(0x11) || in.OpModOK(0xff) {
		t.Error("QUERY_FUNC_CAP takes op_modifiers 0 and 1 only")
	}
	if nop, _ := CmdInfo(NOP); !nop.OpModOK(15) || !nop.OpModOK(0x10) || !nop.OpModOK(0xff) {
		t.Error("NOP takes any op_modifier")
	}
}
