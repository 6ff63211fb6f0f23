package mmio

import "sync/atomic"

// LoadFromDevice32 loads a word that a DMA device writes last, such as the
// word holding a completion entry's owner bit, and orders every later read
// after it, so that once the load has seen the device's write, the reads
// that follow see what the device wrote before it: a load, then rdma-core's
// udma_from_device_barrier.
//
// On amd64 the load is all it takes. x86 keeps loads of write-back memory
// in order, and DMA into it is cache-coherent, so Linux's dma_rmb is a
// compiler barrier there (arch/x86/include/asm/barrier.h), where rdma-core
// executes an LFENCE; and a sync/atomic load is one for the Go compiler,
// which orders every later memory operation after it. On arm64 it is the
// load and DMB OSHLD.
func LoadFromDevice32(p *atomic.Uint32) uint32 { return p.Load() }
