//go:build !(amd64 && race)

package bar

import "sync/atomic"

func WordLoad(p *uint32) uint32          { return atomic.LoadUint32(p) }
func WordStore(p *uint32, v uint32)      { atomic.StoreUint32(p, v) }
func WordAdd(p *uint32, d uint32) uint32 { return atomic.AddUint32(p, d) }
