package testutil

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Rounds is I/O that goroutines repeat in rounds until Stop, each until
// its first error: the load a fault test keeps going while it breaks
// something, and waits on to see that the I/O runs.
type Rounds struct {
	counts  []atomic.Int64
	stopped chan struct{}
	done    chan []error // the errors, once every goroutine has returned
}

// StartRounds runs n goroutines; goroutine g calls newRound(g) once and
// then the function it returns for each round, until Stop or an error.
func StartRounds(n int, newRound func(g int) func() error) *Rounds {
	r := &Rounds{counts: make([]atomic.Int64, n), stopped: make(chan struct{}), done: make(chan []error, 1)}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			round := newRound(g)
			for {
				select {
				case <-r.stopped:
					return
				default:
				}
				if err := round(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				r.counts[g].Add(1)
			}
		}()
	}
	go func() {
		wg.Wait()
		r.done <- errs
	}()
	return r
}

// Wait waits until every goroutine has done n more rounds than when it
// was called; it fails t if one has stopped on an error, or at limit.
func (r *Rounds) Wait(t testing.TB, n int64, limit time.Duration) {
	t.Helper()
	want := make([]int64, len(r.counts))
	for i := range r.counts {
		want[i] = r.counts[i].Load() + n
	}
	deadline := time.Now().Add(limit)
	for i := 0; i < len(r.counts); {
		if r.counts[i].Load() >= want[i] {
			i++
			continue
		}
		select {
		case errs := <-r.done:
			r.done <- errs
			t.Fatalf("I/O stopped: %v", errs)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutine %d did %d rounds of I/O in %v, want %d", i, r.counts[i].Load()-want[i]+n, limit, n)
		}
	}
}

// Stop ends the rounds and returns the errors they stopped on.
func (r *Rounds) Stop() []error {
	select {
	case <-r.stopped:
	default:
		close(r.stopped)
	}
	errs := <-r.done
	r.done <- errs
	return errs
}
