//go:build amd64 && race

package bar

import "sync/atomic"

// Under the race detector, accesses to heap regions (Mem, the tests' fakes)
// go through sync/atomic so that the detector sees them (it does not
// instrument assembly). Accesses to mapped regions (files, devices) are plain
// MOVs as in other builds: the detector does not track mmap'd memory anyway,
// and sync/atomic would perform the access in the detector's C code on the
// system stack, where a fault of a region that shrank under the PF is fatal
// ("traceback did not unwind completely") instead of the panic bar.Guard
// recovers.

func load32(p *uint32) uint32     { return atomic.LoadUint32(p) }
func store32(p *uint32, v uint32) { atomic.StoreUint32(p, v) }

func mapLoad32(p *uint32) uint32     { return movLoad32(p) }
func mapStore32(p *uint32, v uint32) { movStore32(p, v) }

func regLoad32(g Reg) uint32 {
	if g.mapped {
		return movLoad32(g.p)
	}
	return atomic.LoadUint32(g.p)
}

func regStore32(g Reg, v uint32) {
	if g.mapped {
		movStore32(g.p, v)
		return
	}
	atomic.StoreUint32(g.p, v)
}
