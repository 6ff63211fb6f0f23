// Device barriers and single-store MMIO writes for amd64.
// Facts: rdma-core util/udma_barrier.h, __x86_64__ branch.

#include "textflag.h"

// COPY64 copies the 64 bytes at (SI) to (DI) with eight 8-byte stores,
// in order (rdma-core mmio_memcpy_x64 on x86_64).
#define COPY64 \
	MOVQ 0(SI), AX; MOVQ AX, 0(DI); \
	MOVQ 8(SI), AX; MOVQ AX, 8(DI); \
	MOVQ 16(SI), AX; MOVQ AX, 16(DI); \
	MOVQ 24(SI), AX; MOVQ AX, 24(DI); \
	MOVQ 32(SI), AX; MOVQ AX, 32(DI); \
	MOVQ 40(SI), AX; MOVQ AX, 40(DI); \
	MOVQ 48(SI), AX; MOVQ AX, 48(DI); \
	MOVQ 56(SI), AX; MOVQ AX, 56(DI)

// udma_to_device_barrier on x86_64 is asm volatile("" ::: "memory"): x86
// stores to normal write-back memory are not reordered with each other, so
// only the compiler must be stopped, and a call into assembly does that.
TEXT ·ToDeviceBarrier(SB), NOSPLIT|NOFRAME, $0-0
	RET

// udma_from_device_barrier on x86_64 is "lfence".
TEXT ·FromDeviceBarrier(SB), NOSPLIT|NOFRAME, $0-0
	LFENCE
	RET

// mmio_flush_writes on x86_64 is "sfence".
TEXT ·FlushWrites(SB), NOSPLIT|NOFRAME, $0-0
	SFENCE
	RET

// func Write64(p *uint64, v uint64)
TEXT ·Write64(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ p+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, (AX)
	RET

// func writeBlock64(dst, src *uint64)
// Eight 8-byte stores in order, as util/mmio.h mmio_memcpy_x64 on x86_64.
TEXT ·writeBlock64(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	COPY64
	RET

// func Write32(p *uint32, v uint32)
TEXT ·Write32(SB), NOSPLIT|NOFRAME, $0-12
	MOVQ p+0(FP), AX
	MOVL v+8(FP), BX
	MOVL BX, (AX)
	RET

// storeForDevice32: udma_to_device_barrier is a compiler barrier on x86_64
// (the call is one), then a release store, a MOV.
TEXT ·storeForDevice32(SB), NOSPLIT|NOFRAME, $0-12
	MOVQ p+0(FP), AX
	MOVL v+8(FP), BX
	MOVL BX, (AX)
	RET

// wcBurst: mmio_wc_start, CX blocks of eight 8-byte stores from (SI) to
// (DI) or, with CX 0, one 8-byte store, then mmio_flush_writes. The two
// functions below jump to it with those registers set; it returns to their
// caller.
TEXT wcBurst<>(SB), NOSPLIT|NOFRAME, $0-0
	SFENCE
	TESTQ CX, CX
	JNZ block
	MOVQ 0(SI), AX
	MOVQ AX, 0(DI)
	SFENCE
	RET
block:
	COPY64
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ block
	SFENCE
	RET

// writeBlocks64WC: mmio_wc_start, n blocks of eight 8-byte stores,
// mmio_flush_writes. n is at least 1.
TEXT ·writeBlocks64WC(SB), NOSPLIT|NOFRAME, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	JMP wcBurst<>(SB)

// storeForDevice32WC: storeForDevice32, then the burst of writeBlocks64WC
// or, with n 0, one 8-byte store between the same fences.
TEXT ·storeForDevice32WC(SB), NOSPLIT|NOFRAME, $0-40
	MOVQ p+0(FP), AX
	MOVL v+8(FP), BX
	MOVL BX, (AX)
	MOVQ dst+16(FP), DI
	MOVQ src+24(FP), SI
	MOVQ n+32(FP), CX
	JMP wcBurst<>(SB)
