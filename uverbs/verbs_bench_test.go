package uverbs

import (
	"errors"
	"testing"
)

// Benchmarks on the lab's rxe0 (run with `make bench`, or go test -bench
// with -exec rxelab). Under QEMU's TCG only ratios measured in the same
// guest mean anything (testing.md).

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
