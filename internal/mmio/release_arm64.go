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

func SeqEnd32(p *atomic.Uint32) uint32 { return seqEnd32((*uint32)(unsafe.Pointer(p))) }

func StoreRelease32SeqEnd32(p *atomic.Uint32, v uint32, seq *atomic.Uint32) uint32 {
	return storeRelease32SeqEnd32((*uint32)(unsafe.Pointer(p)), v, (*uint32)(unsafe.Pointer(seq)))
}

// storeRelease32 and storeRelease64 store with release ordering and no
// more.
//
//go:noescape
func storeRelease32(p *uint32, v uint32)

//go:noescape
func storeRelease64(p *uint64, v uint64)

// seqEnd32 moves an odd *p on by one with a plain load and a release store
// and returns the value it found.
//
//go:noescape
func seqEnd32(p *uint32) uint32

// storeRelease32SeqEnd32 is storeRelease32(p, v), then seqEnd32(seq), in
// one call.
//
//go:noescape
func storeRelease32SeqEnd32(p *uint32, v uint32, seq *uint32) uint32
