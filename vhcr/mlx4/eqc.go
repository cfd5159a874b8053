package mlx4

// EQ context offsets: drivers/net/ethernet/mellanox/mlx4/mlx4.h
// struct mlx4_eq_context (64 bytes, big-endian fields).
const (
	EQCFlags         = 0x00 // BE32: status 31:28, state 11:8
	EQCPageOffset    = 0x0a // BE16
	EQCLogEQSize     = 0x0c // 4:0
	EQCEQPeriod      = 0x11
	EQCEQMaxCount    = 0x13
	EQCIntr          = 0x17
	EQCLogPageSize   = 0x18 // 5:0, page shift = + 12
	EQCMTTBaseAddrH  = 0x1b
	EQCMTTBaseAddrL  = 0x1c // BE32
	EQCConsumerIndex = 0x28 // BE32, 23:0
	EQCProducerIndex = 0x2c // BE32, 23:0
	EQContextSize    = 0x40
)

// EQ states, statuses and the doorbell (eq.c).
const (
	EQ_STATUS_OK          = 0 << 28  // MLX4_EQ_STATUS_OK
	EQ_STATE_ARMED        = 9 << 8   // MLX4_EQ_STATE_ARMED: the next EQE raises the vector
	EQ_STATE_FIRED        = 10 << 8  // MLX4_EQ_STATE_FIRED: raised, waiting for an arm
	EQ_STATE_ALWAYS_ARMED = 11 << 8  // MLX4_EQ_STATE_ALWAYS_ARMED: every EQE raises
	EQStateMask           = 0xf << 8 // the state field of EQCFlags
	EQ_DOORBELL_ARM       = 1 << 31  // eq_set_ci's req_not bit
	EQIndexMask           = 0xffffff
)

// MAP_EQ's in_modifier (eq.c mlx4_MAP_EQ: (unmap << 31) | eq_num;
// mlx4_MAP_EQ_wrapper: eqn = in_modifier & 0x3FF, unmapped when
// in_modifier >> 31). EQNMask is an EQ number's width wherever a command
// names one.
const (
	MAP_EQ_UNMAP = 1 << 31
	EQNMask      = 0x3ff
)

// MLX4_EVENT_TYPES_NUM (include/linux/mlx4/device.h) is the number of event
// types MAP_EQ's 64-bit in_param maps, one bit each.
const MLX4_EVENT_TYPES_NUM = 64

// Where a function's EQ doorbells are (eq.c mlx4_get_eq_uar, eq_set_ci):
// EQ eqn's doorbell is the first 32-bit word at UAR page eqn/4, offset
// MLX4_EQ_DOORBELL (0x800) + 8·(eqn%4), written BE32: consumer index 23:0,
// EQ_DOORBELL_ARM to arm. Four EQs share a UAR page.
const (
	UARPageSize      = 0x1000 // PAGE_SIZE (uar_page_sz 0 in QUERY_HCA)
	MLX4_EQ_DOORBELL = 0x800  // first EQ doorbell of a UAR page
	EQDoorbellStep   = 8      // between the doorbells of one page
)

// EQDoorbellOffset is the offset of EQ eqn's doorbell from the start of
// the function's UAR space.
func EQDoorbellOffset(eqn int) int64 {
	return int64(eqn/4)*UARPageSize + MLX4_EQ_DOORBELL + EQDoorbellStep*int64(eqn%4)
}

// EQContext is struct mlx4_eq_context, the fields the model reads or writes.
type EQContext struct {
	LogSize     int    // log2 of the EQE count (low 5 bits)
	LogPageSize int    // page shift - 12
	PageOffset  uint16 // must be 0 for a ring the model writes
	MTTBase     uint64 // first MTT entry (index)
	Intr        uint8  // the MSI-X vector (of the function) EQEs raise
	State       uint32 // EQCFlags & EQStateMask (EQ_STATE_*); 0 encodes as ARMED
	Period      uint8
	MaxCount    uint8
	Consumer    uint32 // 23:0
	Producer    uint32 // 23:0
}

// Encode writes the context as mlx4_create_eq does (status OK, the state,
// armed if zero) into b[:EQContextSize], zeroing the rest.
func (c EQContext) Encode(b []byte) {
	b = b[:EQContextSize]
	clear(b)
	state := c.State & EQStateMask
	if state == 0 {
		state = EQ_STATE_ARMED
	}
	put32(b, EQCFlags, EQ_STATUS_OK|state)
	put16(b, EQCPageOffset, c.PageOffset)
	b[EQCLogEQSize] = byte(c.LogSize & 0x1f)
	b[EQCEQPeriod] = c.Period
	b[EQCEQMaxCount] = c.MaxCount
	b[EQCIntr] = c.Intr
	b[EQCLogPageSize] = byte(c.LogPageSize & 0x3f)
	putMTTAddr(b, EQCMTTBaseAddrH, EQCMTTBaseAddrL, c.MTTBase)
	put32(b, EQCConsumerIndex, c.Consumer&EQIndexMask)
	put32(b, EQCProducerIndex, c.Producer&EQIndexMask)
}

// DecodeEQContext reads an EQ context (SW2HW_EQ's inbox, QUERY_EQ's
// outbox). Every bit pattern decodes; fewer than EQContextSize bytes is
// ErrShort.
func DecodeEQContext(b []byte) (EQContext, error) {
	if len(b) < EQContextSize {
		return EQContext{}, shortErr("EQ context", len(b), EQContextSize)
	}
	return EQContext{
		LogSize:     int(b[EQCLogEQSize] & 0x1f),
		LogPageSize: int(b[EQCLogPageSize] & 0x3f),
		PageOffset:  get16(b, EQCPageOffset),
		MTTBase:     mttAddr(b, EQCMTTBaseAddrH, EQCMTTBaseAddrL),
		Intr:        b[EQCIntr],
		State:       get32(b, EQCFlags) & EQStateMask,
		Period:      b[EQCEQPeriod],
		MaxCount:    b[EQCEQMaxCount],
		Consumer:    get32(b, EQCConsumerIndex) & EQIndexMask,
		Producer:    get32(b, EQCProducerIndex) & EQIndexMask,
	}, nil
}

// MTTPages is resource_tracker.c eq_get_mtt_size: the pages of 2^LogSize
// 32-byte EQEs, at least 1.
func (c EQContext) MTTPages() int { return pow2Pages(c.LogSize + 5 - c.LogPageSize - PageShift) }
