#include "textflag.h"

// func cputicks() uint64
TEXT ·cputicks(SB), NOSPLIT, $0-8
	RDTSC
	SHLQ $32, DX
	ORQ DX, AX
	MOVQ AX, ret+0(FP)
	RET
