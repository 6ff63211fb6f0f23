package sys

import (
	"context"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BenchmarkEventFileRead is the cost of one Read of a byte that is already
// there, on a pipe: the write that puts it there, then Read's non-blocking
// read, which finds it without parking. BenchmarkEventFileReadFloor makes
// the write and the read bare; the difference is what Read adds around them
// (the lock, the context's registration kept from the previous Read, the
// netpoller's bookkeeping of the descriptor).
func BenchmarkEventFileRead(b *testing.B) {
	w, ef := pipeEventFile(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	buf := make([]byte, 1)
	one := []byte{1}
	b.ReportAllocs()
	for b.Loop() {
		unix.RawSyscall(unix.SYS_WRITE, uintptr(w.Raw()), uintptr(unsafe.Pointer(&one[0])), 1)
		if n, err := ef.Read(ctx, buf); n != 1 || err != nil {
			b.Fatalf("Read: %d, %v", n, err)
		}
	}
}

func BenchmarkEventFileReadFloor(b *testing.B) {
	w, ef := pipeEventFile(b)
	buf := make([]byte, 1)
	one := []byte{1}
	for b.Loop() {
		unix.RawSyscall(unix.SYS_WRITE, uintptr(w.Raw()), uintptr(unsafe.Pointer(&one[0])), 1)
		if n, _, errno := unix.RawSyscall(unix.SYS_READ, uintptr(ef.raw), uintptr(unsafe.Pointer(&buf[0])), 1); n != 1 || errno != 0 {
			b.Fatalf("read: %d, %v", n, errno)
		}
	}
}

// BenchmarkEventFileParkPingPong is a round trip between two goroutines,
// each parked in Read of its own pipe until the other writes to it: two
// parks and two netpoller wake-ups per round, what an event that is not
// there yet costs.
func BenchmarkEventFileParkPingPong(b *testing.B) {
	w1, ef1 := pipeEventFile(b)
	w2, ef2 := pipeEventFile(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 1)
		for {
			if _, err := ef1.Read(ctx, buf); err != nil {
				done <- err
				return
			}
			unix.Write(w2.Raw(), buf)
		}
	}()
	buf := make([]byte, 1)
	one := []byte{1}
	b.ReportAllocs()
	for b.Loop() {
		unix.Write(w1.Raw(), one)
		if n, err := ef2.Read(ctx, buf); n != 1 || err != nil {
			b.Fatalf("Read: %d, %v", n, err)
		}
	}
	cancel()
	<-done
}

// pipeEventFile returns the write end of a pipe and an EventFile of its
// read end, both closed when the test ends.
func pipeEventFile(tb testing.TB) (*FD, *EventFile) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		tb.Fatal(err)
	}
	w := NewFD(p[1], "pipe w")
	tb.Cleanup(func() { w.Close() })
	ef, err := NewEventFile(p[0], "pipe r")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ef.Close() })
	return w, ef
}
