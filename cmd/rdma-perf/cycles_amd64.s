// The CPU's time-stamp counter, as perftest's get_cycles (get_clock.h,
// x86_64: rdtsc) reads it: one instruction, no system call.

#include "textflag.h"

// func cycles() int64
TEXT ·cycles(SB), NOSPLIT|NOFRAME, $0-8
	RDTSC
	SHLQ $32, DX
	ORQ  DX, AX
	MOVQ AX, ret+0(FP)
	RET
