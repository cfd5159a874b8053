package hca

// Context decoders: the fields of the mlx4 QP, CQ, SRQ, EQ and MPT contexts
// that validation uses, read from a shadow mailbox at the offsets of
// research/mlx4-commchan.md §2.6. Every bit pattern decodes; sizes derived
// from VF-controlled exponents are clamped so that they cannot overflow.

import "encoding/binary"

func be16(b []byte, off int) uint16 { return binary.BigEndian.Uint16(b[off:]) }
func be32(b []byte, off int) uint32 { return binary.BigEndian.Uint32(b[off:]) }
func be64(b []byte, off int) uint64 { return binary.BigEndian.Uint64(b[off:]) }

// Modify-QP mailbox offsets: BE32 optpar at 0, the QP context at 8.
const (
	qpcOptpar       = 0
	qpcFlags        = 8   // BE32: 31:28 state, 23:16 service type, bit 13 RSS
	qpcRQSizeStride = 17  // log size 6:3, log stride 2:0
	qpcSQSizeStride = 18  //
	qpcPriPath      = 32  // struct mlx4_qp_path (44 bytes)
	qpcPKey         = 35  // pri_path.pkey_index
	qpcGRHMyLMC     = 37  // pri_path.grh_mylmc: bit 7 GRH, 6:0 smac index (Ethernet)
	qpcMGID         = 41  // pri_path.mgid_index
	qpcSched        = 64  // pri_path.sched_queue: bit 6 = port-1
	qpcAltPath      = 76  //
	qpcAltPKey      = 79  //
	qpcAltMGID      = 85  //
	qpcAltSched     = 108 //
	qpcCQNSend      = 132 // BE32, low 24 bits
	qpcParams2      = 152 // page_offset in 11:6
	qpcCQNRecv      = 164 // BE32, low 24 bits
	qpcQKey         = 176 // BE32, rewritten for proxy/tunnel QPs
	qpcSRQN         = 180 // BE32: bit 24 use SRQ, 23:0 SRQN
	qpcRateLimit    = 196 // BE16, must be 0 for VFs
	qpcLogPageSize  = 208 // low 6 bits, page shift = +12
	qpcMTTBaseL     = 212 // BE32 & 0xfffffff8: MTT byte address / 8
	qpcEnd          = 8 + 248
)

// optpar bits (MLX4_QP_OPTPAR_*).
const (
	optAltAddrPath  = 1 << 0
	optPKeyIndex    = 1 << 4
	optPriAddrPath  = 1 << 7
	optSchedQueue   = 1 << 16
	mttEntrySize    = 8
	icmPageShift    = 12
	maxSizeExponent = 40 // clamp for VF-supplied log sizes
)

// QP service types (MLX4_QP_ST_*).
const (
	stRC  = 0
	stUC  = 1
	stUD  = 3
	stXRC = 6
	stMLX = 7
)

// qpCtx is what validation needs from a modify-QP mailbox.
type qpCtx struct {
	optpar    uint32
	st        uint8
	rss       bool
	vfPort    int // 1 + sched_queue bit 6
	pkey      uint8
	mgid      uint8
	altVFPort int
	altMGID   uint8
	smac      uint8
	cqnSend   uint32
	cqnRecv   uint32
	useSRQ    bool
	srqn      uint32
	rateLimit uint16
	mttBase   uint64 // MTT entry index
	mttSize   int    // MTT entries (pages)
}

func decodeQPC(b *[4096]byte) qpCtx {
	var q qpCtx
	q.optpar = be32(b[:], qpcOptpar)
	flags := be32(b[:], qpcFlags)
	q.st = uint8(flags >> 16)
	q.rss = flags&(1<<13) != 0
	q.vfPort = int(b[qpcSched]>>6&1) + 1
	q.pkey = b[qpcPKey]
	q.mgid = b[qpcMGID]
	q.altVFPort = int(b[qpcAltSched]>>6&1) + 1
	q.altMGID = b[qpcAltMGID]
	q.smac = b[qpcGRHMyLMC] & 0x7f
	q.cqnSend = be32(b[:], qpcCQNSend) & 0xffffff
	q.cqnRecv = be32(b[:], qpcCQNRecv) & 0xffffff
	srqn := be32(b[:], qpcSRQN)
	q.useSRQ = srqn&(1<<24) != 0
	q.srqn = srqn & 0xffffff
	q.rateLimit = be16(b[:], qpcRateLimit)
	q.mttBase = uint64(be32(b[:], qpcMTTBaseL)&0xfffffff8) / mttEntrySize
	q.mttSize = qpMTTSize(b, q)
	return q
}

// qpMTTSize is qp_get_mtt_size: the pages of the send and receive queues,
// rounded up to a power of two, at least 1.
func qpMTTSize(b *[4096]byte, q qpCtx) int {
	sq := b[qpcSQSizeStride]
	rq := b[qpcRQSizeStride]
	sqLog := int(sq>>3&0xf) + int(sq&7) + 4
	total := uint64(1) << sqLog
	if !q.useSRQ && !q.rss && q.st != stXRC {
		rqLog := int(rq>>3&0xf) + int(rq&7) + 4
		total += uint64(1) << rqLog
	}
	pageOffset := uint64(be32(b[:], qpcParams2)>>6) & 0x3f
	shift := int(b[qpcLogPageSize]&0x3f) + icmPageShift
	pages := (total + pageOffset<<6) >> shift
	n := 1
	for uint64(n) < pages {
		n <<= 1
	}
	return n
}

// pow2Pages is 2^(e) clamped: 1 for e < 0, 2^maxSizeExponent above it.
func pow2Pages(e int) int {
	if e < 0 {
		return 1
	}
	if e > maxSizeExponent {
		e = maxSizeExponent
	}
	return 1 << e
}

// CQ context offsets (struct mlx4_cq_context at mailbox offset 0).
const (
	cqcLogSize     = 0x0c // BE32: log size in 28:24
	cqcPeriod      = 0x10
	cqcMaxCount    = 0x12
	cqcCompEQN     = 0x17
	cqcLogPageSize = 0x18
	cqcMTTBaseH    = 0x1b
	cqcMTTBaseL    = 0x1c
	cqcSize        = 64
)

type cqCtx struct {
	logSize int
	compEQN int
	mttBase uint64
	mttSize int
}

func decodeCQC(b []byte) cqCtx {
	var c cqCtx
	c.logSize = int(be32(b, cqcLogSize) >> 24 & 0x1f)
	c.compEQN = int(b[cqcCompEQN])
	shift := int(b[cqcLogPageSize]&0x3f) + icmPageShift
	c.mttBase = (uint64(b[cqcMTTBaseH])<<32 | uint64(be32(b, cqcMTTBaseL))) / mttEntrySize
	c.mttSize = pow2Pages(c.logSize + 5 - shift) // 32-byte CQEs
	return c
}

// SRQ context offsets (struct mlx4_srq_context).
const (
	srqcStateLogSizeSRQN = 0x00 // BE32: log size 27:24, SRQN 23:0
	srqcLogStride        = 0x04
	srqcLogPageSize      = 0x10
	srqcMTTBaseH         = 0x13
	srqcMTTBaseL         = 0x14
	srqcLimitWatermark   = 0x1c
	srqcSize             = 48
)

type srqCtx struct {
	srqn    uint32
	logSize int
	mttBase uint64
	mttSize int
}

func decodeSRQC(b []byte) srqCtx {
	var s srqCtx
	w := be32(b, srqcStateLogSizeSRQN)
	s.srqn = w & 0xffffff
	s.logSize = int(w >> 24 & 0xf)
	stride := int(b[srqcLogStride] & 7)
	shift := int(b[srqcLogPageSize]&0x3f) + icmPageShift
	s.mttBase = (uint64(b[srqcMTTBaseH])<<32 | uint64(be32(b, srqcMTTBaseL))) / mttEntrySize
	s.mttSize = pow2Pages(s.logSize + stride + 4 - shift)
	return s
}

// EQ context offsets (struct mlx4_eq_context).
const (
	eqcFlags       = 0x00
	eqcPageOffset  = 0x0a
	eqcLogSize     = 0x0c // low 5 bits
	eqcLogPageSize = 0x18
	eqcMTTBaseH    = 0x1b
	eqcMTTBaseL    = 0x1c
	eqcConsumer    = 0x28
	eqcProducer    = 0x2c
	eqcSize        = 64
)

type eqCtx struct {
	logSize    int
	pageShift  int
	pageOffset uint16
	mttBase    uint64
	mttSize    int
}

func decodeEQC(b []byte) eqCtx {
	var e eqCtx
	e.logSize = int(b[eqcLogSize] & 0x1f)
	e.pageShift = int(b[eqcLogPageSize]&0x3f) + icmPageShift
	e.pageOffset = be16(b, eqcPageOffset)
	e.mttBase = (uint64(b[eqcMTTBaseH])<<32 | uint64(be32(b, eqcMTTBaseL))) / mttEntrySize
	e.mttSize = pow2Pages(e.logSize + 5 - e.pageShift) // 32-byte EQEs
	return e
}

// MPT entry offsets (struct mlx4_mpt_entry, 64 bytes).
const (
	mptFlags    = 0x00 // BE32: bit 8 region, bit 9 physical, bit 15 bind enable
	mptKey      = 0x08
	mptPDFlags  = 0x0c // BE32: PD 23:0 (23:17 = slave+1 or 0), bit 27 fast-reg
	mptMTTAddr  = 0x2c // BE64 & 0xfffffff8
	mptMTTSize  = 0x34 // BE32
	mptSize     = 64
	mptRegion   = 1 << 8
	mptPhysical = 1 << 9
	mptBindEn   = 1 << 15
	mptFastReg  = 1 << 27
)

type mptCtx struct {
	flags    uint32
	pdFlags  uint32
	pdSlave  int // 0 = none, else slave+1
	mttBase  uint64
	mttSize  uint32
	physical bool
	region   bool
}

func decodeMPT(b []byte) mptCtx {
	var m mptCtx
	m.flags = be32(b, mptFlags)
	m.pdFlags = be32(b, mptPDFlags)
	m.pdSlave = int(m.pdFlags >> 17 & 0x7f)
	m.mttBase = (be64(b, mptMTTAddr) & 0xfffffff8) / mttEntrySize
	m.mttSize = be32(b, mptMTTSize)
	m.physical = m.flags&mptPhysical != 0
	m.region = m.flags&mptRegion != 0
	return m
}
