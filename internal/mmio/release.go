//go:build (amd64 || arm64) && !race

package mmio

import (
	"sync/atomic"
	"unsafe"
)

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
