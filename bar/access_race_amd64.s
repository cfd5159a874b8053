//go:build race

#include "textflag.h"

// Race builds only (access_race_amd64.go, word.go).

// func movLoad32(p *uint32) uint32
// One plain 32-bit MOV load (x86 loads are acquire-ordered). Race builds use
// it for mapped regions: sync/atomic under the race detector performs the
// access inside the detector's C code on the system stack, where a fault of
// a region that shrank cannot be turned into a panic (bar.Guard).
TEXT ·movLoad32(SB), NOSPLIT, $0-12
	MOVQ p+0(FP), AX
	MOVL 0(AX), BX
	MOVL BX, ret+8(FP)
	RET

// func xchgStore32(p *uint32, v uint32)
// XCHG: a sequentially consistent store (what sync/atomic.StoreUint32 is).
TEXT ·xchgStore32(SB), NOSPLIT, $0-12
	MOVQ p+0(FP), BX
	MOVL v+8(FP), AX
	XCHGL AX, 0(BX)
	RET

// func xaddAdd32(p *uint32, d uint32) uint32
// LOCK XADD: what sync/atomic.AddUint32 is; returns the new value.
TEXT ·xaddAdd32(SB), NOSPLIT, $0-20
	MOVQ p+0(FP), BX
	MOVL d+8(FP), AX
	MOVL AX, CX
	LOCK
	XADDL AX, 0(BX)
	ADDL CX, AX
	MOVL AX, ret+16(FP)
	RET
