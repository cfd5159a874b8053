package mlx4

import "testing"

// TestCQESyndromeNames: the 13 syndromes of cq.h/mlx4dv.h with the
// ib_wc_status each maps to (include/rdma/ib_verbs.h enum ib_wc_status,
// rdma-core verbs.h enum ibv_wc_status: the same values), as
// mlx4_ib_handle_error_cqe and libmlx4's mlx4_handle_error_cqe map them;
// both spellings parse, and the send opcodes' names are qp.h's.
func TestCQESyndromeNames(t *testing.T) {
	want := []struct {
		syn  uint8
		name string
		wc   string
		wcv  uint8
	}{
		{0x01, "LOCAL_LENGTH_ERR", "LOC_LEN_ERR", 1}, {0x02, "LOCAL_QP_OP_ERR", "LOC_QP_OP_ERR", 2},
		{0x04, "LOCAL_PROT_ERR", "LOC_PROT_ERR", 4}, {0x05, "WR_FLUSH_ERR", "WR_FLUSH_ERR", 5},
		{0x06, "MW_BIND_ERR", "MW_BIND_ERR", 6}, {0x10, "BAD_RESP_ERR", "BAD_RESP_ERR", 7},
		{0x11, "LOCAL_ACCESS_ERR", "LOC_ACCESS_ERR", 8}, {0x12, "REMOTE_INVAL_REQ_ERR", "REM_INV_REQ_ERR", 9},
		{0x13, "REMOTE_ACCESS_ERR", "REM_ACCESS_ERR", 10}, {0x14, "REMOTE_OP_ERR", "REM_OP_ERR", 11},
		{0x15, "TRANSPORT_RETRY_EXC_ERR", "RETRY_EXC_ERR", 12}, {0x16, "RNR_RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR", 13},
		{0x22, "REMOTE_ABORTED_ERR", "REM_ABORT_ERR", 16},
	}
	if len(CQESyndromes) != len(want) || WCGeneralErr != 21 {
		t.Fatalf("%d syndromes, general %d", len(CQESyndromes), WCGeneralErr)
	}
	for i, w := range want {
		g := CQESyndromes[i]
		if g.Syndrome != w.syn || g.Name != w.name || g.WC != w.wc || g.WCValue != w.wcv {
			t.Errorf("syndrome %d: %+v, want %+v", i, g, w)
		}
		for _, s := range []string{w.name, "mlx4_cqe_syndrome_" + w.name, w.wc, "IBV_WC_" + w.wc, "ib_wc_" + w.wc} {
			if v, ok := ParseCQESyndrome(s); !ok || v != w.syn {
				t.Errorf("ParseCQESyndrome(%q) = %#x, %v", s, v, ok)
			}
		}
		if CQESyndromeName(w.syn) != w.name {
			t.Errorf("CQESyndromeName(%#x) = %q", w.syn, CQESyndromeName(w.syn))
		}
	}
	if _, ok := ParseCQESyndrome("SUCCESS"); ok {
		t.Error("SUCCESS parsed as a syndrome")
	}
	for s, op := range map[string]uint8{"SEND": 0x0a, "send_imm": 0x0b, "RDMA_WRITE": 0x08, "RDMA_WRITE_IMM": 0x09,
		"RDMA_READ": 0x10, "ATOMIC_CS": 0x11, "ATOMIC_FA": 0x12, "NOP": 0, "MLX4_OPCODE_LOCAL_INVAL": 0x1b} {
		if v, ok := ParseWQEOpcode(s); !ok || v != op {
			t.Errorf("ParseWQEOpcode(%q) = %#x, %v", s, v, ok)
		}
	}
	if _, ok := ParseWQEOpcode("RECV"); ok {
		t.Error("RECV is not a send opcode")
	}
}
