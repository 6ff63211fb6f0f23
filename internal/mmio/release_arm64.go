//go:build !race

package mmio

import (
	"sync/atomic"
	"unsafe"
)

// On arm64 a release store is STLR, as C11 memory_order_release compiles to
// (rdma-core providers/rxe/rxe_queue.h); Go has no inlinable form of it, so
// each is a call into barrier_arm64.s.

func StoreRelease32(p *atomic.Uint32, v uint32) { storeRelease32((*uint32)(unsafe.Pointer(p)), v) }

func StoreRelease64(p *atomic.Uint64, v uint64) { storeRelease64((*uint64)(unsafe.Pointer(p)), v) }

func StoreRelease32Pair(p *atomic.Uint32, v uint32, q *atomic.Uint32, w uint32) {
	storeRelease32Pair((*uint32)(unsafe.Pointer(p)), v, (*uint32)(unsafe.Pointer(q)), w)
}

// storeRelease32 and storeRelease64 store with release ordering and no
// more.
//
//go:noescape
func storeRelease32(p *uint32, v uint32)

//go:noescape
func storeRelease64(p *uint64, v uint64)

// storeRelease32Pair is storeRelease32(p, v), then storeRelease32(q, w),
// in one call.
//
//go:noescape
func storeRelease32Pair(p *uint32, v uint32, q *uint32, w uint32)
