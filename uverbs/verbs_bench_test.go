package uverbs

import (
	"context"
	"errors"
	"testing"
)

// Benchmarks on the lab's rxe0 (run with `make bench`, or go test -bench
// with -exec rxelab). Under QEMU's TCG only ratios measured in the same
// guest mean anything (docs/testing.md §5).

// benchEnv is a connected RC pair on one CQ with a registered buffer.
type benchEnv struct {
	cq   *CQ
	a, b *QP
	mr   *MR
}

func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	e := newVerbsEnv(b)
	cq := e.cq(512, nil)
	cp := QPCap{MaxSendWR: 256, MaxRecvWR: 256, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInline: 64}
	qa, qb := e.rcPair(cq, cp)
	_, mr := e.memory(1 << 16)
	return &benchEnv{cq: cq, a: qa, b: qb, mr: mr}
}

// BenchmarkPostPollRoundTrip posts one signaled 64-byte RDMA WRITE and
// busy-polls its completion: the latency of one operation through the
// library and rxe (doorbell system call included).
func BenchmarkPostPollRoundTrip(b *testing.B) {
	env := newBenchEnv(b)
	wr := []SendWR{{ID: 1, Op: OpWrite, Flags: SendSignaled, SGEs: []SGE{env.mr.SGE(0, 64)},
		RemoteAddr: env.mr.Addr() + 32768, RKey: env.mr.RKey()}}
	wcs := make([]WC, 4)
	b.ReportAllocs()
	b.SetBytes(64)
	for b.Loop() {
		if err := env.a.PostSend(wr); err != nil {
			b.Fatal(err)
		}
		for {
			n, err := env.cq.Poll(wcs)
			if err != nil {
				b.Fatal(err)
			}
			if n > 0 {
				if wcs[0].Status != WCSuccess {
					b.Fatal(wcs[0].Status.Err())
				}
				break
			}
		}
	}
}

// BenchmarkPostSend measures the post path: validation, WQE encoding, the
// producer index and the doorbell, for 64-byte unsignaled inline RDMA
// WRITEs with every 32nd signaled (as perftest does with --cq-mod); polls
// happen only when the send queue runs low.
func BenchmarkPostSend(b *testing.B) {
	env := newBenchEnv(b)
	const signalEvery = 32
	wr := []SendWR{{Op: OpWrite, Flags: SendInline, SGEs: []SGE{env.mr.SGE(0, 64)},
		RemoteAddr: env.mr.Addr() + 32768, RKey: env.mr.RKey()}}
	wcs := make([]WC, 16)
	outstanding := 0 // signaled requests not yet completed
	limit := env.a.Cap().MaxSendWR / signalEvery
	b.ReportAllocs()
	b.SetBytes(64)
	i := 0
	for b.Loop() {
		wr[0].ID = uint64(i)
		wr[0].Flags = SendInline
		if i%signalEvery == signalEvery-1 {
			wr[0].Flags |= SendSignaled
			outstanding++
		}
		i++
		for {
			err := env.a.PostSend(wr)
			if err == nil {
				break
			}
			if !errors.Is(err, ErrQueueFull) {
				b.Fatal(err)
			}
			outstanding -= drain(b, env.cq, wcs)
		}
		for outstanding >= limit {
			outstanding -= drain(b, env.cq, wcs)
		}
	}
	b.StopTimer()
	// A last signaled request: its completion means the kernel retired
	// every unsignaled one before it (send queues complete in order), so
	// the MR may be deregistered.
	wr[0].Flags = SendInline | SendSignaled
	for env.a.PostSend(wr) != nil {
		outstanding -= drain(b, env.cq, wcs)
	}
	outstanding++
	for outstanding > 0 {
		outstanding -= drain(b, env.cq, wcs)
	}
}

func drain(b *testing.B, cq *CQ, wcs []WC) int {
	n, err := cq.Poll(wcs)
	if err != nil {
		b.Fatal(err)
	}
	for _, wc := range wcs[:n] {
		if wc.Status != WCSuccess {
			b.Fatal(wc.Status.Err())
		}
	}
	return n
}

// BenchmarkCompChannelWakeup is the event-driven round trip: a SEND between
// two QPs on one CQ, each op waiting for its two completions the way
// rdma-core's ibv_rc_pingpong -e does (poll; if not done, wait for the
// event, re-arm, poll again), the Wait parked in the netpoller.
func BenchmarkCompChannelWakeup(b *testing.B) {
	w := newWakeupEnv(b)
	b.ReportAllocs()
	for b.Loop() {
		w.roundTrip(b)
	}
}

// wakeupEnv is a connected RC pair on one CQ with a completion channel.
type wakeupEnv struct {
	ch   *CompChannel
	cq   *CQ
	a, b *QP
	recv []RecvWR
	send []SendWR
	wcs  []WC
	ctx  context.Context // of the Waits
}

func newWakeupEnv(tb testing.TB) *wakeupEnv {
	tb.Helper()
	e := newVerbsEnv(tb)
	ch := e.channel()
	cq := e.cq(64, ch)
	qa, qb := e.rcPair(cq, defaultCap)
	_, mr := e.memory(4096)
	w := &wakeupEnv{ch: ch, cq: cq, a: qa, b: qb,
		recv: []RecvWR{{ID: 2, SGEs: []SGE{mr.SGE(0, 64)}}},
		send: []SendWR{{ID: 1, Op: OpSend, Flags: SendSignaled | SendInline, SGEs: []SGE{mr.SGE(1024, 64)}}},
		wcs:  make([]WC, 4), ctx: context.Background()}
	if err := cq.ReqNotify(false); err != nil {
		tb.Fatal(err)
	}
	return w
}

// roundTrip posts a receive and a send and returns once both completed.
func (w *wakeupEnv) roundTrip(tb testing.TB) {
	if err := w.b.PostRecv(w.recv); err != nil {
		tb.Fatal(err)
	}
	if err := w.a.PostSend(w.send); err != nil {
		tb.Fatal(err)
	}
	for got := 0; ; {
		n, err := w.cq.Poll(w.wcs)
		if err != nil {
			tb.Fatal(err)
		}
		for _, wc := range w.wcs[:n] {
			if wc.Status != WCSuccess {
				tb.Fatal(wc.Status.Err())
			}
		}
		if got += n; got == 2 {
			return
		}
		// The CQ is armed, or an event is queued: one came since the
		// last re-arm, and its completions were polled above or below.
		if _, err := w.ch.Wait(w.ctx); err != nil {
			tb.Fatal(err)
		}
		if err := w.cq.ReqNotify(false); err != nil {
			tb.Fatal(err)
		}
	}
}
