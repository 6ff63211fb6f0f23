package provider

import (
	"runtime"
	"sync/atomic"
)

// SpinLock is a plain spin lock on one word, as rdma-core's providers
// guard a shared doorbell register (libmlx5 mlx5_bf.lock, a pthread spin
// lock): a compare-and-swap takes it, an atomic store gives it back, and a
// goroutine that finds it taken yields the processor until it is free. It
// is uverbs' ring lock without the SingleGoroutine elision.
type SpinLock struct{ held atomic.Uint32 }

// Lock takes the lock.
func (l *SpinLock) Lock() {
	for !l.held.CompareAndSwap(0, 1) {
		for l.held.Load() != 0 { // read first, so waiters share the line
			runtime.Gosched()
		}
	}
}

// Unlock releases the lock.
func (l *SpinLock) Unlock() { l.held.Store(0) }
