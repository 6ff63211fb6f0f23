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
	clean  runtime.Cleanup

	// readM serialises Reads. The state of the Read in progress lives
	// here rather than in closures so that a Read allocates nothing.
	readM  sync.Mutex
	buf    []byte
	n      int
	err    error
	try    bool               // readFn reports done even on EAGAIN
	readFn func(uintptr) bool // e.readOnce, bound once
	// cancelFn (e.cancel, bound once) runs when the context of the Read
	// in progress ends; it signals cancelled when it is over.
	cancelFn  func()
	cancelled chan struct{}
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
// ctx.Err() if ctx ends first and ErrClosed if the file is closed. It
// allocates nothing when ctx cannot be cancelled (ctx.Done() is nil).
func (e *EventFile) Read(ctx context.Context, p []byte) (int, error) {
	return e.ReadSpin(ctx, p, 0)
}

// ReadSpin is Read, but it first tries up to spins non-blocking reads
// before it parks the goroutine: an event that comes meanwhile is taken
// without the netpoller's park and wake-up (rsocket's polling_time does the
// same for its CQs). Counting reads rather than time makes the spin scale
// with the cost of a system call, and needs no clock reads (a system call
// of its own where the clock source has no vDSO support, as HPET).
func (e *EventFile) ReadSpin(ctx context.Context, p []byte, spins int) (int, error) {
	e.readM.Lock()
	defer e.readM.Unlock()
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	e.buf = p
	defer func() { e.buf = nil }()
	e.try = true
	for range spins {
		if err := e.rc.Read(e.readFn); err != nil {
			return 0, e.readErr(ctx, err)
		}
		if e.err != unix.EAGAIN {
			return e.result()
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
	}
	e.try = false
	if ctx.Done() != nil {
		// Cancellation forces a past read deadline, which wakes the
		// parked read. The callback is waited for if it started, so
		// that it never touches a later Read.
		stop := context.AfterFunc(ctx, e.cancelFn)
		defer func() {
			if !stop() {
				<-e.cancelled
				e.f.SetReadDeadline(time.Time{})
			}
		}()
	}
	if err := e.rc.Read(e.readFn); err != nil {
		return 0, e.readErr(ctx, err)
	}
	return e.result()
}

// readOnce is the callback of rc.Read.
func (e *EventFile) readOnce(fd uintptr) bool {
	e.n, e.err = unix.Read(int(fd), e.buf)
	return e.try || e.err != unix.EAGAIN
}

// cancel is the context.AfterFunc callback of a Read.
func (e *EventFile) cancel() {
	e.f.SetReadDeadline(time.Unix(1, 0))
	e.cancelled <- struct{}{}
}

func (e *EventFile) result() (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return e.n, nil
}

// readErr maps an error of rc.Read: only cancel sets a deadline, so a
// deadline error means that ctx ended.
func (e *EventFile) readErr(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
	case e.closed.Load() || errors.Is(err, os.ErrClosed):
		return ErrClosed
	}
	return err
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
