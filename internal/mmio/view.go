//go:build amd64 || arm64

package mmio

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// CheckView reports whether a size-byte word at b[off:] is inside b and
// naturally aligned (size is 2, 4 or 8). It returns a descriptive error
// otherwise; U32 and U64 panic with the same message.
func CheckView(b []byte, off, size int) error {
	if size != 2 && size != 4 && size != 8 {
		return fmt.Errorf("mmio: view size %d is not 2, 4 or 8", size)
	}
	if off < 0 || off > len(b)-size {
		return fmt.Errorf("mmio: %d-byte view at offset %d is outside the %d-byte region", size, off, len(b))
	}
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b))) + uintptr(off)
	if addr%uintptr(size) != 0 {
		return fmt.Errorf("mmio: %d-byte view at offset %d (address %#x) is not %d-byte aligned; shared words must be naturally aligned to be accessed atomically", size, off, addr, size)
	}
	return nil
}

// at returns the address of b[off] after checking that a size-byte word fits
// there and is aligned. The checks are written so that the success path
// inlines; the failure path panics with CheckView's message.
func at(b []byte, off, size int) unsafe.Pointer {
	if off < 0 || off > len(b)-size {
		badView(b, off, size)
	}
	p := unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), off)
	if uintptr(p)&uintptr(size-1) != 0 {
		badView(b, off, size)
	}
	return p
}

//go:noinline
func badView(b []byte, off, size int) {
	panic(CheckView(b, off, size))
}

// U32 returns an atomic view of the 4-byte word at b[off:]. It panics if the
// word is not inside b or not 4-byte aligned. b must stay mapped (and, if it
// is Go memory, reachable) while the view is used.
func U32(b []byte, off int) *atomic.Uint32 {
	return (*atomic.Uint32)(at(b, off, 4))
}

// U64 returns an atomic view of the 8-byte word at b[off:]. It panics if the
// word is not inside b or not 8-byte aligned.
func U64(b []byte, off int) *atomic.Uint64 {
	return (*atomic.Uint64)(at(b, off, 8))
}

// Ptr64 returns a plain *uint64 for the 8-byte word at b[off:], for Write64
// (a doorbell register or record). It panics if the word is not inside b or
// not 8-byte aligned.
func Ptr64(b []byte, off int) *uint64 {
	return (*uint64)(at(b, off, 8))
}

// WriteBlock64 copies the first 64 bytes of src to dst[off:] in one call,
// in order and with no barrier: eight 8-byte stores on amd64, as rdma-core's
// mmio_memcpy_x64 copies a WQE to a BlueFlame register on x86_64
// (util/mmio.h), and four 16-byte pair stores on arm64. It panics if the
// 64 bytes are not inside dst or src, or dst[off:] is not 8-byte aligned.
func WriteBlock64(dst []byte, off int, src []byte) {
	if !blocksOK(dst, off, src, 1) {
		badBlock64(off, len(dst), len(src))
	}
	writeBlock64((*uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(dst)), off)), (*uint64)(unsafe.Pointer(unsafe.SliceData(src))))
}

// WriteBlocks64WC copies n 64-byte blocks (n at least 1) from src to
// dst[off:] between two FlushWrites, in one call: the write-combining
// burst of a BlueFlame doorbell whose WQE does not wrap (rdma-core mlx5
// post_send_db: mmio_wc_start, mlx5_bf_copy, mmio_flush_writes). It
// panics as WriteBlock64 does, for the n blocks.
func WriteBlocks64WC(dst []byte, off int, src []byte, n int) {
	if !blocksOK(dst, off, src, n) {
		badBlock64(off, len(dst), len(src))
	}
	writeBlocks64WC((*uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(dst)), off)), (*uint64)(unsafe.Pointer(unsafe.SliceData(src))), n)
}

// blocksOK reports whether n blocks of 64 bytes (n at least 1) from src
// fit dst[off:], 8-byte aligned; it is inlined, and the panic is built
// apart (badBlock64).
func blocksOK(dst []byte, off int, src []byte, n int) bool {
	return n >= 1 && n <= len(dst)/64 && off >= 0 && off <= len(dst)-64*n && len(src) >= 64*n &&
		(uintptr(unsafe.Pointer(unsafe.SliceData(dst)))+uintptr(off))&7 == 0
}

//go:noinline
func badBlock64(off, n, src int) {
	panic(fmt.Sprintf("mmio: 64-byte blocks at offset %d of %d bytes, from %d bytes: they must lie inside both, 8-byte aligned", off, n, src))
}

// Ptr32 returns a plain *uint32 for the 4-byte word at b[off:], for Write32.
// It panics if the word is not inside b or not 4-byte aligned.
func Ptr32(b []byte, off int) *uint32 {
	return (*uint32)(at(b, off, 4))
}

// LoadAcquire32 loads *p with (at least) acquire ordering: later reads of
// the shared region see everything the other side wrote before its matching
// release store (kernel smp_load_acquire, C11 memory_order_acquire).
func LoadAcquire32(p *atomic.Uint32) uint32 { return p.Load() }

// StoreForDevice32 (release.go, release_race.go) is ToDeviceBarrier, then
// StoreRelease32, in one call: a doorbell record, which a DMA device reads
// and which must not reach it before the descriptors it counts
// (rdma-core: udma_to_device_barrier, then the record's store).

// StoreForDevice32WC (release.go, release_race.go) is StoreForDevice32(p,
// v), then WCStart, n 64-byte blocks from src to dst as WriteBlocks64WC
// writes them or, with n 0, the 8-byte word at src with one store
// (Write64), and FlushWrites, in one call: a doorbell record and then a
// write-combining doorbell, an mlx5 send's doorbell (rdma-core mlx5
// post_send_db). As Write64, it takes pointers and checks nothing: n must
// be 0 or more, and dst and src must each have max(64n, 8) bytes behind
// them, dst 8-byte aligned. The caller proves that from geometry it
// checked once (mlx5.NewSQ), so the call is inlined to the assembly
// itself, where a check of slices made the doorbell a call of its own
// (docs/perf-history.md, "mlx5 post and poll: the rounds", fifth round).

// StoreRelease32 (release_amd64.go, release_arm64.go, release_race.go)
// stores v to *p with release ordering: every earlier write to the shared
// region is visible to the other side before it can observe v (kernel
// smp_store_release, C11 memory_order_release).

// LoadAcquire64 is LoadAcquire32 for a 64-bit word.
func LoadAcquire64(p *atomic.Uint64) uint64 { return p.Load() }

// StoreRelease64 is StoreRelease32 for a 64-bit word.

// Bytes returns an n-byte slice of memory at the raw address addr, the form
// in which RDMA scatter/gather entries name memory (struct ibv_sge.addr).
//
// The caller guarantees that [addr, addr+n) is mapped and stays mapped and
// alive while the slice is used: in practice it lies in a registered memory
// region, which the kernel has pinned and the owner does not unmap or free
// before deregistering it. Memory from an anonymous mmap is not managed by
// the Go garbage collector, so holding a pointer to it is sound; Go heap
// memory does not move, but its owner must keep it reachable.
//
// n == 0 returns nil without touching addr.
func Bytes(addr uint64, n int) []byte {
	if n <= 0 {
		return nil
	}
	// Reinterpret the integer as a pointer through memory instead of a
	// uintptr conversion: the address does not come from a Go pointer, so
	// there is nothing for the uintptr rules to protect.
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr))
	return unsafe.Slice((*byte)(p), n)
}
