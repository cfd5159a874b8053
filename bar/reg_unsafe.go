package bar

import (
	"math/bits"
	"unsafe"
)

// wordAt converts a checked offset of a mapping into a word pointer. The
// caller has verified 0 <= off <= len(b)-4 and off%4 == 0; mappings and Mem
// buffers start 8-byte aligned, so the word is naturally aligned.
func wordAt(b []byte, off int64) *uint32 {
	return (*uint32)(unsafe.Pointer(&b[off]))
}

// nativeBigEndian is true on big-endian hosts.
var nativeBigEndian = func() bool {
	x := uint16(0x0102)
	return *(*byte)(unsafe.Pointer(&x)) == 0x01
}()

func toBE(v uint32) uint32 {
	if nativeBigEndian {
		return v
	}
	return bits.ReverseBytes32(v)
}

func fromBE(v uint32) uint32 { return toBE(v) }

// sliceAddr is the address of b's first byte (b is not empty).
func sliceAddr(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }
