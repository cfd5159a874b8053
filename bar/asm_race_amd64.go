//go:build race

package bar

// movLoad32 is one plain 32-bit MOV load; xchgStore32 an XCHG store;
// xaddAdd32 a LOCK XADD returning the new value (access_race_amd64.s):
// sync/atomic's operations without the race detector's C code
// (access_race_amd64.go, word.go).
//
//go:noescape
func movLoad32(p *uint32) uint32

//go:noescape
func xchgStore32(p *uint32, v uint32)

//go:noescape
func xaddAdd32(p *uint32, d uint32) uint32
