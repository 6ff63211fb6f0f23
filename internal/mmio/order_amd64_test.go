//go:build !race

package mmio

import (
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/arch/x86/x86asm"
)

// The probes publish with the release stores after an earlier store and an
// earlier load that nothing published depends on: what a ring's producer
// does (the entry, then the index) and its consumer (read the entry, then
// the index). The constants find the stores in the machine code.
const (
	probeData  = 0x5a5a5a5a
	probeIndex = 0x3c3c3c3c
)

//go:noinline
func releaseProbe32(data, in *[4]uint32, idx, lock *atomic.Uint32) uint32 {
	data[1] = probeData
	v := in[2]
	StoreRelease32SeqEnd32(idx, probeIndex, lock)
	return v
}

//go:noinline
func releaseProbe64(data, in *[4]uint32, idx *atomic.Uint64) uint32 {
	data[1] = probeData
	v := in[2]
	StoreRelease64(idx, probeIndex)
	return v
}

// TestReleaseStoreOrder checks, in this test binary's own machine code,
// that the compiler kept the release stores of release_amd64.go after the
// earlier load and store, as the hardware needs them to be (a plain MOV is
// a release store only in program order). A toolchain that moved memory
// operations across them fails it.
func TestReleaseStoreOrder(t *testing.T) {
	a, b := &[4]uint32{}, &[4]uint32{0, 0, 7, 0}
	var idx, lock atomic.Uint32
	lock.Store(3)
	if v := releaseProbe32(a, b, &idx, &lock); v != 7 || a[1] != probeData || idx.Load() != probeIndex || lock.Load() != 4 {
		t.Fatalf("releaseProbe32: got %d, data %#x, index %#x, lock %d", v, a[1], idx.Load(), lock.Load())
	}
	var idx64 atomic.Uint64
	if v := releaseProbe64(a, b, &idx64); v != 7 || idx64.Load() != probeIndex {
		t.Fatalf("releaseProbe64: got %d, index %#x", v, idx64.Load())
	}

	for _, probe := range []struct {
		name string
		fn   any
		lock bool // the ring lock's word follows the index
	}{
		{"releaseProbe32", releaseProbe32, true},
		{"releaseProbe64", releaseProbe64, false},
	} {
		var listing strings.Builder
		data, load, index, lockLoad, lockStore := -1, -1, -1, -1, -1
		for i, inst := range machineCode(t, probe.fn) {
			listing.WriteString(x86asm.GoSyntax(inst, 0, nil) + "\n")
			mem, toMem := inst.Args[0].(x86asm.Mem)
			from, fromMem := inst.Args[1].(x86asm.Mem)
			imm, _ := inst.Args[1].(x86asm.Imm)
			switch {
			case inst.Op == x86asm.MOV && toMem && imm == probeData:
				data = i
			case inst.Op == x86asm.MOV && toMem && imm == probeIndex:
				index = i
			case inst.Op == x86asm.MOV && fromMem && from.Disp == 8 && load < 0:
				load = i // in[2]
			case index >= 0 && inst.Op == x86asm.MOV && fromMem && from.Disp == 0 && lockLoad < 0:
				lockLoad = i
			case lockLoad >= 0 && (inst.Op == x86asm.MOV || inst.Op == x86asm.INC) && toMem && mem.Disp == 0:
				lockStore = i
			}
		}
		ok := data >= 0 && load >= 0 && index > data && index > load
		if probe.lock {
			ok = ok && lockLoad > index && lockStore > lockLoad
		}
		if !ok {
			t.Errorf("%s: the release store is not after the earlier load and store (instructions: data store %d, load %d, index store %d, lock load %d, lock store %d); a MOV is a release store only in program order, so release_amd64.go needs assembly again on this toolchain:\n%s",
				probe.name, data, load, index, lockLoad, lockStore, &listing)
		}
	}
}

// machineCode decodes the instructions of fn, a func value of a function
// that is not a closure, from its entry to its end (the first address the
// runtime attributes to another function).
func machineCode(t *testing.T, fn any) []x86asm.Inst {
	t.Helper()
	entry := reflect.ValueOf(fn).Pointer()
	f := runtime.FuncForPC(entry)
	if f == nil || f.Entry() != entry {
		t.Fatalf("no function at %#x", entry)
	}
	// The interface's data word is the func value, which points at a word
	// holding the entry: the code, without converting a uintptr.
	code := *(*unsafe.Pointer)((*[2]unsafe.Pointer)(unsafe.Pointer(&fn))[1])
	var insts []x86asm.Inst
	// (At an inlined call FuncForPC describes the inlined function, with
	// the entry of the one it is in.)
	for off := 0; ; {
		if g := runtime.FuncForPC(entry + uintptr(off)); g == nil || g.Entry() != entry {
			break
		}
		b := unsafe.Slice((*byte)(unsafe.Add(code, off)), 16) // the longest x86 instruction is 15 bytes
		inst, err := x86asm.Decode(b, 64)
		if err != nil {
			t.Fatalf("%s+%#x: %v", f.Name(), off, err)
		}
		insts = append(insts, inst)
		off += inst.Len
	}
	return insts
}

//go:noinline
func deviceLoadProbe(owner *atomic.Uint32, body *[4]uint32) uint32 {
	o := LoadFromDevice32(owner)
	return o + body[2]
}

// TestLoadFromDeviceOrder checks, as TestReleaseStoreOrder, that the
// compiler keeps the reads after LoadFromDevice32 after it: the owner word
// of a completion entry first, then the entry's body. Two plain loads
// could come out in either order.
func TestLoadFromDeviceOrder(t *testing.T) {
	var owner atomic.Uint32
	owner.Store(probeIndex)
	if v := deviceLoadProbe(&owner, &[4]uint32{0, 0, 1, 0}); v != probeIndex+1 {
		t.Fatalf("deviceLoadProbe: got %#x", v)
	}
	var listing strings.Builder
	ownerLoad, bodyLoad := -1, -1
	for i, inst := range machineCode(t, deviceLoadProbe) {
		listing.WriteString(x86asm.GoSyntax(inst, 0, nil) + "\n")
		from, ok := inst.Args[1].(x86asm.Mem)
		if inst.Op != x86asm.MOV || !ok {
			continue
		}
		switch {
		case from.Disp == 0 && ownerLoad < 0:
			ownerLoad = i
		case from.Disp == 8 && bodyLoad < 0:
			bodyLoad = i
		}
	}
	if ownerLoad < 0 || bodyLoad <= ownerLoad {
		t.Errorf("the read after LoadFromDevice32 is not after it (instructions: owner load %d, body load %d); device_amd64.go needs a barrier on this toolchain:\n%s", ownerLoad, bodyLoad, &listing)
	}
}
