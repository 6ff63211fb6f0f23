package sys

import (
	"runtime"
	"sync"
	"unsafe"

	"github.com/goverbs/rdma/internal/unix"
)

// Mapping is an mmap'd region: a driver ring shared with the kernel, or an
// anonymous off-heap buffer. Unmap is idempotent; a GC cleanup unmaps a
// Mapping that was dropped without Unmap (and the leak tracer reports it).
type Mapping struct {
	mu      sync.Mutex
	b       []byte
	cleanup runtime.Cleanup
	trace   traceID
}

type leakedMapping struct {
	addr  unsafe.Pointer
	size  int
	trace traceID
}

func unmapLeaked(l leakedMapping) {
	markCollected(l.trace)
	unix.Munmap(unsafe.Slice((*byte)(l.addr), l.size))
}

func newMapping(b []byte, what string) *Mapping {
	m := &Mapping{b: b}
	m.trace = track("mmap", what)
	m.cleanup = runtime.AddCleanup(m, unmapLeaked, leakedMapping{addr: unsafe.Pointer(unsafe.SliceData(b)), size: len(b), trace: m.trace})
	return m
}

// MmapShared maps size bytes of fd at offset, read-write and MAP_SHARED, as
// the rxe driver requires for its rings (kernel: sw/rxe/rxe_mmap.c rxe_mmap).
func MmapShared(fd *FD, offset int64, size int, what string) (*Mapping, error) {
	b, err := unix.Mmap(fd.raw, offset, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	runtime.KeepAlive(fd)
	if err != nil {
		return nil, &OpError{Op: "mmap " + what, Err: err}
	}
	return newMapping(b, what), nil
}

// MmapAnon maps size bytes of private anonymous memory: page-aligned, zeroed,
// never moved or freed by the Go garbage collector.
func MmapAnon(size int, what string) (*Mapping, error) {
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, &OpError{Op: "mmap " + what, Err: err}
	}
	return newMapping(b, what), nil
}

// Bytes returns the mapped memory, or nil once unmapped.
func (m *Mapping) Bytes() []byte {
	if m == nil {
		return nil
	}
	return m.b
}

// Unmap releases the mapping once; later calls return nil.
func (m *Mapping) Unmap() error { return m.unmap(false) }

// UnmapCollected is Unmap for the GC cleanup of an owner dropped without
// closing: the owner's cleanup holds the Mapping, so the Mapping's own
// cleanup cannot run first, and the leak tracer keeps the record, marked
// collected, as it does for a Mapping dropped itself.
func (m *Mapping) UnmapCollected() error { return m.unmap(true) }

func (m *Mapping) unmap(collected bool) error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.b == nil {
		return nil
	}
	b := m.b
	m.b = nil
	m.cleanup.Stop()
	if collected {
		markCollected(m.trace)
	} else {
		untrack(m.trace)
	}
	if err := unix.Munmap(b); err != nil {
		return &OpError{Op: "munmap", Err: err}
	}
	return nil
}
