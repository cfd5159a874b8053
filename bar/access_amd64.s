#include "textflag.h"

// func movStore32(p *uint32, v uint32)
// One plain 32-bit MOV: on x86 TSO a store is already release-ordered, and a
// MOV (unlike XCHG) is what a driver's writel does to device memory. Being an
// assembly function it is never inlined, so it is also a compiler barrier.
TEXT ·movStore32(SB), NOSPLIT, $0-12
	MOVQ p+0(FP), AX
	MOVL v+8(FP), BX
	MOVL BX, 0(AX)
	RET

// func Pause()
TEXT ·Pause(SB), NOSPLIT, $0-0
	PAUSE
	RET
