package uverbs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/uverbs/internal/provider"
	"github.com/goverbs/rdma/uverbs/internal/rxe"
)

// The library's own cost on the data path, on any machine: PostSend's work
// in user space (checks, validation, WQE encoding, publishing the producer
// index; everything but the doorbell system call) and Poll (lock, decode,
// publishing the consumer index), on rings laid out as rxe's kernel lays
// them out (rxe_queue_buf: index_mask at 4, producer_index at 128,
// consumer_index at 256, slots from 384), with a fake kernel that consumes
// WQEs and produces CQEs by storing the indices. BENCHMARKS.md, "The
// library's own cost", sets the results beside the cost of a cgo call.

// fakeRing maps a ring of 1<<log2-byte slots and returns it with the
// kernel's views of producer_index and consumer_index.
func fakeRing(tb testing.TB, log2, slots uint32) (buf []byte, prod, cons *atomic.Uint32) {
	tb.Helper()
	m, err := sys.MmapAnon(rxe.RingHeaderSize+int(slots)<<log2, "benchmark ring")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := m.Unmap(); err != nil {
			tb.Error(err)
		}
	})
	buf = m.Bytes()
	binary.LittleEndian.PutUint32(buf[0:], log2)
	binary.LittleEndian.PutUint32(buf[4:], slots-1)
	return buf, (*atomic.Uint32)(unsafe.Pointer(&buf[128])), (*atomic.Uint32)(unsafe.Pointer(&buf[256]))
}

// benchSingle, set by GOVERBS_BENCH_SINGLE=1 in the environment, makes the
// benchmarks' queues SingleGoroutine ones, their ring locks elided (as
// the second run of docs/perf-history.md, "Ring locks: plain by default,
// elided by declaration", asks).
var benchSingle = os.Getenv("GOVERBS_BENCH_SINGLE") == "1"

// singleGoroutine elides the locks, as CreateCQ, CreateQP and CreateSRQ do
// for SingleGoroutine.
func singleGoroutine(single bool, what string, locks ...*ringLock) {
	if single {
		for _, l := range locks {
			l.elide(what)
		}
	}
}

// fakeDoorbell is the device of a fake QP: its doorbell, rung by a post
// the provider makes (stageSend's slow path), does nothing, as the fake
// kernel takes the ring's entries when the test says. It has no commands.
type fakeDoorbell struct{}

func (fakeDoorbell) Write(op string, cmd uint32, in, out []byte) error {
	return fmt.Errorf("%s: a fake device takes no commands", op)
}

func (fakeDoorbell) Mmap(op string, off int64, n int, what string) (*sys.Mapping, error) {
	return nil, fmt.Errorf("%s: a fake device maps nothing", op)
}

func (fakeDoorbell) Doorbell(string, unsafe.Pointer, uintptr) error { return nil }
func (fakeDoorbell) Name() string                                   { return "fake" }

// Doorbells is where a fake QP's POST_SEND would be built; the fake rings
// of these tests are made without one.
func (fakeDoorbell) Doorbells() *provider.Doorbells { return &fakeDoorbells }

var fakeDoorbells provider.Doorbells

// fakeQP is an RC QP in RTS on a fake send ring of 1024 slots; single
// elides its locks.
func fakeQP(tb testing.TB, single bool) (qp *QP, kernelConsumeAll func()) {
	tb.Helper()
	lim := rxe.SendLimits{QPType: rxe.QPTypeRC, MaxSGE: 1, MaxInline: 64}
	buf, prod, cons := fakeRing(tb, 9, 1024)
	sq, err := rxe.NewSQ(buf, lim)
	if err != nil {
		tb.Fatal(err)
	}
	qp = &QP{ctx: &Device{}, pd: &PD{}, typ: RC, qpn: 0x11, drv: rxe.NewQPState(fakeDoorbell{}, sq, nil), lim: lim}
	fakeLKey(qp.pd, 7) // the lkey of the benchmarks' SGEs
	qp.state.Store(uint32(QPStateRTS))
	singleGoroutine(single, "a fake QP", &qp.sendMu, &qp.recvMu)
	return qp, func() { cons.Store(prod.Load()) }
}

// stage posts wr as PostSend does up to the doorbell, letting the fake
// kernel retire the ring when it is full.
func stage(tb testing.TB, qp *QP, wr []SendWR, consume func()) {
	qp.sendMu.Lock()
	err := qp.stageSend("post_send", wr)
	qp.sendMu.Unlock()
	if errors.Is(err, ErrQueueFull) {
		consume()
		qp.sendMu.Lock()
		err = qp.stageSend("post_send", wr)
		qp.sendMu.Unlock()
	}
	if err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkPostSendUserSpace: one signaled 64-byte RDMA WRITE with one SGE.
func BenchmarkPostSendUserSpace(b *testing.B) {
	qp, consume := fakeQP(b, benchSingle)
	wr := []SendWR{{ID: 1, Op: OpWrite, Flags: SendSignaled, SGEs: []SGE{{Addr: 0x10000, Length: 64, LKey: 7}},
		RemoteAddr: 0x20000, RKey: 9}}
	b.ReportAllocs()
	for b.Loop() {
		stage(b, qp, wr, consume)
	}
}

// BenchmarkPostSendUserSpaceInline: the same, its 64 bytes copied inline
// from a Buffer (the source is checked against the open Buffers first).
func BenchmarkPostSendUserSpaceInline(b *testing.B) {
	qp, consume := fakeQP(b, benchSingle)
	buf, err := AllocBuffer(4096)
	if err != nil {
		b.Fatal(err)
	}
	defer buf.Close()
	wr := []SendWR{{ID: 1, Op: OpWrite, Flags: SendSignaled | SendInline, SGEs: []SGE{{Addr: buf.Addr(), Length: 64}},
		RemoteAddr: 0x20000, RKey: 9}}
	b.ReportAllocs()
	for b.Loop() {
		stage(b, qp, wr, consume)
	}
}

// fakeCQ is a CQ on a fake ring of 1024 zeroed CQEs (successful sends);
// produce publishes one more. single elides its lock.
func fakeCQ(tb testing.TB, single bool) (cq *CQ, produce func()) {
	tb.Helper()
	buf, prod, _ := fakeRing(tb, 6, 1024)
	q, err := rxe.NewCQ(buf)
	if err != nil {
		tb.Fatal(err)
	}
	cq = &CQ{drv: rxe.NewCQState(q)}
	singleGoroutine(single, "a fake CQ", &cq.mu)
	return cq, func() { prod.Store((prod.Load() + 1) & 1023) }
}

// Poll publishes consumer_index when it takes completions (just before it
// unlocks the CQ) and leaves it when the CQ is empty, and leaves the CQ's
// lock free.
func TestPollPublishesConsumerIndex(t *testing.T) {
	buf, prod, cons := fakeRing(t, 6, 1024)
	q, err := rxe.NewCQ(buf)
	if err != nil {
		t.Fatal(err)
	}
	cq := &CQ{drv: rxe.NewCQState(q)}
	for i := range 3 {
		binary.LittleEndian.PutUint64(buf[rxe.RingHeaderSize+i<<6:], uint64(100+i)) // wr_id
	}
	prod.Store(3)
	wcs := make([]WC, 2)
	for _, want := range []struct{ n, cons int }{{2, 2}, {1, 3}, {0, 3}} {
		n, err := cq.Poll(wcs)
		if n != want.n || err != nil || int(cons.Load()) != want.cons {
			t.Fatalf("Poll = %d, %v with consumer_index %d after it; want %d, nil, %d", n, err, cons.Load(), want.n, want.cons)
		}
		if n > 0 && wcs[n-1].ID != uint64(100+want.cons-1) {
			t.Fatalf("the last completion polled has ID %d, want %d", wcs[n-1].ID, 100+want.cons-1)
		}
		if cq.mu.heldNow() {
			t.Fatalf("the CQ's lock is held after a Poll that took %d", n)
		}
	}
}

// Poll returns fewer completions than wcs holds only when the ring had no
// more: completions that arrived after an earlier Poll saw some (and left
// them, for want of room) are taken too, as rdma-core's rxe_poll_cq takes
// them. A loop that polls until a short count relies on it.
func TestPollTakesWhatArrivedSinceItsLastLook(t *testing.T) {
	buf, prod, _ := fakeRing(t, 6, 1024)
	q, err := rxe.NewCQ(buf)
	if err != nil {
		t.Fatal(err)
	}
	cq := &CQ{drv: rxe.NewCQState(q)}
	for i := range 8 {
		binary.LittleEndian.PutUint64(buf[rxe.RingHeaderSize+i<<6:], uint64(100+i)) // wr_id
	}
	prod.Store(5)
	if n, err := cq.Poll(make([]WC, 3)); n != 3 || err != nil {
		t.Fatalf("Poll with room for 3 of 5 = %d, %v", n, err)
	}
	prod.Store(8) // two seen and left, three new
	wcs := make([]WC, 16)
	n, err := cq.Poll(wcs)
	if n != 5 || err != nil {
		t.Fatalf("Poll = %d, %v with 5 completions ready; want 5", n, err)
	}
	for i, wc := range wcs[:n] {
		if wc.ID != uint64(103+i) {
			t.Fatalf("completion %d has ID %d, want %d", i, wc.ID, 103+i)
		}
	}
}

// BenchmarkPollOne: the fake kernel produces one completion and Poll takes
// it (a 16-entry WC array, as a polling loop passes).
func BenchmarkPollOne(b *testing.B) {
	cq, produce := fakeCQ(b, benchSingle)
	wcs := make([]WC, 16)
	b.ReportAllocs()
	for b.Loop() {
		produce()
		if n, err := cq.Poll(wcs); n != 1 || err != nil {
			b.Fatal(n, err)
		}
	}
}

// BenchmarkPollEmpty: Poll on an empty CQ, the common case of a busy poll.
func BenchmarkPollEmpty(b *testing.B) {
	cq, _ := fakeCQ(b, benchSingle)
	wcs := make([]WC, 16)
	b.ReportAllocs()
	for b.Loop() {
		if n, err := cq.Poll(wcs); n != 0 || err != nil {
			b.Fatal(n, err)
		}
	}
}

// The same paths allocate nothing, with the ring locks taken and with
// them elided (SingleGoroutine).
func TestHotPathNoAllocs(t *testing.T) {
	for _, single := range []bool{false, true} {
		hotPathNoAllocs(t, single)
	}
}

func hotPathNoAllocs(t *testing.T, single bool) {
	qp, consume := fakeQP(t, single)
	buf, err := AllocBuffer(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	plain := []SendWR{{ID: 1, Op: OpWrite, Flags: SendSignaled, SGEs: []SGE{{Addr: 0x10000, Length: 64, LKey: 7}}, RemoteAddr: 0x20000, RKey: 9}}
	inline := []SendWR{{ID: 2, Op: OpSend, Flags: SendInline, SGEs: []SGE{{Addr: buf.Addr(), Length: 64}}}}
	cq, produce := fakeCQ(t, single)
	wcs := make([]WC, 16)
	for name, f := range map[string]func(){
		"post":        func() { stage(t, qp, plain, consume) },
		"post inline": func() { stage(t, qp, inline, consume) },
		"poll": func() {
			produce()
			cq.Poll(wcs)
		},
		"poll empty": func() { cq.Poll(wcs) },
	} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s (SingleGoroutine %v): %v allocations per call, want 0", name, single, n)
		}
	}
}
