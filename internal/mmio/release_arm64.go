//go:build !race

package mmio

import "sync/atomic"

// On arm64 a release store is STLR, as C11 memory_order_release compiles to
// (rdma-core providers/rxe/rxe_queue.h), and a sync/atomic store is the same
// instruction: Go makes its stores sequentially consistent with STLR (its
// loads being LDAR), an intrinsic the compiler inlines. So these are
// sync/atomic stores, as in race builds; TestReleaseStoreARM64 checks the
// compiled code.

func StoreRelease32(p *atomic.Uint32, v uint32) { p.Store(v) }

func StoreRelease64(p *atomic.Uint64, v uint64) { p.Store(v) }
