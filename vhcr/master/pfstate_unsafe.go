package master

import "unsafe"

// wordPtr is the address of the 4-byte aligned word at off of b (the state
// file's commit words, stored atomically so that they land after the bytes
// they commit).
func wordPtr(b []byte, off int64) unsafe.Pointer { return unsafe.Pointer(&b[off]) }
