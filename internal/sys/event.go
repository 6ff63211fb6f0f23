package sys

import (
	"context"
	"errors"
	"os"
	"os/signal"
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
// does instead: the calling thread blocks in read(2), and cancellation and
// Close end that read by pointing the descriptor it reads at another file
// and signalling the thread (see interrupt).
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

	// Thread waits (nil unless EnableThreadWait). priv is a second
	// descriptor of the file, the one ReadThread's blocking read reads;
	// dead is an eventfd that is never written, so a non-blocking read of
	// it fails at once: interrupt points priv at it (swapped) and restore
	// points priv back at the file, each holding swapM. reading is set while
	// a ReadThread is in or about to enter its read, on thread tid.
	// blocking is the file's mode (O_NONBLOCK is a flag of the open file,
	// shared by raw and priv), switched under readM: off for Read, ReadSpin
	// and TryRead, on for ReadThread (modeFn, e.setMode bound once, with
	// modeOn and modeErr, does it). pollFn (e.pollNow, bound once) is
	// the rc.Control callback of a spin's poll, pfd its descriptor, zero
	// its timeout and perr its error.
	priv     *FD
	dead     *FD
	swapM    sync.Mutex
	swapped  atomic.Bool
	reading  atomic.Bool
	tid      atomic.Int32
	blocking bool
	modeOn   bool
	modeErr  error
	modeFn   func(uintptr)
	pollFn   func(uintptr)
	pfd      [1]unix.PollFd
	zero     unix.Timespec
	perr     error
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
	e.readFn, e.cancelFn, e.wakeFn, e.pollFn, e.modeFn = e.readOnce, e.cancel, e.wakeUp, e.pollNow, e.setMode
	e.trace = track("event fd " + what)
	e.clean = runtime.AddCleanup(e, closeLeakedEvent, leakedEvent{f: f, trace: e.trace})
	return e, nil
}

// EnableThreadWait prepares the file for ReadThread: it opens a second
// descriptor of the file for the blocking read, and the eventfd that
// interrupt points that descriptor at. Call it once, before any Read.
func (e *EventFile) EnableThreadWait() error {
	dead, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return &OpError{Op: "eventfd", Err: err}
	}
	e.dead = NewFD(dead, "eventfd ending reads of "+e.f.Name())
	priv, err := unix.FcntlInt(uintptr(e.raw), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		e.dead.Close()
		e.dead = nil
		return &OpError{Op: "dup " + e.f.Name(), Err: err}
	}
	e.priv = NewFD(priv, "thread-wait descriptor of "+e.f.Name())
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
// calling thread in read(2), as a C program does, rather than parking the
// goroutine in the netpoller: the kernel then wakes this thread itself,
// without the netpoller's and the scheduler's hand-offs. The thread is held
// until an event comes, ctx ends or the file is closed. The spin polls the
// file without waiting (ppoll(2) with a zero timeout) and reads once it is
// readable. ReadThread leaves the file in blocking mode, which the other
// reads switch off again. It needs EnableThreadWait. It allocates nothing
// when ctx cannot be cancelled or shares the Done channel of the previous
// ReadThread's context (see watch). That registration is kept until a read
// with another context, or Close: until then it keeps the file reachable,
// so a file dropped without Close is not collected while ctx lives.
//
// Where SIGURG cannot be delivered (see interrupt) it parks, as Read does.
func (e *EventFile) ReadThread(ctx context.Context, p []byte, spins int) (int, error) {
	if e.priv == nil {
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
	if e.closed.Load() {
		// Checked under readM, which Close holds while it closes priv
		// and dead: past here their numbers are still theirs.
		return 0, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if thread && (urgBlocked || signal.Ignored(unix.SIGURG)) {
		// interrupt's signal would be discarded (signal.Ignore) or
		// left pending, and nothing else ends a blocking read: park
		// instead.
		thread = false
	}
	if thread {
		e.watch(ctx)
		return e.readThread(ctx, spins)
	}
	e.unwatch()
	if err := e.setBlocking(false); err != nil {
		return 0, err
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

// readThread is ReadThread's part of readLocked: the spin, then the
// blocking read.
func (e *EventFile) readThread(ctx context.Context, spins int) (int, error) {
	for range spins {
		if err := e.rc.Control(e.pollFn); err != nil {
			return 0, e.readErr(ctx, err)
		}
		if e.perr == nil && e.pfd[0].Revents != 0 {
			break // readable: the read below returns at once
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
	}
	if err := e.setBlocking(true); err != nil {
		return 0, err
	}
	return e.readBlocking(ctx)
}

// pollNow is the rc.Control callback of a spin: one ppoll of the file that
// does not wait.
func (e *EventFile) pollNow(fd uintptr) {
	e.pfd[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	_, _, errno := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&e.pfd[0])), 1, uintptr(unsafe.Pointer(&e.zero)), 0, 0, 0)
	e.perr = nil
	if errno != 0 {
		e.perr = errno
	}
}

// readBlocking reads priv, which blocks until the kernel has an event (the
// file is in blocking mode), or until interrupt ends the read for Close or
// ctx's end. Before the read it publishes its thread and sets reading;
// interrupt is called after closed is set or ctx has ended, and looks at
// reading afterwards, so either it finds the reader there or the reader
// finds its state (both are sequentially consistent atomics). An event
// read is returned even if ctx ended or the file was closed meanwhile: it
// has left the kernel's queue.
func (e *EventFile) readBlocking(ctx context.Context) (int, error) {
	for {
		// The goroutine stays on this thread from the look at its id to
		// the end of the read, so that interrupt signals the right one.
		runtime.LockOSThread()
		e.tid.Store(int32(unix.Gettid()))
		e.reading.Store(true)
		// priv may be left pointed at dead by an interrupt that came
		// after the read it was meant for: back to the file first (else
		// the read would fail at once and the restore after it repair
		// priv, a round trip more), and only then the looks at Close and
		// ctx, which must follow any interrupt undone here.
		if err := e.restore(); err != nil {
			e.endRead()
			return 0, err
		}
		var n uintptr
		errno := unix.EINTR
		if e.closed.Load() || ctx.Err() != nil {
			// Looked at below.
		} else {
			// A blocking system call the scheduler hears of (it frees
			// the P). A raw read: unlike unix.Read it does not tell the
			// race detector that the kernel writes e.buf; readM orders
			// e.buf's users.
			n, _, errno = syscall.Syscall(unix.SYS_READ, uintptr(e.priv.Raw()), uintptr(unsafe.Pointer(unsafe.SliceData(e.buf))), uintptr(len(e.buf)))
		}
		e.endRead()
		if e.swapped.Load() {
			// Interrupted, or an interrupt came just after the read:
			// an event it read is still an event, even if the file
			// was closed meanwhile.
			err := e.restore()
			if errno == 0 {
				return int(n), nil
			}
			if err != nil {
				return 0, err
			}
		} else if errno == 0 {
			return int(n), nil
		} else if errno == unix.EAGAIN {
			// The file was put in non-blocking mode behind our back
			// (the flag is shared with every descriptor of the file).
			e.blocking = false
			if err := e.setBlocking(true); err != nil {
				return 0, err
			}
		} else if errno != unix.EINTR {
			return 0, errno
		}
		if e.closed.Load() {
			return 0, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if testHookWaitAgain != nil {
			testHookWaitAgain()
		}
	}
}

// testHookWaitAgain, set only by tests, runs in readBlocking when it is
// about to wait again: after its looks at Close and the context, before
// the next read.
var testHookWaitAgain func()

func (e *EventFile) endRead() {
	e.reading.Store(false)
	runtime.UnlockOSThread()
}

// pid is this process's id, for tgkill.
var pid = unix.Getpid()

// urgBlocked reports that SIGURG was blocked in the signal mask of the
// thread that initialised this package. Go unblocks SIGURG on its threads
// unless asynchronous preemption is off (GODEBUG=asyncpreemptoff=1); then
// they keep the mask the program was started with, and a SIGURG blocked
// there would never reach a thread blocked in read, so such a program's
// thread waits park instead (readLocked).
var urgBlocked = sigBlocked(unix.SIGURG)

// sigBlocked reports whether sig is blocked on the calling thread.
func sigBlocked(sig unix.Signal) bool {
	var set unix.Sigset_t
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, nil, &set); err != nil { // a nil set only reads the mask
		return false
	}
	bits := uint(unsafe.Sizeof(set.Val[0])) * 8
	n := uint(sig) - 1
	return set.Val[n/bits]&(1<<(n%bits)) != 0
}

// interrupt ends a ReadThread's blocking read, if one is in progress or
// about to start: it points priv at dead, whose read fails at once, and
// sends SIGURG to the reader's thread. The kernel ends a read that waits
// for a completion event when a signal comes (core/uverbs_main.c
// ib_uverbs_event_read: wait_event_interruptible, -ERESTARTSYS) and, as Go
// installs its handlers with SA_RESTART, restarts it after the handler:
// the restarted read(2) looks its descriptor up again and finds dead. A
// read that has not started yet finds dead at once. SIGURG is the signal Go
// itself sends to preempt goroutines, so the runtime and programs already
// take a stray one in their stride (os/signal: SIGURG may be delivered at
// any time). A signal to a thread that has moved on is such a stray. A
// program that ignores SIGURG (signal.Ignore), or runs with it blocked
// (urgBlocked), would not have it delivered, so its reads park instead
// (readLocked); one that starts to ignore or block it while a read waits
// leaves that read to end with an event.
func (e *EventFile) interrupt() {
	if e.priv == nil || !e.reading.Load() {
		return
	}
	e.swapM.Lock()
	if !e.swapped.Load() {
		// swapped first: a reader whose read fails on dead must find it
		// set, or it would take dead's EAGAIN for the file's.
		e.swapped.Store(true)
		err := unix.Dup3(e.dead.Raw(), e.priv.Raw(), unix.O_CLOEXEC)
		for err == unix.EBUSY { // a race with open(2) in another thread (dup2(2))
			err = unix.Dup3(e.dead.Raw(), e.priv.Raw(), unix.O_CLOEXEC)
		}
		if err != nil {
			e.swapped.Store(false)
		}
	}
	tid := e.tid.Load()
	e.swapM.Unlock()
	unix.Tgkill(pid, int(tid), unix.SIGURG)
}

// restore points priv back at the file after interrupt, or fails with
// ErrClosed once the file is closed (rc.Control keeps raw open meanwhile).
// Call it with readM held.
func (e *EventFile) restore() error {
	if !e.swapped.Load() {
		return nil
	}
	e.swapM.Lock()
	defer e.swapM.Unlock()
	var derr error
	err := e.rc.Control(func(fd uintptr) {
		derr = unix.Dup3(int(fd), e.priv.Raw(), unix.O_CLOEXEC)
		for derr == unix.EBUSY {
			derr = unix.Dup3(int(fd), e.priv.Raw(), unix.O_CLOEXEC)
		}
	})
	if err != nil {
		return ErrClosed
	}
	if derr != nil {
		return &OpError{Op: "dup3 " + e.f.Name(), Err: derr}
	}
	e.swapped.Store(false)
	return nil
}

// setBlocking switches the file's mode for the next read, if it is not in
// that mode already. Only files that EnableThreadWait ever leave
// non-blocking mode. Call it with readM held.
func (e *EventFile) setBlocking(on bool) error {
	if e.priv == nil || e.blocking == on {
		return nil
	}
	// Through the file itself, not priv, which an interrupt may have
	// pointed at dead.
	e.modeOn = on
	if err := e.rc.Control(e.modeFn); err != nil {
		return ErrClosed
	}
	if e.modeErr != nil {
		return &OpError{Op: "set blocking mode of " + e.f.Name(), Err: e.modeErr}
	}
	e.blocking = on
	return nil
}

// setMode is the rc.Control callback of setBlocking.
func (e *EventFile) setMode(fd uintptr) {
	e.modeErr = unix.SetNonblock(int(fd), !e.modeOn)
}

// readOnce is the callback of rc.Read.
func (e *EventFile) readOnce(fd uintptr) bool {
	e.n, e.err = unix.Read(int(fd), e.buf)
	return e.try || e.err != unix.EAGAIN
}

// watch arranges for ctx's end to interrupt a ReadThread. The registration
// is kept after the read, for the next one with the same context (the same
// Done channel), so that a loop of reads under one context registers once
// and allocates nothing; an interrupt that comes between reads is harmless
// (the next read restores priv first). Reads that park register per read
// instead, since their cancellation leaves a read deadline behind.
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
// for it, so that it never runs during a later read (what it left, priv
// pointed at dead, the next read undoes).
func (e *EventFile) unwatch() {
	if e.regStop == nil {
		return
	}
	if !e.regStop() {
		<-e.cancelled
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
	e.interrupt()
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
// On a file that EnableThreadWait it takes the read lock, so it waits for a
// read in progress to end.
func (e *EventFile) TryRead(p []byte) (int, error) {
	if e.priv != nil {
		e.readM.Lock()
		defer e.readM.Unlock()
		if e.closed.Load() {
			return 0, ErrClosed
		}
		if err := e.setBlocking(false); err != nil {
			return 0, err
		}
	}
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
		// A ReadThread blocked in read reads priv: end that read. f.Close
		// wakes a parked Read.
		e.interrupt()
		err = e.f.Close()
		// The reader returns at once with ErrClosed; then the context
		// registration can end and the thread-wait descriptors close.
		e.readM.Lock()
		e.unwatch()
		e.priv.Close()
		e.dead.Close()
		e.readM.Unlock()
	})
	return err
}
