//go:build !race && (amd64 || arm64)

package mmio

import (
	"reflect"
	"runtime"
	"testing"
	"unsafe"
)

// funcCode returns the machine code of fn, a func value of a function that
// is not a closure: the bytes from its entry to the first address the
// runtime attributes to another function (at an inlined call FuncForPC
// describes the inlined function, with the entry of the one it is in),
// and the entry.
func funcCode(t *testing.T, fn any) ([]byte, uintptr) {
	t.Helper()
	entry := reflect.ValueOf(fn).Pointer()
	f := runtime.FuncForPC(entry)
	if f == nil || f.Entry() != entry {
		t.Fatalf("no function at %#x", entry)
	}
	n := 0
	for {
		if g := runtime.FuncForPC(entry + uintptr(n)); g == nil || g.Entry() != entry {
			break
		}
		n++
	}
	// The interface's data word is the func value, which points at a word
	// holding the entry: the code, without converting a uintptr.
	code := *(*unsafe.Pointer)((*[2]unsafe.Pointer)(unsafe.Pointer(&fn))[1])
	return unsafe.Slice((*byte)(code), n), entry
}
