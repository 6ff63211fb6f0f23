package uverbs

import (
	"sync"
	"sync/atomic"
)

// ringLock guards one ring (a QP's send or receive queue, an SRQ, a CQ), as
// rdma-core's providers guard theirs with a lock each (rdma-core: the
// sq.lock, rq.lock and cq.lock of providers/rxe; libmlx5's mlx5_spinlock).
//
// It is a sync.Mutex: the race detector understands it, and a waiter
// parks rather than spins through a holder's system call (Modify, Close
// and Resize make them, and siw's POST_SEND, which rdma-core's siw also
// rings under its lock; rxe's doorbell is rung after the unlock, and
// mlx5's is a device register). It
// was chosen over a spin lock on a sync/atomic word by the contended
// benchmarks (BENCHMARKS.md, "Ring locks"): alike with one goroutine,
// faster with two and eight. Not reentrant.
//
// elide, called at creation before the queue is shared (CQInit, QPInit
// and SRQInit SingleGoroutine), elides it: the caller has promised that one
// goroutine at a time uses the queue, its calls ordered by the caller's
// own synchronisation, as an rdma-core application does when it creates
// the queue in a thread domain (ibv_alloc_td, ibv_alloc_parent_domain;
// libmlx5 then takes no lock, as with MLX5_SINGLE_THREADED=1). Lock and
// Unlock then do nothing, except in race builds (raceBuild), where they
// check the promise (enterSingle). single names the queue for their
// messages.
type ringLock struct {
	mu     sync.Mutex
	elided bool   // SingleGoroutine: Lock and Unlock do nothing
	single string // an elided lock's queue, for the messages

	// Race builds, elided locks only: held is 1 between Lock and Unlock,
	// and turns is written plainly by each Lock (enterSingle).
	held  atomic.Uint32
	turns uint64
}

// Lock takes the lock.
func (l *ringLock) Lock() {
	if l.elided {
		if raceBuild {
			l.enterSingle()
		}
		return
	}
	l.mu.Lock()
}

// elide makes the lock of a SingleGoroutine queue, named for the
// messages, do nothing; called at creation, before the queue is shared.
func (l *ringLock) elide(queue string) { l.elided, l.single = true, queue }

// Unlock releases the lock: every write of the section is visible to the
// next holder.
func (l *ringLock) Unlock() {
	if !l.elided {
		l.mu.Unlock()
	} else if raceBuild {
		l.held.Store(0)
	}
}

// waitRelease returns once whoever holds the lock now has released it (at
// once if no one does). An elided lock has no holder to wait for: it
// returns at once.
func (l *ringLock) waitRelease() {
	if l.elided {
		return
	}
	l.mu.Lock()
	//lint:ignore SA2001 an empty section: it only waits for the holder
	l.mu.Unlock()
}

// heldNow reports whether the lock is held (tests and checks only: the
// answer may change at once).
func (l *ringLock) heldNow() bool {
	if l.elided {
		return l.held.Load() != 0
	}
	if l.mu.TryLock() {
		l.mu.Unlock()
		return false
	}
	return true
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
