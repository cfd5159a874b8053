package mlx4

import (
	"encoding/binary"
	"fmt"
)

// Big-endian field access for the structure codecs.
func get16(b []byte, off int) uint16    { return binary.BigEndian.Uint16(b[off:]) }
func get32(b []byte, off int) uint32    { return binary.BigEndian.Uint32(b[off:]) }
func get64(b []byte, off int) uint64    { return binary.BigEndian.Uint64(b[off:]) }
func put16(b []byte, off int, v uint16) { binary.BigEndian.PutUint16(b[off:], v) }
func put32(b []byte, off int, v uint32) { binary.BigEndian.PutUint32(b[off:], v) }
func put64(b []byte, off int, v uint64) { binary.BigEndian.PutUint64(b[off:], v) }

func shortErr(what string, have, want int) error {
	return fmt.Errorf("mlx4: %s of %d bytes, want %d: %w", what, have, want, ErrShort)
}

// mttAddr reads a context's MTT address (mtt_base_addr_h, the high byte, and
// mtt_base_addr_l, BE32 with bits 2:0 reserved) as an MTT entry index.
// Linux's resource tracker reads the low word only (*_get_mtt_addr); the
// model takes the whole 40-bit address, so a high byte set names an entry
// beyond the table rather than one the low word aliases.
func mttAddr(b []byte, hi, lo int) uint64 {
	return (uint64(b[hi])<<32 | uint64(get32(b, lo)&0xfffffff8)) / MTTEntrySize
}

// putMTTAddr writes an MTT entry index as mlx4_mtt_addr's byte address.
func putMTTAddr(b []byte, hi, lo int, index uint64) {
	a := index * MTTEntrySize
	b[hi] = uint8(a >> 32)
	put32(b, lo, uint32(a))
}

// pow2Pages is 1 << e clamped: 1 for e < 0, 1 << MaxSizeExponent above it
// (the *_get_mtt_size rule "log size + entry size < page shift: one page").
func pow2Pages(e int) int {
	if e < 0 {
		return 1
	}
	return 1 << min(e, MaxSizeExponent)
}
