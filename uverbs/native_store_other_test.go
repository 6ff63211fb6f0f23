//go:build !amd64

package uverbs

import "sync/atomic"

// fakeKernelStore is the native benchmarks' fake kernel storing a ring
// index: sync/atomic's store, inlined, which on arm64 is STLR, the
// instruction the C harness's release store compiles to there.
func fakeKernelStore(p *atomic.Uint32, v uint32) { p.Store(v) }
