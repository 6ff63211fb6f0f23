package sys

import (
	"context"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BenchmarkReadThread is the cost of one ReadThread of a byte that is
// already there, on a pipe: the write that puts it there, then ReadThread's
// gettid and read. BenchmarkReadThreadFloor makes the write and the read
// bare; the difference is what ReadThread adds around them (locks, the
// context's registration, the gettid, the runtime's bookkeeping of the
// blocking call), which under the lab's emulated CPUs weighs on every
// completion event (BENCHMARKS.md).
func BenchmarkReadThread(b *testing.B) {
	w, ef := pipeEventFile(b)
	if err := ef.EnableThreadWait(); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	buf := make([]byte, 1)
	one := []byte{1}
	b.ReportAllocs()
	for b.Loop() {
		unix.RawSyscall(unix.SYS_WRITE, uintptr(w.Raw()), uintptr(unsafe.Pointer(&one[0])), 1)
		if n, err := ef.ReadThread(ctx, buf, 0); n != 1 || err != nil {
			b.Fatalf("ReadThread: %d, %v", n, err)
		}
	}
}

func BenchmarkReadThreadFloor(b *testing.B) {
	w, ef := pipeEventFile(b)
	if err := ef.EnableThreadWait(); err != nil {
		b.Fatal(err)
	}
	if err := ef.setBlocking(true); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1)
	one := []byte{1}
	for b.Loop() {
		unix.RawSyscall(unix.SYS_WRITE, uintptr(w.Raw()), uintptr(unsafe.Pointer(&one[0])), 1)
		if n, _, errno := unix.RawSyscall(unix.SYS_READ, uintptr(ef.priv.Raw()), uintptr(unsafe.Pointer(&buf[0])), 1); n != 1 || errno != 0 {
			b.Fatalf("read: %d, %v", n, errno)
		}
	}
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
