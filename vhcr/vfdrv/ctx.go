package vfdrv

// Context encoders at the mlx4 byte offsets (research/mlx4-commchan.md §2.6).
// Encoders write into a mailbox-sized buffer the caller owns and zero what
// they do not set; decoders accept any bytes of at least the context's size.

import (
	"encoding/binary"
	"errors"
	"strconv"
)

// ErrShort is returned by decoders given fewer bytes than the context.
var ErrShort = errors.New("vfdrv: buffer shorter than the context")

// Sizes of the mlx4 structures.
const (
	EQContextSize  = 64  // struct mlx4_eq_context
	CQContextSize  = 64  // struct mlx4_cq_context
	SRQContextSize = 48  // struct mlx4_srq_context
	MPTSize        = 64  // struct mlx4_mpt_entry
	QPContextSize  = 248 // struct mlx4_qp_context
	QPMailboxSize  = 8 + QPContextSize
	EQESize        = 32 // struct mlx4_eqe
	PageShift      = 12
	PageSize       = 1 << PageShift
	MTTEntrySize   = 8 // dev->caps.mtt_entry_sz
	MaxWriteMTT    = (4096 - 16) / 8
	mttPresent     = 1 // MLX4_MTT_FLAG_PRESENT
)

func put16(b []byte, off int, v uint16) { binary.BigEndian.PutUint16(b[off:], v) }
func put32(b []byte, off int, v uint32) { binary.BigEndian.PutUint32(b[off:], v) }
func put64(b []byte, off int, v uint64) { binary.BigEndian.PutUint64(b[off:], v) }
func get16(b []byte, off int) uint16    { return binary.BigEndian.Uint16(b[off:]) }
func get32(b []byte, off int) uint32    { return binary.BigEndian.Uint32(b[off:]) }
func get64(b []byte, off int) uint64    { return binary.BigEndian.Uint64(b[off:]) }

// mttAddr splits an MTT entry index into the byte address's high byte and
// low word (mlx4_mtt_addr: offset * mtt_entry_sz).
func mttAddr(base uint64) (hi uint8, lo uint32) {
	a := base * MTTEntrySize
	return uint8(a >> 32), uint32(a)
}

// EQContext is struct mlx4_eq_context as mlx4_create_eq fills it.
type EQContext struct {
	LogSize     int    // log2 of the EQE count (low 5 bits)
	LogPageSize int    // page shift - 12
	MTTBase     uint64 // first MTT entry (index)
	Intr        uint8
	Period      uint8
	MaxCount    uint8
	Consumer    uint32 // QUERY_EQ only
	Producer    uint32 // QUERY_EQ only
}

// EQ context offsets.
const (
	eqcFlags       = 0x00
	eqcPageOffset  = 0x0a
	eqcLogSize     = 0x0c
	eqcPeriod      = 0x11
	eqcMaxCount    = 0x13
	eqcIntr        = 0x17
	eqcLogPageSize = 0x18
	eqcMTTBaseH    = 0x1b
	eqcMTTBaseL    = 0x1c
	eqcConsumer    = 0x28
	eqcProducer    = 0x2c

	eqStatusOK    = 0 << 28 // MLX4_EQ_STATUS_OK
	eqStateArmed  = 9 << 8  // MLX4_EQ_STATE_ARMED
	eqDoorbellArm = 1 << 31
	eqCIMask      = 0xffffff
)

// Encode writes the context into b[:EQContextSize].
func (c EQContext) Encode(b []byte) {
	clear(b[:EQContextSize])
	put32(b, eqcFlags, eqStatusOK|eqStateArmed)
	b[eqcLogSize] = byte(c.LogSize & 0x1f)
	b[eqcPeriod] = c.Period
	b[eqcMaxCount] = c.MaxCount
	b[eqcIntr] = c.Intr
	b[eqcLogPageSize] = byte(c.LogPageSize & 0x3f)
	b[eqcMTTBaseH], _ = mttAddr(c.MTTBase)
	_, lo := mttAddr(c.MTTBase)
	put32(b, eqcMTTBaseL, lo)
}

// DecodeEQContext reads a QUERY_EQ outbox.
func DecodeEQContext(b []byte) (EQContext, error) {
	if len(b) < EQContextSize {
		return EQContext{}, ErrShort
	}
	return EQContext{
		LogSize:     int(b[eqcLogSize] & 0x1f),
		LogPageSize: int(b[eqcLogPageSize] & 0x3f),
		MTTBase:     (uint64(b[eqcMTTBaseH])<<32 | uint64(get32(b, eqcMTTBaseL))) / MTTEntrySize,
		Intr:        b[eqcIntr],
		Period:      b[eqcPeriod],
		MaxCount:    b[eqcMaxCount],
		Consumer:    get32(b, eqcConsumer) & eqCIMask,
		Producer:    get32(b, eqcProducer) & eqCIMask,
	}, nil
}

// CQContext is struct mlx4_cq_context as mlx4_cq_alloc fills it.
type CQContext struct {
	LogSize     int // log2 of the CQE count (32-byte CQEs)
	UARPage     uint32
	CompEQN     uint8
	LogPageSize int
	MTTBase     uint64
	Period      uint16
	MaxCount    uint16
	DBRecAddr   uint64
}

// CQ context offsets.
const (
	cqcFlags       = 0x00
	cqcLogSize     = 0x0c // log size 28:24, UAR page 23:0
	cqcPeriod      = 0x10
	cqcMaxCount    = 0x12
	cqcCompEQN     = 0x17
	cqcLogPageSize = 0x18
	cqcMTTBaseH    = 0x1b
	cqcMTTBaseL    = 0x1c
	cqcDBRecAddr   = 0x38
)

// Encode writes the context into b[:CQContextSize].
func (c CQContext) Encode(b []byte) {
	clear(b[:CQContextSize])
	put32(b, cqcLogSize, uint32(c.LogSize&0x1f)<<24|c.UARPage&0xffffff)
	put16(b, cqcPeriod, c.Period)
	put16(b, cqcMaxCount, c.MaxCount)
	b[cqcCompEQN] = c.CompEQN
	b[cqcLogPageSize] = byte(c.LogPageSize & 0x3f)
	hi, lo := mttAddr(c.MTTBase)
	b[cqcMTTBaseH] = hi
	put32(b, cqcMTTBaseL, lo)
	put64(b, cqcDBRecAddr, c.DBRecAddr)
}

// DecodeCQContext reads a QUERY_CQ outbox.
func DecodeCQContext(b []byte) (CQContext, error) {
	if len(b) < CQContextSize {
		return CQContext{}, ErrShort
	}
	w := get32(b, cqcLogSize)
	return CQContext{
		LogSize:     int(w >> 24 & 0x1f),
		UARPage:     w & 0xffffff,
		CompEQN:     b[cqcCompEQN],
		LogPageSize: int(b[cqcLogPageSize] & 0x3f),
		MTTBase:     (uint64(b[cqcMTTBaseH])<<32 | uint64(get32(b, cqcMTTBaseL))) / MTTEntrySize,
		Period:      get16(b, cqcPeriod),
		MaxCount:    get16(b, cqcMaxCount),
		DBRecAddr:   get64(b, cqcDBRecAddr),
	}, nil
}

// SRQContext is struct mlx4_srq_context as mlx4_srq_alloc fills it.
type SRQContext struct {
	SRQN        uint32
	LogSize     int // 27:24
	LogStride   int // stride = 16 << LogStride
	XRCD        uint16
	CQN         uint32
	LogPageSize int
	MTTBase     uint64
	PD          uint32
	DBRecAddr   uint64
}

// SRQ context offsets.
const (
	srqcStateLogSizeSRQN = 0x00
	srqcLogStride        = 0x04
	srqcXRCD             = 0x06
	srqcPgOffsetCQN      = 0x08
	srqcLogPageSize      = 0x10
	srqcMTTBaseH         = 0x13
	srqcMTTBaseL         = 0x14
	srqcPD               = 0x18
	srqcDBRecAddr        = 0x28
)

// Encode writes the context into b[:SRQContextSize].
func (c SRQContext) Encode(b []byte) {
	clear(b[:SRQContextSize])
	put32(b, srqcStateLogSizeSRQN, uint32(c.LogSize&0xf)<<24|c.SRQN&0xffffff)
	b[srqcLogStride] = byte(c.LogStride & 7)
	put16(b, srqcXRCD, c.XRCD)
	put32(b, srqcPgOffsetCQN, c.CQN&0xffffff)
	b[srqcLogPageSize] = byte(c.LogPageSize & 0x3f)
	hi, lo := mttAddr(c.MTTBase)
	b[srqcMTTBaseH] = hi
	put32(b, srqcMTTBaseL, lo)
	put32(b, srqcPD, c.PD&0xffffff)
	put64(b, srqcDBRecAddr, c.DBRecAddr)
}

// MPT is struct mlx4_mpt_entry for a memory region (mlx4_mr_enable).
type MPT struct {
	Access     uint32 // MLX4_PERM_* bits (flags 14:10)
	Physical   bool   // no translation (MTT ignored)
	QPN        uint32
	Key        uint32
	PD         uint32 // bits 23:0; bits 23:17 name a slave and stay 0 here
	Start      uint64
	Length     uint64
	MTTBase    uint64 // first MTT entry (index)
	MTTSize    uint32 // entries
	EntitySize uint32 // page shift of the entries
}

// MPT offsets and flags.
const (
	mptFlags      = 0x00
	mptQPN        = 0x04
	mptKey        = 0x08
	mptPDFlags    = 0x0c
	mptStart      = 0x10
	mptLength     = 0x18
	mptLKey       = 0x20
	mptMTTAddr    = 0x2c
	mptMTTSize    = 0x34
	mptEntitySize = 0x38

	MPTFlagMIO      = 1 << 17
	MPTFlagBindEn   = 1 << 15
	MPTFlagPhysical = 1 << 9
	MPTFlagRegion   = 1 << 8

	PermLocalRead   = 1 << 10
	PermLocalWrite  = 1 << 11
	PermRemoteRead  = 1 << 12
	PermRemoteWrite = 1 << 13
	PermAtomic      = 1 << 14

	mptPDFlagEnInv = 3 << 24 // MLX4_MPT_PD_FLAG_EN_INV
)

// Encode writes the entry into b[:MPTSize].
func (m MPT) Encode(b []byte) {
	clear(b[:MPTSize])
	flags := uint32(MPTFlagMIO|MPTFlagRegion) | m.Access&0x7c00
	if m.Physical {
		flags |= MPTFlagPhysical
	}
	put32(b, mptFlags, flags)
	put32(b, mptQPN, m.QPN&0xffffff)
	put32(b, mptKey, m.Key)
	put32(b, mptPDFlags, m.PD&0x1ffff|mptPDFlagEnInv)
	put64(b, mptStart, m.Start)
	put64(b, mptLength, m.Length)
	put32(b, mptLKey, m.Key)
	if !m.Physical {
		put64(b, mptMTTAddr, m.MTTBase*MTTEntrySize)
		put32(b, mptMTTSize, m.MTTSize)
	}
	put32(b, mptEntitySize, m.EntitySize)
}

// DecodeMPT reads a QUERY_MPT outbox.
func DecodeMPT(b []byte) (MPT, error) {
	if len(b) < MPTSize {
		return MPT{}, ErrShort
	}
	f := get32(b, mptFlags)
	return MPT{
		Access:     f & 0x7c00,
		Physical:   f&MPTFlagPhysical != 0,
		QPN:        get32(b, mptQPN) & 0xffffff,
		Key:        get32(b, mptKey),
		PD:         get32(b, mptPDFlags) & 0xffffff,
		Start:      get64(b, mptStart),
		Length:     get64(b, mptLength),
		MTTBase:    (get64(b, mptMTTAddr) & 0xfffffff8) / MTTEntrySize,
		MTTSize:    get32(b, mptMTTSize),
		EntitySize: get32(b, mptEntitySize),
	}, nil
}

// KeyOf is mlx4's hw_index_to_key: the MPT index rotated left by 8.
func KeyOf(index uint32) uint32 { return index<<8 | index>>24 }

// QPState is a firmware QP state (enum mlx4_qp_state).
type QPState uint8

// QP states.
const (
	QPReset QPState = iota
	QPInit
	QPRTR
	QPRTS
	QPSQE
	QPSQD
	QPErr
)

var qpStateNames = [...]string{"RST", "INIT", "RTR", "RTS", "SQE", "SQD", "ERR"}

func (s QPState) String() string {
	if int(s) < len(qpStateNames) {
		return qpStateNames[s]
	}
	return "state" + strconv.Itoa(int(s))
}

// ParseQPState accepts rst, init, rtr, rts, sqe, sqd, err (any case).
func ParseQPState(s string) (QPState, bool) {
	for i, n := range qpStateNames {
		if equalFold(n, s) {
			return QPState(i), true
		}
	}
	return 0, false
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'a' <= x && x <= 'z' {
			x -= 'a' - 'A'
		}
		if 'a' <= y && y <= 'z' {
			y -= 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// QP service types (MLX4_QP_ST_*).
const (
	STRC  = 0
	STUC  = 1
	STUD  = 3
	STXRC = 6
	STMLX = 7
)

// Modify-QP optpar bits (MLX4_QP_OPTPAR_*).
const (
	OptAltAddrPath    = 1 << 0
	OptRRE            = 1 << 1
	OptRAE            = 1 << 2
	OptRWE            = 1 << 3
	OptPKeyIndex      = 1 << 4
	OptQKey           = 1 << 5
	OptRNRTimeout     = 1 << 6
	OptPrimaryAddr    = 1 << 7
	OptSRAMax         = 1 << 8
	OptRRAMax         = 1 << 9
	OptPMState        = 1 << 10
	OptRetryCount     = 1 << 12
	OptRNRRetry       = 1 << 13
	OptAckTimeout     = 1 << 14
	OptSchedQueue     = 1 << 16
	OptCounterIndex   = 1 << 20
	OptVLANStripping  = 1 << 21
	OptRateLimitParam = 1 << 23
)

// QPPath is struct mlx4_qp_path (44 bytes).
type QPPath struct {
	Port      int // the VF's port, 1 or 2 (sched_queue bit 6)
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
}

// QP path offsets (within the path).
const (
	pathPKeyIndex = 3
	pathCounter   = 4
	pathGRHMyLMC  = 5
	pathRLID      = 6
	pathAckTO     = 8
	pathMGID      = 9
	pathHopLimit  = 11
	pathRGID      = 16
	pathSched     = 32
	pathSize      = 44
)

func (p QPPath) encode(b []byte) {
	b[pathPKeyIndex] = p.PKeyIndex
	b[pathCounter] = p.CounterIndex
	g := p.SMACIndex & 0x7f
	if p.GRH {
		g |= 0x80
	}
	b[pathGRHMyLMC] = g
	put16(b, pathRLID, p.RLID)
	b[pathAckTO] = p.AckTimeout
	b[pathMGID] = p.MGIDIndex
	b[pathHopLimit] = p.HopLimit
	copy(b[pathRGID:pathRGID+16], p.RGID[:])
	port := p.Port
	if port < 1 {
		port = 1
	}
	b[pathSched] = 0x83 | byte((port-1)&1)<<6 // mlx4: 0x83 | (port-1) << 6
}

func decodePath(b []byte) QPPath {
	p := QPPath{
		Port:         int(b[pathSched]>>6&1) + 1,
		PKeyIndex:    b[pathPKeyIndex],
		CounterIndex: b[pathCounter],
		MGIDIndex:    b[pathMGID],
		GRH:          b[pathGRHMyLMC]&0x80 != 0,
		SMACIndex:    b[pathGRHMyLMC] & 0x7f,
		RLID:         get16(b, pathRLID),
		AckTimeout:   b[pathAckTO],
		HopLimit:     b[pathHopLimit],
	}
	copy(p.RGID[:], b[pathRGID:pathRGID+16])
	return p
}

// QPContext is struct mlx4_qp_context.
type QPContext struct {
	State       QPState // QUERY_QP only (flags 31:28)
	ST          uint8   // service type (flags 23:16)
	PD          uint32
	MTU         uint8 // mtu_msgmax 7:5
	MsgMax      uint8 // mtu_msgmax 4:0
	LogRQSize   uint8
	LogRQStride uint8 // stride = 16 << LogRQStride
	LogSQSize   uint8
	LogSQStride uint8
	NoRQ        bool // SRQ, RSS or XRC target: no receive queue in the MTT
	UARPage     uint32
	LocalQPN    uint32
	RemoteQPN   uint32
	Pri, Alt    QPPath
	NextSendPSN uint32
	SendCQ      uint32
	RecvCQ      uint32
	XRCD        uint32
	RNRNextPSN  uint32
	DBRecAddr   uint64
	QKey        uint32
	UseSRQ      bool
	SRQN        uint32
	LogPageSize int
	MTTBase     uint64
}

// QP context offsets (within the context; the mailbox adds 8).
const (
	qpcFlags       = 0x00
	qpcPD          = 0x04
	qpcMTUMsgMax   = 0x08
	qpcRQSize      = 0x09
	qpcSQSize      = 0x0a
	qpcUARPage     = 0x0c
	qpcLocalQPN    = 0x10
	qpcRemoteQPN   = 0x14
	qpcPriPath     = 0x18
	qpcAltPath     = 0x44
	qpcNextSendPSN = 0x78
	qpcCQNSend     = 0x7c
	qpcXRCD        = 0x98
	qpcRNRNextPSN  = 0x94
	qpcCQNRecv     = 0x9c
	qpcDBRecAddr   = 0xa0
	qpcQKey        = 0xa8
	qpcSRQN        = 0xac
	qpcLogPageSize = 0xc8
	qpcMTTBaseH    = 0xcb
	qpcMTTBaseL    = 0xcc
)

// Encode writes the context into b[:QPContextSize].
func (c QPContext) Encode(b []byte) {
	clear(b[:QPContextSize])
	put32(b, qpcFlags, uint32(c.State&0xf)<<28|uint32(c.ST)<<16)
	put32(b, qpcPD, c.PD&0xffffff)
	b[qpcMTUMsgMax] = c.MTU<<5 | c.MsgMax&0x1f
	b[qpcRQSize] = c.LogRQSize<<3 | c.LogRQStride&7
	if c.NoRQ {
		b[qpcRQSize] = 0
	}
	b[qpcSQSize] = c.LogSQSize<<3 | c.LogSQStride&7
	put32(b, qpcUARPage, c.UARPage&0xffffff)
	put32(b, qpcLocalQPN, c.LocalQPN&0xffffff)
	put32(b, qpcRemoteQPN, c.RemoteQPN&0xffffff)
	c.Pri.encode(b[qpcPriPath : qpcPriPath+pathSize])
	c.Alt.encode(b[qpcAltPath : qpcAltPath+pathSize])
	put32(b, qpcNextSendPSN, c.NextSendPSN&0xffffff)
	put32(b, qpcCQNSend, c.SendCQ&0xffffff)
	put32(b, qpcRNRNextPSN, c.RNRNextPSN&0xffffff)
	put32(b, qpcXRCD, c.XRCD&0xffffff)
	put32(b, qpcCQNRecv, c.RecvCQ&0xffffff)
	put64(b, qpcDBRecAddr, c.DBRecAddr)
	put32(b, qpcQKey, c.QKey)
	srqn := c.SRQN & 0xffffff
	if c.UseSRQ {
		srqn |= 1 << 24
	}
	put32(b, qpcSRQN, srqn)
	b[qpcLogPageSize] = byte(c.LogPageSize & 0x3f)
	hi, lo := mttAddr(c.MTTBase)
	b[qpcMTTBaseH] = hi
	put32(b, qpcMTTBaseL, lo)
}

// DecodeQPContext reads a QP context (QUERY_QP's outbox from offset 8).
func DecodeQPContext(b []byte) (QPContext, error) {
	if len(b) < QPContextSize {
		return QPContext{}, ErrShort
	}
	f := get32(b, qpcFlags)
	srqn := get32(b, qpcSRQN)
	return QPContext{
		State:       QPState(f >> 28),
		ST:          uint8(f >> 16),
		PD:          get32(b, qpcPD) & 0xffffff,
		MTU:         b[qpcMTUMsgMax] >> 5,
		MsgMax:      b[qpcMTUMsgMax] & 0x1f,
		LogRQSize:   b[qpcRQSize] >> 3 & 0xf,
		LogRQStride: b[qpcRQSize] & 7,
		LogSQSize:   b[qpcSQSize] >> 3 & 0xf,
		LogSQStride: b[qpcSQSize] & 7,
		UARPage:     get32(b, qpcUARPage) & 0xffffff,
		LocalQPN:    get32(b, qpcLocalQPN) & 0xffffff,
		RemoteQPN:   get32(b, qpcRemoteQPN) & 0xffffff,
		Pri:         decodePath(b[qpcPriPath : qpcPriPath+pathSize]),
		Alt:         decodePath(b[qpcAltPath : qpcAltPath+pathSize]),
		NextSendPSN: get32(b, qpcNextSendPSN) & 0xffffff,
		SendCQ:      get32(b, qpcCQNSend) & 0xffffff,
		RNRNextPSN:  get32(b, qpcRNRNextPSN) & 0xffffff,
		XRCD:        get32(b, qpcXRCD) & 0xffffff,
		RecvCQ:      get32(b, qpcCQNRecv) & 0xffffff,
		DBRecAddr:   get64(b, qpcDBRecAddr),
		QKey:        get32(b, qpcQKey),
		UseSRQ:      srqn&(1<<24) != 0,
		SRQN:        srqn & 0xffffff,
		LogPageSize: int(b[qpcLogPageSize] & 0x3f),
		MTTBase:     (uint64(b[qpcMTTBaseH])<<32 | uint64(get32(b, qpcMTTBaseL))) / MTTEntrySize,
	}, nil
}

// MTTPages is qp_get_mtt_size for this context: the pages of the send and
// receive queues, rounded up to a power of two, at least 1.
func (c QPContext) MTTPages() int {
	total := uint64(1) << (int(c.LogSQSize) + int(c.LogSQStride) + 4)
	if !c.NoRQ && !c.UseSRQ && c.ST != STXRC {
		total += uint64(1) << (int(c.LogRQSize) + int(c.LogRQStride) + 4)
	}
	pages := total >> (c.LogPageSize + PageShift)
	n := 1
	for uint64(n) < pages {
		n <<= 1
	}
	return n
}

// QPMailbox is a modify-QP inbox: BE32 optpar at 0, 4 reserved bytes, the
// QP context at 8.
type QPMailbox struct {
	OptPar uint32
	Ctx    QPContext
}

// Encode writes the mailbox into b[:QPMailboxSize].
func (m QPMailbox) Encode(b []byte) {
	clear(b[:8])
	put32(b, 0, m.OptPar)
	m.Ctx.Encode(b[8:QPMailboxSize])
}

// EncodeWriteMTT writes a WRITE_MTT inbox into b (at least 16+8*len(addrs)
// bytes): BE64 start index at 0, the entries from 16 with the present bit.
// At most MaxWriteMTT entries fit one mailbox.
func EncodeWriteMTT(b []byte, start uint64, addrs []uint64) int {
	n := min(len(addrs), MaxWriteMTT)
	clear(b[:16])
	put64(b, 0, start)
	for i := range n {
		put64(b, 16+8*i, addrs[i]|mttPresent)
	}
	return 16 + 8*n
}
