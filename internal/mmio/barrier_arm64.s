// Device barriers and single-store MMIO writes for arm64.
// Facts: rdma-core util/udma_barrier.h, __aarch64__ branch. DMB/DSB option
// field (CRm): OSHLD = 0b0001, OSHST = 0b0010, ST = 0b1110 (Arm ARM, C6.2 DMB).

#include "textflag.h"

// LOAD64 loads the 64 bytes at (R1) into R2-R9 and STORE64 stores them at
// (R0) with four 16-byte pair stores (rdma-core's mmio_memcpy_x64 stores
// the same 64 bytes with ST4 on aarch64).
#define LOAD64 \
	LDP 0(R1), (R2, R3); LDP 16(R1), (R4, R5); \
	LDP 32(R1), (R6, R7); LDP 48(R1), (R8, R9)
#define STORE64 \
	STP (R2, R3), 0(R0); STP (R4, R5), 16(R0); \
	STP (R6, R7), 32(R0); STP (R8, R9), 48(R0)

// udma_to_device_barrier on aarch64 is "dmb oshst".
TEXT ·ToDeviceBarrier(SB), NOSPLIT|NOFRAME, $0-0
	DMB $0x2 // DMB OSHST
	RET

// udma_from_device_barrier on aarch64 is "dmb oshld".
TEXT ·FromDeviceBarrier(SB), NOSPLIT|NOFRAME, $0-0
	DMB $0x1 // DMB OSHLD
	RET

// mmio_flush_writes on aarch64 is "dsb st".
TEXT ·FlushWrites(SB), NOSPLIT|NOFRAME, $0-0
	DSB $0xe // DSB ST
	RET

// func Write64(p *uint64, v uint64)
TEXT ·Write64(SB), NOSPLIT|NOFRAME, $0-16
	MOVD p+0(FP), R0
	MOVD v+8(FP), R1
	MOVD R1, (R0)
	RET

// func writeBlock64(dst, src *uint64)
// Four 16-byte pair stores, in order (rdma-core's mmio_memcpy_x64 on
// aarch64 uses one 64-byte ST4).
TEXT ·writeBlock64(SB), NOSPLIT|NOFRAME, $0-16
	MOVD dst+0(FP), R0
	MOVD src+8(FP), R1
	LOAD64
	STORE64
	RET

// func Write32(p *uint32, v uint32)
TEXT ·Write32(SB), NOSPLIT|NOFRAME, $0-12
	MOVD p+0(FP), R0
	MOVWU v+8(FP), R1
	MOVW R1, (R0)
	RET

// storeForDevice32: udma_to_device_barrier (DMB OSHST), then a release
// store.
TEXT ·storeForDevice32(SB), NOSPLIT|NOFRAME, $0-12
	MOVD p+0(FP), R0
	MOVWU v+8(FP), R1
	DMB $0x2 // DMB OSHST
	STLRW R1, (R0)
	RET

// wcBurst: mmio_wc_start (DSB ST), R10 blocks of four pair stores from
// (R1) to (R0) or, with R10 0, one 8-byte store, then mmio_flush_writes
// (DSB ST). The two functions below jump to it with those registers set;
// it returns to their caller (LR is theirs).
TEXT wcBurst<>(SB), NOSPLIT|NOFRAME, $0-0
	DSB $0xe // DSB ST
	CBNZ R10, block
	MOVD (R1), R2
	MOVD R2, (R0)
	DSB $0xe // DSB ST
	RET
block:
	LOAD64
	STORE64
	ADD $64, R1, R1
	ADD $64, R0, R0
	SUBS $1, R10, R10
	BNE block
	DSB $0xe // DSB ST
	RET

// writeBlocks64WC: mmio_wc_start (DSB ST), n blocks of four pair
// stores, mmio_flush_writes (DSB ST). n is at least 1.
TEXT ·writeBlocks64WC(SB), NOSPLIT|NOFRAME, $0-24
	MOVD dst+0(FP), R0
	MOVD src+8(FP), R1
	MOVD n+16(FP), R10
	JMP wcBurst<>(SB)

// storeForDevice32WC: storeForDevice32, then the burst of writeBlocks64WC
// or, with n 0, one 8-byte store between the same fences.
TEXT ·storeForDevice32WC(SB), NOSPLIT|NOFRAME, $0-40
	MOVD p+0(FP), R0
	MOVWU v+8(FP), R1
	DMB $0x2 // DMB OSHST
	STLRW R1, (R0)
	MOVD dst+16(FP), R0
	MOVD src+24(FP), R1
	MOVD n+32(FP), R10
	JMP wcBurst<>(SB)
