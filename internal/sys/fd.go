package sys

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/goverbs/rdma/internal/unix"
)

// FD owns one file descriptor. Close is idempotent and safe on a nil *FD. If
// an FD becomes unreachable without Close, a GC cleanup closes the descriptor
// (a safety net, not a way to manage lifetimes: the leak tracer still reports
// it).
type FD struct {
	mu      sync.Mutex
	raw     int
	closed  bool
	cleanup runtime.Cleanup
	trace   traceID
}

// NewFD takes ownership of raw.
func NewFD(raw int, what string) *FD {
	fd := &FD{raw: raw}
	fd.trace = track("fd", what)
	fd.cleanup = runtime.AddCleanup(fd, closeLeaked, leakedFD{raw: raw, trace: fd.trace})
	return fd
}

type leakedFD struct {
	raw   int
	trace traceID
}

func closeLeaked(l leakedFD) {
	markCollected(l.trace)
	unix.Close(l.raw)
}

// Open opens path with O_CLOEXEC added to flags.
func Open(path string, flags int, what string) (*FD, error) {
	for {
		raw, err := unix.Open(path, flags|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &OpError{Op: "open " + path, Err: err}
		}
		return NewFD(raw, what), nil
	}
}

// Int returns the descriptor, or -1 once closed.
func (fd *FD) Int() int {
	if fd == nil {
		return -1
	}
	fd.mu.Lock()
	defer fd.mu.Unlock()
	if fd.closed {
		return -1
	}
	return fd.raw
}

// Raw returns the descriptor without locking. Callers must guarantee the FD is
// open for the duration of the use (the objects above hold their own lock).
func (fd *FD) Raw() int { return fd.raw }

// Close closes the descriptor once; later calls return nil.
func (fd *FD) Close() error {
	if fd == nil {
		return nil
	}
	fd.mu.Lock()
	defer fd.mu.Unlock()
	if fd.closed {
		return nil
	}
	fd.closed = true
	fd.cleanup.Stop()
	untrack(fd.trace)
	if err := unix.Close(fd.raw); err != nil {
		return &OpError{Op: "close", Err: err}
	}
	return nil
}

// Closed reports whether Close was called.
func (fd *FD) Closed() bool {
	if fd == nil {
		return true
	}
	fd.mu.Lock()
	defer fd.mu.Unlock()
	return fd.closed
}

func (fd *FD) String() string {
	if fd == nil {
		return "fd(nil)"
	}
	return fmt.Sprintf("fd(%d)", fd.raw)
}
