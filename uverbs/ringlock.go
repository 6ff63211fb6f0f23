//go:build !race

package uverbs

import (
	"runtime"
	"sync/atomic"

	"github.com/goverbs/rdma/internal/mmio"
)

// ringLock guards one ring (a QP's send or receive queue, an SRQ, a CQ) as
// rdma-core's pthread spin lock does (providers/rxe/rxe.c sq.lock, rq.lock,
// cq.lock): a compare-and-swap to take it and a release store to give it
// back, one locked instruction per call where sync.Mutex needs two. The
// sections it guards are short; a caller that finds it taken yields the
// processor until it is free (the rare long sections, Modify and Close with
// their system calls, only cost a waiter its spinning). Not reentrant.
//
// Race builds use sync.Mutex instead (ringlock_race.go), which the race
// detector understands.
type ringLock struct{ held atomic.Uint32 }

func (l *ringLock) Lock() {
	if !l.held.CompareAndSwap(0, 1) {
		l.lockSlow()
	}
}

func (l *ringLock) lockSlow() {
	for {
		// Read first, so waiters share the line until it is free.
		if l.held.Load() == 0 && l.held.CompareAndSwap(0, 1) {
			return
		}
		runtime.Gosched()
	}
}

// Unlock releases the lock: every write of the section is visible to the
// next holder before it sees the lock free (a release store, as
// pthread_spin_unlock).
func (l *ringLock) Unlock() {
	if l.held.Load() == 0 {
		panic("uverbs: unlock of an unlocked ring lock")
	}
	mmio.StoreRelease32(&l.held, 0)
}
