package sys

import (
	"context"
	"encoding/binary"
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
//
// ReadThread, for files that EnableThreadWait, waits the way a C program
// does instead: the calling thread blocks in the kernel, and an eventfd of
// its own carries cancellation and Close to it.
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
	// cancelFn (e.cancel, bound once) runs when the context of a parked
	// Read ends, wakeFn (e.wakeUp) when the context watched for ReadThread
	// ends (see watch); each signals cancelled when it is over. regDone is
	// the Done channel of the watched context and regStop its AfterFunc's
	// stop.
	cancelFn  func()
	wakeFn    func()
	cancelled chan struct{}
	regDone   <-chan struct{}
	regStop   func() bool

	// wake is the eventfd that ends a ReadThread blocked in ppoll (nil
	// unless EnableThreadWait); pollFn (e.pollOnce, bound once) is the
	// rc.Control callback of that ppoll, pfd its descriptors and perr its
	// error.
	wake   *FD
	pollFn func(uintptr)
	pfd    [2]unix.PollFd
	perr   error
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
	e.readFn, e.cancelFn, e.wakeFn, e.pollFn = e.readOnce, e.cancel, e.wakeUp, e.pollOnce
	e.trace = track("event fd " + what)
	e.clean = runtime.AddCleanup(e, closeLeakedEvent, leakedEvent{f: f, trace: e.trace})
	return e, nil
}

// EnableThreadWait prepares the file for ReadThread: it creates the eventfd
// that wakes a blocked thread. Call it once, before any Read.
func (e *EventFile) EnableThreadWait() error {
	raw, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return &OpError{Op: "eventfd", Err: err}
	}
	e.wake = NewFD(raw, "eventfd waking "+e.f.Name())
	return nil
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
	return e.read(ctx, p, spins, false)
}

// ReadThread is ReadSpin, but once the spin found nothing it blocks the
// calling thread in ppoll(2) on the file and the wake eventfd, as a C
// program blocks in read(2), rather than parking the goroutine in the
// netpoller: the kernel then wakes this thread itself, without the
// netpoller's and the scheduler's hand-offs. The thread is held until an
// event comes, ctx ends or the file is closed. It needs EnableThreadWait.
// It allocates nothing when ctx cannot be cancelled or shares the Done
// channel of the previous ReadThread's context (see watch).
func (e *EventFile) ReadThread(ctx context.Context, p []byte, spins int) (int, error) {
	if e.wake == nil {
		return 0, &OpError{Op: "read " + e.f.Name(), Err: errors.New("ReadThread without EnableThreadWait")}
	}
	return e.read(ctx, p, spins, true)
}

func (e *EventFile) read(ctx context.Context, p []byte, spins int, thread bool) (int, error) {
	// No defer here: with this many returns it could not be open-coded,
	// and a deferred call costs every wait its records. Nothing between
	// Lock and Unlock panics for a context that is not nil.
	if ctx == nil {
		return 0, &OpError{Op: "read " + e.f.Name(), Err: errors.New("nil context: pass context.Background() to wait without one")}
	}
	e.readM.Lock()
	e.buf = p
	n, err := e.readLocked(ctx, spins, thread)
	e.buf = nil
	e.readM.Unlock()
	return n, err
}

// readLocked is read with readM held and e.buf set.
func (e *EventFile) readLocked(ctx context.Context, spins int, thread bool) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if thread {
		e.watch(ctx)
	} else {
		e.unwatch()
	}
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
	if thread {
		return e.readBlocking(ctx)
	}
	return e.readParked(ctx)
}

// readParked reads the file through the netpoller, which parks the
// goroutine until the file is readable.
func (e *EventFile) readParked(ctx context.Context) (int, error) {
	if ctx.Done() != nil {
		// Cancellation forces a past read deadline, which wakes the
		// parked read. The callback is waited for if it started, so
		// that it never touches a later Read (a deadline left behind
		// would fail it).
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

// readBlocking waits in ppoll until the file is readable, then reads it;
// a wake-up by the eventfd ends it with ctx's error or ErrClosed. rc.Control
// holds the descriptor for the duration of the ppoll and the read, so Close
// (which wakes it first) cannot free the number under it. An event read is
// returned even if ctx ended or the file was closed meanwhile: it has left
// the kernel's queue.
func (e *EventFile) readBlocking(ctx context.Context) (int, error) {
	for {
		if err := e.rc.Control(e.pollFn); err != nil {
			return 0, e.readErr(ctx, err)
		}
		if e.err != unix.EAGAIN { // pollOnce read an event, or its read failed
			return e.result()
		}
		if e.pfd[0].Revents == 0 {
			// Woken by the eventfd, or EINTR. Drained before the looks
			// below: Close and the context's callback set their state
			// before they write the eventfd, so a wake-up that comes
			// after the drain is seen below or wakes the next ppoll.
			e.drainWake()
		}
		// Else readable, but another reader of the file took the event.
		if e.closed.Load() {
			return 0, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if e.perr != nil && e.perr != unix.EINTR {
			return 0, e.perr
		}
		if testHookWaitAgain != nil {
			testHookWaitAgain()
		}
	}
}

// testHookWaitAgain, set only by tests, runs in readBlocking when it is
// about to wait again: after its looks at Close and the context, before
// the next ppoll.
var testHookWaitAgain func()

// pollOnce is the rc.Control callback of readBlocking: one ppoll without
// a timeout (a timeout would make the kernel read the clock twice per
// wait, which costs on clock sources such as HPET), then, if the file is
// readable, one read of it into e.buf, or e.err EAGAIN. The read is a raw
// system call: the file is non-blocking, so it returns at once and the
// scheduler need not hear of it (as WriteDoorbell).
func (e *EventFile) pollOnce(fd uintptr) {
	e.pfd[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	e.pfd[1] = unix.PollFd{Fd: int32(e.wake.Raw()), Events: unix.POLLIN}
	_, e.perr = unix.Ppoll(e.pfd[:], nil, nil)
	e.n, e.err = 0, unix.EAGAIN
	if e.perr != nil || e.pfd[0].Revents == 0 {
		return
	}
	// (A raw read: unlike unix.Read, it does not tell the race detector
	// that the kernel writes e.buf; readM orders e.buf's users.)
	n, _, errno := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(e.buf))), uintptr(len(e.buf)))
	switch errno {
	case 0:
		e.n, e.err = int(n), nil
	case unix.EINTR:
	default:
		e.err = errno
	}
}

// signalWake makes the wake eventfd readable; drainWake empties it.
func (e *EventFile) signalWake() {
	if e.wake != nil {
		var one [8]byte
		binary.NativeEndian.PutUint64(one[:], 1)
		unix.Write(e.wake.Raw(), one[:])
	}
}

func (e *EventFile) drainWake() {
	if e.wake != nil {
		var v [8]byte
		unix.Read(e.wake.Raw(), v[:])
	}
}

// readOnce is the callback of rc.Read.
func (e *EventFile) readOnce(fd uintptr) bool {
	e.n, e.err = unix.Read(int(fd), e.buf)
	return e.try || e.err != unix.EAGAIN
}

// watch arranges for ctx's end to wake a ReadThread through the wake
// eventfd. The registration is kept after the read, for the next one with
// the same context (the same Done channel), so that a loop of reads under
// one context registers once and allocates nothing; a wake-up left behind
// is harmless (drained). Reads that park register per read instead, since
// their cancellation leaves a read deadline behind.
func (e *EventFile) watch(ctx context.Context) {
	done := ctx.Done()
	if done == e.regDone {
		return
	}
	e.unwatch()
	if done != nil {
		e.regStop = context.AfterFunc(ctx, e.wakeFn)
		e.regDone = done
	}
}

// unwatch ends the registration of watch. If its callback started, it waits
// for it and undoes what it did, so that it never touches a later read.
func (e *EventFile) unwatch() {
	if e.regStop == nil {
		return
	}
	if !e.regStop() {
		<-e.cancelled
		e.drainWake()
	}
	e.regStop, e.regDone = nil, nil
}

// cancel is the context.AfterFunc callback of a parked Read.
func (e *EventFile) cancel() {
	e.f.SetReadDeadline(time.Unix(1, 0))
	e.cancelled <- struct{}{}
}

// wakeUp is the context.AfterFunc callback of watch.
func (e *EventFile) wakeUp() {
	e.signalWake()
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
		// A ReadThread blocked in ppoll holds the file (rc.Control), and
		// f.Close waits for it: wake it first.
		e.signalWake()
		err = e.f.Close()
		// The woken reader returns at once with ErrClosed; then the
		// context registration can end and the eventfd close.
		e.readM.Lock()
		e.unwatch()
		e.wake.Close()
		e.readM.Unlock()
	})
	return err
}
