package mlx4

import (
	"errors"
	"strconv"
	"strings"
)

// ErrShort is returned by decoders given fewer bytes than the structure.
var ErrShort = errors.New("mlx4: buffer shorter than the structure")

// ICM and MTT units: MTT addresses in contexts are byte addresses of 8-byte
// entries (dev->caps.mtt_entry_sz), page sizes count from 4 KiB
// (log_page_size + 12).
const (
	MTTEntrySize = 8
	PageShift    = 12
	PageSize     = 1 << PageShift
	// MaxSizeExponent clamps sizes derived from VF-controlled exponents
	// (log sizes, strides, page shifts) so that they cannot overflow.
	MaxSizeExponent = 40
)

// QP context offsets: include/linux/mlx4/qp.h struct mlx4_qp_context
// (248 bytes, big-endian fields).
const (
	QPCFlags             = 0x00 // BE32: 31:28 state, 23:16 service type, bit 13 RSS
	QPCPD                = 0x04 // BE32, 23:0
	QPCMTUMsgMax         = 0x08 // mtu 7:5, msg_max 4:0
	QPCRQSizeStride      = 0x09 // log size 6:3, log stride 2:0
	QPCSQSizeStride      = 0x0a
	QPCRLKeyRoCEMode     = 0x0b
	QPCUsrPage           = 0x0c // BE32, 23:0
	QPCLocalQPN          = 0x10
	QPCRemoteQPN         = 0x14
	QPCPriPath           = 0x18 // struct mlx4_qp_path
	QPCAltPath           = 0x44 // struct mlx4_qp_path
	QPCParams1           = 0x70
	QPCNextSendPSN       = 0x78
	QPCCQNSend           = 0x7c // BE32, 23:0
	QPCRoCEEntropy       = 0x80
	QPCLastAckedPSN      = 0x88
	QPCSSN               = 0x8c
	QPCParams2           = 0x90 // page_offset in 11:6 (64-byte units)
	QPCRNRNextRecvPSN    = 0x94
	QPCXRCD              = 0x98
	QPCCQNRecv           = 0x9c
	QPCDBRecAddr         = 0xa0 // BE64
	QPCQKey              = 0xa8
	QPCSRQN              = 0xac // BE32: bit 24 use SRQ, 23:0 SRQN
	QPCMSN               = 0xb0
	QPCRQWQECounter      = 0xb4
	QPCSQWQECounter      = 0xb6
	QPCRateLimitParams   = 0xbc // BE16
	QPCQoSVport          = 0xbf
	QPCParam3            = 0xc0 // BE32: bit 30 MLX4_STRIP_VLAN
	QPCNumMMCPeersBaseMK = 0xc4
	QPCLogPageSize       = 0xc8 // 5:0, page shift = + 12
	QPCMTTBaseAddrH      = 0xcb
	QPCMTTBaseAddrL      = 0xcc // BE32
	QPContextSize        = 0xf8
)

// QP path offsets: include/linux/mlx4/qp.h struct mlx4_qp_path (44 bytes).
const (
	PathFL               = 0  // MLX4_FL_*
	PathVLANControl      = 1  // MLX4_VLAN_CTRL_ETH_*
	PathDisablePKeyCheck = 2  //
	PathPKeyIndex        = 3  //
	PathCounterIndex     = 4  //
	PathGRHMyLMC         = 5  // bit 7 GRH, 6:0 my LMC or source MAC index (Ethernet)
	PathRLID             = 6  // BE16
	PathAckTO            = 8  //
	PathMGIDIndex        = 9  //
	PathStaticRate       = 10 //
	PathHopLimit         = 11 //
	PathTClassFlowLabel  = 12 // BE32
	PathRGID             = 16 // 16 bytes
	PathSchedQueue       = 32 // bit 6: port - 1; 5:3 the 802.1p priority
	PathVLANIndex        = 33 //
	PathFEUP             = 34 // MLX4_FEUP_FORCE_*
	PathFVLRx            = 35 // MLX4_FVL_RX_FORCE_ETH_VLAN
	PathDMAC             = 38 // 6 bytes
	QPPathSize           = 44
)

// The modify-QP mailbox (mlx4_qp_modify): BE32 optpar at 0, 4 reserved
// bytes, struct mlx4_qp_context at 8. QUERY_QP's outbox has the same shape.
const (
	QPMailboxOptPar  = 0
	QPMailboxContext = 8
	QPMailboxSize    = QPMailboxContext + QPContextSize
	QPMailboxPriPath = QPMailboxContext + QPCPriPath
	QPMailboxAltPath = QPMailboxContext + QPCAltPath
)

// QP service types: include/linux/mlx4/qp.h MLX4_QP_ST_*.
const (
	QP_ST_RC  = 0x0
	QP_ST_UC  = 0x1
	QP_ST_RD  = 0x2
	QP_ST_UD  = 0x3
	QP_ST_XRC = 0x6
	QP_ST_MLX = 0x7
)

// Modify-QP optional-parameter bits: include/linux/mlx4/qp.h
// enum mlx4_qp_optpar (MLX4_QP_OPTPAR_*).
const (
	QP_OPTPAR_ALT_ADDR_PATH     = 1 << 0
	QP_OPTPAR_RRE               = 1 << 1
	QP_OPTPAR_RAE               = 1 << 2
	QP_OPTPAR_RWE               = 1 << 3
	QP_OPTPAR_PKEY_INDEX        = 1 << 4
	QP_OPTPAR_Q_KEY             = 1 << 5
	QP_OPTPAR_RNR_TIMEOUT       = 1 << 6
	QP_OPTPAR_PRIMARY_ADDR_PATH = 1 << 7
	QP_OPTPAR_SRA_MAX           = 1 << 8
	QP_OPTPAR_RRA_MAX           = 1 << 9
	QP_OPTPAR_PM_STATE          = 1 << 10
	QP_OPTPAR_RETRY_COUNT       = 1 << 12
	QP_OPTPAR_RNR_RETRY         = 1 << 13
	QP_OPTPAR_ACK_TIMEOUT       = 1 << 14
	QP_OPTPAR_SCHED_QUEUE       = 1 << 16
	QP_OPTPAR_COUNTER_INDEX     = 1 << 20
	QP_OPTPAR_VLAN_STRIPPING    = 1 << 21
	QP_OPTPAR_RATE_LIMIT        = 1 << 23
)

// QPState is a firmware QP state: include/linux/mlx4/qp.h enum mlx4_qp_state
// (MLX4_QP_STATE_*), flags bits 31:28 of a queried context.
type QPState uint8

// QP states.
const (
	QP_STATE_RST QPState = iota
	QP_STATE_INIT
	QP_STATE_RTR
	QP_STATE_RTS
	QP_STATE_SQER
	QP_STATE_SQD
	QP_STATE_ERR
)

var qpStateNames = [...]string{"RST", "INIT", "RTR", "RTS", "SQER", "SQD", "ERR"}

func (s QPState) String() string {
	if int(s) < len(qpStateNames) {
		return qpStateNames[s]
	}
	return "state" + strconv.Itoa(int(s))
}

// ParseQPState accepts rst, init, rtr, rts, sqer (or sqe), sqd, err (any
// case).
func ParseQPState(s string) (QPState, bool) {
	if strings.EqualFold(s, "sqe") {
		return QP_STATE_SQER, true
	}
	for i, n := range qpStateNames {
		if strings.EqualFold(n, s) {
			return QPState(i), true
		}
	}
	return 0, false
}

// QPPath is struct mlx4_qp_path, the fields the model reads or writes.
type QPPath struct {
	// Port is the function's port, 1 or 2 (sched_queue bit 6 + 1).
	Port      int
	PKeyIndex uint8
	// CounterIndex is the counter the QP counts into: the sink (the last
	// index, QUERY_DEV_CAP's max_counters - 1) lets the PF assign the VF's
	// counter on the port at INIT2RTR.
	CounterIndex uint8
	MGIDIndex    uint8
	GRH          bool
	SMACIndex    uint8 // grh_mylmc 6:0 (Ethernet)
	RLID         uint16
	AckTimeout   uint8
	HopLimit     uint8
	RGID         [16]byte
	DMAC         [6]byte // Ethernet: the destination MAC (RoCE's RC and UC)
}

// encode writes the path into b[:QPPathSize]; sched_queue is mlx4_ib's
// 0x83 | (port - 1) << 6.
func (p QPPath) encode(b []byte) {
	b[PathPKeyIndex] = p.PKeyIndex
	b[PathCounterIndex] = p.CounterIndex
	g := p.SMACIndex & 0x7f
	if p.GRH {
		g |= 0x80
	}
	b[PathGRHMyLMC] = g
	put16(b, PathRLID, p.RLID)
	b[PathAckTO] = p.AckTimeout
	b[PathMGIDIndex] = p.MGIDIndex
	b[PathHopLimit] = p.HopLimit
	copy(b[PathRGID:PathRGID+16], p.RGID[:])
	copy(b[PathDMAC:PathDMAC+6], p.DMAC[:])
	port := max(p.Port, 1)
	b[PathSchedQueue] = 0x83 | byte((port-1)&1)<<6
}

func decodePath(b []byte) QPPath {
	p := QPPath{
		Port:         PathPort(b),
		PKeyIndex:    b[PathPKeyIndex],
		CounterIndex: b[PathCounterIndex],
		MGIDIndex:    b[PathMGIDIndex],
		GRH:          b[PathGRHMyLMC]&0x80 != 0,
		SMACIndex:    b[PathGRHMyLMC] & 0x7f,
		RLID:         get16(b, PathRLID),
		AckTimeout:   b[PathAckTO],
		HopLimit:     b[PathHopLimit],
	}
	copy(p.RGID[:], b[PathRGID:PathRGID+16])
	copy(p.DMAC[:], b[PathDMAC:PathDMAC+6])
	return p
}

// PathPort is the function's port a path names: sched_queue bit 6 + 1.
func PathPort(path []byte) int { return SchedQueuePort(path[PathSchedQueue]) }

// SchedQueuePort is the port a sched_queue byte names: bit 6 + 1
// (resource_tracker.c: (sched_queue >> 6 & 1) + 1).
func SchedQueuePort(sq byte) int { return int(sq&SchedQueuePortBit)>>6 + 1 }

// QPContext is struct mlx4_qp_context, the fields the model reads or writes.
type QPContext struct {
	State       QPState // flags 31:28 (QUERY_QP)
	ST          uint8   // service type, flags 23:16 (QP_ST_*)
	RSS         bool    // flags bit 13
	PD          uint32
	MTU         uint8 // mtu_msgmax 7:5
	MsgMax      uint8 // mtu_msgmax 4:0
	LogRQSize   uint8
	LogRQStride uint8 // stride = 16 << LogRQStride
	LogSQSize   uint8
	LogSQStride uint8
	// NoRQ: no receive queue (SRQ, RSS or XRC target); Encode writes
	// rq_size_stride 0 and Decode reports a zero rq_size_stride.
	NoRQ            bool
	UsrPage         uint32
	LocalQPN        uint32
	RemoteQPN       uint32
	Pri, Alt        QPPath
	NextSendPSN     uint32
	CQNSend         uint32
	PageOffset      uint8 // params2 11:6, in 64-byte units
	RNRNextRecvPSN  uint32
	MinRNRTimer     uint8 // rnr_nextrecvpsn 28:24 (QPCMinRNRTimerShift)
	XRCD            uint32
	CQNRecv         uint32
	DBRecAddr       uint64
	QKey            uint32
	UseSRQ          bool
	SRQN            uint32
	RateLimitParams uint16
	LogPageSize     uint8  // page shift - 12
	MTTBase         uint64 // first MTT entry (index)
}

// QPCFlagsStateShift: a QP's state is flags 31:28 of struct mlx4_qp_context
// (qp.c mlx4_qp_query: be32_to_cpu(context->flags) >> 28).
const QPCFlagsStateShift = 28

// PutQPCState sets the state in the flags word of the QP context at b (as
// QUERY_QP's outbox carries it), keeping the other bits of the word.
func PutQPCState(b []byte, s QPState) {
	put32(b, QPCFlags, get32(b, QPCFlags)&^(0xf<<QPCFlagsStateShift)|uint32(s&0xf)<<QPCFlagsStateShift)
}

// Encode writes the context into b[:QPContextSize], zeroing what it does not
// set. b must hold QPContextSize bytes.
func (c QPContext) Encode(b []byte) {
	b = b[:QPContextSize]
	clear(b)
	f := uint32(c.State&0xf)<<QPCFlagsStateShift | uint32(c.ST)<<16
	if c.RSS {
		f |= 1 << 13
	}
	put32(b, QPCFlags, f)
	put32(b, QPCPD, c.PD&0xffffff)
	b[QPCMTUMsgMax] = c.MTU<<5 | c.MsgMax&0x1f
	if !c.NoRQ {
		b[QPCRQSizeStride] = c.LogRQSize<<3 | c.LogRQStride&7
	}
	b[QPCSQSizeStride] = c.LogSQSize<<3 | c.LogSQStride&7
	put32(b, QPCUsrPage, c.UsrPage&0xffffff)
	put32(b, QPCLocalQPN, c.LocalQPN&0xffffff)
	put32(b, QPCRemoteQPN, c.RemoteQPN&0xffffff)
	c.Pri.encode(b[QPCPriPath : QPCPriPath+QPPathSize])
	c.Alt.encode(b[QPCAltPath : QPCAltPath+QPPathSize])
	put32(b, QPCNextSendPSN, c.NextSendPSN&0xffffff)
	put32(b, QPCCQNSend, c.CQNSend&0xffffff)
	put32(b, QPCParams2, uint32(c.PageOffset&0x3f)<<6)
	put32(b, QPCRNRNextRecvPSN, uint32(c.MinRNRTimer&QPCMinRNRTimerMask)<<QPCMinRNRTimerShift|c.RNRNextRecvPSN&0xffffff)
	put32(b, QPCXRCD, c.XRCD&0xffffff)
	put32(b, QPCCQNRecv, c.CQNRecv&0xffffff)
	put64(b, QPCDBRecAddr, c.DBRecAddr)
	put32(b, QPCQKey, c.QKey)
	srqn := c.SRQN & 0xffffff
	if c.UseSRQ {
		srqn |= 1 << 24
	}
	put32(b, QPCSRQN, srqn)
	put16(b, QPCRateLimitParams, c.RateLimitParams)
	b[QPCLogPageSize] = c.LogPageSize & 0x3f
	putMTTAddr(b, QPCMTTBaseAddrH, QPCMTTBaseAddrL, c.MTTBase)
}

// DecodeQPContext reads a QP context. Every bit pattern decodes; fewer than
// QPContextSize bytes is ErrShort.
func DecodeQPContext(b []byte) (QPContext, error) {
	if len(b) < QPContextSize {
		return QPContext{}, shortErr("QP context", len(b), QPContextSize)
	}
	f := get32(b, QPCFlags)
	srqn := get32(b, QPCSRQN)
	return QPContext{
		State:           QPState(f >> QPCFlagsStateShift),
		ST:              uint8(f >> 16),
		RSS:             f&(1<<13) != 0,
		PD:              get32(b, QPCPD) & 0xffffff,
		MTU:             b[QPCMTUMsgMax] >> 5,
		MsgMax:          b[QPCMTUMsgMax] & 0x1f,
		LogRQSize:       b[QPCRQSizeStride] >> 3 & 0xf,
		LogRQStride:     b[QPCRQSizeStride] & 7,
		LogSQSize:       b[QPCSQSizeStride] >> 3 & 0xf,
		LogSQStride:     b[QPCSQSizeStride] & 7,
		NoRQ:            b[QPCRQSizeStride] == 0,
		UsrPage:         get32(b, QPCUsrPage) & 0xffffff,
		LocalQPN:        get32(b, QPCLocalQPN) & 0xffffff,
		RemoteQPN:       get32(b, QPCRemoteQPN) & 0xffffff,
		Pri:             decodePath(b[QPCPriPath : QPCPriPath+QPPathSize]),
		Alt:             decodePath(b[QPCAltPath : QPCAltPath+QPPathSize]),
		NextSendPSN:     get32(b, QPCNextSendPSN) & 0xffffff,
		CQNSend:         get32(b, QPCCQNSend) & 0xffffff,
		PageOffset:      uint8(get32(b, QPCParams2) >> 6 & 0x3f),
		RNRNextRecvPSN:  get32(b, QPCRNRNextRecvPSN) & 0xffffff,
		MinRNRTimer:     QPCMinRNRTimer(b),
		XRCD:            get32(b, QPCXRCD) & 0xffffff,
		CQNRecv:         get32(b, QPCCQNRecv) & 0xffffff,
		DBRecAddr:       get64(b, QPCDBRecAddr),
		QKey:            get32(b, QPCQKey),
		UseSRQ:          srqn&(1<<24) != 0,
		SRQN:            srqn & 0xffffff,
		RateLimitParams: get16(b, QPCRateLimitParams),
		LogPageSize:     b[QPCLogPageSize] & 0x3f,
		MTTBase:         mttAddr(b, QPCMTTBaseAddrH, QPCMTTBaseAddrL),
	}, nil
}

// MTTPages is resource_tracker.c qp_get_mtt_size: the bytes of the send and
// receive queues (none for SRQ, RSS and XRC QPs) plus the page offset,
// in pages, rounded up to a power of two, at least 1.
func (c QPContext) MTTPages() int {
	total := uint64(1) << (int(c.LogSQSize) + int(c.LogSQStride) + 4)
	if !c.UseSRQ && !c.RSS && c.ST != QP_ST_XRC {
		total += uint64(1) << (int(c.LogRQSize) + int(c.LogRQStride) + 4)
	}
	pages := (total + uint64(c.PageOffset)<<6) >> (int(c.LogPageSize) + PageShift)
	n := 1
	for uint64(n) < pages {
		n <<= 1
	}
	return n
}

// QPMailbox is a modify-QP inbox or a QUERY_QP outbox.
type QPMailbox struct {
	OptPar uint32
	Ctx    QPContext
}

// Encode writes the mailbox into b[:QPMailboxSize].
func (m QPMailbox) Encode(b []byte) {
	clear(b[:QPMailboxContext])
	put32(b, QPMailboxOptPar, m.OptPar)
	m.Ctx.Encode(b[QPMailboxContext:QPMailboxSize])
}

// DecodeQPMailbox reads a modify-QP inbox or a QUERY_QP outbox.
func DecodeQPMailbox(b []byte) (QPMailbox, error) {
	if len(b) < QPMailboxSize {
		return QPMailbox{}, shortErr("QP mailbox", len(b), QPMailboxSize)
	}
	c, err := DecodeQPContext(b[QPMailboxContext:])
	return QPMailbox{OptPar: get32(b, QPMailboxOptPar), Ctx: c}, err
}

// Path and context bits the PF's vport enforcement sets
// (include/linux/mlx4/qp.h: MLX4_FL_*, MLX4_VLAN_CTRL_ETH_*, MLX4_FEUP_*,
// MLX4_FSM_*, MLX4_FVL_*, MLX4_STRIP_VLAN).
const (
	FL_CV                         = 1 << 6 // fl: the forced tag is an 802.1Q C-VLAN
	FL_SV                         = 1 << 5 // fl: an 802.1ad S-VLAN (VST QinQ)
	FL_ETH_HIDE_CQE_VLAN          = 1 << 2 // fl
	CTRL_ETH_SRC_CHECK_IF_COUNTER = 1 << 7 // vlan_control
	VLAN_CTRL_ETH_TX_BLOCK_TAGGED = 1 << 6 // vlan_control
	VLAN_CTRL_ETH_TX_BLOCK_PRIO   = 1 << 5
	VLAN_CTRL_ETH_TX_BLOCK_UNTAG  = 1 << 4
	VLAN_CTRL_ETH_RX_BLOCK_TAGGED = 1 << 2
	VLAN_CTRL_ETH_RX_BLOCK_PRIO   = 1 << 1
	VLAN_CTRL_ETH_RX_BLOCK_UNTAG  = 1 << 0
	FEUP_FORCE_ETH_UP             = 1 << 6  // feup
	FSM_FORCE_ETH_SRC_MAC         = 1 << 5  // feup
	FVL_FORCE_ETH_VLAN            = 1 << 3  // feup
	FVL_RX_FORCE_ETH_VLAN         = 1 << 0  // fvl_rx
	STRIP_VLAN                    = 1 << 30 // param3
	SchedQueuePortBit             = 1 << 6  // sched_queue: port - 1
	SchedQueueUPMask              = 0x38    // sched_queue 5:3: the 802.1p priority
	VPP_DEFAULT_VPORT             = 0       // qos_vport: no vport QoS
	RESERVED_QKEY_BASE            = 0xffff0000
	GRHMyLMCGRH                   = 0x80 // grh_mylmc bit 7
	GRHMyLMCSMACMask              = 0x7f // grh_mylmc 6:0
)

// MGIDIndexMask and MGIDIndexUD: mgid_index 6:0 is the GID index;
// resource_tracker.c update_gid sets bit 7 on a UD QP's path
// (mgid_index = base_gid_ix | 0x80, or slave | 0x80).
const (
	MGIDIndexMask = 0x7f
	MGIDIndexUD   = 0x80
)

// UPDATE_QP inbox: include/linux/mlx4/qp.h struct mlx4_update_qp_context.
const (
	UpdQPQPMask                          = 0x00 // BE64
	UpdQPPrimaryAddrPathMask             = 0x08 // BE64, bits UPD_QP_PATH_MASK_*
	UpdQPSecondaryAddrPathMask           = 0x10 // BE64
	UpdQPContext                         = 0x20 // struct mlx4_qp_context
	UPD_QP_PATH_MASK_MAC_INDEX           = 2 + 32
	UPD_QP_PATH_MASK_ETH_SRC_CHECK_MC_LB = 19 + 32
)

// QPNMask selects a QP number: QPNs are 24 bits wide wherever a command
// carries one (in_modifier[23:0] of the QP commands, ALLOC_RES/FREE_RES's
// in_param and out_param low words).
const QPNMask = 0xffffff

// QPNTrackerMask is a QP number as resource_tracker.c takes it from the
// QP commands' in_modifier and ALLOC_RES/FREE_RES's in_param
// (& 0x7fffff: bit 23 is not part of it there).
const QPNTrackerMask = 0x7fffff

// InModIsQPN reports whether op's in_modifier[23:0] is the QP number it
// acts on: the QP state transitions, QUERY_QP, SUSPEND_QP, UNSUSPEND_QP,
// UPDATE_QP and QP_ATTACH (their wrappers in resource_tracker.c take
// vhcr->in_modifier & 0x7fffff or & 0xffffff as the qpn).
func InModIsQPN(op Opcode) bool {
	switch op {
	case RST2INIT_QP, INIT2INIT_QP, INIT2RTR_QP, RTR2RTS_QP, RTS2RTS_QP, SQERR2RTS_QP, TWO_ERR_QP,
		RTS2SQD_QP, SQD2SQD_QP, SQD2RTS_QP, TWO_RST_QP, QUERY_QP, SUSPEND_QP, UNSUSPEND_QP, UPDATE_QP,
		QP_ATTACH:
		return true
	}
	return false
}

// The RSS context of an RSS indirection QP (struct mlx4_rss_context,
// include/linux/mlx4/qp.h), at MLX4_RSS_OFFSET_IN_QPC_PRI_PATH of the QP
// context's primary path: base_qpn (BE32: 31:24 log2 of the rings, 23:0
// the first ring's QPN), default_qpn (what no hash steers), hash_fn
// (MLX4_RSS_HASH_XOR 0, _TOP 1: Toeplitz), flags (which headers are
// hashed: MLX4_RSS_*), the 40-byte Toeplitz key, base_qpn_udp (UDP's
// rings, with MLX4_RSS_UDP_*). mlx4_en writes it for more than one RX
// ring (mlx4_en_config_rss_steer); the QPC flags' bit 13 marks the QP.
const (
	RSS_OFFSET_IN_QPC_PRI_PATH = 0x24
	RSSBaseQPN                 = 0
	RSSDefaultQPN              = 4
	RSSHashFn                  = 10
	RSSFlags                   = 11
	RSSKey                     = 12
	RSSKeySize                 = 40 // MLX4_EN_RSS_KEY_SIZE
	RSSBaseQPNUDP              = 52
	RSSContextSize             = 56
	RSSLogRingsShift           = 24
	RSS_HASH_XOR               = 0
	RSS_HASH_TOP               = 1
	RSS_UDP_IPV6               = 1 << 0
	RSS_UDP_IPV4               = 1 << 1
	RSS_TCP_IPV6               = 1 << 2
	RSS_IPV6                   = 1 << 3
	RSS_TCP_IPV4               = 1 << 4
	RSS_IPV4                   = 1 << 5
)
