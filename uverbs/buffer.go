package uverbs

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/goverbs/rdma/internal/sys"
)

// Buffer is off-heap memory for RDMA: a page-aligned private anonymous
// mapping that the Go garbage collector never frees or moves, which makes it
// the memory to register with PD.RegMR (abi-reference §6 pitfall 2).
//
// Close unmaps it; Close refuses (ErrBusy) while an MR registers any part of
// it. Close is idempotent and safe on a nil *Buffer.
type Buffer struct {
	mu   sync.Mutex
	m    *sys.Mapping
	b    []byte // the first size bytes of the mapping
	regs int    // MRs registered over this buffer
}

var (
	buffersMu sync.Mutex
	buffers   = map[*Buffer]struct{}{}
)

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
	buffersMu.Lock()
	buffers[b] = struct{}{}
	buffersMu.Unlock()
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
	delete(buffers, b)
	m := b.m
	b.m, b.b = nil, nil
	return m.Unmap()
}

// bufferOf returns the open Buffer that contains [addr, addr+n) and counts a
// registration on it, or nil if the range is not inside one.
func bufferOf(addr uint64, n int) *Buffer {
	buffersMu.Lock()
	defer buffersMu.Unlock()
	for b := range buffers {
		b.mu.Lock()
		if len(b.b) > 0 {
			start := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b.b))))
			if addr >= start && addr+uint64(n) <= start+uint64(len(b.b)) {
				b.regs++
				b.mu.Unlock()
				return b
			}
		}
		b.mu.Unlock()
	}
	return nil
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
