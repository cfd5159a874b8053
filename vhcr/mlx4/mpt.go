package mlx4

// MPT entry offsets: drivers/net/ethernet/mellanox/mlx4/mlx4.h
// struct mlx4_mpt_entry (64 bytes, big-endian fields).
const (
	MPTFlags           = 0x00 // BE32: MLX4_MPT_FLAG_*, MLX4_PERM_* in 14:10
	MPTQPN             = 0x04 // BE32, 23:0
	MPTKey             = 0x08
	MPTPDFlags         = 0x0c // BE32: PD 23:0 (23:17 slave + 1 or 0), MLX4_MPT_PD_FLAG_*
	MPTStart           = 0x10 // BE64
	MPTLength          = 0x18 // BE64
	MPTLKey            = 0x20
	MPTWinCnt          = 0x24
	MPTMTTRep          = 0x2b
	MPTMTTAddr         = 0x2c // BE64, 31:3 the MTT byte address
	MPTMTTSz           = 0x34 // BE32
	MPTEntitySize      = 0x38 // BE32
	MPTFirstByteOffset = 0x3c
	MPTEntrySize       = 0x40
)

// MPT flags (mlx4.h MLX4_MPT_FLAG_*, MLX4_MPT_PD_FLAG_*) and access rights
// (include/linux/mlx4/device.h MLX4_PERM_*).
const (
	MPT_FLAG_SW_OWNS     = 0xf << 28
	MPT_FLAG_FREE        = 0x3 << 28
	MPT_FLAG_MIO         = 1 << 17
	MPT_FLAG_BIND_ENABLE = 1 << 15
	MPT_FLAG_PHYSICAL    = 1 << 9
	MPT_FLAG_REGION      = 1 << 8

	MPT_PD_MASK          = 0x1ffff
	MPT_PD_VF_MASK       = 0xfe0000 // the slave + 1, 0 for none
	MPT_PD_FLAG_FAST_REG = 1 << 27
	MPT_PD_FLAG_RAE      = 1 << 28
	MPT_PD_FLAG_EN_INV   = 3 << 24

	PERM_LOCAL_READ   = 1 << 10
	PERM_LOCAL_WRITE  = 1 << 11
	PERM_REMOTE_READ  = 1 << 12
	PERM_REMOTE_WRITE = 1 << 13
	PERM_ATOMIC       = 1 << 14
	PERM_BIND_MW      = 1 << 15
	PERM_MASK         = 0xfc00
)

// MPT is struct mlx4_mpt_entry for a memory region (mlx4_mr_enable).
type MPT struct {
	Flags      uint32 // the whole flags word (Encode: MIO | REGION | Access)
	Access     uint32 // MLX4_PERM_* bits but BIND_MW (flags 14:10; bit 15 is BIND_ENABLE)
	Physical   bool   // no translation (MTT ignored)
	QPN        uint32
	Key        uint32 // the key (lkey/rkey); the entry's key field holds HWIndexOf(Key)
	PDFlags    uint32 // the whole pd_flags word
	PD         uint32 // 23:0; 23:17 name a slave (slave + 1)
	Start      uint64
	Length     uint64
	MTTBase    uint64 // first MTT entry (index)
	MTTSize    uint32 // entries
	EntitySize uint32 // page shift of the entries
}

// Encode writes the entry as mlx4_mr_enable does into b[:MPTEntrySize]:
// flags MIO | REGION | access (| PHYSICAL), pd_flags PD 16:0 | EN_INV, the
// MTT only for a translated region. Flags and PDFlags are outputs of
// DecodeMPT; Encode ignores them.
func (m MPT) Encode(b []byte) {
	b = b[:MPTEntrySize]
	clear(b)
	flags := uint32(MPT_FLAG_MIO|MPT_FLAG_REGION) | m.Access&PERM_MASK&^PERM_BIND_MW
	if m.Physical {
		flags |= MPT_FLAG_PHYSICAL
	}
	put32(b, MPTFlags, flags)
	put32(b, MPTQPN, m.QPN&0xffffff)
	put32(b, MPTKey, HWIndexOf(m.Key)) // mlx4_mr_enable: key_to_hw_index(mr->key)
	put32(b, MPTPDFlags, m.PD&MPT_PD_MASK|MPT_PD_FLAG_EN_INV)
	put64(b, MPTStart, m.Start)
	put64(b, MPTLength, m.Length)
	if !m.Physical {
		put64(b, MPTMTTAddr, m.MTTBase*MTTEntrySize)
		put32(b, MPTMTTSz, m.MTTSize)
	}
	put32(b, MPTEntitySize, m.EntitySize)
}

// DecodeMPT reads an MPT entry (SW2HW_MPT's inbox, QUERY_MPT's outbox).
// MTTBase is resource_tracker.c mr_get_mtt_addr (the low 32 bits of
// mtt_addr, bits 2:0 dropped) in entries. Every bit pattern decodes; fewer
// than MPTEntrySize bytes is ErrShort.
func DecodeMPT(b []byte) (MPT, error) {
	if len(b) < MPTEntrySize {
		return MPT{}, shortErr("MPT entry", len(b), MPTEntrySize)
	}
	f := get32(b, MPTFlags)
	pd := get32(b, MPTPDFlags)
	return MPT{
		Flags:      f,
		Access:     f & PERM_MASK &^ PERM_BIND_MW,
		Physical:   f&MPT_FLAG_PHYSICAL != 0,
		QPN:        get32(b, MPTQPN) & 0xffffff,
		Key:        KeyOf(get32(b, MPTKey)),
		PDFlags:    pd,
		PD:         pd & 0xffffff,
		Start:      get64(b, MPTStart),
		Length:     get64(b, MPTLength),
		MTTBase:    (get64(b, MPTMTTAddr) & 0xfffffff8) / MTTEntrySize,
		MTTSize:    get32(b, MPTMTTSz),
		EntitySize: get32(b, MPTEntitySize),
	}, nil
}

// Region reports MLX4_MPT_FLAG_REGION.
func (m MPT) Region() bool { return m.Flags&MPT_FLAG_REGION != 0 }

// PDSlave is PD bits 23:17: 0 for none, else the slave + 1.
func (m MPT) PDSlave() int { return int(m.PD&MPT_PD_VF_MASK) >> 17 }

// KeyOf is mlx4's hw_index_to_key: the MPT index rotated left by 8.
func KeyOf(index uint32) uint32 { return index<<8 | index>>24 }

// HWIndexOf is mlx4's key_to_hw_index (mr.c), KeyOf's inverse: what
// mlx4_mr_enable stores in the MPT entry's key field (MPTKey), whose key
// the lkey and rkey of a work request name.
func HWIndexOf(key uint32) uint32 { return key>>8 | key<<24 }

// MTT mailbox: WRITE_MTT's inbox (mlx4_WRITE_MTT, mlx4_write_mtt_chunk) and,
// in the model, READ_MTT's outbox: BE64 the first entry index at 0, 8
// reserved bytes, BE64 entries from 16, each a page address |
// MLX4_MTT_FLAG_PRESENT.
const (
	MTTMailboxStart    = 0x00
	MTTMailboxEntries  = 0x10
	MTT_FLAG_PRESENT   = 1
	MaxWriteMTTEntries = (MailboxSize - MTTMailboxEntries) / MTTEntrySize
)

// MTTMailboxEntry returns entry i of an MTT mailbox; b must hold it.
func MTTMailboxEntry(b []byte, i int) uint64 { return get64(b, MTTMailboxEntries+MTTEntrySize*i) }

// PutMTTMailboxEntry writes entry i of an MTT mailbox; b must hold it.
func PutMTTMailboxEntry(b []byte, i int, v uint64) { put64(b, MTTMailboxEntries+MTTEntrySize*i, v) }

// MTTMailboxLen is the length of an MTT mailbox of n entries.
func MTTMailboxLen(n int) int { return MTTMailboxEntries + MTTEntrySize*n }

// EncodeWriteMTT writes a WRITE_MTT inbox into b (at least MTTMailboxLen(
// len(addrs)) bytes, up to MaxWriteMTTEntries entries) and returns its
// length.
func EncodeWriteMTT(b []byte, start uint64, addrs []uint64) int {
	n := min(len(addrs), MaxWriteMTTEntries)
	clear(b[:MTTMailboxEntries])
	put64(b, MTTMailboxStart, start)
	for i := range n {
		PutMTTMailboxEntry(b, i, addrs[i]|MTT_FLAG_PRESENT)
	}
	return MTTMailboxLen(n)
}
