package uverbs

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/goverbs/rdma/internal/mmio"
)

// ringLock guards one ring (a QP's send or receive queue, an SRQ, a CQ), as
// rdma-core's providers guard theirs with a pthread spin lock each
// (rdma-core: the sq.lock, rq.lock and cq.lock of providers/rxe; libmlx5's
// mlx5_spinlock).
//
// By default it is a spin lock on held: one compare-and-swap takes it, one
// atomic store gives it back, and a goroutine that finds it taken yields
// the processor (runtime.Gosched) until it is free. The sections are short;
// the rare long ones (Modify, Close and Resize, with their system calls)
// only cost a waiter its spinning. Not reentrant. It is sync/atomic only,
// the same code in race builds, so the race detector sees what ships.
//
// single, set at creation before the queue is shared (CQInit, QPInit and
// SRQInit SingleGoroutine), elides it: the caller has promised that one
// goroutine at a time uses the queue, its calls ordered by the caller's
// own synchronisation, as an rdma-core application does when
// it creates the queue in a thread domain (ibv_alloc_td, ibv_alloc_parent_domain;
// libmlx5 then takes no lock, as with MLX5_SINGLE_THREADED=1). Lock and
// Unlock then do nothing, except in race builds (raceBuild), where they set
// and clear held, and a Lock that finds it set panics naming the queue:
// two goroutines used it at once. single names the queue for that message.
type ringLock struct {
	held atomic.Uint32 // 1 while held
	// turns is written plainly by each Lock of an elided lock in race
	// builds, so that the race detector reports two goroutines that use
	// the queue with nothing ordering their calls, even calls that never
	// overlap (enterSingle).
	turns  uint64
	single string     // not empty: the lock is elided (SingleGoroutine)
	mu     sync.Mutex // the lock in builds with the ringmutex tag (ringMutex)
}

// Lock takes the lock.
func (l *ringLock) Lock() {
	if l.single != "" {
		if raceBuild {
			l.enterSingle()
		}
		return
	}
	if ringMutex {
		l.mu.Lock()
		return
	}
	if !l.held.CompareAndSwap(0, 1) {
		l.spin()
	}
}

// spin takes the lock after a first try found it held.
func (l *ringLock) spin() {
	for {
		// Read first, so waiters share the line until it is free.
		if l.held.Load() == 0 && l.held.CompareAndSwap(0, 1) {
			return
		}
		runtime.Gosched()
	}
}

// Unlock releases the lock: every write of the section is visible to the
// next holder before it sees the lock free (a sync/atomic store).
func (l *ringLock) Unlock() {
	if ringMutex && l.single == "" {
		l.mu.Unlock()
		return
	}
	if l.single == "" || raceBuild {
		l.held.Store(0)
	}
}

// storeUnlock stores v to *p with release ordering (a ring index the
// kernel reads), then unlocks.
func (l *ringLock) storeUnlock(p *atomic.Uint32, v uint32) {
	mmio.StoreRelease32(p, v)
	l.Unlock()
}

// waitRelease returns once whoever holds the lock now has released it (at
// once if no one does). It only looks: the lock seen free once, after the
// call began, means that holder has left, and a poster that takes the lock
// again at once cannot keep it waiting. An elided lock has no holder to
// wait for: it returns at once.
func (l *ringLock) waitRelease() {
	if l.single != "" {
		return
	}
	if ringMutex {
		//lint:ignore SA2001 an empty section: it only waits for the holder
		l.mu.Lock()
		l.mu.Unlock()
		return
	}
	for l.held.Load() != 0 {
		runtime.Gosched()
	}
}

// enterSingle is Lock of an elided lock in race builds. Its plain write
// comes first: the race detector reports it unless the caller's own
// synchronisation orders this call after the last one from another
// goroutine (held's atomics, below, would order them and hide the
// misuse). Then two goroutines in the queue at once panic.
func (l *ringLock) enterSingle() {
	l.turns++
	if l.held.Swap(1) != 0 {
		panic("uverbs: two goroutines used " + l.single + " at once, but it was created with SingleGoroutine, " +
			"which promises one goroutine at a time: serialise its calls, or create it without SingleGoroutine")
	}
}
