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

	"github.com/goverbs/rdma/internal/unix"
)

// EventFile is a kernel event descriptor (a uverbs completion channel, the
// uverbs async event fd, the rdma_cm fd) in non-blocking mode, registered
// with Go's netpoller: a wait parks the goroutine, not an OS thread, and
// honours a context. The file stays non-blocking for its whole life. These
// anon-inode files implement poll (kernel: core/uverbs_main.c
// ib_uverbs_event_poll, core/ucma.c ucma_poll), and a read of an empty one
// answers EAGAIN (ib_uverbs_event_read with O_NONBLOCK).
//
// One goroutine at a time may Read; Close from any goroutine wakes it, and
// so does Interrupt.
type EventFile struct {
	f      *os.File
	rc     syscall.RawConn
	raw    int
	once   sync.Once
	closed atomic.Bool
	trace  traceID
	clean  runtime.Cleanup

	// readM serialises Reads. The state of the Read in progress lives
	// here rather than in closures so that a Read allocates nothing.
	readM  sync.Mutex
	buf    []byte
	n      int
	err    error
	readFn func(uintptr) bool // e.readOnce, bound once
	// cancelFn (e.cancel, bound once) runs when the watched context ends
	// (see watch) and then signals cancelled. regDone is the Done channel
	// of the watched context and regStop its AfterFunc's stop.
	cancelFn  func()
	cancelled chan struct{}
	regDone   <-chan struct{}
	regStop   func() bool

	// interrupted is set by Interrupt, with the past read deadline that
	// wakes a parked Read, and taken by the Read it ends; both change
	// under kickM.
	kickM       sync.Mutex
	interrupted atomic.Bool
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
	e := &EventFile{f: f, rc: rc, raw: raw, cancelled: make(chan struct{}, 1)}
	e.readFn, e.cancelFn = e.readOnce, e.cancel
	e.trace = track("event fd", what)
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

// Read waits until the kernel has an event, then reads it into p: it reads
// at once, and on EAGAIN parks the goroutine in the netpoller until the
// file is readable. It returns ctx.Err() if ctx ends first and ErrClosed if
// the file is closed. An event that was read is returned even if ctx ended
// or the file was closed meanwhile: it has left the kernel's queue.
//
// It allocates nothing when ctx cannot be cancelled (ctx.Done() is nil) or
// shares the Done channel of the previous Read's context: the
// context.AfterFunc registration that cancels a parked Read is kept from
// one Read to the next (see watch). Until a Read with another context, or
// Close, it keeps the file reachable, so a file dropped without Close is
// not collected while ctx lives.
func (e *EventFile) Read(ctx context.Context, p []byte) (int, error) {
	if ctx == nil {
		return 0, &OpError{Op: "read " + e.f.Name(), Err: errors.New("nil context: pass context.Background() to wait without one")}
	}
	// No defer: a deferred call costs every wait its records. Nothing
	// between Lock and Unlock panics for a context that is not nil.
	e.readM.Lock()
	e.buf = p
	n, err := e.readLocked(ctx)
	e.buf = nil
	e.readM.Unlock()
	return n, err
}

// readLocked is Read with readM held and e.buf set.
func (e *EventFile) readLocked(ctx context.Context) (int, error) {
	if e.closed.Load() {
		return 0, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	e.watch(ctx)
	// After watch, which may clear the deadline an Interrupt set.
	if e.takeInterrupt() {
		return 0, ErrInterrupted
	}
	if err := e.rc.Read(e.readFn); err != nil {
		return 0, e.readErr(ctx, err)
	}
	if e.err != nil {
		return 0, e.err
	}
	return e.n, nil
}

// readOnce is the callback of rc.Read: false (wait until readable, then
// call again) on EAGAIN.
func (e *EventFile) readOnce(fd uintptr) bool {
	e.n, e.err = unix.Read(int(fd), e.buf)
	return e.err != unix.EAGAIN
}

// watch arranges for ctx's end to wake a parked Read: the callback forces a
// past read deadline on the file. The registration is kept after the Read,
// for the next one with the same Done channel, so that a loop of Reads
// under one context registers once and allocates nothing. A deadline it
// left behind fails only Reads under the ended context, which readLocked
// refuses first anyway; unwatch clears it before a Read under another.
func (e *EventFile) watch(ctx context.Context) {
	done := ctx.Done()
	if done == e.regDone {
		return
	}
	e.unwatch()
	if done != nil {
		e.regStop = context.AfterFunc(ctx, e.cancelFn)
		e.regDone = done
	}
}

// unwatch ends the registration of watch. If its callback started, it waits
// for it and clears the deadline it set, so that it never fails a later
// Read.
func (e *EventFile) unwatch() {
	if e.regStop == nil {
		return
	}
	if !e.regStop() {
		<-e.cancelled
		e.f.SetReadDeadline(time.Time{})
	}
	e.regStop, e.regDone = nil, nil
}

// cancel is the context.AfterFunc callback of watch.
func (e *EventFile) cancel() {
	e.f.SetReadDeadline(time.Unix(1, 0))
	e.cancelled <- struct{}{}
}

// readErr maps an error of rc.Read: only cancel and Interrupt set a
// deadline, so a deadline error means that ctx ended or Interrupt was
// called.
func (e *EventFile) readErr(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if e.takeInterrupt() {
			return ErrInterrupted
		}
	case e.closed.Load() || errors.Is(err, os.ErrClosed):
		return ErrClosed
	}
	return err
}

// ErrInterrupted is the error of a Read that Interrupt ended.
var ErrInterrupted = errors.New("read interrupted")

// Interrupt ends the Read in progress with ErrInterrupted, or the next Read
// if none is in progress, so that its caller looks again at whatever it
// waits for. It is meant for a file read only with Read: it forces a past
// read deadline on the file, as a context's end does, which the Read it
// ends clears. Several Interrupts before that Read end it alone.
func (e *EventFile) Interrupt() {
	e.kickM.Lock()
	e.interrupted.Store(true)
	e.f.SetReadDeadline(time.Unix(1, 0))
	e.kickM.Unlock()
}

// takeInterrupt reports whether Interrupt was called since the last take,
// and clears its deadline. A context's deadline it may clear with it ends
// no Read that it should: every Read looks at ctx.Err first, and a Read
// under another context clears that deadline anyway (unwatch).
func (e *EventFile) takeInterrupt() bool {
	if !e.interrupted.Load() {
		return false
	}
	e.kickM.Lock()
	took := e.interrupted.Swap(false)
	if took {
		e.f.SetReadDeadline(time.Time{})
	}
	e.kickM.Unlock()
	return took
}

// TryRead reads an event if one is queued and returns (0, nil) if none is.
// It reads through rc.Control, which keeps the descriptor open but, unlike
// rc.Read, ignores a read deadline that watch left behind.
func (e *EventFile) TryRead(p []byte) (int, error) {
	var n int
	var rerr error
	err := e.rc.Control(func(fd uintptr) {
		n, rerr = unix.Read(int(fd), p)
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

// CommandWait is Command for a command that fetches an event: it waits
// through the netpoller until the file is readable and issues the command,
// again each time the kernel answers EAGAIN. The rdma_cm fd works so:
// GET_EVENT is a write() that answers EAGAIN when no event is queued and the
// fd is non-blocking (kernel: core/ucma.c ucma_get_event), and poll reports
// EPOLLIN when one is (ucma_poll). It returns ErrClosed once the file is
// closed; it has no context, as its one user waits for as long as the file
// is open.
func (e *EventFile) CommandWait(op string, buf unsafe.Pointer, size uintptr) error {
	var werr error
	err := e.rc.Read(func(fd uintptr) bool {
		werr = write(int(fd), op, buf, size)
		oe, ok := werr.(*OpError)
		return !ok || oe.Err != unix.EAGAIN
	})
	if err != nil {
		if e.closed.Load() || errors.Is(err, os.ErrClosed) {
			return ErrClosed
		}
		return err
	}
	return werr
}

// CommandWaitContext is CommandWait for a caller that may give up: it
// returns ctx.Err() if ctx ends before the command is answered. It shares
// Read's context registration and, like Read, serves one goroutine at a
// time; a file waited on this way must not also be waited on with
// CommandWait (a deadline left for an ended context would fail that one).
func (e *EventFile) CommandWaitContext(ctx context.Context, op string, buf unsafe.Pointer, size uintptr) error {
	e.readM.Lock()
	defer e.readM.Unlock()
	if e.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	e.watch(ctx)
	var werr error
	err := e.rc.Read(func(fd uintptr) bool {
		werr = write(int(fd), op, buf, size)
		oe, ok := werr.(*OpError)
		return !ok || oe.Err != unix.EAGAIN
	})
	if err != nil {
		return e.readErr(ctx, err)
	}
	return werr
}

// Close closes the descriptor once and wakes a pending Read, which returns
// ErrClosed.
func (e *EventFile) Close() error {
	if e == nil {
		return nil
	}
	var err error
	e.once.Do(func() {
		e.closed.Store(true)
		e.clean.Stop()
		untrack(e.trace)
		// f.Close wakes a parked Read; once it has returned, the context
		// registration can end.
		err = e.f.Close()
		e.readM.Lock()
		e.unwatch()
		e.readM.Unlock()
	})
	return err
}
