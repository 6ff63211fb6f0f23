package uverbs

import (
	"runtime"
	"sync"
	"testing"
)

// TestRingLockExcludes has goroutines, more than there are processors,
// increment a plain counter and a two-word invariant under one ringLock:
// a lost update or a torn pair means two holders at once.
func TestRingLockExcludes(t *testing.T) {
	var (
		l    ringLock
		n    int
		a, b int
		wg   sync.WaitGroup
	)
	workers := 2 * runtime.GOMAXPROCS(0)
	const iters = 20000
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range iters {
				l.Lock()
				n++
				a++
				if i%64 == 0 {
					runtime.Gosched() // be preempted while holding it
				}
				b++
				if a != b {
					panic("ringLock: two holders at once")
				}
				l.Unlock()
			}
		}()
	}
	wg.Wait()
	if n != workers*iters {
		t.Fatalf("counter %d, want %d: increments were lost", n, workers*iters)
	}
}
