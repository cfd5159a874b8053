package mlx4

// SRQ context offsets: drivers/net/ethernet/mellanox/mlx4/mlx4.h
// struct mlx4_srq_context
// (48 bytes, big-endian fields).
const (
	SRQCStateLogSizeSRQN = 0x00 // BE32: log size 27:24, SRQN 23:0
	SRQCLogStride        = 0x04 // 2:0, stride = 16 << log stride
	SRQCXRCD             = 0x06 // BE16
	SRQCPgOffsetCQN      = 0x08 // BE32: CQN 23:0
	SRQCLogPageSize      = 0x10 // 5:0, page shift = + 12
	SRQCMTTBaseAddrH     = 0x13
	SRQCMTTBaseAddrL     = 0x14 // BE32
	SRQCPD               = 0x18 // BE32, 23:0
	SRQCLimitWatermark   = 0x1c // BE16
	SRQCWQECnt           = 0x1e
	SRQCWQECounter       = 0x22
	SRQCDBRecAddr        = 0x28 // BE64
	SRQContextSize       = 0x30
)

// SRQContext is struct mlx4_srq_context, the fields the model reads or
// writes.
type SRQContext struct {
	SRQN           uint32
	LogSize        int // 27:24
	LogStride      int // stride = 16 << LogStride
	XRCD           uint16
	CQN            uint32
	LogPageSize    int
	MTTBase        uint64 // first MTT entry (index)
	PD             uint32
	LimitWatermark uint16
	DBRecAddr      uint64
}

// Encode writes the context into b[:SRQContextSize], zeroing the rest.
func (c SRQContext) Encode(b []byte) {
	b = b[:SRQContextSize]
	clear(b)
	put32(b, SRQCStateLogSizeSRQN, uint32(c.LogSize&0xf)<<24|c.SRQN&0xffffff)
	b[SRQCLogStride] = byte(c.LogStride & 7)
	put16(b, SRQCXRCD, c.XRCD)
	put32(b, SRQCPgOffsetCQN, c.CQN&0xffffff)
	b[SRQCLogPageSize] = byte(c.LogPageSize & 0x3f)
	putMTTAddr(b, SRQCMTTBaseAddrH, SRQCMTTBaseAddrL, c.MTTBase)
	put32(b, SRQCPD, c.PD&0xffffff)
	put16(b, SRQCLimitWatermark, c.LimitWatermark)
	put64(b, SRQCDBRecAddr, c.DBRecAddr)
}

// DecodeSRQContext reads an SRQ context (SW2HW_SRQ's inbox, QUERY_SRQ's
// outbox). Every bit pattern decodes; fewer than SRQContextSize bytes is
// ErrShort.
func DecodeSRQContext(b []byte) (SRQContext, error) {
	if len(b) < SRQContextSize {
		return SRQContext{}, shortErr("SRQ context", len(b), SRQContextSize)
	}
	w := get32(b, SRQCStateLogSizeSRQN)
	return SRQContext{
		SRQN:           w & 0xffffff,
		LogSize:        int(w >> 24 & 0xf),
		LogStride:      int(b[SRQCLogStride] & 7),
		XRCD:           get16(b, SRQCXRCD),
		CQN:            get32(b, SRQCPgOffsetCQN) & 0xffffff,
		LogPageSize:    int(b[SRQCLogPageSize] & 0x3f),
		MTTBase:        mttAddr(b, SRQCMTTBaseAddrH, SRQCMTTBaseAddrL),
		PD:             get32(b, SRQCPD) & 0xffffff,
		LimitWatermark: get16(b, SRQCLimitWatermark),
		DBRecAddr:      get64(b, SRQCDBRecAddr),
	}, nil
}

// MTTPages is resource_tracker.c srq_get_mtt_size: the pages of 2^LogSize
// WQEs of 16 << LogStride bytes, at least 1.
func (c SRQContext) MTTPages() int {
	return pow2Pages(c.LogSize + c.LogStride + 4 - c.LogPageSize - PageShift)
}
