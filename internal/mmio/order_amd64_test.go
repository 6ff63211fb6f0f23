//go:build !race

package mmio

import (
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/arch/x86/x86asm"
)

// The probes are written as the callers use the functions of
// release_amd64.go and device_amd64.go. The constants and the offsets of
// the words find each access in the machine code, whatever instruction
// carries it.
const (
	probeData  = 0x5a5a5a5a
	probeIndex = 0x3c3c3c3c
	probeLock  = 0x1e1e1e1e
	probeOwner = 0x81

	dispIn    = 0x14 // in[5]: a load nothing stored depends on
	dispBody  = 0x08 // ring[2]: a completion's body
	dispWord  = 0x3c // ring[15]: the word of op_own
	dispOwner = 0x3f // byte 63: op_own
)

// releaseProbe32 is a producer: the entry, a read, then the index and a
// second release store, which must stay after it.
//
//go:noinline
func releaseProbe32(data, in *[8]uint32, idx, lock *atomic.Uint32) uint32 {
	data[1] = probeData
	v := in[5]
	StoreRelease32(idx, probeIndex)
	StoreRelease32(lock, probeLock)
	return v
}

//go:noinline
func releaseProbe64(data, in *[8]uint32, idx *atomic.Uint64) uint32 {
	data[1] = probeData
	v := in[5]
	StoreRelease64(idx, probeIndex)
	return v
}

// deviceLoadProbe is the mlx5 poll: a plain test of the owner byte, the
// word that holds it loaded again with LoadFromDevice32 and the value
// dropped, then the body.
//
//go:noinline
func deviceLoadProbe(ring *[16]uint32) uint32 {
	if (*[64]byte)(unsafe.Pointer(ring))[63] != probeOwner {
		return 0
	}
	LoadFromDevice32((*atomic.Uint32)(unsafe.Pointer(&ring[15])))
	return ring[2]
}

// TestReleaseStoreOrder checks, in this test binary's own machine code,
// that the compiler kept the release stores of release_amd64.go after the
// earlier load and store, as the hardware needs them to be (a plain MOV is
// a release store only in program order). A toolchain that moved memory
// operations across them fails it.
func TestReleaseStoreOrder(t *testing.T) {
	a, b := &[8]uint32{}, &[8]uint32{5: 7}
	var idx, lock atomic.Uint32
	if v := releaseProbe32(a, b, &idx, &lock); v != 7 || a[1] != probeData || idx.Load() != probeIndex || lock.Load() != probeLock {
		t.Fatalf("releaseProbe32: got %d, data %#x, index %#x, lock %d", v, a[1], idx.Load(), lock.Load())
	}
	var idx64 atomic.Uint64
	if v := releaseProbe64(a, b, &idx64); v != 7 || idx64.Load() != probeIndex {
		t.Fatalf("releaseProbe64: got %d, index %#x", v, idx64.Load())
	}
	for _, probe := range []struct {
		name string
		fn   any
		lock bool // the second word is stored after the index
	}{
		{"releaseProbe32", releaseProbe32, true},
		{"releaseProbe64", releaseProbe64, false},
	} {
		code, entry, listing := machineCode(t, probe.fn)
		if calls(code, entry) {
			// Built without inlining (-gcflags=-l): the store is a call,
			// which the compiler moves nothing across.
			t.Logf("%s calls the store, not inlined; nothing to check", probe.name)
			continue
		}
		data, load, index, lockStore := -1, -1, -1, -1
		for i, inst := range code {
			imm, _ := inst.Args[1].(x86asm.Imm)
			_, toMem := inst.Args[0].(x86asm.Mem)
			switch {
			case inst.Op == x86asm.MOV && toMem && imm == probeData:
				data = i
			case inst.Op == x86asm.MOV && toMem && imm == probeIndex:
				index = i
			case load < 0 && hasMem(inst, dispIn):
				load = i
			case inst.Op == x86asm.MOV && toMem && imm == probeLock:
				lockStore = i
			}
		}
		ok := data >= 0 && load >= 0 && index > data && index > load
		if probe.lock {
			ok = ok && lockStore > index
		}
		if !ok {
			t.Errorf("%s: the release store is not after the earlier load and store (instructions: data store %d, load %d, index store %d, lock store %d); a MOV is a release store only in program order, so release_amd64.go needs assembly again with this toolchain:\n%s",
				probe.name, data, load, index, lockStore, listing)
		}
	}
}

// TestLoadFromDeviceOrder checks, as TestReleaseStoreOrder, that the
// compiler keeps the read of a completion's body after LoadFromDevice32 of
// its owner word, and that one after the test of the owner byte. Without
// LoadFromDevice32 the body's load could come first (or the word's load
// be dropped, its value being unused).
func TestLoadFromDeviceOrder(t *testing.T) {
	var ring [16]uint32
	ring[2], ring[15] = 11, probeOwner<<24
	if v := deviceLoadProbe(&ring); v != 11 {
		t.Fatalf("deviceLoadProbe: got %d, want 11", v)
	}
	code, entry, listing := machineCode(t, deviceLoadProbe)
	if calls(code, entry) {
		t.Logf("deviceLoadProbe calls LoadFromDevice32, not inlined; nothing to check")
		return
	}
	owner, word, body := -1, -1, -1
	for i, inst := range code {
		switch {
		case owner < 0 && hasMem(inst, dispOwner):
			owner = i
		case word < 0 && hasMem(inst, dispWord):
			word = i
		case body < 0 && hasMem(inst, dispBody):
			body = i
		}
	}
	if owner < 0 || word <= owner || body <= word {
		t.Errorf("the owner byte, its word and the body are not read in that order (instructions %d, %d, %d); device_amd64.go needs a barrier with this toolchain:\n%s", owner, word, body, listing)
	}
}

// hasMem reports whether inst accesses memory at displacement disp from a
// general register (not the stack check's, which is off R14).
func hasMem(inst x86asm.Inst, disp int64) bool {
	for _, a := range inst.Args {
		if m, ok := a.(x86asm.Mem); ok && m.Disp == disp && m.Base != x86asm.R14 && m.Base != x86asm.RSP && m.Base != x86asm.RIP {
			return true
		}
	}
	return false
}

// calls reports whether the code calls anything but the stack-growth path
// (runtime.morestack*), judged by each call's target.
func calls(code []x86asm.Inst, entry uintptr) bool {
	pc := entry
	for _, inst := range code {
		pc += uintptr(inst.Len)
		if inst.Op != x86asm.CALL {
			continue
		}
		rel, ok := inst.Args[0].(x86asm.Rel)
		if !ok {
			return true // an indirect call
		}
		f := runtime.FuncForPC(uintptr(int64(pc) + int64(rel)))
		if f == nil || !strings.HasPrefix(f.Name(), "runtime.morestack") {
			return true
		}
	}
	return false
}

// machineCode decodes the instructions of fn (funcCode) and returns them
// with its entry and their listing.
func machineCode(t *testing.T, fn any) ([]x86asm.Inst, uintptr, string) {
	t.Helper()
	code, entry := funcCode(t, fn)
	var insts []x86asm.Inst
	var listing strings.Builder
	for off := 0; off < len(code); {
		inst, err := x86asm.Decode(code[off:], 64)
		if err != nil {
			t.Fatalf("%s+%#x: %v", runtime.FuncForPC(entry).Name(), off, err)
		}
		insts = append(insts, inst)
		listing.WriteString(x86asm.GoSyntax(inst, uint64(off), nil) + "\n")
		off += inst.Len
	}
	return insts, entry, listing.String()
}
