//go:build !race

package mmio

import (
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/arch/arm64/arm64asm"
)

// releaseProbeARM64 is a producer, as the callers use the release stores:
// the entry, then two indexes, a 64-bit index, and a lone index.
//
//go:noinline
func releaseProbeARM64(data *[8]uint32, idx, lock *atomic.Uint32, idx64 *atomic.Uint64) {
	data[1] = 0x5a5a5a5a
	StoreRelease32(idx, 0x3c3c3c3c)
	StoreRelease32(lock, 0x1e1e1e1e)
	StoreRelease64(idx64, 0x3c3c3c3c)
	StoreRelease32(lock, 7)
}

// TestReleaseStoreARM64 checks, in this test binary's own machine code,
// that the release stores of release_arm64.go are inlined STLRs after the
// entry's plain store: a sync/atomic store is one only as long as the
// toolchain compiles it so.
func TestReleaseStoreARM64(t *testing.T) {
	var data [8]uint32
	var idx, lock atomic.Uint32
	var idx64 atomic.Uint64
	releaseProbeARM64(&data, &idx, &lock, &idx64)
	if data[1] != 0x5a5a5a5a || idx.Load() != 0x3c3c3c3c || lock.Load() != 7 || idx64.Load() != 0x3c3c3c3c {
		t.Fatalf("releaseProbeARM64 stored %#x, %#x, %d, %#x", data[1], idx.Load(), lock.Load(), idx64.Load())
	}
	insts, listing := machineCodeARM64(t, releaseProbeARM64)
	// Go passes the arguments in X0-X3: the entry's store is to data (X0),
	// the release stores to idx (X1), lock (X2), idx64 (X3) and lock again,
	// in that order, and nothing before the RET is a call.
	plain, calls := -1, 0
	var stlr []arm64asm.Reg
	for i, inst := range insts {
		if inst.Op == arm64asm.RET {
			break // what follows is morestack's call
		}
		base, mem := memBase(inst)
		switch inst.Op {
		case arm64asm.STR, arm64asm.STUR:
			if mem && base == arm64asm.X0 && plain < 0 && len(stlr) == 0 {
				plain = i
			}
		case arm64asm.STLR:
			stlr = append(stlr, base)
		case arm64asm.BL, arm64asm.BLR:
			calls++
		}
	}
	if want := []arm64asm.Reg{arm64asm.X1, arm64asm.X2, arm64asm.X3, arm64asm.X2}; plain < 0 || !slices.Equal(stlr, want) || calls != 0 {
		t.Errorf("want the store to data, then inlined STLRs to %v and no call; got the store at %d, STLRs to %v, %d calls; release_arm64.go needs assembly again with this toolchain:\n%s", want, plain, stlr, calls, listing)
	}
}

// memBase returns the base register of inst's memory operand, if it has
// one.
func memBase(inst arm64asm.Inst) (arm64asm.Reg, bool) {
	for _, a := range inst.Args {
		if m, ok := a.(arm64asm.MemImmediate); ok {
			return arm64asm.Reg(m.Base), true
		}
	}
	return 0, false
}

// machineCodeARM64 decodes the instructions of fn (funcCode).
func machineCodeARM64(t *testing.T, fn any) ([]arm64asm.Inst, string) {
	t.Helper()
	code, _ := funcCode(t, fn)
	var insts []arm64asm.Inst
	var listing strings.Builder
	for off := 0; off+4 <= len(code); off += 4 {
		inst, err := arm64asm.Decode(code[off : off+4])
		if err != nil {
			listing.WriteString("?\n") // padding after the last RET
			continue
		}
		insts = append(insts, inst)
		listing.WriteString(inst.String() + "\n")
	}
	return insts, listing.String()
}
