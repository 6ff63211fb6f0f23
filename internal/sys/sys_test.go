package sys

import (
	"context"
	"errors"
	"fmt"
	"os"
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

// Every read of a closed file fails with ErrClosed, and leaves no context
// registered.
func TestEventFileReadAfterClose(t *testing.T) {
	_, ef := pipeEventFile(t)
	buf := make([]byte, 8)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	require.NoError(t, ef.Close())
	_, err := ef.Read(ctx, buf)
	require.ErrorIs(t, err, ErrClosed)
	require.Nil(t, ef.regStop, "a read after Close registered its context")
	_, err = ef.TryRead(buf)
	require.ErrorIs(t, err, ErrClosed)
	//lint:ignore SA1012 the nil context is the point: Read must refuse it
	_, err = ef.Read(nil, buf)
	require.ErrorContains(t, err, "context.Background()")
}

// Without leak tracing, recording a creation allocates nothing (the label
// is built only while tracing).
func TestTrackUntracedAllocatesNothing(t *testing.T) {
	tracing.Store(false)
	defer tracing.Store(true)
	if n := testing.AllocsPerRun(100, func() {
		if track("mmap", "ring") != 0 {
			t.Fatal("an untraced creation got a trace")
		}
	}); n != 0 {
		t.Errorf("track without tracing: %v allocations, want 0", n)
	}
}
