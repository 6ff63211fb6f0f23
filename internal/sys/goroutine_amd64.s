#include "textflag.h"

// func Goroutine() uintptr
// The g pointer, from thread-local storage (ABI0 code has no g register).
TEXT ·Goroutine(SB), NOSPLIT, $0-8
	MOVQ (TLS), AX
	MOVQ AX, ret+0(FP)
	RET
