//go:build (amd64 || arm64) && !race

package mmio

import (
	"sync/atomic"
	"unsafe"
)

func StoreForDevice32(p *atomic.Uint32, v uint32) {
	storeForDevice32((*uint32)(unsafe.Pointer(p)), v)
}

func StoreForDevice32WC(p *atomic.Uint32, v uint32, dst, src *uint64, n int) {
	storeForDevice32WC((*uint32)(unsafe.Pointer(p)), v, dst, src, n)
}
