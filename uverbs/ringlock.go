//go:build !race

package uverbs

import (
	"runtime"
	"sync/atomic"
	"unsafe"

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
// (waitRelease). The holder keeps the odd value it set in held, so that
// Unlock stores the next one without reading the word back: a load of the
// word just after the locked instruction that took it costs about 3 ns on
// x86 (BENCHMARKS.md, rxe item 28), a third of an empty poll. Only the
// holder reads or writes held.
//
// Race builds use sync.Mutex instead (ringlock_race.go), which the race
// detector understands.
type ringLock struct {
	word atomic.Uint32
	held uint32
}

// Lock sets the word's low bit; it has the lock if the bit was clear. (On
// amd64 the Or is a load and a compare-and-swap, small enough to be
// inlined, which a load and a separate compare-and-swap are not; it is
// sync/atomic's function on the word's address because the method costs
// the inliner enough more to put Lock over its budget.)
func (l *ringLock) Lock() {
	if w := atomic.OrUint32((*uint32)(unsafe.Pointer(&l.word)), 1); w&1 == 0 {
		l.held = w | 1
	} else {
		l.lockSlow()
	}
}

// lockSlow takes the lock after a first try found it held.
func (l *ringLock) lockSlow() {
	for {
		// Read first, so waiters share the line until it is free.
		if l.word.Load()&1 == 0 {
			if w := l.word.Or(1); w&1 == 0 {
				l.held = w | 1
				return
			}
		}
		runtime.Gosched()
	}
}

// Unlock releases the lock: every write of the section is visible to the
// next holder before it sees the lock free (a release store, as
// pthread_spin_unlock). It is small enough to be inlined into every
// caller. An Unlock of an unlocked lock finds held even, leaves the word
// as it was and panics.
func (l *ringLock) Unlock() {
	w := l.held + 1
	if w&1 != 0 {
		panic("uverbs: unlock of an unlocked ring lock")
	}
	l.held = w
	mmio.StoreRelease32(&l.word, w)
}

// storeUnlock stores v to *p with release ordering, then unlocks: the
// index store that publishes what the section wrote, and the unlock
// (mmio.StoreRelease32Pair: two inlined stores, MOVs on amd64 and STLRs
// on arm64). Of an unlocked lock it stores v, then panics.
func (l *ringLock) storeUnlock(p *atomic.Uint32, v uint32) {
	w := l.held + 1
	if w&1 != 0 {
		mmio.StoreRelease32(p, v)
		panic("uverbs: unlock of an unlocked ring lock")
	}
	l.held = w
	mmio.StoreRelease32Pair(p, v, &l.word, w)
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
