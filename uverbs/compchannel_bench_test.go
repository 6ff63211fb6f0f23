package uverbs

import (
	"context"
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/goverbs/rdma/internal/sys"
	"golang.org/x/sys/unix"
)

// BenchmarkCompChannelWaitNative measures CompChannel.Wait natively, on a
// pipe instead of a completion channel: each round writes one event of a
// CQ into the pipe, then Waits for it; the Wait's first read finds it, with
// no park. The floor is sys.BenchmarkEventFileReadFloor (the write and the
// read alone); the rest is the Go code of the wait.
// sys.BenchmarkEventFileParkPingPong adds what a park and a wake-up cost.
func BenchmarkCompChannelWaitNative(b *testing.B) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		b.Fatal(err)
	}
	w := sys.NewFD(p[1], "pipe w")
	defer w.Close()
	ev, err := sys.NewEventFile(p[0], "pipe r")
	if err != nil {
		b.Fatal(err)
	}
	defer ev.Close()
	ch := &CompChannel{ctx: &Device{}, ev: ev, reader: make(chan struct{}, 1), note: make(chan struct{})}
	ch.buf = bytesOf(&ch.desc)
	cq := &CQ{ctx: ch.ctx, h: 77, ch: ch}
	ch.last.Store(cq)
	var desc [8]byte
	binary.NativeEndian.PutUint64(desc[:], cq.h)
	// A context that can be cancelled, as a program's is: its Done channel
	// is watched (registered once, for the first Wait).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		cq.armed.Store(true)
		if n, _, errno := unix.RawSyscall(unix.SYS_WRITE, uintptr(w.Raw()), uintptr(unsafe.Pointer(&desc[0])), 8); n != 8 || errno != 0 {
			b.Fatalf("write of the event: %d, %v", n, errno)
		}
		if got, err := ch.Wait(ctx); got != cq || err != nil {
			b.Fatalf("Wait: %p, %v", got, err)
		}
	}
}
