package uverbs

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/goverbs/rdma/internal/mmio"
)

// TestRingLockExcludes has goroutines, more than there are processors,
// increment a plain counter and a two-word invariant under one ringLock:
// a lost update or a torn pair means two holders at once (and, under
// -race, a reported race). Every other section publishes the counter with
// a store-release, as Poll publishes consumer_index before it unlocks (the
// others with an atomic store): each holder must find it equal to the
// counter.
func TestRingLockExcludes(t *testing.T) {
	var (
		l     ringLock
		n     int
		a, b  int
		index atomic.Uint32
		wg    sync.WaitGroup
	)
	workers := 2 * runtime.GOMAXPROCS(0)
	const iters = 20000
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range iters {
				l.Lock()
				if index.Load() != uint32(n) {
					panic("ringLock: the last holder's index store is not visible")
				}
				n++
				a++
				if i%64 == 0 {
					runtime.Gosched() // be preempted while holding it
				}
				b++
				if a != b {
					panic("ringLock: two holders at once")
				}
				if i%2 == 0 {
					index.Store(uint32(n))
					l.Unlock()
					continue
				}
				mmio.StoreRelease32(&index, uint32(n))
				l.Unlock()
			}
		}()
	}
	wg.Wait()
	if n != workers*iters {
		t.Fatalf("counter %d, want %d: increments were lost", n, workers*iters)
	}
	if l.heldNow() {
		t.Fatal("the lock is held after every section ended")
	}
}

// waitRelease returns at once on a free lock, and otherwise only once the
// holder it found has released the lock.
func TestRingLockWaitRelease(t *testing.T) {
	var l ringLock
	l.waitRelease()
	l.Lock()
	var released atomic.Bool
	done := make(chan struct{})
	go func() {
		l.waitRelease()
		if !released.Load() {
			panic("waitRelease returned while the lock was held")
		}
		close(done)
	}()
	runtime.Gosched()
	released.Store(true)
	l.Unlock()
	<-done
}
