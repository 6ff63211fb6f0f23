package sys

import (
	"context"
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// EventFile is a kernel event descriptor (a uverbs completion channel, the
// uverbs async event fd, the rdma_cm fd) switched to non-blocking mode and
// registered with Go's netpoller, so a wait parks the goroutine rather than an
// OS thread and honours a context. These anon-inode files implement poll
// (kernel: core/uverbs_main.c ib_uverbs_event_poll, core/ucma.c ucma_poll).
//
// One goroutine at a time may Read; Close from any goroutine wakes it.
type EventFile struct {
	f      *os.File
	rc     syscall.RawConn
	raw    int
	once   sync.Once
	closed atomic.Bool
	trace  traceID
	readM  sync.Mutex
	clean  runtime.Cleanup
}

type leakedEvent struct {
	f     *os.File
	trace traceID
}

// closeLeakedEvent is the GC safety net of an EventFile dropped without
// Close: it closes the file and notes the leak for the tracer.
func closeLeakedEvent(l leakedEvent) {
	markCollected(l.trace)
	l.f.Close()
}

// NewEventFile takes ownership of raw.
func NewEventFile(raw int, what string) (*EventFile, error) {
	if err := unix.SetNonblock(raw, true); err != nil {
		unix.Close(raw)
		return nil, &OpError{Op: "set nonblock " + what, Err: err}
	}
	f := os.NewFile(uintptr(raw), what)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, &OpError{Op: "register " + what, Err: err}
	}
	e := &EventFile{f: f, rc: rc, raw: raw}
	e.trace = track("event fd " + what)
	e.clean = runtime.AddCleanup(e, closeLeakedEvent, leakedEvent{f: f, trace: e.trace})
	return e, nil
}

// Raw returns the descriptor number (for passing to the kernel in a
// command), or -1 once closed: the number may then belong to another file.
func (e *EventFile) Raw() int {
	if e == nil || e.closed.Load() {
		return -1
	}
	return e.raw
}

// Read waits until the kernel has an event, then reads it into p. It returns
// ctx.Err() if ctx ends first and ErrClosed if the file is closed.
func (e *EventFile) Read(ctx context.Context, p []byte) (int, error) {
	return e.waitRead(ctx, func(fd int) (int, error) { return unix.Read(fd, p) })
}

// CommandWait is Command for a command that fetches an event: it waits until
// the file is readable and issues the command, again each time the kernel
// answers EAGAIN. The rdma_cm fd works so: GET_EVENT is a write() that
// answers EAGAIN when no event is queued and the fd is non-blocking
// (kernel: core/ucma.c ucma_get_event), and poll reports EPOLLIN when one is
// (ucma_poll). It returns ctx.Err() if ctx ends first and ErrClosed if the
// file is closed.
func (e *EventFile) CommandWait(ctx context.Context, op string, buf unsafe.Pointer, size uintptr) error {
	_, err := e.waitRead(ctx, func(fd int) (int, error) {
		err := write(fd, op, buf, size)
		if op, ok := err.(*OpError); ok && op.Err == unix.EAGAIN {
			return 0, unix.EAGAIN
		}
		return 0, err
	})
	return err
}

// waitRead calls read each time the poller reports the file readable, until
// read returns anything but EAGAIN.
func (e *EventFile) waitRead(ctx context.Context, read func(fd int) (int, error)) (int, error) {
	e.readM.Lock()
	defer e.readM.Unlock()
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	// finished is set when the read is over: a callback that runs after it
	// must not leave a past deadline behind for the next Read.
	var expired, finished bool
	var mu sync.Mutex
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() {
			mu.Lock()
			defer mu.Unlock()
			if finished {
				return
			}
			expired = true
			e.f.SetReadDeadline(time.Unix(1, 0))
		})
		defer func() {
			stop()
			mu.Lock()
			finished = true
			if expired {
				// The deadline was forced: clear it for the next Read.
				e.f.SetReadDeadline(time.Time{})
			}
			mu.Unlock()
		}()
	}
	var n int
	var rerr error
	err := e.rc.Read(func(fd uintptr) bool {
		n, rerr = read(int(fd))
		return rerr != unix.EAGAIN
	})
	if err != nil {
		mu.Lock()
		exp := expired
		mu.Unlock()
		switch {
		case exp || errors.Is(err, os.ErrDeadlineExceeded):
			if cerr := ctx.Err(); cerr != nil {
				return 0, cerr
			}
			return 0, err
		case e.closed.Load() || errors.Is(err, os.ErrClosed):
			return 0, ErrClosed
		}
		return 0, err
	}
	if rerr != nil {
		return 0, rerr
	}
	return n, nil
}

// TryRead reads an event if one is queued and returns (0, nil) if none is.
func (e *EventFile) TryRead(p []byte) (int, error) {
	var n int
	var rerr error
	err := e.rc.Read(func(fd uintptr) bool {
		n, rerr = unix.Read(int(fd), p)
		return true
	})
	if err != nil {
		if e.closed.Load() || errors.Is(err, os.ErrClosed) {
			return 0, ErrClosed
		}
		return 0, err
	}
	if rerr == unix.EAGAIN {
		return 0, nil
	}
	return n, rerr
}

// Command issues one write() command on the file (the rdma_cm fd takes
// every command this way), with the rules of Write. The caller keeps the
// file open for the duration of the call.
func (e *EventFile) Command(op string, buf unsafe.Pointer, size uintptr) error {
	if e.closed.Load() {
		return &OpError{Op: op, Err: ErrClosed}
	}
	err := write(e.raw, op, buf, size)
	runtime.KeepAlive(e)
	return err
}

// Close closes the descriptor once and wakes a pending Read.
func (e *EventFile) Close() error {
	if e == nil {
		return nil
	}
	var err error
	e.once.Do(func() {
		e.closed.Store(true)
		e.clean.Stop()
		untrack(e.trace)
		err = e.f.Close()
	})
	return err
}
