//go:build !amd64

package bar

import "sync/atomic"

// On other architectures sync/atomic's 32-bit load and store are single
// instructions with the needed ordering (arm64 LDAR/STLR are not locked
// read-modify-write operations).

// Pause is a no-op where no spin-wait hint is wired up.
func Pause() {}

func load32(p *uint32) uint32     { return atomic.LoadUint32(p) }
func store32(p *uint32, v uint32) { atomic.StoreUint32(p, v) }

func mapLoad32(p *uint32) uint32     { return atomic.LoadUint32(p) }
func mapStore32(p *uint32, v uint32) { atomic.StoreUint32(p, v) }
func regLoad32(g Reg) uint32         { return atomic.LoadUint32(g.p) }
func regStore32(g Reg, v uint32)     { atomic.StoreUint32(g.p, v) }
