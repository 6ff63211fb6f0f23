//go:build race

package mmio

import (
	"sync/atomic"
)

// Under the race detector the stores stay sync/atomic ones, which it
// understands as synchronisation; the plain stores of release_amd64.go and
// the assembly ones of release_arm64.go would be invisible to it.

func StoreRelease32(p *atomic.Uint32, v uint32) { p.Store(v) }

func StoreRelease64(p *atomic.Uint64, v uint64) { p.Store(v) }

func SeqEnd32(p *atomic.Uint32) uint32 {
	v := p.Load()
	if v&1 != 0 {
		p.Store(v + 1)
	}
	return v
}

func StoreRelease32SeqEnd32(p *atomic.Uint32, v uint32, seq *atomic.Uint32) uint32 {
	p.Store(v)
	return SeqEnd32(seq)
}

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
