package bar

// movStore32 is one plain 32-bit MOV store (access_amd64.s).
//
//go:noescape
func movStore32(p *uint32, v uint32)

// Pause executes the x86 PAUSE instruction: the spin-wait hint that keeps a
// polling loop from starving its SMT sibling and from paying a memory-order
// machine clear when the polled line changes.
func Pause()
