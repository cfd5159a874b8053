package mlx4

import (
	"encoding/binary"
	"errors"
	"testing"
)

// The offsets below are written out from the kernel structures, counted by
// hand from the C declarations, so that a wrong constant in this package
// fails here rather than being mirrored by its users.

type off struct {
	name      string
	got, want int
}

func checkOffsets(t *testing.T, what string, offs []off) {
	t.Helper()
	for _, o := range offs {
		if o.got != o.want {
			t.Errorf("%s.%s at %#x, the kernel has %#x", what, o.name, o.got, o.want)
		}
	}
}

// include/linux/mlx4/qp.h struct mlx4_qp_context and struct mlx4_qp_path.
func TestQPContextLayout(t *testing.T) {
	checkOffsets(t, "mlx4_qp_context", []off{
		{"flags", QPCFlags, 0}, {"pd", QPCPD, 4}, {"mtu_msgmax", QPCMTUMsgMax, 8},
		{"rq_size_stride", QPCRQSizeStride, 9}, {"sq_size_stride", QPCSQSizeStride, 10},
		{"rlkey_roce_mode", QPCRLKeyRoCEMode, 11}, {"usr_page", QPCUsrPage, 12},
		{"local_qpn", QPCLocalQPN, 16}, {"remote_qpn", QPCRemoteQPN, 20},
		{"pri_path", QPCPriPath, 24}, {"alt_path", QPCAltPath, 24 + 44},
		{"params1", QPCParams1, 24 + 88}, {"next_send_psn", QPCNextSendPSN, 120},
		{"cqn_send", QPCCQNSend, 124}, {"roce_entropy", QPCRoCEEntropy, 128},
		{"last_acked_psn", QPCLastAckedPSN, 136}, {"ssn", QPCSSN, 140}, {"params2", QPCParams2, 144},
		{"rnr_nextrecvpsn", QPCRNRNextRecvPSN, 148}, {"xrcd", QPCXRCD, 152}, {"cqn_recv", QPCCQNRecv, 156},
		{"db_rec_addr", QPCDBRecAddr, 160}, {"qkey", QPCQKey, 168}, {"srqn", QPCSRQN, 172},
		{"msn", QPCMSN, 176}, {"rq_wqe_counter", QPCRQWQECounter, 180}, {"sq_wqe_counter", QPCSQWQECounter, 182},
		{"rate_limit_params", QPCRateLimitParams, 188}, {"qos_vport", QPCQoSVport, 191},
		{"param3", QPCParam3, 192}, {"nummmcpeers_basemkey", QPCNumMMCPeersBaseMK, 196},
		{"log_page_size", QPCLogPageSize, 200}, {"mtt_base_addr_h", QPCMTTBaseAddrH, 203},
		{"mtt_base_addr_l", QPCMTTBaseAddrL, 204}, {"sizeof", QPContextSize, 248},
	})
	checkOffsets(t, "mlx4_qp_path", []off{
		{"fl", PathFL, 0}, {"vlan_control", PathVLANControl, 1}, {"disable_pkey_check", PathDisablePKeyCheck, 2},
		{"pkey_index", PathPKeyIndex, 3}, {"counter_index", PathCounterIndex, 4}, {"grh_mylmc", PathGRHMyLMC, 5},
		{"rlid", PathRLID, 6}, {"ackto", PathAckTO, 8}, {"mgid_index", PathMGIDIndex, 9},
		{"static_rate", PathStaticRate, 10}, {"hop_limit", PathHopLimit, 11},
		{"tclass_flowlabel", PathTClassFlowLabel, 12}, {"rgid", PathRGID, 16},
		{"sched_queue", PathSchedQueue, 32}, {"vlan_index", PathVLANIndex, 33}, {"feup", PathFEUP, 34},
		{"fvl_rx", PathFVLRx, 35}, {"dmac", PathDMAC, 38}, {"sizeof", QPPathSize, 44},
	})
	// The modify-QP mailbox offsets of research/mlx4-commchan.md §2.6.
	checkOffsets(t, "modify-QP mailbox", []off{
		{"optpar", QPMailboxOptPar, 0},
		{"pri_path.pkey_index", QPMailboxContext + QPCPriPath + PathPKeyIndex, 35},
		{"pri_path.mgid_index", QPMailboxContext + QPCPriPath + PathMGIDIndex, 41},
		{"pri_path.sched_queue", QPMailboxContext + QPCPriPath + PathSchedQueue, 64},
		{"cqn_send", QPMailboxContext + QPCCQNSend, 132}, {"cqn_recv", QPMailboxContext + QPCCQNRecv, 164},
		{"srqn", QPMailboxContext + QPCSRQN, 180}, {"rate_limit_params", QPMailboxContext + QPCRateLimitParams, 196},
		{"mtt_base_addr_l", QPMailboxContext + QPCMTTBaseAddrL, 212}, {"sizeof", QPMailboxSize, 256},
	})
	checkOffsets(t, "MLX4_QP_ST", []off{{"RC", QP_ST_RC, 0}, {"UC", QP_ST_UC, 1}, {"RD", QP_ST_RD, 2},
		{"UD", QP_ST_UD, 3}, {"XRC", QP_ST_XRC, 6}, {"MLX", QP_ST_MLX, 7}})
	checkOffsets(t, "MLX4_QP_OPTPAR", []off{{"ALT_ADDR_PATH", QP_OPTPAR_ALT_ADDR_PATH, 1 << 0},
		{"PKEY_INDEX", QP_OPTPAR_PKEY_INDEX, 1 << 4}, {"PRIMARY_ADDR_PATH", QP_OPTPAR_PRIMARY_ADDR_PATH, 1 << 7},
		{"PM_STATE", QP_OPTPAR_PM_STATE, 1 << 10}, {"RETRY_COUNT", QP_OPTPAR_RETRY_COUNT, 1 << 12},
		{"ACK_TIMEOUT", QP_OPTPAR_ACK_TIMEOUT, 1 << 14}, {"SCHED_QUEUE", QP_OPTPAR_SCHED_QUEUE, 1 << 16},
		{"COUNTER_INDEX", QP_OPTPAR_COUNTER_INDEX, 1 << 20}, {"VLAN_STRIPPING", QP_OPTPAR_VLAN_STRIPPING, 1 << 21},
		{"RATE_LIMIT", QP_OPTPAR_RATE_LIMIT, 1 << 23}})
	checkOffsets(t, "MLX4_QP_STATE", []off{{"RST", int(QP_STATE_RST), 0}, {"RTS", int(QP_STATE_RTS), 3},
		{"SQER", int(QP_STATE_SQER), 4}, {"SQD", int(QP_STATE_SQD), 5}, {"ERR", int(QP_STATE_ERR), 6}})
}

// drivers/net/ethernet/mellanox/mlx4/mlx4.h struct mlx4_cq_context.
func TestCQContextLayout(t *testing.T) {
	checkOffsets(t, "mlx4_cq_context", []off{
		{"flags", CQCFlags, 0}, {"page_offset", CQCPageOffset, 10}, {"logsize_usrpage", CQCLogSizeUsrPage, 12},
		{"cq_period", CQCCQPeriod, 16}, {"cq_max_count", CQCCQMaxCount, 18}, {"comp_eqn", CQCCompEQN, 23},
		{"log_page_size", CQCLogPageSize, 24}, {"mtt_base_addr_h", CQCMTTBaseAddrH, 27},
		{"mtt_base_addr_l", CQCMTTBaseAddrL, 28}, {"last_notified_index", CQCLastNotifiedIndex, 32},
		{"solicit_producer_index", CQCSolicitProducerIndex, 36}, {"consumer_index", CQCConsumerIndex, 40},
		{"producer_index", CQCProducerIndex, 44}, {"db_rec_addr", CQCDBRecAddr, 56}, {"sizeof", CQContextSize, 64},
	})
}

// drivers/net/ethernet/mellanox/mlx4/mlx4.h struct mlx4_srq_context.
func TestSRQContextLayout(t *testing.T) {
	checkOffsets(t, "mlx4_srq_context", []off{
		{"state_logsize_srqn", SRQCStateLogSizeSRQN, 0}, {"logstride", SRQCLogStride, 4}, {"xrcd", SRQCXRCD, 6},
		{"pg_offset_cqn", SRQCPgOffsetCQN, 8}, {"log_page_size", SRQCLogPageSize, 16},
		{"mtt_base_addr_h", SRQCMTTBaseAddrH, 19}, {"mtt_base_addr_l", SRQCMTTBaseAddrL, 20}, {"pd", SRQCPD, 24},
		{"limit_watermark", SRQCLimitWatermark, 28}, {"wqe_cnt", SRQCWQECnt, 30}, {"wqe_counter", SRQCWQECounter, 34},
		{"db_rec_addr", SRQCDBRecAddr, 40}, {"sizeof", SRQContextSize, 48},
	})
}

// drivers/net/ethernet/mellanox/mlx4/mlx4.h struct mlx4_eq_context.
func TestEQContextLayout(t *testing.T) {
	checkOffsets(t, "mlx4_eq_context", []off{
		{"flags", EQCFlags, 0}, {"page_offset", EQCPageOffset, 10}, {"log_eq_size", EQCLogEQSize, 12},
		{"eq_period", EQCEQPeriod, 17}, {"eq_max_count", EQCEQMaxCount, 19}, {"intr", EQCIntr, 23},
		{"log_page_size", EQCLogPageSize, 24}, {"mtt_base_addr_h", EQCMTTBaseAddrH, 27},
		{"mtt_base_addr_l", EQCMTTBaseAddrL, 28}, {"consumer_index", EQCConsumerIndex, 40},
		{"producer_index", EQCProducerIndex, 44}, {"sizeof", EQContextSize, 64},
	})
}

// drivers/net/ethernet/mellanox/mlx4/mlx4.h struct mlx4_mpt_entry (packed).
func TestMPTLayout(t *testing.T) {
	checkOffsets(t, "mlx4_mpt_entry", []off{
		{"flags", MPTFlags, 0}, {"qpn", MPTQPN, 4}, {"key", MPTKey, 8}, {"pd_flags", MPTPDFlags, 12},
		{"start", MPTStart, 16}, {"length", MPTLength, 24}, {"lkey", MPTLKey, 32}, {"win_cnt", MPTWinCnt, 36},
		{"mtt_rep", MPTMTTRep, 43}, {"mtt_addr", MPTMTTAddr, 44}, {"mtt_sz", MPTMTTSz, 52},
		{"entity_size", MPTEntitySize, 56}, {"first_byte_offset", MPTFirstByteOffset, 60}, {"sizeof", MPTEntrySize, 64},
	})
	checkOffsets(t, "MLX4_MPT_*", []off{{"FLAG_MIO", MPT_FLAG_MIO, 1 << 17}, {"FLAG_BIND_ENABLE", MPT_FLAG_BIND_ENABLE, 1 << 15},
		{"FLAG_PHYSICAL", MPT_FLAG_PHYSICAL, 1 << 9}, {"FLAG_REGION", MPT_FLAG_REGION, 1 << 8},
		{"PD_FLAG_FAST_REG", MPT_PD_FLAG_FAST_REG, 1 << 27}, {"PD_FLAG_EN_INV", MPT_PD_FLAG_EN_INV, 3 << 24},
		{"PD_MASK", MPT_PD_MASK, 0x1ffff}, {"PD_VF_MASK", MPT_PD_VF_MASK, 0xfe0000}, {"PERM_MASK", PERM_MASK, 0xfc00}})
}

func be32(b []byte, off int) uint32 { return binary.BigEndian.Uint32(b[off:]) }

// Encoding distinct values puts each at the byte the kernel structure has.
func TestQPMailboxGolden(t *testing.T) {
	m := QPMailbox{OptPar: 0x00810010, Ctx: QPContext{
		State: QP_STATE_RTR, ST: QP_ST_UD, RSS: true, PD: 0x123456, MTU: 5, MsgMax: 31,
		LogRQSize: 6, LogRQStride: 2, LogSQSize: 7, LogSQStride: 3, UsrPage: 0xabcdef,
		LocalQPN: 0x4242, RemoteQPN: 0x4343,
		Pri: QPPath{Port: 2, PKeyIndex: 3, CounterIndex: 0x7e, MGIDIndex: 4, GRH: true, SMACIndex: 5,
			RLID: 0xbeef, AckTimeout: 0x70, HopLimit: 64, RGID: [16]byte{0xfe, 0x80, 15: 1}},
		Alt:         QPPath{Port: 1, PKeyIndex: 9, MGIDIndex: 10},
		NextSendPSN: 0x111111, CQNSend: 0x222, PageOffset: 3, RNRNextRecvPSN: 0x333333, XRCD: 0x44,
		CQNRecv: 0x555, DBRecAddr: 0x0102030405060708, QKey: 0x80010000, UseSRQ: true, SRQN: 0x666,
		RateLimitParams: 0x7777, LogPageSize: 2, MTTBase: 0x1_0000_0009,
	}}
	var b [QPMailboxSize]byte
	m.Encode(b[:])
	for _, c := range []struct {
		name      string
		got, want uint32
	}{
		{"optpar@0", be32(b[:], 0), 0x00810010},
		{"flags@8", be32(b[:], 8), 2<<28 | 3<<16 | 1<<13},
		{"pd@12", be32(b[:], 12), 0x123456},
		{"mtu_msgmax@16", uint32(b[16]), 5<<5 | 31},
		{"rq_size_stride@17", uint32(b[17]), 6<<3 | 2},
		{"sq_size_stride@18", uint32(b[18]), 7<<3 | 3},
		{"usr_page@20", be32(b[:], 20), 0xabcdef},
		{"local_qpn@24", be32(b[:], 24), 0x4242},
		{"remote_qpn@28", be32(b[:], 28), 0x4343},
		{"pri pkey_index@35", uint32(b[35]), 3},
		{"pri counter_index@36", uint32(b[36]), 0x7e},
		{"pri grh_mylmc@37", uint32(b[37]), 0x85},
		{"pri rlid@38", uint32(b[38])<<8 | uint32(b[39]), 0xbeef},
		{"pri ackto@40", uint32(b[40]), 0x70},
		{"pri mgid_index@41", uint32(b[41]), 4},
		{"pri hop_limit@43", uint32(b[43]), 64},
		{"pri rgid@48", be32(b[:], 48), 0xfe800000},
		{"pri sched_queue@64", uint32(b[64]), 0x83 | 1<<6},
		{"alt pkey_index@79", uint32(b[79]), 9},
		{"alt mgid_index@85", uint32(b[85]), 10},
		{"alt sched_queue@108", uint32(b[108]), 0x83},
		{"next_send_psn@128", be32(b[:], 128), 0x111111},
		{"cqn_send@132", be32(b[:], 132), 0x222},
		{"params2@152", be32(b[:], 152), 3 << 6},
		{"rnr_nextrecvpsn@156", be32(b[:], 156), 0x333333},
		{"xrcd@160", be32(b[:], 160), 0x44},
		{"cqn_recv@164", be32(b[:], 164), 0x555},
		{"db_rec_addr@168", be32(b[:], 168), 0x01020304},
		{"qkey@176", be32(b[:], 176), 0x80010000},
		{"srqn@180", be32(b[:], 180), 1<<24 | 0x666},
		{"rate_limit_params@196", uint32(b[196])<<8 | uint32(b[197]), 0x7777},
		{"log_page_size@208", uint32(b[208]), 2},
		{"mtt_base_addr_h@211", uint32(b[211]), 8}, // 8 * (2^32 + 9) = 0x8_0000_0048
		{"mtt_base_addr_l@212", be32(b[:], 212), 0x48},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
	got, err := DecodeQPMailbox(b[:])
	if err != nil || got != m {
		t.Fatalf("decode: %v\n got %+v\nwant %+v", err, got, m)
	}
}

func TestContextGolden(t *testing.T) {
	var cq [CQContextSize]byte
	CQContext{LogSize: 7, UsrPage: 0x12, CompEQN: 9, LogPageSize: 1, MTTBase: 0x1_0000_0001,
		Period: 0x10, MaxCount: 0x20, DBRecAddr: 0xdb00}.Encode(cq[:])
	if be32(cq[:], 0x0c) != 7<<24|0x12 || cq[0x11] != 0x10 || cq[0x13] != 0x20 || cq[0x17] != 9 || cq[0x18] != 1 ||
		cq[0x1b] != 8 || be32(cq[:], 0x1c) != 8 || be32(cq[:], 0x3c) != 0xdb00 {
		t.Errorf("CQ context %x", cq)
	}
	var eq [EQContextSize]byte
	EQContext{LogSize: 10, LogPageSize: 1, MTTBase: 3, Intr: 4, Period: 5, MaxCount: 6, Consumer: 7, Producer: 8}.Encode(eq[:])
	if be32(eq[:], 0) != 9<<8 || eq[0x0c] != 10 || eq[0x11] != 5 || eq[0x13] != 6 || eq[0x17] != 4 || eq[0x18] != 1 ||
		be32(eq[:], 0x1c) != 24 || be32(eq[:], 0x28) != 7 || be32(eq[:], 0x2c) != 8 {
		t.Errorf("EQ context %x", eq)
	}
	var srq [SRQContextSize]byte
	SRQContext{SRQN: 0x55, LogSize: 4, LogStride: 2, XRCD: 0x66, CQN: 0x77, LogPageSize: 1, MTTBase: 2,
		PD: 0x88, LimitWatermark: 0x99, DBRecAddr: 0xaa}.Encode(srq[:])
	if be32(srq[:], 0) != 4<<24|0x55 || srq[4] != 2 || srq[7] != 0x66 || be32(srq[:], 8) != 0x77 || srq[0x10] != 1 ||
		be32(srq[:], 0x14) != 16 || be32(srq[:], 0x18) != 0x88 || srq[0x1d] != 0x99 || srq[0x2f] != 0xaa {
		t.Errorf("SRQ context %x", srq)
	}
	// The key field holds key_to_hw_index(key), the MPT index (mlx4_mr_enable);
	// lkey (0x20) is left zero.
	var mpt [MPTEntrySize]byte
	MPT{Access: PERM_LOCAL_READ | PERM_REMOTE_WRITE, QPN: 0x31, Key: KeyOf(0x10), PD: 1, Start: 0x3000,
		Length: 0x2000, MTTBase: 5, MTTSize: 2, EntitySize: 12}.Encode(mpt[:])
	if be32(mpt[:], 0) != 1<<17|1<<8|1<<10|1<<13 || be32(mpt[:], 4) != 0x31 || be32(mpt[:], 8) != 0x10 ||
		be32(mpt[:], 0x0c) != 3<<24|1 || be32(mpt[:], 0x14) != 0x3000 || be32(mpt[:], 0x1c) != 0x2000 ||
		be32(mpt[:], 0x20) != 0 || be32(mpt[:], 0x30) != 40 || be32(mpt[:], 0x34) != 2 || be32(mpt[:], 0x38) != 12 {
		t.Errorf("MPT %x", mpt)
	}
	var w [64]byte
	if n := EncodeWriteMTT(w[:], 7, []uint64{0x4000, 0x5000}); n != 32 || be32(w[:], 4) != 7 ||
		be32(w[:], 20) != 0x4001 || be32(w[:], 28) != 0x5001 {
		t.Errorf("WRITE_MTT %x (%d bytes)", w, n)
	}
}

// Sizes from VF exponents follow the *_get_mtt_size rules and are clamped.
func TestMTTPages(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"CQ 2^7 CQEs", CQContext{LogSize: 7}.MTTPages(), 1},
		{"CQ 2^10 CQEs", CQContext{LogSize: 10}.MTTPages(), 8},
		{"CQ 2^31 CQEs", CQContext{LogSize: 31}.MTTPages(), 1 << 24},
		{"EQ huge pages", EQContext{LogSize: 10, LogPageSize: 63}.MTTPages(), 1},
		{"SRQ 2^4 x 64", SRQContext{LogSize: 8, LogStride: 2}.MTTPages(), 4},
		{"QP sq+rq", QPContext{LogSQSize: 7, LogSQStride: 2, LogRQSize: 7, LogRQStride: 2}.MTTPages(), 4},
		{"QP sq only (SRQ)", QPContext{LogSQSize: 7, LogSQStride: 2, UseSRQ: true, LogRQSize: 15}.MTTPages(), 2},
		{"QP no page offset", QPContext{LogSQSize: 4, LogSQStride: 4, LogRQSize: 3, LogRQStride: 4}.MTTPages(), 1},
		{"QP page offset", QPContext{LogSQSize: 4, LogSQStride: 4, LogRQSize: 3, LogRQStride: 4, PageOffset: 63}.MTTPages(), 2},
		{"QP RSS", QPContext{LogSQSize: 4, LogSQStride: 4, LogRQSize: 15, LogRQStride: 7, RSS: true}.MTTPages(), 1},
		{"QP XRC", QPContext{ST: QP_ST_XRC, LogSQSize: 4, LogSQStride: 4, LogRQSize: 15, LogRQStride: 7}.MTTPages(), 1},
		{"QP tiny", QPContext{}.MTTPages(), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d pages, want %d", c.name, c.got, c.want)
		}
	}
	if n := (CQContext{LogSize: 31, LogPageSize: -30}).MTTPages(); n != 1<<MaxSizeExponent {
		t.Errorf("clamp: %d", n)
	}
}

func TestShort(t *testing.T) {
	for name, err := range map[string]error{
		"qp":  second(DecodeQPMailbox(make([]byte, QPMailboxSize-1))),
		"qpc": second(DecodeQPContext(make([]byte, QPContextSize-1))),
		"cq":  second(DecodeCQContext(make([]byte, CQContextSize-1))),
		"srq": second(DecodeSRQContext(make([]byte, SRQContextSize-1))),
		"eq":  second(DecodeEQContext(nil)),
		"mpt": second(DecodeMPT(make([]byte, MPTEntrySize-1))),
	} {
		if !errors.Is(err, ErrShort) {
			t.Errorf("%s: %v, want ErrShort", name, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestQPStateNames(t *testing.T) {
	for _, s := range []string{"rst", "INIT", "rtr", "rts", "sqe", "sqer", "sqd", "err"} {
		if _, ok := ParseQPState(s); !ok {
			t.Errorf("ParseQPState(%q)", s)
		}
	}
	if QP_STATE_SQER.String() != "SQER" || QPState(9).String() != "state9" {
		t.Error(QP_STATE_SQER, QPState(9))
	}
}

// drivers/net/ethernet/mellanox/mlx4/fw.c: the QUERY_* and INIT_HCA_*
// macros, written out from the kernel.
func TestQueryOutboxLayout(t *testing.T) {
	checkOffsets(t, "QUERY_FW", []off{{"VER", QUERY_FW_VER_OFFSET, 0x00}, {"PPF_ID", QUERY_FW_PPF_ID, 0x09},
		{"OUT_SIZE", QUERY_FW_OUT_SIZE, 0x100}, {"MLX4_INVALID_SLAVE_ID", INVALID_SLAVE_ID, 0xff}})
	checkOffsets(t, "QUERY_DEV_CAP", []off{
		{"MAX_SRQ_SZ", QUERY_DEV_CAP_MAX_SRQ_SZ_OFFSET, 0x10}, {"MAX_QP_SZ", QUERY_DEV_CAP_MAX_QP_SZ_OFFSET, 0x11},
		{"RSVD_QP", QUERY_DEV_CAP_RSVD_QP_OFFSET, 0x12}, {"MAX_QP", QUERY_DEV_CAP_MAX_QP_OFFSET, 0x13},
		{"RSVD_SRQ", QUERY_DEV_CAP_RSVD_SRQ_OFFSET, 0x14}, {"MAX_SRQ", QUERY_DEV_CAP_MAX_SRQ_OFFSET, 0x15},
		{"MAX_CQ_SZ", QUERY_DEV_CAP_MAX_CQ_SZ_OFFSET, 0x19}, {"RSVD_CQ", QUERY_DEV_CAP_RSVD_CQ_OFFSET, 0x1a},
		{"MAX_CQ", QUERY_DEV_CAP_MAX_CQ_OFFSET, 0x1b}, {"MAX_MPT", QUERY_DEV_CAP_MAX_MPT_OFFSET, 0x1d},
		{"RSVD_EQ", QUERY_DEV_CAP_RSVD_EQ_OFFSET, 0x1e}, {"MAX_EQ", QUERY_DEV_CAP_MAX_EQ_OFFSET, 0x1f},
		{"RSVD_MTT", QUERY_DEV_CAP_RSVD_MTT_OFFSET, 0x20}, {"MAX_MRW_SZ", QUERY_DEV_CAP_MAX_MRW_SZ_OFFSET, 0x21},
		{"RSVD_MRW", QUERY_DEV_CAP_RSVD_MRW_OFFSET, 0x22}, {"MAX_MTT_SEG", QUERY_DEV_CAP_MAX_MTT_SEG_OFFSET, 0x23},
		{"MAX_AV", QUERY_DEV_CAP_MAX_AV_OFFSET, 0x27}, {"MAX_REQ_QP", QUERY_DEV_CAP_MAX_REQ_QP_OFFSET, 0x29},
		{"MAX_RES_QP", QUERY_DEV_CAP_MAX_RES_QP_OFFSET, 0x2b}, {"MAX_RDMA", QUERY_DEV_CAP_MAX_RDMA_OFFSET, 0x2f},
		{"ACK_DELAY", QUERY_DEV_CAP_ACK_DELAY_OFFSET, 0x35}, {"MTU_WIDTH", QUERY_DEV_CAP_MTU_WIDTH_OFFSET, 0x36},
		{"VL_PORT", QUERY_DEV_CAP_VL_PORT_OFFSET, 0x37}, {"MAX_MSG_SZ", QUERY_DEV_CAP_MAX_MSG_SZ_OFFSET, 0x38},
		{"MAX_GID", QUERY_DEV_CAP_MAX_GID_OFFSET, 0x3b}, {"MAX_PKEY", QUERY_DEV_CAP_MAX_PKEY_OFFSET, 0x3f},
		{"EXT_FLAGS", QUERY_DEV_CAP_EXT_FLAGS_OFFSET, 0x40}, {"FLAGS", QUERY_DEV_CAP_FLAGS_OFFSET, 0x44},
		{"RSVD_UAR", QUERY_DEV_CAP_RSVD_UAR_OFFSET, 0x48}, {"UAR_SZ", QUERY_DEV_CAP_UAR_SZ_OFFSET, 0x49},
		{"PAGE_SZ", QUERY_DEV_CAP_PAGE_SZ_OFFSET, 0x4b}, {"BF", QUERY_DEV_CAP_BF_OFFSET, 0x4c},
		{"MAX_SG_SQ", QUERY_DEV_CAP_MAX_SG_SQ_OFFSET, 0x51}, {"MAX_DESC_SZ_SQ", QUERY_DEV_CAP_MAX_DESC_SZ_SQ_OFFSET, 0x52},
		{"MAX_SG_RQ", QUERY_DEV_CAP_MAX_SG_RQ_OFFSET, 0x55}, {"MAX_DESC_SZ_RQ", QUERY_DEV_CAP_MAX_DESC_SZ_RQ_OFFSET, 0x56},
		{"MAX_QP_MCG", QUERY_DEV_CAP_MAX_QP_MCG_OFFSET, 0x61}, {"RSVD_MCG", QUERY_DEV_CAP_RSVD_MCG_OFFSET, 0x62},
		{"MAX_MCG", QUERY_DEV_CAP_MAX_MCG_OFFSET, 0x63}, {"RSVD_PD", QUERY_DEV_CAP_RSVD_PD_OFFSET, 0x64},
		{"MAX_PD", QUERY_DEV_CAP_MAX_PD_OFFSET, 0x65}, {"RSVD_XRC", QUERY_DEV_CAP_RSVD_XRC_OFFSET, 0x66},
		{"MAX_XRC", QUERY_DEV_CAP_MAX_XRC_OFFSET, 0x67}, {"MAX_COUNTERS", QUERY_DEV_CAP_MAX_COUNTERS_OFFSET, 0x68},
		{"RDMARC_ENTRY_SZ", QUERY_DEV_CAP_RDMARC_ENTRY_SZ_OFFSET, 0x80}, {"QPC_ENTRY_SZ", QUERY_DEV_CAP_QPC_ENTRY_SZ_OFFSET, 0x82},
		{"AUX_ENTRY_SZ", QUERY_DEV_CAP_AUX_ENTRY_SZ_OFFSET, 0x84}, {"ALTC_ENTRY_SZ", QUERY_DEV_CAP_ALTC_ENTRY_SZ_OFFSET, 0x86},
		{"EQC_ENTRY_SZ", QUERY_DEV_CAP_EQC_ENTRY_SZ_OFFSET, 0x88}, {"CQC_ENTRY_SZ", QUERY_DEV_CAP_CQC_ENTRY_SZ_OFFSET, 0x8a},
		{"SRQ_ENTRY_SZ", QUERY_DEV_CAP_SRQ_ENTRY_SZ_OFFSET, 0x8c}, {"C_MPT_ENTRY_SZ", QUERY_DEV_CAP_C_MPT_ENTRY_SZ_OFFSET, 0x8e},
		{"MTT_ENTRY_SZ", QUERY_DEV_CAP_MTT_ENTRY_SZ_OFFSET, 0x90}, {"D_MPT_ENTRY_SZ", QUERY_DEV_CAP_D_MPT_ENTRY_SZ_OFFSET, 0x92},
		{"RSVD_LKEY", QUERY_DEV_CAP_RSVD_LKEY_OFFSET, 0x98}, {"MAX_ICM_SZ", QUERY_DEV_CAP_MAX_ICM_SZ_OFFSET, 0xa0},
	})
	checkOffsets(t, "QUERY_FUNC_CAP", []off{
		{"FLAGS", QUERY_FUNC_CAP_FLAGS_OFFSET, 0x0}, {"NUM_PORTS", QUERY_FUNC_CAP_NUM_PORTS_OFFSET, 0x1},
		{"PF_BHVR", QUERY_FUNC_CAP_PF_BHVR_OFFSET, 0x4}, {"FMR", QUERY_FUNC_CAP_FMR_OFFSET, 0x8},
		{"QP_QUOTA_DEP", QUERY_FUNC_CAP_QP_QUOTA_OFFSET_DEP, 0x10}, {"CQ_QUOTA_DEP", QUERY_FUNC_CAP_CQ_QUOTA_OFFSET_DEP, 0x14},
		{"SRQ_QUOTA_DEP", QUERY_FUNC_CAP_SRQ_QUOTA_OFFSET_DEP, 0x18}, {"MPT_QUOTA_DEP", QUERY_FUNC_CAP_MPT_QUOTA_OFFSET_DEP, 0x20},
		{"MTT_QUOTA_DEP", QUERY_FUNC_CAP_MTT_QUOTA_OFFSET_DEP, 0x24}, {"MCG_QUOTA_DEP", QUERY_FUNC_CAP_MCG_QUOTA_OFFSET_DEP, 0x28},
		{"MAX_EQ", QUERY_FUNC_CAP_MAX_EQ_OFFSET, 0x2c}, {"RESERVED_EQ", QUERY_FUNC_CAP_RESERVED_EQ_OFFSET, 0x30},
		{"QP_RESD_LKEY", QUERY_FUNC_CAP_QP_RESD_LKEY_OFFSET, 0x48}, {"QP_QUOTA", QUERY_FUNC_CAP_QP_QUOTA_OFFSET, 0x50},
		{"CQ_QUOTA", QUERY_FUNC_CAP_CQ_QUOTA_OFFSET, 0x54}, {"SRQ_QUOTA", QUERY_FUNC_CAP_SRQ_QUOTA_OFFSET, 0x58},
		{"MPT_QUOTA", QUERY_FUNC_CAP_MPT_QUOTA_OFFSET, 0x60}, {"MTT_QUOTA", QUERY_FUNC_CAP_MTT_QUOTA_OFFSET, 0x64},
		{"MCG_QUOTA", QUERY_FUNC_CAP_MCG_QUOTA_OFFSET, 0x68}, {"EXTRA_FLAGS", QUERY_FUNC_CAP_EXTRA_FLAGS_OFFSET, 0x6c},
		{"PHYS_PORT", QUERY_FUNC_CAP_PHYS_PORT_OFFSET, 0x3}, {"PRIV_VF_QKEY", QUERY_FUNC_CAP_PRIV_VF_QKEY_OFFSET, 0x4}, {"FLAGS0", QUERY_FUNC_CAP_FLAGS0_OFFSET, 0x8},
		{"FLAGS1", QUERY_FUNC_CAP_FLAGS1_OFFSET, 0xc}, {"QP0_TUNNEL", QUERY_FUNC_CAP_QP0_TUNNEL, 0x10},
		{"QP0_PROXY", QUERY_FUNC_CAP_QP0_PROXY, 0x14}, {"QP1_TUNNEL", QUERY_FUNC_CAP_QP1_TUNNEL, 0x18},
		{"QP1_PROXY", QUERY_FUNC_CAP_QP1_PROXY, 0x1c}, {"PHYS_PORT_ID", QUERY_FUNC_CAP_PHYS_PORT_ID, 0x28},
		{"FLAG_RDMA", QUERY_FUNC_CAP_FLAG_RDMA, 0x40}, {"FLAG_ETH", QUERY_FUNC_CAP_FLAG_ETH, 0x80},
		{"FLAG_QUOTAS", QUERY_FUNC_CAP_FLAG_QUOTAS, 0x10}, {"FLAG_RESD_LKEY", QUERY_FUNC_CAP_FLAG_RESD_LKEY, 0x08},
		{"FLAG_VALID_MAILBOX", QUERY_FUNC_CAP_FLAG_VALID_MAILBOX, 0x04}, {"FLAGS1_NIC_INFO", QUERY_FUNC_CAP_FLAGS1_NIC_INFO, 0x10}, {"VF_ENABLE_QP0", QUERY_FUNC_CAP_VF_ENABLE_QP0, 0x08},
	})
	checkOffsets(t, "QUERY_PORT", []off{
		{"SUPPORTED_TYPE", QUERY_PORT_SUPPORTED_TYPE_OFFSET, 0x00}, {"MTU", QUERY_PORT_MTU_OFFSET, 0x01},
		{"ETH_MTU", QUERY_PORT_ETH_MTU_OFFSET, 0x02}, {"WIDTH", QUERY_PORT_WIDTH_OFFSET, 0x06},
		{"MAX_GID_PKEY", QUERY_PORT_MAX_GID_PKEY_OFFSET, 0x07}, {"MAX_MACVLAN", QUERY_PORT_MAX_MACVLAN_OFFSET, 0x0a},
		{"MAX_VL", QUERY_PORT_MAX_VL_OFFSET, 0x0b}, {"CUR_MAX_PKEY", QUERY_PORT_CUR_MAX_PKEY_OFFSET, 0x0c},
		{"CUR_MAX_GID", QUERY_PORT_CUR_MAX_GID_OFFSET, 0x0e}, {"MAC", QUERY_PORT_MAC_OFFSET, 0x10},
		{"MLX4_PORT_LINK_UP_MASK", PORT_LINK_UP_MASK, 0x80}, {"MLX4_VF_PORT_NO_LINK_SENSE_MASK", VF_PORT_NO_LINK_SENSE_MASK, 0xe0},
	})
	checkOffsets(t, "mlx4_rss_context", []off{
		{"MLX4_RSS_OFFSET_IN_QPC_PRI_PATH", RSS_OFFSET_IN_QPC_PRI_PATH, 0x24}, {"base_qpn", RSSBaseQPN, 0},
		{"default_qpn", RSSDefaultQPN, 4}, {"hash_fn", RSSHashFn, 10}, {"flags", RSSFlags, 11}, {"rss_key", RSSKey, 12},
		{"MLX4_EN_RSS_KEY_SIZE", RSSKeySize, 40}, {"base_qpn_udp", RSSBaseQPNUDP, 52}, {"sizeof", RSSContextSize, 56},
		{"log rings shift", RSSLogRingsShift, 24}, {"MLX4_RSS_HASH_XOR", RSS_HASH_XOR, 0}, {"MLX4_RSS_HASH_TOP", RSS_HASH_TOP, 1},
		{"MLX4_RSS_UDP_IPV6", RSS_UDP_IPV6, 1}, {"MLX4_RSS_UDP_IPV4", RSS_UDP_IPV4, 2}, {"MLX4_RSS_TCP_IPV6", RSS_TCP_IPV6, 4},
		{"MLX4_RSS_IPV6", RSS_IPV6, 8}, {"MLX4_RSS_TCP_IPV4", RSS_TCP_IPV4, 0x10}, {"MLX4_RSS_IPV4", RSS_IPV4, 0x20},
	})
	checkOffsets(t, "SET_PORT", []off{
		{"MLX4_SET_PORT_ETH_OPCODE", SET_PORT_ETH_OPCODE, 0x1}, {"MLX4_SET_PORT_BEACON_OPCODE", SET_PORT_BEACON_OPCODE, 0x4},
		{"MLX4_SET_PORT_GENERAL", SET_PORT_GENERAL, 0x0}, {"MLX4_SET_PORT_RQP_CALC", SET_PORT_RQP_CALC, 0x1},
		{"MLX4_SET_PORT_GID_TABLE", SET_PORT_GID_TABLE, 0x5}, {"MLX4_SET_PORT_ROCE_ADDR", SET_PORT_ROCE_ADDR, 0xd},
		{"type shift", SetPortTypeShift, 8}, {"IB cap mask", SetPortIBCapMaskOffset, 4},
		{"MLX4_PORT_CAP_IS_SM", PORT_CAP_IS_SM, 0x2}, {"MLX4_PORT_CAP_DEV_MGMT_SUP", PORT_CAP_DEV_MGMT_SUP, 0x80000},
		{"MLX4_ROCE_MAX_GIDS", ROCE_MAX_GIDS, 128}, {"MLX4_ROCE_PF_GIDS", ROCE_PF_GIDS, 16}, {"MLX4_ROCE_GID_ENTRY_SIZE", ROCE_GID_ENTRY_SIZE, 16},
	})
	checkOffsets(t, "QUERY_ADAPTER", []off{{"INTA_PIN", QUERY_ADAPTER_INTA_PIN_OFFSET, 0x10},
		{"VSD", QUERY_ADAPTER_VSD_OFFSET, 0x20}, {"VSD_OFFSET_MLX_BOARD_ID", VSD_OFFSET_MLX_BOARD_ID, 0xd0}})
	checkOffsets(t, "INIT_HCA", []off{
		{"VERSION", INIT_HCA_VERSION_OFFSET, 0x000}, {"CACHELINE_SZ", INIT_HCA_CACHELINE_SZ_OFFSET, 0x0e},
		{"FLAGS", INIT_HCA_FLAGS_OFFSET, 0x014}, {"DEVICE_MANAGED_FLOW_STEERING_EN", INIT_HCA_DEVICE_MANAGED_FLOW_STEERING_EN, 6},
		{"UC_STEERING", INIT_HCA_UC_STEERING_OFFSET, 0xd8},
		{"LOG_QP", INIT_HCA_LOG_QP_OFFSET, 0x37}, {"LOG_SRQ", INIT_HCA_LOG_SRQ_OFFSET, 0x4f},
		{"LOG_CQ", INIT_HCA_LOG_CQ_OFFSET, 0x57}, {"EQE_CQE", INIT_HCA_EQE_CQE_OFFSETS, 0x58},
		{"LOG_EQ", INIT_HCA_LOG_EQ_OFFSET, 0x87}, {"LOG_RD", INIT_HCA_LOG_RD_OFFSET, 0x97},
		{"LOG_MC_ENTRY_SZ", INIT_HCA_LOG_MC_ENTRY_SZ_OFFSET, 0xd3},
		{"LOG_MC_HASH_SZ", INIT_HCA_LOG_MC_HASH_SZ_OFFSET, 0xd7}, {"LOG_MC_TABLE_SZ", INIT_HCA_LOG_MC_TABLE_SZ_OFFSET, 0xdb},
		{"LOG_MPT_SZ", INIT_HCA_LOG_MPT_SZ_OFFSET, 0xfb}, {"LOG_UAR_SZ", INIT_HCA_LOG_UAR_SZ_OFFSET, 0x12a},
		{"UAR_PAGE_SZ", INIT_HCA_UAR_PAGE_SZ_OFFSET, 0x12b},
	})
	// include/linux/mlx4/device.h MLX4_DEV_CAP_FLAG_*: bit numbers.
	for name, c := range map[string]struct {
		got uint64
		bit uint
	}{
		"RC": {DEV_CAP_FLAG_RC, 0}, "UC": {DEV_CAP_FLAG_UC, 1}, "UD": {DEV_CAP_FLAG_UD, 2}, "XRC": {DEV_CAP_FLAG_XRC, 3},
		"SRQ": {DEV_CAP_FLAG_SRQ, 6}, "IPOIB_CSUM": {DEV_CAP_FLAG_IPOIB_CSUM, 7}, "BAD_PKEY_CNTR": {DEV_CAP_FLAG_BAD_PKEY_CNTR, 8},
		"BAD_QKEY_CNTR": {DEV_CAP_FLAG_BAD_QKEY_CNTR, 9}, "APM": {DEV_CAP_FLAG_APM, 17}, "ATOMIC": {DEV_CAP_FLAG_ATOMIC, 18},
		"UD_AV_PORT": {DEV_CAP_FLAG_UD_AV_PORT, 20}, "UD_MCAST": {DEV_CAP_FLAG_UD_MCAST, 21}, "IBOE": {DEV_CAP_FLAG_IBOE, 30},
		"COUNTERS": {DEV_CAP_FLAG_COUNTERS, 48}, "PORT_MNG_CHG_EV": {DEV_CAP_FLAG_PORT_MNG_CHG_EV, 59},
	} {
		if c.got != 1<<c.bit {
			t.Errorf("MLX4_DEV_CAP_FLAG_%s = %#x, the kernel has bit %d", name, c.got, c.bit)
		}
	}
}

// drivers/net/ethernet/mellanox/mlx4/fw.c struct mlx4_access_reg and
// include/linux/mlx4/device.h struct mlx4_ptys_reg (both packed).
func TestAccessRegLayout(t *testing.T) {
	checkOffsets(t, "mlx4_access_reg", []off{
		{"constant1", AccessRegConstant1, 0}, {"status", AccessRegStatus, 2}, {"reg_id", AccessRegRegID, 4},
		{"method", AccessRegMethod, 6}, {"constant2", AccessRegConstant2, 7}, {"len_const", AccessRegLenConst, 16},
		{"reg_data", ACCESS_REG_HEADER_SIZE, 20}, {"MLX4_REG_ID_PTYS", REG_ID_PTYS, 0x5004},
		{"MLX4_ACCESS_REG_QUERY", ACCESS_REG_QUERY, 1}, {"MLX4_ACCESS_REG_WRITE", ACCESS_REG_WRITE, 2},
	})
	checkOffsets(t, "mlx4_ptys_reg", []off{
		{"flags", PTYSFlags, 0}, {"local_port", PTYSLocalPort, 1}, {"proto_mask", PTYSProtoMask, 3},
		{"eth_proto_cap", PTYSEthProtoCap, 12}, {"ib_width_cap", PTYSIBWidthCap, 16}, {"ib_speed_cap", PTYSIBSpeedCap, 18},
		{"eth_proto_admin", PTYSEthProtoAdmin, 24}, {"ib_width_admin", PTYSIBWidthAdmin, 28}, {"ib_speed_admin", PTYSIBSpeedAdmin, 30},
		{"eth_proto_oper", PTYSEthProtoOper, 36}, {"ib_width_oper", PTYSIBWidthOper, 40}, {"ib_speed_oper", PTYSIBSpeedOper, 42},
		{"eth_proto_lp_adv", PTYSEthProtoLPAdv, 48}, {"sizeof", PTYSRegSize, 52},
		{"MLX4_PTYS_IB", PTYS_IB, 1}, {"MLX4_PTYS_EN", PTYS_EN, 4},
		{"MLX4_40GBASE_CR4", LINK_MODE_40GBASE_CR4, 6}, {"MLX4_10GBASE_CR", LINK_MODE_10GBASE_CR, 12},
	})
	// mlx4_ACCESS_REG's header for a PTYS query of port 2, IB.
	var in [MailboxSize]byte
	EncodeAccessRegPTYS(&in, ACCESS_REG_QUERY, 2, PTYS_IB)
	want := []byte{0x08, 0x04, 0, 0, 0x50, 0x04, 0x01, 0x01, 16: 0x30, 17: 0x0e, 20: 0, 21: 2, 22: 0, 23: 1}
	if string(in[:len(want)]) != string(want) {
		t.Errorf("PTYS query inbox % x\n                 want % x", in[:len(want)], want)
	}
}

// include/linux/mlx4/device.h struct mlx4_eqe.
func TestEQELayout(t *testing.T) {
	checkOffsets(t, "mlx4_eqe", []off{
		{"type", EQEType, 1}, {"subtype", EQESubtype, 3}, {"event", EQEData, 4},
		{"event.cmd.token", EQECmdToken, 4 + 2}, {"event.cmd.status", EQECmdStatus, 4 + 11},
		{"event.cmd.out_param", EQECmdOutParam, 4 + 12}, {"event.port_change.port", EQEPortChangePort, 4 + 8},
		{"event.cq_err.syndrome", EQECQErrSyndrome, 4 + 11},
		// port_mgmt_change is packed: u8 reserved[3], u8 port, then params
		// (port_info: __be16 mstr_sm_lid, __be16 port_lid, __be32 changed_attr).
		{"event.port_mgmt_change.port", EQEPortMngChgPort, 4 + 3},
		{"event.port_mgmt_change.params.port_info.changed_attr", EQEPortMngChgChangedAttr, 4 + 4 + 2 + 2},
		{"slave_id", EQESlaveID, 28}, {"owner", EQEOwner, 31},
		{"sizeof", EQESize, 32},
	})
}

// The object-number widths and the MAP_EQ in_modifier bits: eq.c
// mlx4_MAP_EQ ((unmap << 31) | eq_num) and mlx4_MAP_EQ_wrapper (& 0x3FF),
// mlx4_eq_int's & 0xffffff of qpn, cqn and srqn, resource_tracker.c's
// & 0x7fffff of a QPN and qp_alloc_res's & 0xffffff of the count; the
// PORT_CHANGE subtypes, MLX4_EVENT_TYPES_NUM, MLX4_MAC_MASK and the MAC/VLAN
// table sizes of device.h, port.c's MLX4_VLAN_MASK; update_gid's mgid_index
// bits and the sched_queue port bit.
func TestMasksAndBits(t *testing.T) {
	checkOffsets(t, "masks", []off{
		{"opcode", OpcodeMask, 0xfff}, {"MAP_EQ unmap", MAP_EQ_UNMAP, 0x80000000}, {"MAP_EQ eqn", EQNMask, 0x3ff},
		// fw.c mlx4_QUERY_DEV_CAP: 1 << (field & 0xf), 1 << (field & 0x1f), field >> 4, ...
		{"DEV_CAP rsvd_qp", QUERY_DEV_CAP_RSVD_QP_MASK, 0xf}, {"DEV_CAP max_qp", QUERY_DEV_CAP_MAX_QP_MASK, 0x1f},
		{"DEV_CAP rsvd_srq >>", QUERY_DEV_CAP_RSVD_SRQ_SHIFT, 4}, {"DEV_CAP max_srq", QUERY_DEV_CAP_MAX_SRQ_MASK, 0x1f},
		{"DEV_CAP rsvd_cq", QUERY_DEV_CAP_RSVD_CQ_MASK, 0xf}, {"DEV_CAP max_cq", QUERY_DEV_CAP_MAX_CQ_MASK, 0x1f},
		{"DEV_CAP max_mpt", QUERY_DEV_CAP_MAX_MPT_MASK, 0x3f}, {"DEV_CAP rsvd_eq", QUERY_DEV_CAP_RSVD_EQ_MASK, 0xf},
		{"DEV_CAP max_eq", QUERY_DEV_CAP_MAX_EQ_MASK, 0xf}, {"DEV_CAP rsvd_mtt >>", QUERY_DEV_CAP_RSVD_MTT_SHIFT, 4},
		{"DEV_CAP rsvd_mrw", QUERY_DEV_CAP_RSVD_MRW_MASK, 0xf}, {"DEV_CAP num_ports", QUERY_DEV_CAP_NUM_PORTS_MASK, 0xf},
		{"DEV_CAP max_vl >>", QUERY_DEV_CAP_MAX_VL_SHIFT, 4}, {"DEV_CAP ib_mtu >>", QUERY_DEV_CAP_IB_MTU_SHIFT, 4},
		{"DEV_CAP rsvd_uar >>", QUERY_DEV_CAP_RSVD_UAR_SHIFT, 4}, {"DEV_CAP rsvd_pd >>", QUERY_DEV_CAP_RSVD_PD_SHIFT, 4},
		{"port_type & 0x3", PORT_TYPE_MASK, 0x3},
		{"PTYS IB 1X", PTYS_IB_WIDTH_1X, 0x1}, {"PTYS IB 2X", PTYS_IB_WIDTH_2X, 0x2}, {"PTYS IB 4X", PTYS_IB_WIDTH_4X, 0x4},
		{"PTYS IB 8X", PTYS_IB_WIDTH_8X, 0x8}, {"PTYS IB 12X", PTYS_IB_WIDTH_12X, 0x10},
		{"PTYS IB SDR", PTYS_IB_SPEED_SDR, 0x1}, {"PTYS IB DDR", PTYS_IB_SPEED_DDR, 0x2}, {"PTYS IB QDR", PTYS_IB_SPEED_QDR, 0x4},
		{"PTYS IB FDR10", PTYS_IB_SPEED_FDR10, 0x8}, {"PTYS IB FDR", PTYS_IB_SPEED_FDR, 0x10}, {"PTYS IB EDR", PTYS_IB_SPEED_EDR, 0x20},
		{"object number", ObjectMask, 0xffffff}, {"QPN", QPNMask, 0xffffff},
		{"resource_tracker QPN", QPNTrackerMask, 0x7fffff}, {"qp_alloc_res count", AllocResQPCountMask, 0xffffff},
		{"MLX4_PORT_CHANGE_SUBTYPE_DOWN", PORT_CHANGE_SUBTYPE_DOWN, 1},
		{"MLX4_PORT_CHANGE_SUBTYPE_ACTIVE", PORT_CHANGE_SUBTYPE_ACTIVE, 4},
		{"event.port_change.port shift", EQEPortChangePortShift, 28},
		{"MLX4_EVENT_TYPES_NUM", MLX4_EVENT_TYPES_NUM, 64},
		{"MLX4_MAC_MASK", MLX4_MAC_MASK, 0xffffffffffff}, {"MLX4_VLAN_MASK", MLX4_VLAN_MASK, 0xfff},
		{"MLX4_MAX_MAC_NUM", MLX4_MAX_MAC_NUM, 128}, {"MLX4_MAX_VLAN_NUM", MLX4_MAX_VLAN_NUM, 128},
		{"mgid_index GID index", MGIDIndexMask, 0x7f}, {"update_gid UD bit", MGIDIndexUD, 0x80},
		{"QP state in flags", QPCFlagsStateShift, 28}, {"port commands' in_modifier port", PortInModMask, 0xff}, {"QUERY_IF_STAT counter", CounterInModMask, 0xffff},
	})
	// (sched_queue >> 6 & 1) + 1
	for sq, port := range map[byte]int{0x00: 1, 0x40: 2, 0x83: 1, 0xff: 2, 0xbf: 1} {
		if got := SchedQueuePort(sq); got != port {
			t.Errorf("sched_queue %#x names port %d, the kernel's %d", sq, got, port)
		}
	}
}

// include/linux/mlx4/device.h struct mlx4_net_trans_rule_hw_ctrl and
// struct mlx4_net_trans_rule_hw_eth; mcg.c __sw_id_hw[].
func TestFlowSteeringLayout(t *testing.T) {
	checkOffsets(t, "mlx4_net_trans_rule_hw_ctrl", []off{
		{"port", NetTransCtrlPort, 7}, {"qpn", NetTransCtrlQPN, 8}, {"sizeof", NetTransCtrlSize, 16},
		{"_rule_hw.id", RuleHwID, 2}, {"eth.dst_mac", RuleHwEthDstMAC, 10},
		{"ID_ETH", NET_TRANS_RULE_ID_ETH, 0xe001}, {"ID_IPV4", NET_TRANS_RULE_ID_IPV4, 0xe002},
		{"ID_IPV6", NET_TRANS_RULE_ID_IPV6, 0xe003}, {"ID_TCP", NET_TRANS_RULE_ID_TCP, 0xe004},
		{"ID_IB", NET_TRANS_RULE_ID_IB, 0xe005}, {"ID_UDP", NET_TRANS_RULE_ID_UDP, 0xe006},
	})
}

// include/linux/mlx4/cmd.c struct mlx4_vhcr_cmd: the offsets, and the image
// a VF writes with PutVHCRWords equals VHCR.Encode's, byte for byte.
func TestVHCRLayout(t *testing.T) {
	checkOffsets(t, "mlx4_vhcr_cmd", []off{
		{"in_param", OffInParam, 0}, {"in_modifier", OffInMod, 8}, {"out_param", OffOutParam, 16},
		{"token", OffToken, 24}, {"status", OffStatus, 28}, {"flags", OffFlags, 29},
		{"opcode", OffOpcode, 30}, {"sizeof", VHCRSize, 32},
	})
	v := VHCR{InParam: 0x0102030405060708, InMod: 0x11121314, OutParam: 0x2122232425262728, Token: 0x3132,
		Flags: FlagE, Op: QUERY_FUNC_CAP, OpMod: 0xa}
	want := [VHCRSize]byte{1, 2, 3, 4, 5, 6, 7, 8, 0x11, 0x12, 0x13, 0x14, 0, 0, 0, 0,
		0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x31, 0x32, 0, 0, 0, 0x40, 0xaf, 0x0a} // QUERY_FUNC_CAP 0xf0a, op_modifier 0xa
	var enc, put [VHCRSize]byte
	v.Encode(&enc)
	for i := range put {
		put[i] = 0xa5 // every byte is written
	}
	PutVHCRWords(&put, v.InParam, Word1(v.InMod), v.OutParam, Word3(v.Token, v.Flags, v.OpMod, v.Op))
	if enc != want || put != want {
		t.Errorf("vHCR image\nEncode       % x\nPutVHCRWords % x\nwant         % x", enc, put, want)
	}
}

// QUERY_QP's outbox: mlx4_qp_query reads the state from flags 31:28 and
// nothing else of the word changes.
func TestPutQPCState(t *testing.T) {
	b := make([]byte, QPContextSize)
	binary.BigEndian.PutUint32(b[0:], 0xf0abcdef)
	PutQPCState(b, QPState(3))
	if got := binary.BigEndian.Uint32(b[0:]); got != 0x30abcdef {
		t.Fatalf("flags %#x, want 0x30abcdef", got)
	}
}
