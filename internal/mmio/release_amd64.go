//go:build !race

package mmio

import (
	"sync/atomic"
	"unsafe"
)

// On amd64 a release store is a plain MOV, as C11 memory_order_release
// compiles to (rdma-core providers/rxe/rxe_queue.h): x86 never makes a store
// visible before an earlier load or store to normal memory. What remains is
// the compiler, and Go's keeps a function's memory operations in program
// order: its stores form one chain, a load is scheduled before the next
// store of that chain (cmd/compile/internal/ssa/schedule.go), and a load
// moves to another block only where the memory state is the same
// (tighten.go). So these are Go stores, small enough to be inlined, with no
// call to spill the caller's registers around. TestReleaseStoreOrder checks
// the compiled order, with the toolchain the tests are built with, in
// probes written as the callers use these (a store and a load, then the
// release store).
//
// They stay exact where the compiler combines stores: two adjacent stores
// merged into one wider store become visible together, at the later one's
// place, which release allows.

func StoreRelease32(p *atomic.Uint32, v uint32) { *(*uint32)(unsafe.Pointer(p)) = v }

func StoreRelease64(p *atomic.Uint64, v uint64) { *(*uint64)(unsafe.Pointer(p)) = v }
