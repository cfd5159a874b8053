package mlx4

// CQ context offsets: drivers/net/ethernet/mellanox/mlx4/mlx4.h
// struct mlx4_cq_context
// (64 bytes, big-endian fields).
const (
	CQCFlags                = 0x00
	CQCPageOffset           = 0x0a // BE16
	CQCLogSizeUsrPage       = 0x0c // BE32: log size 28:24, UAR page 23:0
	CQCCQPeriod             = 0x10 // BE16
	CQCCQMaxCount           = 0x12 // BE16
	CQCCompEQN              = 0x17
	CQCLogPageSize          = 0x18 // 5:0, page shift = + 12
	CQCMTTBaseAddrH         = 0x1b
	CQCMTTBaseAddrL         = 0x1c // BE32
	CQCLastNotifiedIndex    = 0x20
	CQCSolicitProducerIndex = 0x24
	CQCConsumerIndex        = 0x28
	CQCProducerIndex        = 0x2c
	CQCDBRecAddr            = 0x38 // BE64
	CQContextSize           = 0x40
)

// CQContext is struct mlx4_cq_context, the fields the model reads or writes.
type CQContext struct {
	LogSize     int // log2 of the CQE count (32-byte CQEs)
	UsrPage     uint32
	CompEQN     uint8
	LogPageSize int
	MTTBase     uint64 // first MTT entry (index)
	Period      uint16
	MaxCount    uint16
	DBRecAddr   uint64
}

// Encode writes the context into b[:CQContextSize], zeroing the rest.
func (c CQContext) Encode(b []byte) {
	b = b[:CQContextSize]
	clear(b)
	put32(b, CQCLogSizeUsrPage, uint32(c.LogSize&0x1f)<<24|c.UsrPage&0xffffff)
	put16(b, CQCCQPeriod, c.Period)
	put16(b, CQCCQMaxCount, c.MaxCount)
	b[CQCCompEQN] = c.CompEQN
	b[CQCLogPageSize] = byte(c.LogPageSize & 0x3f)
	putMTTAddr(b, CQCMTTBaseAddrH, CQCMTTBaseAddrL, c.MTTBase)
	put64(b, CQCDBRecAddr, c.DBRecAddr)
}

// DecodeCQContext reads a CQ context (SW2HW_CQ's inbox, QUERY_CQ's outbox).
// Every bit pattern decodes; fewer than CQContextSize bytes is ErrShort.
func DecodeCQContext(b []byte) (CQContext, error) {
	if len(b) < CQContextSize {
		return CQContext{}, shortErr("CQ context", len(b), CQContextSize)
	}
	w := get32(b, CQCLogSizeUsrPage)
	return CQContext{
		LogSize:     int(w >> 24 & 0x1f),
		UsrPage:     w & 0xffffff,
		CompEQN:     b[CQCCompEQN],
		LogPageSize: int(b[CQCLogPageSize] & 0x3f),
		MTTBase:     mttAddr(b, CQCMTTBaseAddrH, CQCMTTBaseAddrL),
		Period:      get16(b, CQCCQPeriod),
		MaxCount:    get16(b, CQCCQMaxCount),
		DBRecAddr:   get64(b, CQCDBRecAddr),
	}, nil
}

// MTTPages is resource_tracker.c cq_get_mtt_size: the pages of 2^LogSize
// 32-byte CQEs, at least 1.
func (c CQContext) MTTPages() int { return pow2Pages(c.LogSize + 5 - c.LogPageSize - PageShift) }
