package uverbs

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"
	"weak"

	"github.com/goverbs/rdma/internal/sys"
)

// Buffer is off-heap memory for RDMA: a page-aligned private anonymous
// mapping that the Go garbage collector never frees or moves, which makes it
// the memory to register with PD.RegMR (docs/abi.md §6.2).
//
// Close unmaps it; Close refuses (ErrBusy) while an MR registers any part of
// it. Close is idempotent and safe on a nil *Buffer.
type Buffer struct {
	mu    sync.Mutex
	m     *sys.Mapping
	b     []byte // the first size bytes of the mapping
	regs  int    // MRs registered over this buffer
	id    uint64
	clean runtime.Cleanup
}

// buffers lists the open Buffers by start address, for RegMR (which MR
// lies in which Buffer) and for the inline-data check of PostSend. It holds
// weak pointers only: a Buffer dropped without Close is collected, its
// mapping unmapped by the GC safety net and its entry removed.
var (
	buffersMu  sync.RWMutex
	buffers    = map[uint64]bufEntry{}
	nextBuffer uint64 // under buffersMu
)

type bufEntry struct {
	id         uint64
	start, end uint64
	b          weak.Pointer[Buffer]
}

type bufKey struct{ start, id uint64 }

// forgetBuffer is the GC cleanup of a Buffer dropped without Close. The id
// check keeps it from removing a newer Buffer mapped at the same address.
func forgetBuffer(k bufKey) {
	buffersMu.Lock()
	if e, ok := buffers[k.start]; ok && e.id == k.id {
		delete(buffers, k.start)
	}
	buffersMu.Unlock()
}

// AllocBuffer maps size bytes (rounded up to whole pages) of zeroed memory.
// Bytes returns exactly size bytes.
func AllocBuffer(size int) (*Buffer, error) {
	const op = "alloc buffer"
	if size <= 0 {
		return nil, &OpError{Op: op, Err: fmt.Errorf("size %d: a buffer needs at least one byte", size)}
	}
	pg := os.Getpagesize()
	n := (size + pg - 1) &^ (pg - 1)
	if n < size {
		return nil, &OpError{Op: op, Err: fmt.Errorf("size %d overflows when rounded to pages", size)}
	}
	m, err := sys.MmapAnon(n, "buffer")
	if err != nil {
		return nil, err
	}
	b := &Buffer{m: m, b: m.Bytes()[:size:size]}
	start := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b.b))))
	buffersMu.Lock()
	nextBuffer++
	b.id = nextBuffer
	buffers[start] = bufEntry{id: b.id, start: start, end: start + uint64(size), b: weak.Make(b)}
	buffersMu.Unlock()
	b.clean = runtime.AddCleanup(b, forgetBuffer, bufKey{start: start, id: b.id})
	return b, nil
}

// Bytes returns the buffer's memory, or nil once it is closed. The slice
// must not be used after Close.
func (b *Buffer) Bytes() []byte {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b
}

// Len returns the size asked for in AllocBuffer (0 once closed).
func (b *Buffer) Len() int { return len(b.Bytes()) }

// Addr returns the address of the first byte (0 once closed), the form in
// which scatter/gather entries name memory.
func (b *Buffer) Addr() uint64 {
	p := b.Bytes()
	if len(p) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(p))))
}

// Close unmaps the buffer. It refuses with an error matching ErrBusy while
// an MR still registers part of it: close the MR first.
func (b *Buffer) Close() error {
	if b == nil {
		return nil
	}
	// Lock order: buffersMu, then b.mu (as in bufferOf).
	buffersMu.Lock()
	defer buffersMu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		return nil
	}
	if b.regs > 0 {
		return &OpError{Op: "close buffer", Err: &busyError{msg: fmt.Sprintf(
			"the buffer is still registered by %s: close them before unmapping the memory they point at", plural(b.regs, "MR"))}}
	}
	start := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b.b))))
	if e, ok := buffers[start]; ok && e.id == b.id {
		delete(buffers, start)
	}
	b.clean.Stop()
	m := b.m
	b.m, b.b = nil, nil
	return m.Unmap()
}

// bufferOf returns the open Buffer that contains [addr, addr+n) and counts a
// registration on it, or nil if the range is not inside one.
func bufferOf(addr uint64, n int) *Buffer {
	buffersMu.Lock()
	defer buffersMu.Unlock()
	for _, e := range buffers {
		if addr < e.start || addr+uint64(n) > e.end || addr+uint64(n) < addr {
			continue
		}
		b := e.b.Value()
		if b == nil {
			continue
		}
		b.mu.Lock()
		ok := len(b.b) > 0
		if ok {
			b.regs++
		}
		b.mu.Unlock()
		if ok {
			return b
		}
	}
	return nil
}

// inBufferLocked reports whether [addr, addr+n) lies inside an open Buffer.
// The caller holds buffersMu (read), which keeps every listed Buffer mapped
// (Close takes it for writing). It allocates nothing.
func inBufferLocked(addr, n uint64) bool {
	end := addr + n
	if end < addr {
		return false
	}
	for _, e := range buffers {
		// A nil Value is a Buffer the collector found unreachable: its
		// mapping may already be gone.
		if addr >= e.start && end <= e.end && e.b.Value() != nil {
			return true
		}
	}
	return false
}

// unregister drops a registration counted by bufferOf.
func (b *Buffer) unregister() {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.regs--
	b.mu.Unlock()
}
