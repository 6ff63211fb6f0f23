package uverbs

import (
	"sync/atomic"
	"unsafe"
)

// fakeKernelStore is the native benchmarks' fake kernel storing a ring
// index. The C harness makes a C11 release store, which gcc inlines on
// amd64 as one MOV; a plain store is that MOV here, inlined too, as
// mmio.StoreRelease32 is outside race builds. The benchmarks run on one
// goroutine, so nothing else needs the store's ordering.
func fakeKernelStore(p *atomic.Uint32, v uint32) { *(*uint32)(unsafe.Pointer(p)) = v }
