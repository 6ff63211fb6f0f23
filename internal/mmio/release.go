//go:build (amd64 || arm64) && !race

package mmio

import (
	"sync/atomic"
	"unsafe"
)

// A release store is what rdma-core's rxe queue helpers use to publish an
// index (providers/rxe/rxe_queue.h: atomic_store_explicit with
// memory_order_release), and what the kernel pairs with smp_load_acquire.
// sync/atomic's Store is sequentially consistent, which costs a locked XCHG
// on amd64; release needs less (barrier_amd64.s, barrier_arm64.s).

func StoreRelease32(p *atomic.Uint32, v uint32) { storeRelease32((*uint32)(unsafe.Pointer(p)), v) }

func StoreRelease64(p *atomic.Uint64, v uint64) { storeRelease64((*uint64)(unsafe.Pointer(p)), v) }

func SeqEnd32(p *atomic.Uint32) uint32 { return seqEnd32((*uint32)(unsafe.Pointer(p))) }

func StoreRelease32SeqEnd32(p *atomic.Uint32, v uint32, seq *atomic.Uint32) uint32 {
	return storeRelease32SeqEnd32((*uint32)(unsafe.Pointer(p)), v, (*uint32)(unsafe.Pointer(seq)))
}

func StoreForDevice32(p *atomic.Uint32, v uint32) {
	storeForDevice32((*uint32)(unsafe.Pointer(p)), v)
}

func StoreForDevice32WC(p *atomic.Uint32, v uint32, dst []byte, off int, src []byte, n int) {
	if !wcOK(dst, off, src, n) {
		badWC(off, len(dst), len(src), n)
	}
	d, s := (*uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(dst)), off)), (*uint64)(unsafe.Pointer(unsafe.SliceData(src)))
	storeForDevice32WC((*uint32)(unsafe.Pointer(p)), v, d, s, n)
}
