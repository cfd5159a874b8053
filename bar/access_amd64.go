//go:build amd64 && !race

package bar

import "sync/atomic"

func load32(p *uint32) uint32     { return atomic.LoadUint32(p) }
func store32(p *uint32, v uint32) { movStore32(p, v) }
