#include "textflag.h"

// func Goroutine() uintptr
// The g pointer, which arm64 keeps in R28 (g) in every ABI.
TEXT ·Goroutine(SB), NOSPLIT, $0-8
	MOVD g, R0
	MOVD R0, ret+0(FP)
	RET
