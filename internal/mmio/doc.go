// Package mmio gives ordered access to memory shared with the kernel or with
// a device: rings mmap'd from a uverbs fd, doorbell records, and (for future
// hardware providers) write-combining doorbell pages.
//
// # Views
//
// U32 and U64 return typed sync/atomic views of a word inside a mapped
// []byte, built with unsafe.SliceData and unsafe.Add after a bounds and
// alignment check. Shared indices must only be touched through such views
// and this package's functions, never with plain loads and stores elsewhere:
// a plain access is a data race under the Go memory model and may be split,
// merged or hoisted by the compiler (the one exception, this package's own
// stores on amd64, is below).
//
// LoadAcquire32/64 and StoreRelease32/64 name the ordering a ring protocol
// needs: the kernel's smp_load_acquire/smp_store_release and C11
// memory_order_acquire/release used by rdma-core (providers/rxe/rxe_queue.h).
// The loads are sync/atomic loads, which the Go memory model defines as
// sequentially consistent (https://go.dev/ref/mem#atomic), at least as strong
// as acquire: a MOV on amd64, LDAR on arm64. The stores are release stores,
// as C compiles memory_order_release: STLR on arm64, which is what Go
// compiles a sync/atomic store to there (inlined), and a plain MOV
// on amd64 (x86 never reorders a store with earlier loads and stores). On
// amd64 that MOV is a Go store, which the compiler inlines and keeps after
// every earlier memory operation of the function (release_amd64.go says
// why; TestReleaseStoreOrder checks the compiled code of probes written as
// the callers use them), the one place where this package itself touches a
// shared word without sync/atomic. A
// sync/atomic store would be sequentially consistent, a locked XCHG on amd64,
// which the ring protocol does not need: nothing reads the other side's index
// after publishing its own and relies on the order of the two. Race builds
// keep the sync/atomic stores, which the race detector sees.
//
// # Each access, per GOARCH
//
// What every shared access of the module compiles to, and the rdma-core
// access it matches (providers/rxe/rxe_queue.h for the rings, util/mmio.h
// and util/udma_barrier.h for doorbells):
//
//	access                                  Go                       amd64   arm64   rdma-core
//	ring: producer reads the consumer index LoadAcquire32            MOVL    LDARW   queue_full: atomic_load_explicit(consumer, acquire)
//	ring: producer publishes its index      StoreRelease32           MOVL    STLRW   advance_producer/store_producer_index: release store
//	ring: consumer reads the producer index LoadAcquire32            MOVL    LDARW   queue_empty: atomic_load_explicit(producer, acquire)
//	ring: consumer publishes its index      StoreRelease32           MOVL    STLRW   advance_consumer/store_consumer_index: release store
//	ring geometry (log2 size, index mask)   U32().Load               MOVL    LDARW   plain read after mmap (the kernel set it before)
//	rsocket's target SGEs (peer RDMA WRITE) U32/U64 Load and Store   MOV/XCHG LDAR/STLR  plain accesses, ordered by polling the CQ
//	doorbell register (hardware providers)  Write32/Write64          MOVL/MOVQ  STR W/STR X  mmio_write32/mmio_write64 (relaxed store)
//	BlueFlame copy of a WQE (mlx5)          WriteBlock64             8 MOVQ  4 STP   mmio_memcpy_x64 (8 stores; ST4 on aarch64)
//	BlueFlame doorbell, n blocks (mlx5)     WriteBlocks64WC          SFENCE  DSB ST  mmio_wc_start,
//	                                                                 8n MOVQ 4n STP  mlx5_bf_copy (as above),
//	                                                                 SFENCE  DSB ST  mmio_flush_writes
//	doorbell record (mlx5)                  StoreForDevice32         MOVL    DMB OSHST  udma_to_device_barrier,
//	                                                                         STLRW   then a plain store
//	a send's record and doorbell (mlx5)     StoreForDevice32WC       the doorbell record's row, then the BlueFlame
//	                                                                 row above, or one 8-byte MOVQ/STR X between its fences
//	before a doorbell record or register    ToDeviceBarrier          none    DMB OSHST  udma_to_device_barrier
//	after reading a device-written CQE      FromDeviceBarrier        LFENCE  DMB OSHLD  udma_from_device_barrier
//	a CQE's owner word, then its body (mlx5) LoadFromDevice32        MOVL    LDARW   a load, then udma_from_device_barrier
//	                                                                         DMB OSHLD  (LFENCE on x86_64, where Linux's dma_rmb has none)
//	after a write-combining doorbell copy   FlushWrites              SFENCE  DSB ST  mmio_flush_writes
//
// rdma-core reads its own index relaxed (load_producer_index); the views
// load it with acquire, which is stronger and costs nothing on either CPU
// where the index is only ever read by its owner. The arm64 lab
// (docs/testing.md §2) runs the arm64 instructions above against Debian's
// arm64 kernels under QEMU's multi-threaded TCG, which turns each guest
// barrier and acquire/release into a host fence and adds none for plain
// accesses (docs/testing.md §2 says what that can and cannot catch).
//
// # Device barriers
//
// sync/atomic orders memory between CPUs. It says nothing about a DMA
// initiator on a bus or about write-combining buffers. For that this package
// has one function per barrier of rdma-core util/udma_barrier.h, with the same
// name and purpose, written in Go assembly for each supported GOARCH:
//
//	ToDeviceBarrier       udma_to_device_barrier    amd64: none (compiler barrier)  arm64: DMB OSHST
//	OrderingWriteBarrier  udma_ordering_write_barrier (= udma_to_device_barrier)
//	FromDeviceBarrier     udma_from_device_barrier  amd64: LFENCE                   arm64: DMB OSHLD
//	FlushWrites           mmio_flush_writes         amd64: SFENCE                   arm64: DSB ST
//	WCStart               mmio_wc_start (= mmio_flush_writes)
//
// Every call into Go assembly is also a compiler barrier: the Go compiler
// never moves memory operations across a call it cannot inline, and
// assembly functions are never inlined.
//
// The soft-RoCE (rxe) provider does not need these: its "device" is the
// kernel on another CPU, so the acquire/release views are the whole protocol
// (kernel: drivers/infiniband/sw/rxe/rxe_queue.h). They exist for hardware
// providers (doorbell records and UAR pages) and are named so that each use
// documents its purpose.
//
// Write64 and Write32 store one naturally aligned word with a single
// instruction, as a doorbell register requires (never split, never merged).
//
// Only amd64 and arm64 are supported. On any other GOARCH the package does
// not compile, on purpose: silently replacing a device barrier with nothing
// would be a bug that no test on a development machine can catch.
package mmio
