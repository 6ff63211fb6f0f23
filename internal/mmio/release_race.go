//go:build race

package mmio

import (
	"sync/atomic"
)

// Under the race detector the stores stay sync/atomic ones, which it
// understands as synchronisation; the plain stores of release_amd64.go
// would be invisible to it. (On arm64 they are the same stores.)

func StoreRelease32(p *atomic.Uint32, v uint32) { p.Store(v) }

func StoreRelease64(p *atomic.Uint64, v uint64) { p.Store(v) }

func StoreForDevice32(p *atomic.Uint32, v uint32) {
	ToDeviceBarrier()
	p.Store(v)
}

func StoreForDevice32WC(p *atomic.Uint32, v uint32, dst, src *uint64, n int) {
	StoreForDevice32(p, v)
	if n == 0 {
		WCStart()
		Write64(dst, *src)
		FlushWrites()
		return
	}
	writeBlocks64WC(dst, src, n)
}
