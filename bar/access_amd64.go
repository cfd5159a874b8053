//go:build amd64 && !race

package bar

import "sync/atomic"

func load32(p *uint32) uint32     { return atomic.LoadUint32(p) }
func store32(p *uint32, v uint32) { movStore32(p, v) }

// Mapped regions and registers: the same single MOVs (access_race_amd64.go
// says why race builds tell them apart).
func mapLoad32(p *uint32) uint32     { return atomic.LoadUint32(p) }
func mapStore32(p *uint32, v uint32) { movStore32(p, v) }
func regLoad32(g Reg) uint32         { return atomic.LoadUint32(g.p) }
func regStore32(g Reg, v uint32)     { movStore32(g.p, v) }
