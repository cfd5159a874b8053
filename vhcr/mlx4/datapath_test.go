package mlx4

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// include/linux/mlx4/qp.h and rdma-core providers/mlx4/mlx4dv.h: the WQE
// segments, counted by hand from the C declarations.
func TestWQELayout(t *testing.T) {
	checkOffsets(t, "mlx4_wqe_ctrl_seg", []off{
		{"owner_opcode", CtrlOwnerOpcode, 0}, {"qpn_vlan.vlan_tag", CtrlVLANTag, 4},
		{"qpn_vlan.ins_vlan", CtrlInsVLAN, 6}, {"qpn_vlan.fence_size", CtrlFenceSize, 7},
		{"srcrb_flags", CtrlSrcRBFlags, 8}, {"imm", CtrlImm, 12}, {"sizeof", CtrlSegSize, 16},
	})
	checkOffsets(t, "mlx4_wqe_raddr_seg", []off{{"raddr", RAddrRAddr, 0}, {"rkey", RAddrRKey, 8}, {"sizeof", RAddrSegSize, 16}})
	checkOffsets(t, "mlx4_wqe_atomic_seg", []off{{"swap_add", AtomicSwapAdd, 0}, {"compare", AtomicCompare, 8}, {"sizeof", AtomicSegSize, 16}})
	checkOffsets(t, "mlx4_wqe_masked_atomic_seg", []off{{"swap_add_mask", MaskedAtomicSwapAddMask, 16},
		{"compare_mask", MaskedAtomicCompareMask, 24}, {"sizeof", MaskedAtomicSegSize, 32}})
	checkOffsets(t, "mlx4_av", []off{
		{"port_pd", AVPortPD, 0}, {"g_slid", AVGSLID, 5}, {"dlid", AVDLID, 6}, {"gid_index", AVGIDIndex, 9},
		{"stat_rate", AVStatRate, 10}, {"hop_limit", AVHopLimit, 11}, {"sl_tclass_flowlabel", AVSLTClassFlowLabel, 12},
		{"dgid", AVDGID, 16}, {"sizeof", AVSize, 32},
	})
	checkOffsets(t, "mlx4_wqe_datagram_seg", []off{{"dqpn", DatagramDQPN, 32}, {"qkey", DatagramQKey, 36},
		{"vlan", DatagramVLAN, 40}, {"mac", DatagramMAC, 42}, {"sizeof", DatagramSegSize, 48}})
	checkOffsets(t, "mlx4_wqe_mlx_seg", []off{{"flags", MLXSegFlags, 8}, {"rlid", MLXSegRLID, 12},
		{"MLX4_WQE_MLX_VL15", MLX4_WQE_MLX_VL15, 1 << 17}, {"MLX4_WQE_MLX_SLR", MLX4_WQE_MLX_SLR, 1 << 16},
		{"force loopback", MLXWQEForceLoopback, 1}, {"ICRC segment", MLXICRCSize, 4}})
	checkOffsets(t, "mlx4_wqe_data_seg", []off{{"byte_count", DataByteCount, 0}, {"lkey", DataLKey, 4},
		{"addr", DataAddr, 8}, {"sizeof", DataSegSize, 16}})
	checkOffsets(t, "mlx4_wqe_inline_seg", []off{{"byte_count", InlineByteCount, 0}, {"sizeof", InlineSegSize, 4}})
	checkOffsets(t, "mlx4_wqe_srq_next_seg", []off{{"next_wqe_index", SRQNextWQEIndex, 2}, {"sizeof", SRQNextSegSize, 16}})
	checkOffsets(t, "mlx4_wqe_lso_seg", []off{{"mss_hdr_size", LSOMSSHdrSize, 0}, {"header", LSOSegSize, 4}})
	checkOffsets(t, "mlx4_wqe_local_inval_seg", []off{{"mem_key", LocalInvalMemKey, 8}, {"sizeof", LocalInvalSegSize, 32}})
	checkOffsets(t, "MLX4_OPCODE", []off{
		{"NOP", OPCODE_NOP, 0x00}, {"SEND_INVAL", OPCODE_SEND_INVAL, 0x01}, {"RDMA_WRITE", OPCODE_RDMA_WRITE, 0x08},
		{"RDMA_WRITE_IMM", OPCODE_RDMA_WRITE_IMM, 0x09}, {"SEND", OPCODE_SEND, 0x0a}, {"SEND_IMM", OPCODE_SEND_IMM, 0x0b},
		{"LSO", OPCODE_LSO, 0x0e}, {"RDMA_READ", OPCODE_RDMA_READ, 0x10}, {"ATOMIC_CS", OPCODE_ATOMIC_CS, 0x11},
		{"ATOMIC_FA", OPCODE_ATOMIC_FA, 0x12}, {"MASKED_ATOMIC_CS", OPCODE_MASKED_ATOMIC_CS, 0x14},
		{"MASKED_ATOMIC_FA", OPCODE_MASKED_ATOMIC_FA, 0x15}, {"BIND_MW", OPCODE_BIND_MW, 0x18}, {"FMR", OPCODE_FMR, 0x19},
		{"LOCAL_INVAL", OPCODE_LOCAL_INVAL, 0x1b}, {"CONFIG_CMD", OPCODE_CONFIG_CMD, 0x1f},
		{"RECV RDMA_WRITE_IMM", RECV_OPCODE_RDMA_WRITE_IMM, 0}, {"RECV SEND", RECV_OPCODE_SEND, 1},
		{"RECV SEND_IMM", RECV_OPCODE_SEND_IMM, 2}, {"RECV SEND_INVAL", RECV_OPCODE_SEND_INVAL, 3},
	})
	checkOffsets(t, "MLX4_WQE_CTRL", []off{
		{"NEC", WQE_CTRL_NEC, 1 << 29}, {"IIP", WQE_CTRL_IIP, 1 << 28}, {"ILP", WQE_CTRL_ILP, 1 << 27},
		{"FENCE", WQE_CTRL_FENCE, 0x40}, {"CQ_UPDATE", WQE_CTRL_CQ_UPDATE, 0x0c}, {"SOLICITED", WQE_CTRL_SOLICITED, 0x02},
		{"IP_CSUM", WQE_CTRL_IP_CSUM, 0x10}, {"TCP_UDP_CSUM", WQE_CTRL_TCP_UDP_CSUM, 0x20},
		{"INS_CVLAN", WQE_CTRL_INS_CVLAN, 0x40}, {"INS_SVLAN", WQE_CTRL_INS_SVLAN, 0x80},
		{"STRONG_ORDER", WQE_CTRL_STRONG_ORDER, 0x80}, {"FORCE_LOOPBACK", WQE_CTRL_FORCE_LOOPBACK, 1},
		{"owner", WQEOwner, 1 << 31}, {"opcode mask", WQEOpcodeMask, 0x1f}, {"size mask", WQESizeMask, 0x3f},
		{"INLINE_SEG", INLINE_SEG, 1 << 31}, {"INLINE_ALIGN", INLINE_ALIGN, 64}, {"INVALID_LKEY", INVALID_LKEY, 0x100},
		{"WQEBB", WQEBasicBlock, 64}, {"stamp", WQEStamp, 0xffffffff},
	})
}

// include/linux/mlx4/cq.h struct mlx4_cqe, struct mlx4_err_cqe.
func TestCQELayout(t *testing.T) {
	checkOffsets(t, "mlx4_cqe", []off{
		{"vlan_my_qpn", CQEVlanMyQPN, 0}, {"immed_rss_invalid", CQEImmedRSSInvalid, 4}, {"g_mlpath_rqpn", CQEGMLPathRQPN, 8},
		{"sl_vid", CQESLVID, 12}, {"rlid", CQERLID, 14}, {"status", CQEStatus, 16}, {"ipv6_ext_mask", CQEIPv6ExtMask, 18},
		{"badfcs_enc", CQEBadFCSEnc, 19}, {"byte_cnt", CQEByteCnt, 20}, {"wqe_index", CQEWQEIndex, 24},
		{"checksum", CQEChecksum, 26}, {"reserved", CQEReserved, 28}, {"owner_sr_opcode", CQEOwnerSROpcode, 31},
		{"sizeof", CQESize, 32},
	})
	checkOffsets(t, "mlx4_err_cqe", []off{{"my_qpn", ErrCQEMyQPN, 0}, {"wqe_index", ErrCQEWQEIndex, 24},
		{"vendor_err_syndrome", ErrCQEVendorErrSyndrome, 26}, {"syndrome", ErrCQESyndrome, 27}})
	checkOffsets(t, "MLX4_CQE", []off{
		{"OWNER_MASK", CQE_OWNER_MASK, 0x80}, {"IS_SEND_MASK", CQE_IS_SEND_MASK, 0x40}, {"OPCODE_MASK", CQE_OPCODE_MASK, 0x1f},
		{"QPN_MASK", CQE_QPN_MASK, 0xffffff}, {"VLAN_PRESENT", CQE_VLAN_PRESENT_MASK, 1 << 29},
		{"SVLAN_PRESENT", CQE_SVLAN_PRESENT_MASK, 1 << 30}, {"G", CQE_G_MASK, 1 << 31},
		{"OPCODE_ERROR", CQE_OPCODE_ERROR, 0x1e}, {"OPCODE_RESIZE", CQE_OPCODE_RESIZE, 0x16},
		{"64-byte slot", CQEOffset(64), 32}, {"32-byte slot", CQEOffset(32), 0},
	})
	checkOffsets(t, "MLX4_CQE_SYNDROME", []off{
		{"LOCAL_LENGTH_ERR", CQE_SYNDROME_LOCAL_LENGTH_ERR, 0x01}, {"LOCAL_QP_OP_ERR", CQE_SYNDROME_LOCAL_QP_OP_ERR, 0x02},
		{"LOCAL_PROT_ERR", CQE_SYNDROME_LOCAL_PROT_ERR, 0x04}, {"WR_FLUSH_ERR", CQE_SYNDROME_WR_FLUSH_ERR, 0x05},
		{"MW_BIND_ERR", CQE_SYNDROME_MW_BIND_ERR, 0x06}, {"BAD_RESP_ERR", CQE_SYNDROME_BAD_RESP_ERR, 0x10},
		{"LOCAL_ACCESS_ERR", CQE_SYNDROME_LOCAL_ACCESS_ERR, 0x11},
		{"REMOTE_INVAL_REQ_ERR", CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, 0x12},
		{"REMOTE_ACCESS_ERR", CQE_SYNDROME_REMOTE_ACCESS_ERR, 0x13}, {"REMOTE_OP_ERR", CQE_SYNDROME_REMOTE_OP_ERR, 0x14},
		{"TRANSPORT_RETRY_EXC_ERR", CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR, 0x15},
		{"RNR_RETRY_EXC_ERR", CQE_SYNDROME_RNR_RETRY_EXC_ERR, 0x16},
		{"REMOTE_ABORTED_ERR", CQE_SYNDROME_REMOTE_ABORTED_ERR, 0x22},
	})
}

// include/linux/mlx4/doorbell.h, cq.h; mlx4dv.h; drivers/net/ethernet/mellanox/mlx4/pd.c.
func TestUARLayout(t *testing.T) {
	checkOffsets(t, "UAR", []off{
		{"MLX4_SEND_DOORBELL", MLX4_SEND_DOORBELL, 0x14}, {"MLX4_CQ_DOORBELL", MLX4_CQ_DOORBELL, 0x20},
		{"REQ_NOT_SOL", MLX4_CQ_DB_REQ_NOT_SOL, 0x01000000}, {"REQ_NOT", MLX4_CQ_DB_REQ_NOT, 0x02000000},
		{"set_ci", CQDBRecSetCI, 0}, {"arm_db", CQDBRecArmDB, 4}, {"CQ record", CQDBRecSize, 8}, {"RQ record", RQDBRecSize, 4},
		{"RQ head mask", RQDBRecHeadMask, 0xffff},
		{"send doorbell of QP 0x48", int(SendDoorbell(0x48)), 0x4800},
		{"QPN of 0x00abcd00", int(SendDoorbellQPN(0x00abcd00)), 0xabcd},
		// The kernel's own UAR, index 128, in an 8 MiB BAR2: 512 KiB in.
		{"UAR 128 in 8 MiB", int(UARPageOffset(128, 8<<20)), 0x80000},
		{"UAR 2048+3 in 8 MiB", int(UARPageOffset(2048+3, 8<<20)), 0x3000},
		{"UAR 5 in a 2 KiB BAR", int(UARPageOffset(5, 2048)), 0},
	})
	if v := CQDoorbell(5, MLX4_CQ_DB_REQ_NOT, 0x1000042, 0x1abcdef); v != 0x1200004200abcdef {
		t.Errorf("CQ doorbell %#x, want sn 1 << 28 | REQ_NOT | cqn 0x42, ci 0xabcdef", v)
	}
	sn, cmd, cqn, ci := SplitCQDoorbell(0xf3ffffff_12345678)
	if sn != 3 || cmd != 3<<24 || cqn != 0xffffff || ci != 0x345678 {
		t.Errorf("split: sn %d cmd %#x cqn %#x ci %#x", sn, cmd, cqn, ci)
	}
	if w := CQArmDB(2, MLX4_CQ_DB_REQ_NOT_SOL, 0x123); w != 0x21000123 {
		t.Errorf("arm_db %#x", w)
	}
	if sn, cmd, ci := SplitCQArmDB(0x21000123); sn != 2 || cmd != MLX4_CQ_DB_REQ_NOT_SOL || ci != 0x123 {
		t.Errorf("split arm_db: %d %#x %#x", sn, cmd, ci)
	}
}

// A UD send with inline data, encoded: each field at its byte.
func TestSendWQEGoldenUD(t *testing.T) {
	w := SendWQE{Ctrl: WQECtrl{Owner: true, Opcode: OPCODE_SEND_IMM, SrcRBFlags: WQE_CTRL_CQ_UPDATE | WQE_CTRL_SOLICITED,
		Imm: 0xdeadbeef, Fence: true},
		HasDatagram: true, Datagram: DatagramSeg{AV: AV{PortPD: 1<<24 | 0x33, GSLID: 0x80, DLID: 0x1234, GIDIndex: 2,
			StatRate: 3, HopLimit: 64, SLTClassFlowLabel: 0x50000001, DGID: [16]byte{0xfe, 0x80, 15: 9}},
			DQPN: 0x4849, QKey: 0x80010000, VLAN: 0x0fff, MAC: [6]byte{2, 0, 0, 0, 0, 7}}}
	if !w.AddInline(20) {
		t.Fatal("AddInline")
	}
	w.SGE[w.NSGE] = Gather{ByteCount: 100, LKey: 0x77, Addr: 0x1122334455667788}
	w.NSGE++
	payload := bytes.Repeat([]byte{0xab}, 20)
	var b [256]byte
	for i := range b {
		b[i] = 0xee
	}
	n, err := EncodeSendWQE(b[:], &w, payload)
	// ctrl 16 + datagram 48 = 64; inline header at 64, 20 bytes, padded to 96; data seg 96..112.
	if err != nil || n != 112 {
		t.Fatalf("encode: %d, %v", n, err)
	}
	for _, c := range []struct {
		name      string
		got, want uint32
	}{
		{"owner_opcode@0", be32(b[:], 0), 1<<31 | 0x0b},
		{"fence_size@7", uint32(b[7]), 0x40 | 7},
		{"srcrb_flags@8", be32(b[:], 8), 0x0e},
		{"imm@12", be32(b[:], 12), 0xdeadbeef},
		{"av.port_pd@16", be32(b[:], 16), 0x01000033},
		{"av.g_slid@21", uint32(b[21]), 0x80},
		{"av.dlid@22", uint32(binary.BigEndian.Uint16(b[22:])), 0x1234},
		{"av.gid_index@25", uint32(b[25]), 2},
		{"av.stat_rate@26", uint32(b[26]), 3},
		{"av.hop_limit@27", uint32(b[27]), 64},
		{"av.sl_tclass_flowlabel@28", be32(b[:], 28), 0x50000001},
		{"av.dgid@32", be32(b[:], 32), 0xfe800000},
		{"av.dgid[15]@47", uint32(b[47]), 9},
		{"dqpn@48", be32(b[:], 48), 0x4849},
		{"qkey@52", be32(b[:], 52), 0x80010000},
		{"vlan@56", uint32(binary.BigEndian.Uint16(b[56:])), 0x0fff},
		{"mac[5]@63", uint32(b[63]), 7},
		{"inline byte_count@64", be32(b[:], 64), 0x80000014},
		{"inline data@68", be32(b[:], 68), 0xabababab},
		{"padding@88", be32(b[:], 88), 0},
		{"data byte_count@96", be32(b[:], 96), 100},
		{"data lkey@100", be32(b[:], 100), 0x77},
		{"data addr@104", be32(b[:], 104), 0x11223344},
		{"past the WQE@112", be32(b[:], 112), 0xeeeeeeee},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
	got, err := DecodeSendWQE(b[:], QP_ST_UD)
	w.Ctrl.Size = 7
	w.SGE[0].Off = 68
	if err != nil || got != w {
		t.Fatalf("decode: %v\n got %+v\nwant %+v", err, got, w)
	}
}

// An RC RDMA write, an atomic, a masked compare-and-swap and a local
// invalidate: each segment at its offset.
func TestSendWQEGoldenRC(t *testing.T) {
	var b [128]byte
	w := SendWQE{Ctrl: WQECtrl{Opcode: OPCODE_MASKED_ATOMIC_CS, OpFlags: WQE_CTRL_NEC},
		HasRAddr: true, RAddr: RAddrSeg{RAddr: 0x0102030405060708, RKey: 0x99},
		HasAtomic: true, Atomic: AtomicSeg{SwapAdd: 1, Compare: 2, Masked: true, SwapAddMask: 3, CompareMask: 4},
		NSGE: 1, SGE: [MaxSGE]Gather{{ByteCount: 8, LKey: 5, Addr: 0x1000}}}
	n, err := EncodeSendWQE(b[:], &w, nil)
	if err != nil || n != 80 {
		t.Fatalf("encode: %d %v", n, err)
	}
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"owner_opcode@0", uint64(be32(b[:], 0)), 1<<29 | 0x14}, {"size@7", uint64(b[7]), 5},
		{"raddr@16", binary.BigEndian.Uint64(b[16:]), 0x0102030405060708}, {"rkey@24", uint64(be32(b[:], 24)), 0x99},
		{"swap_add@32", binary.BigEndian.Uint64(b[32:]), 1}, {"compare@40", binary.BigEndian.Uint64(b[40:]), 2},
		{"swap_add_mask@48", binary.BigEndian.Uint64(b[48:]), 3}, {"compare_mask@56", binary.BigEndian.Uint64(b[56:]), 4},
		{"byte_count@64", uint64(be32(b[:], 64)), 8}, {"lkey@68", uint64(be32(b[:], 68)), 5},
		{"addr@72", binary.BigEndian.Uint64(b[72:]), 0x1000},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
	for _, tc := range []struct {
		name string
		w    SendWQE
		st   uint8
		size int
	}{
		{"rdma write", SendWQE{Ctrl: WQECtrl{Opcode: OPCODE_RDMA_WRITE}, HasRAddr: true, RAddr: RAddrSeg{RAddr: 7, RKey: 8}}, QP_ST_UC, 32},
		{"rdma read", SendWQE{Ctrl: WQECtrl{Opcode: OPCODE_RDMA_READ}, HasRAddr: true, NSGE: 1}, QP_ST_RC, 48},
		{"fetch-add", SendWQE{Ctrl: WQECtrl{Opcode: OPCODE_ATOMIC_FA}, HasRAddr: true, HasAtomic: true, Atomic: AtomicSeg{SwapAdd: 9}}, QP_ST_RC, 48},
		{"masked fetch-add", SendWQE{Ctrl: WQECtrl{Opcode: OPCODE_MASKED_ATOMIC_FA}, HasRAddr: true, HasAtomic: true}, QP_ST_XRC, 48},
		{"local invalidate", SendWQE{Ctrl: WQECtrl{Opcode: OPCODE_LOCAL_INVAL}, HasLocalInval: true, LocalInvalKey: 0xabc}, QP_ST_RC, 48},
		{"send, no SGE", SendWQE{Ctrl: WQECtrl{Opcode: OPCODE_SEND}}, QP_ST_RC, 16},
		{"zero-length SGE", SendWQE{Ctrl: WQECtrl{Opcode: OPCODE_SEND}, NSGE: 1, SGE: [MaxSGE]Gather{{Inline: true}}}, QP_ST_RC, 32},
		{"LSO", SendWQE{Ctrl: WQECtrl{Opcode: OPCODE_LSO}, HasDatagram: true, HasLSO: true, LSO: LSOSeg{MSS: 2044, HdrSize: 30}}, QP_ST_UD, 112},
	} {
		var b [256]byte
		hdr := bytes.Repeat([]byte{1}, 64)
		n, err := EncodeSendWQE(b[:], &tc.w, hdr)
		if err != nil || n != tc.size {
			t.Fatalf("%s: encode %d %v, want %d bytes", tc.name, n, err, tc.size)
		}
		got, err := DecodeSendWQE(b[:n], tc.st)
		tc.w.Ctrl.Size = uint8(n / 16)
		if tc.w.HasLSO {
			tc.w.LSO.HdrOff = 68
		}
		if tc.w.NSGE > 0 && tc.w.SGE[0].Inline {
			tc.w.SGE[0].Off = 20
		}
		if err != nil || got != tc.w {
			t.Errorf("%s: decode %v\n got %+v\nwant %+v", tc.name, err, got, tc.w)
		}
	}
	if be32(b[:], 0)&WQEOwner != 0 {
		t.Error("owner bit set for Owner false")
	}
}

// libmlx4 splits inline data at each 64-byte boundary of the WQE.
func TestAddInlineSplitsAt64(t *testing.T) {
	w := SendWQE{Ctrl: WQECtrl{Opcode: OPCODE_SEND}} // data starts at 16+4 = 20: 44 bytes to the boundary
	if !w.AddInline(200) {
		t.Fatal("AddInline")
	}
	want := []int{44, 60, 60, 36}
	if w.NSGE != len(want) {
		t.Fatalf("%d segments, want %d", w.NSGE, len(want))
	}
	for i, l := range want {
		if int(w.SGE[i].ByteCount) != l || !w.SGE[i].Inline {
			t.Errorf("segment %d: %+v, want %d inline bytes", i, w.SGE[i], l)
		}
	}
	var b [512]byte
	n, err := EncodeSendWQE(b[:], &w, bytes.Repeat([]byte{7}, 200))
	// 16 + 4*4 + 200 = 232, padded to 240 (rdma-core: size += (inl + num_seg*4 + 15) / 16).
	if err != nil || n != 240 {
		t.Fatalf("encode %d %v", n, err)
	}
	for _, at := range []int{16, 64, 128, 192} {
		if be32(b[:], at)&INLINE_SEG == 0 {
			t.Errorf("no inline header at %d: %#x", at, be32(b[:], at))
		}
	}
	var full SendWQE
	for full.AddInline(1 << 20) {
		t.Fatal("AddInline beyond MaxSGE succeeded")
	}
	if full.NSGE != 0 {
		t.Errorf("a failed AddInline left %d entries", full.NSGE)
	}
}

func TestDecodeSendWQEErrors(t *testing.T) {
	ctrl := func(op uint8, size uint8) []byte {
		b := make([]byte, 64)
		binary.BigEndian.PutUint32(b, uint32(op))
		b[7] = size
		return b
	}
	inl := ctrl(OPCODE_SEND, 2)
	binary.BigEndian.PutUint32(inl[16:], INLINE_SEG|13) // 13 bytes do not fit in 12
	many := make([]byte, 1024)
	many[3], many[7] = OPCODE_SEND, 63
	for _, c := range []struct {
		name string
		b    []byte
		st   uint8
		want error
	}{
		{"short", make([]byte, 15), QP_ST_RC, ErrShort},
		{"size 0", ctrl(OPCODE_SEND, 0), QP_ST_RC, ErrWQESize},
		{"size past the buffer", ctrl(OPCODE_SEND, 5), QP_ST_RC, ErrWQESize},
		{"raddr past the size", ctrl(OPCODE_RDMA_WRITE, 1), QP_ST_RC, ErrWQESegment},
		{"datagram past the size", ctrl(OPCODE_SEND, 3), QP_ST_UD, ErrWQESegment},
		{"inline past the size", inl, QP_ST_RC, ErrWQESegment},
		{"bind", ctrl(OPCODE_BIND_MW, 3), QP_ST_RC, ErrWQEOpcode},
		{"rdma on UD", ctrl(OPCODE_RDMA_WRITE, 4), QP_ST_UD, ErrWQEOpcode},
		{"MLX SEND", ctrl(OPCODE_SEND, 1), QP_ST_MLX, nil},
		{"RDMA on MLX", ctrl(OPCODE_RDMA_WRITE, 4), QP_ST_MLX, ErrWQEOpcode},
		{"raw Ethernet", ctrl(OPCODE_SEND, 1), QP_ST_MLX + 1, ErrWQETransport},
		{"63 units fit", many, QP_ST_RC, nil},
	} {
		_, err := DecodeSendWQE(c.b, c.st)
		if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	var w SendWQE
	w.HasLSO, w.LSO.HdrSize = true, 1000
	if _, err := EncodeSendWQE(make([]byte, 2048), &w, make([]byte, 1000)); !errors.Is(err, ErrWQESize) {
		t.Errorf("encode 1 KiB: %v", err)
	}
	if _, err := EncodeSendWQE(make([]byte, 8), &SendWQE{}, nil); !errors.Is(err, ErrShort) {
		t.Errorf("encode into 8 bytes: %v", err)
	}
}

func TestRecvWQE(t *testing.T) {
	var b [64]byte
	r := RecvWQE{NSGE: 2, SGE: [MaxSGE]Gather{{ByteCount: 4096, LKey: 0x10, Addr: 0xa000}, {ByteCount: 8, LKey: 0x11, Addr: 0xb000}}}
	n, err := EncodeRecvWQE(b[:], &r, false)
	if err != nil || n != 48 {
		t.Fatalf("encode %d %v", n, err)
	}
	if be32(b[:], 0) != 4096 || be32(b[:], 4) != 0x10 || be32(b[:], 12) != 0xa000 || be32(b[:], 16) != 8 ||
		be32(b[:], 32) != 0 || be32(b[:], 36) != INVALID_LKEY || be32(b[:], 44) != 0 {
		t.Errorf("receive WQE % x", b[:48])
	}
	got, err := DecodeRecvWQE(b[:], false)
	if err != nil || got != r {
		t.Errorf("decode %v %+v", err, got)
	}
	// Full: no terminator.
	n, err = EncodeRecvWQE(b[:32], &r, false)
	if got, _ := DecodeRecvWQE(b[:32], false); err != nil || n != 32 || got != r {
		t.Errorf("full stride: %d %v %+v", n, err, got)
	}
	var s [48]byte
	sr := RecvWQE{NextWQEIndex: 0x1234, NSGE: 1, SGE: [MaxSGE]Gather{{ByteCount: 1, LKey: 2, Addr: 3}}}
	if n, err := EncodeRecvWQE(s[:], &sr, true); err != nil || n != 48 || binary.BigEndian.Uint16(s[2:]) != 0x1234 ||
		be32(s[:], 20) != 2 || be32(s[:], 36) != INVALID_LKEY {
		t.Errorf("SRQ WQE %d %v % x", n, err, s)
	}
	if got, err := DecodeRecvWQE(s[:], true); err != nil || got != sr {
		t.Errorf("SRQ decode %v %+v", err, got)
	}
	if _, err := DecodeRecvWQE(s[:8], true); !errors.Is(err, ErrShort) {
		t.Errorf("short SRQ WQE: %v", err)
	}
	if _, err := EncodeRecvWQE(s[:8], &sr, false); !errors.Is(err, ErrShort) {
		t.Errorf("encode short: %v", err)
	}
	bad := RecvWQE{NSGE: 1, SGE: [MaxSGE]Gather{{LKey: INVALID_LKEY}}}
	if _, err := EncodeRecvWQE(s[:], &bad, false); !errors.Is(err, ErrWQESegment) {
		t.Errorf("INVALID_LKEY entry: %v", err)
	}
	big := make([]byte, (MaxSGE+1)*DataSegSize)
	if _, err := DecodeRecvWQE(big, false); !errors.Is(err, ErrWQETooManySGE) {
		t.Errorf("%d entries: %v", MaxSGE+1, err)
	}
}

func TestCQEGolden(t *testing.T) {
	c := CQE{VlanMyQPN: CQE_VLAN_PRESENT_MASK | 0x000048, ImmedRSSInvalid: 0x11223344, GMLPathRQPN: CQE_G_MASK | 5<<24 | 0x4849,
		SLVID: 3 << 12, RLID: 0x0017, Status: 0x1234, IPv6ExtMask: 0x56, BadFCSEnc: 0x78, ByteCnt: 4096,
		WQEIndex: 0xfffe, Checksum: 0xabcd, Reserved: [3]byte{1, 2, 3}, Owner: true, IsSend: true, Opcode: OPCODE_SEND}
	b := EncodeCQE(c)
	want := [CQESize]byte{0x20, 0, 0, 0x48, 0x11, 0x22, 0x33, 0x44, 0x85, 0, 0x48, 0x49, 0x30, 0, 0, 0x17,
		0x12, 0x34, 0x56, 0x78, 0, 0, 0x10, 0, 0xff, 0xfe, 0xab, 0xcd, 1, 2, 3, 0xca}
	if b != want {
		t.Fatalf("CQE\n% x\nwant\n% x", b, want)
	}
	got, err := DecodeCQE(b[:])
	if err != nil || got != c {
		t.Fatalf("decode %v %+v", err, got)
	}
	if got.QPN() != 0x48 || !got.GRH() || got.SrcQPN() != 0x4849 || got.MLPath() != 5 || got.IsError() {
		t.Errorf("accessors: %#x %v %#x %d %v", got.QPN(), got.GRH(), got.SrcQPN(), got.MLPath(), got.IsError())
	}
	e := CQE{VlanMyQPN: 0x99, WQEIndex: 7, IsSend: true}
	e.SetError(CQE_SYNDROME_WR_FLUSH_ERR, 0x32)
	eb := EncodeCQE(e)
	if eb[ErrCQESyndrome] != 0x05 || eb[ErrCQEVendorErrSyndrome] != 0x32 || eb[31] != 0x40|0x1e || eb[25] != 7 {
		t.Errorf("error CQE % x", eb)
	}
	if d, _ := DecodeCQE(eb[:]); !d.IsError() || d.Syndrome() != 5 || d.VendorErr() != 0x32 {
		t.Errorf("error CQE decoded %+v", d)
	}
	if _, err := DecodeCQE(b[:31]); !errors.Is(err, ErrShort) {
		t.Errorf("31 bytes: %v", err)
	}
}

// get_sw_cqe: software owns CQE n when its owner bit is !!(n & nent).
func TestCQEOwner(t *testing.T) {
	const nent = 256
	for _, c := range []struct {
		n     uint32
		owner bool
		sw    bool
	}{
		{0, false, true}, {0, true, false}, {255, false, true}, {256, false, false}, {256, true, true},
		{511, true, true}, {512, false, true}, {512 + 3, true, false},
	} {
		if got := CQEOwnerSW(c.owner, c.n, nent); got != c.sw {
			t.Errorf("CQE %d owner %v: SW %v, want %v", c.n, c.owner, got, c.sw)
		}
		if CQEOwnerSW(CQEOwner(c.n, nent), c.n, nent) != true {
			t.Errorf("the device's owner bit for %d is not software's", c.n)
		}
	}
}

func TestWQEOwnerBitAndHeadroom(t *testing.T) {
	for _, c := range []struct {
		index, cnt uint32
		want       bool
	}{{0, 64, false}, {63, 64, false}, {64, 64, true}, {127, 64, true}, {128, 64, false}} {
		if got := WQEOwnerBit(c.index, c.cnt); got != c.want {
			t.Errorf("WQE %d of %d: owner %v, want %v", c.index, c.cnt, got, c.want)
		}
	}
	checkOffsets(t, "sq_spare_wqes", []off{{"64-byte stride", SQHeadroom(6), 33}, {"128-byte stride", SQHeadroom(7), 17},
		{"1 KiB stride", SQHeadroom(10), 3}})
}

// The hot path decodes without allocating.
func TestDataPathDecodersDoNotAllocate(t *testing.T) {
	var b [256]byte
	w := SendWQE{Ctrl: WQECtrl{Opcode: OPCODE_SEND}, HasDatagram: true, NSGE: 2}
	if _, err := EncodeSendWQE(b[:], &w, nil); err != nil {
		t.Fatal(err)
	}
	var sink int
	var s SendWQE
	var r RecvWQE
	if n := testing.AllocsPerRun(100, func() {
		_ = s.Decode(b[:], QP_ST_UD)
		_ = r.Decode(b[:], false)
		c, _ := DecodeCQE(b[:])
		sink += s.NSGE + r.NSGE + int(c.Opcode)
	}); n != 0 {
		t.Errorf("%v allocations per decode", n)
	}
	_ = sink
}

// TestIsAtomicOpcode: the send opcodes that read and write remote memory
// (mlx4_ib's MLX4_OPCODE_ATOMIC_CS 0x11, ATOMIC_FA 0x12, MASKED_ATOMIC_CS
// 0x14, MASKED_ATOMIC_FA 0x15), and no other of the 5-bit opcodes.
func TestIsAtomicOpcode(t *testing.T) {
	want := map[uint32]bool{0x11: true, 0x12: true, 0x14: true, 0x15: true}
	for op := uint32(0); op <= WQEOpcodeMask; op++ {
		if got := IsAtomicOpcode(op); got != want[op] {
			t.Errorf("IsAtomicOpcode(%#x) = %v", op, got)
		}
	}
}
