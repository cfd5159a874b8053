//go:build amd64 && race

package bar

import "sync/atomic"

// Under the race detector stores go through sync/atomic so that the detector
// sees them (it does not instrument assembly). Race builds only ever run on
// heap-backed regions in tests; the XCHG this costs never meets a device.

func load32(p *uint32) uint32     { return atomic.LoadUint32(p) }
func store32(p *uint32, v uint32) { atomic.StoreUint32(p, v) }
