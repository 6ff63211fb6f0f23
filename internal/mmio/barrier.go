//go:build amd64 || arm64

package mmio

// The bodies are in barrier_amd64.s and barrier_arm64.s. Each mirrors the
// macro of the same purpose in rdma-core util/udma_barrier.h.

// ToDeviceBarrier makes every earlier store to CPU memory visible to a DMA
// device before any later store, in particular before the MMIO store of a
// doorbell that makes the device read that memory.
//
// rdma-core: udma_to_device_barrier (x86_64: compiler barrier only, because
// x86 keeps stores to normal memory in order; aarch64: "dmb oshst").
//
//go:noescape
func ToDeviceBarrier()

// FromDeviceBarrier makes every later read see the data a DMA device wrote
// before the write that was just observed (for example a valid bit or owner
// bit in a completion entry).
//
// rdma-core: udma_from_device_barrier (x86_64: "lfence"; aarch64: "dmb oshld").
//
//go:noescape
func FromDeviceBarrier()

// FlushWrites promptly pushes out write-combining buffers after a write to
// WC memory, and keeps two WC writes on either side of it from merging.
//
// rdma-core: mmio_flush_writes (x86_64: "sfence"; aarch64: "dsb st").
//
//go:noescape
func FlushWrites()

// Write64 stores v to *p with one 64-bit store instruction, as an MMIO
// doorbell requires: the store is never split into two 32-bit halves, merged
// with a neighbour or removed. p must be 8-byte aligned. It implies no
// barrier; call ToDeviceBarrier first to publish the data the doorbell
// points the device at.
//
//go:noescape
func Write64(p *uint64, v uint64)

// writeBlock64 copies the 64 bytes at src to dst with 64-bit or wider
// stores, in order; WriteBlock64 checks its arguments.
//
//go:noescape
func writeBlock64(dst, src *uint64)

// Write32 stores v to *p with one 32-bit store instruction. p must be 4-byte
// aligned. It implies no barrier.
//
//go:noescape
func Write32(p *uint32, v uint32)

// OrderingWriteBarrier keeps a DMA device from seeing a later store to CPU
// memory (a valid bit) without every earlier one (the rest of the entry). It
// guarantees ordering only, not visibility.
//
// rdma-core: udma_ordering_write_barrier, defined as udma_to_device_barrier.
func OrderingWriteBarrier() { ToDeviceBarrier() }

// WCStart keeps writes to write-combining memory from being reordered with
// earlier MMIO writes. Call it before the first write to a WC page.
//
// rdma-core: mmio_wc_start, defined as mmio_flush_writes.
func WCStart() { FlushWrites() }

// storeForDevice32 is ToDeviceBarrier and a release store of v to *p in
// one call; StoreForDevice32 uses it outside race builds.
//
//go:noescape
func storeForDevice32(p *uint32, v uint32)

// writeBlocks64WC is WCStart, n (at least 1) writeBlock64s of
// consecutive blocks, and FlushWrites, in one call.
//
//go:noescape
func writeBlocks64WC(dst, src *uint64, n int)

// storeForDevice32WC is storeForDevice32(p, v), WCStart, n (0 or more)
// writeBlock64s of consecutive blocks or, with n 0, one 8-byte store of
// *src to *dst, and FlushWrites, in one call.
//
//go:noescape
func storeForDevice32WC(p *uint32, v uint32, dst, src *uint64, n int)
