package uverbs

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/goverbs/rdma/uverbs/internal/rxe"
)

// contenders are the goroutine counts of the contended benchmarks.
var contenders = []int{1, 2, 8}

// contend runs g goroutines, each with the work newWork gives it, until b.N
// calls were made in all.
func contend(b *testing.B, g int, newWork func() func() error) {
	var left atomic.Int64
	left.Store(int64(b.N))
	var wg sync.WaitGroup
	b.ResetTimer()
	for range g {
		wg.Add(1)
		work := newWork()
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				if err := work(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkContendedPost: g goroutines post one signaled 64-byte RDMA WRITE
// at a time to one QP (PostSend, the fake doorbell included); ns per post,
// all goroutines together. The fake kernel retires the ring when it is full.
func BenchmarkContendedPost(b *testing.B) {
	for _, g := range contenders {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			qp, consume := fakeQP(b, false)
			wr := []SendWR{{ID: 1, Op: OpWrite, Flags: SendSignaled, SGEs: []SGE{{Addr: 0x10000, Length: 64, LKey: 7}},
				RemoteAddr: 0x20000, RKey: 9}}
			b.ReportAllocs()
			contend(b, g, func() func() error {
				return func() error {
					for {
						err := qp.PostSend(wr)
						if !errors.Is(err, ErrQueueFull) {
							return err
						}
						consume()
					}
				}
			})
		})
	}
}

// BenchmarkContendedPoll: g goroutines each make the fake kernel produce
// one completion and poll one CQ for one; ns per poll, all goroutines
// together (a poll may find that another took the completion).
func BenchmarkContendedPoll(b *testing.B) {
	for _, g := range contenders {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			buf, prod, _ := fakeRing(b, 6, 1024)
			q, err := rxe.NewCQ(buf)
			if err != nil {
				b.Fatal(err)
			}
			cq := &CQ{drv: rxe.NewCQState(q)}
			b.ReportAllocs()
			contend(b, g, func() func() error {
				wcs := make([]WC, 1)
				return func() error {
					for {
						old := prod.Load()
						if prod.CompareAndSwap(old, (old+1)&1023) {
							break
						}
					}
					_, err := cq.Poll(wcs)
					return err
				}
			})
		})
	}
}
