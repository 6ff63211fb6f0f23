package sys

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestMain is testutil.Main's logic (testutil imports this package, so it
// cannot be used here): the run fails if a traced resource stays open.
func TestMain(m *testing.M) {
	EnableLeakTracing()
	code := m.Run()
	if leaks := Leaks(); len(leaks) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d kernel resource(s) leaked by the tests:\n%s", len(leaks), strings.Join(leaks, "\n"))
		code = 1
	}
	os.Exit(code)
}

func TestFDCloseIdempotent(t *testing.T) {
	fd, err := Open("/dev/null", unix.O_RDWR, "null")
	require.NoError(t, err)
	raw := fd.Int()
	require.GreaterOrEqual(t, raw, 0)
	require.NoError(t, fd.Close())
	require.NoError(t, fd.Close())
	require.Equal(t, -1, fd.Int())
	require.True(t, fd.Closed())
	var nilFD *FD
	require.NoError(t, nilFD.Close())
	// The descriptor number really was released.
	_, err = unix.FcntlInt(uintptr(raw), unix.F_GETFD, 0)
	require.ErrorIs(t, err, unix.EBADF)
}

func TestLeakTracerReportsOpenAndDropped(t *testing.T) {
	fd, err := Open("/dev/null", unix.O_RDONLY, "leaky")
	require.NoError(t, err)
	found := false
	for _, l := range Leaks() {
		if strings.Contains(l, "fd leaky still open") && strings.Contains(l, "TestLeakTracerReportsOpenAndDropped") {
			found = true
		}
	}
	require.True(t, found, "open fd not reported: %v", Leaks())
	require.NoError(t, fd.Close())
	for _, l := range Leaks() {
		require.NotContains(t, l, "fd leaky")
	}

	func() { _, _ = MmapAnon(4096, "dropped") }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtimeGC()
		dropped := false
		for _, l := range Leaks() {
			if strings.Contains(l, "mmap dropped dropped without Close") {
				dropped = true
			}
		}
		if dropped {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dropped mapping not reported: %v", Leaks())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Forget the deliberate leak so TestMain-style checks elsewhere stay clean.
	traceMu.Lock()
	for id, r := range live {
		if r.what == "mmap dropped" {
			delete(live, id)
		}
	}
	traceMu.Unlock()
}

func TestWriteWrapsErrno(t *testing.T) {
	fd, err := Open("/dev/null", unix.O_RDONLY, "null")
	require.NoError(t, err)
	defer fd.Close()
	buf := make([]byte, 8)
	err = Write(fd, "get_context", unsafe.Pointer(&buf[0]), 8)
	require.ErrorIs(t, err, unix.EBADF)
	var op *OpError
	require.True(t, errors.As(err, &op))
	require.Equal(t, "get_context", op.Op)
	require.Contains(t, err.Error(), "get_context: ")

	w, err := Open("/dev/null", unix.O_WRONLY, "null")
	require.NoError(t, err)
	defer w.Close()
	require.NoError(t, Write(w, "x", unsafe.Pointer(&buf[0]), 8))
}

func TestMmapAnon(t *testing.T) {
	m, err := MmapAnon(3*4096, "buf")
	require.NoError(t, err)
	b := m.Bytes()
	require.Len(t, b, 3*4096)
	require.Zero(t, uintptr(unsafe.Pointer(&b[0]))%4096)
	b[0], b[len(b)-1] = 1, 2
	require.NoError(t, m.Unmap())
	require.NoError(t, m.Unmap())
	require.Nil(t, m.Bytes())
}

func TestEventFileContextAndClose(t *testing.T) {
	var p [2]int
	require.NoError(t, unix.Pipe2(p[:], unix.O_CLOEXEC))
	w := NewFD(p[1], "pipe w")
	defer w.Close()
	ef, err := NewEventFile(p[0], "pipe r")
	require.NoError(t, err)

	buf := make([]byte, 8)
	n, err := ef.TryRead(buf)
	require.NoError(t, err)
	require.Zero(t, n)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = ef.Read(ctx, buf)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// After a cancelled wait the next wait still works.
	go func() {
		time.Sleep(20 * time.Millisecond)
		unix.Write(w.Raw(), []byte("abcdefgh"))
	}()
	n, err = ef.Read(context.Background(), buf)
	require.NoError(t, err)
	require.Equal(t, "abcdefgh", string(buf[:n]))

	closeUnderReader(t, ef, func() error {
		_, err := ef.Read(context.Background(), buf)
		return err
	})
	require.NoError(t, ef.Close())
}

// closeUnderReader runs read in a goroutine, closes ef 20 ms later, and
// requires the read to end with ErrClosed.
func closeUnderReader(t *testing.T, ef *EventFile, read func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- read() }()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, ef.Close())
	select {
	case err := <-done:
		require.ErrorIs(t, err, ErrClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the read")
	}
}

// A context that ends while ReadThread is about to wait again (after a
// wake-up that brought no event) must still end the read. The first
// wake-up here is an interrupt with neither Close nor the context behind
// it; the context ends in the hook, when its callback finds no read to
// interrupt.
func TestReadThreadCancelWhileWaitingAgain(t *testing.T) {
	w, ef := pipeEventFile(t)
	require.NoError(t, ef.EnableThreadWait())

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	again := 0
	testHookWaitAgain = func() {
		if again++; again == 1 {
			cancel()
			<-ef.cancelled // the context's callback has run
			ef.cancelled <- struct{}{}
		}
	}
	defer func() { testHookWaitAgain = nil }()
	done := make(chan error, 1)
	go func() {
		_, err := ef.ReadThread(ctx, make([]byte, 8), 0)
		done <- err
	}()
	for !ef.reading.Load() {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond) // into the read
	ef.interrupt()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, 1, again)
	case <-time.After(5 * time.Second):
		unix.Write(w.Raw(), []byte{1}) // let the reader go
		<-done
		t.Fatal("the context ended while ReadThread was about to wait again, and it waited on")
	}
}

// Close and a context's end each end a ReadThread blocked in read(2), and
// the file reads normally after the context's end: the descriptor the read
// used is pointed back at the file. TryRead takes the file out of blocking
// mode again.
func TestReadThreadInterrupted(t *testing.T) {
	w, ef := pipeEventFile(t)
	require.NoError(t, ef.EnableThreadWait())
	buf := make([]byte, 8)
	inRead := func() {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !ef.reading.Load() {
			require.True(t, time.Now().Before(deadline), "ReadThread did not start its read")
			time.Sleep(time.Millisecond)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := ef.ReadThread(ctx, buf, 0)
			done <- err
		}()
		inRead()
		cancel()
		select {
		case err := <-done:
			require.ErrorIs(t, err, context.Canceled)
		case <-time.After(5 * time.Second):
			unix.Write(w.Raw(), []byte{1})
			t.Fatal("the context's end did not end the read")
		}
		require.True(t, ef.blocking)
		_, err := unix.Write(w.Raw(), []byte("x"))
		require.NoError(t, err)
		wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
		n, err := ef.ReadThread(wctx, buf, 0)
		wcancel()
		require.NoError(t, err, "the read after an interrupted one")
		require.Equal(t, "x", string(buf[:n]))
		require.False(t, ef.swapped.Load())
	}
	n, err := ef.TryRead(buf)
	require.NoError(t, err)
	require.Zero(t, n)
	require.False(t, ef.blocking)

	// Close under a reader whose context is watched: the read ends and
	// the registration with it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := ef.ReadThread(ctx, buf, 0)
		done <- err
	}()
	inRead()
	var cerr error
	if !within(5*time.Second, func() { cerr = ef.Close() }) {
		unix.Write(w.Raw(), []byte{1})
		t.Fatal("Close did not end the read")
	}
	require.NoError(t, cerr)
	require.ErrorIs(t, <-done, ErrClosed)
	require.Nil(t, ef.regStop, "Close left the context registered")
}

// With SIGURG blocked on the reader's thread (a program started with it
// blocked and run with GODEBUG=asyncpreemptoff=1, where Go leaves the mask
// as it found it), interrupt's signal would stay pending: sigBlocked reads
// the mask, and ReadThread then parks, so its context still ends it.
func TestReadThreadSIGURGBlocked(t *testing.T) {
	w, ef := pipeEventFile(t)
	require.NoError(t, ef.EnableThreadWait())
	require.False(t, sigBlocked(unix.SIGURG))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var set, old unix.Sigset_t
	n, bits := uint(unix.SIGURG)-1, uint(unsafe.Sizeof(set.Val[0]))*8
	set.Val[n/bits] |= 1 << (n % bits)
	require.NoError(t, unix.PthreadSigmask(unix.SIG_BLOCK, &set, &old))
	defer unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	require.True(t, sigBlocked(unix.SIGURG))
	saved := urgBlocked
	urgBlocked = true // as start-up would have found it on such a thread
	defer func() { urgBlocked = saved }()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	freed := time.AfterFunc(5*time.Second, func() { unix.Write(w.Raw(), []byte{1}) })
	_, err := ef.ReadThread(ctx, make([]byte, 8), 0)
	if !freed.Stop() {
		t.Fatal("the context's end did not end ReadThread on a thread with SIGURG blocked")
	}
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// staleInterrupt leaves priv pointed at dead with no read in progress, as
// an interrupt does that found reading set just before the read returned.
func staleInterrupt(ef *EventFile) {
	ef.tid.Store(int32(unix.Gettid()))
	ef.reading.Store(true)
	ef.interrupt()
	ef.reading.Store(false)
}

// within reports whether f returned within d.
func within(d time.Duration, f func()) bool {
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// What an interrupt leaves behind (priv pointed at dead) must not change
// the mode of dead instead of the file's: a parked Read after it still
// ends with its deadline, TryRead does not block, and a later interrupt
// still ends a ReadThread.
func TestReadThreadStaleInterrupt(t *testing.T) {
	w, ef := pipeEventFile(t)
	require.NoError(t, ef.EnableThreadWait())
	buf := make([]byte, 8)
	readOne := func() {
		t.Helper()
		unix.Write(w.Raw(), []byte{1})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		n, err := ef.ReadThread(ctx, buf, 0)
		require.NoError(t, err)
		require.Equal(t, 1, n)
	}
	free := func() { unix.Write(w.Raw(), []byte{9}) } // a reader stuck on the pipe

	readOne()
	staleInterrupt(ef)
	var err error
	ok := within(2*time.Second, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err = ef.Read(ctx, buf)
	})
	if !ok {
		free()
		t.Fatal("a parked Read with a 100 ms deadline did not return: the file was left in blocking mode")
	}
	require.ErrorIs(t, err, context.DeadlineExceeded)

	readOne()
	staleInterrupt(ef)
	var n int
	if !within(2*time.Second, func() { n, err = ef.TryRead(buf) }) {
		free()
		t.Fatal("TryRead blocked")
	}
	require.NoError(t, err)
	require.Zero(t, n)

	readOne()
	staleInterrupt(ef)
	readOne()
	fl, err := unix.FcntlInt(uintptr(ef.dead.Raw()), unix.F_GETFL, 0)
	require.NoError(t, err)
	require.NotZero(t, fl&unix.O_NONBLOCK, "the eventfd that ends reads was put in blocking mode")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := ef.ReadThread(ctx, buf, 0)
		done <- err
	}()
	for !ef.reading.Load() {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		free()
		t.Fatal("the context's end did not end ReadThread")
	}
}

// Every read of a closed file fails with ErrClosed, before it touches the
// numbers that Close freed.
func TestEventFileReadAfterClose(t *testing.T) {
	_, ef := pipeEventFile(t)
	require.NoError(t, ef.EnableThreadWait())
	buf := make([]byte, 8)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	require.NoError(t, ef.Close())
	_, err := ef.ReadThread(ctx, buf, 0)
	require.ErrorIs(t, err, ErrClosed)
	require.Nil(t, ef.regStop, "a read after Close registered its context")
	_, err = ef.Read(ctx, buf)
	require.ErrorIs(t, err, ErrClosed)
	_, err = ef.TryRead(buf)
	require.ErrorIs(t, err, ErrClosed)
}

// With SIGURG ignored (signal.Ignore) the signal that ends a blocking read
// would be discarded, so ReadThread parks instead, and its context and
// Close still end it. Run in a process of its own: ignoring SIGURG also
// turns off the runtime's preemption.
func TestReadThreadSIGURGIgnored(t *testing.T) {
	if os.Getenv("GOVERBS_SIGURG_IGNORED") == "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestReadThreadSIGURGIgnored$", "-test.count=1")
		cmd.Env = append(os.Environ(), "GOVERBS_SIGURG_IGNORED=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "PASS")
		return
	}
	signal.Ignore(unix.SIGURG)
	_, ef := pipeEventFile(t)
	require.NoError(t, ef.EnableThreadWait())
	buf := make([]byte, 8)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var err error
	require.True(t, within(5*time.Second, func() { _, err = ef.ReadThread(ctx, buf, 0) }), "the context's end did not end ReadThread")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	closeUnderReader(t, ef, func() error {
		_, err := ef.ReadThread(context.Background(), buf, 0)
		return err
	})
}
