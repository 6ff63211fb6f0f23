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
// The word counts: odd while held, and each Unlock moves it to the next
// even value, so a changed word means the holder seen has left
// (waitRelease).
//
// Race builds use sync.Mutex instead (ringlock_race.go), which the race
// detector understands.
type ringLock struct{ word atomic.Uint32 }

// Lock sets the word's low bit; it has the lock if the bit was clear. (On
// amd64 the Or is a load and a compare-and-swap, small enough to be
// inlined, which a load and a separate compare-and-swap are not.)
func (l *ringLock) Lock() {
	if l.word.Or(1)&1 != 0 {
		l.lockSlow()
	}
}

func (l *ringLock) lockSlow() {
	for {
		// Read first, so waiters share the line until it is free.
		if l.word.Load()&1 == 0 && l.word.Or(1)&1 == 0 {
			return
		}
		runtime.Gosched()
	}
}

// Unlock releases the lock: every write of the section is visible to the
// next holder before it sees the lock free (a release store, as
// pthread_spin_unlock). It is one call, small enough to be inlined into
// every caller; an Unlock of an unlocked lock finds the word even, leaves
// it so and panics.
func (l *ringLock) Unlock() {
	if mmio.SeqEnd32(&l.word)&1 == 0 {
		panic("uverbs: unlock of an unlocked ring lock")
	}
}

// storeUnlock stores v to *p with release ordering, then unlocks: the
// index store that publishes what the section wrote, and the unlock
// (mmio.StoreRelease32SeqEnd32: two inlined stores on amd64, one call into
// assembly on arm64).
func (l *ringLock) storeUnlock(p *atomic.Uint32, v uint32) {
	if mmio.StoreRelease32SeqEnd32(p, v, &l.word)&1 == 0 {
		panic("uverbs: unlock of an unlocked ring lock")
	}
}

// waitRelease returns once whoever holds the lock now has released it
// (at once if no one does), without taking it: later holders, however
// many, do not delay it. The caller's earlier sync/atomic stores are
// visible to every holder after that one (sequentially consistent, as the
// compare-and-swap that takes the lock).
func (l *ringLock) waitRelease() { l.waitPast(l.word.Load()) }

// waitPast returns once the lock word is no longer w, a value it held
// while held (at once if w is even: no one held it).
func (l *ringLock) waitPast(w uint32) {
	if w&1 == 0 {
		return
	}
	for l.word.Load() == w {
		runtime.Gosched()
	}
}
