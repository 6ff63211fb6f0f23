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
// cq.lock): one locked instruction to take it and a release store to give
// it back, where sync.Mutex needs two locked instructions. The sections it
// guards are short; a caller that finds it taken yields the processor until
// it is free (the rare long sections, Modify and Close with their system
// calls, only cost a waiter its spinning). Not reentrant.
//
// word's low bit is set while the lock is held. gen counts the releases, so
// that waitRelease can tell that the holder it saw has left; only the holder
// writes it, in Unlock. Lock writes nothing but the word: a store right
// after the locked instruction, or a load of the word back, costs a poll
// or a post 1-3 ns on x86 (BENCHMARKS.md, rxe items 28 and 33). So an
// Unlock of a lock that is not held is not detected here; race builds use
// sync.Mutex instead (ringlock_race.go), which the race detector
// understands and which fails on it.
type ringLock struct {
	word atomic.Uint32
	gen  atomic.Uint32
}

// Lock sets the word's low bit; it has the lock if the bit was clear. (On
// amd64 the Or is a load and a compare-and-swap, small enough to be
// inlined, which a load and a separate compare-and-swap are not; it is
// sync/atomic's function on the word's address because the method costs
// the inliner more.)
func (l *ringLock) Lock() {
	if atomic.OrUint32((*uint32)(unsafe.Pointer(&l.word)), 1)&1 != 0 {
		l.lockSlow()
	}
}

// lockSlow takes the lock after a first try found it held.
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
// pthread_spin_unlock), and the release count moves on before it. It is
// small enough to be inlined into every caller.
func (l *ringLock) Unlock() {
	mmio.StoreRelease32Pair(&l.gen, l.gen.Load()+1, &l.word, 0)
}

// storeUnlock stores v to *p with release ordering, then unlocks: the
// index store that publishes what the section wrote, and the unlock (three
// inlined stores, MOVs on amd64 and STLRs on arm64).
func (l *ringLock) storeUnlock(p *atomic.Uint32, v uint32) {
	mmio.StoreRelease32Pair(p, v, &l.gen, l.gen.Load()+1)
	mmio.StoreRelease32(&l.word, 0)
}

// waitRelease returns once whoever holds the lock now has released it (at
// once if no one does), without taking it: later holders do not delay it.
// The caller's earlier sync/atomic stores are visible to every holder after
// that one (sequentially consistent, as the compare-and-swap that takes the
// lock). The count is read first: a holder that took the lock after it
// was read came after the caller's stores, and need not be waited for. The
// wait ends when the count moves on or the word is seen free: the count
// read may be the one an Unlock stored just before it cleared the word.
func (l *ringLock) waitRelease() {
	g := l.gen.Load()
	for l.word.Load()&1 != 0 && l.gen.Load() == g {
		if testHookWaitRelease != nil {
			testHookWaitRelease()
		}
		runtime.Gosched()
	}
}

// testHookWaitRelease, set only by tests, runs in waitRelease each time it
// finds the lock still held by the holder it waits for.
var testHookWaitRelease func()
