//go:build !race

package uverbs

import (
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/goverbs/rdma/internal/mmio"
	"github.com/goverbs/rdma/internal/sys"
)

// ringLock guards one ring (a QP's send or receive queue, an SRQ, a CQ) as
// rdma-core's pthread spin lock does (providers/rxe/rxe.c sq.lock, rq.lock,
// cq.lock), and is usually cheaper: most rings are posted to or polled by
// one goroutine, and the lock is biased to it.
//
// Shared: word's low bit is set while the lock is held, taken with one
// locked instruction and given back with a release store, where
// sync.Mutex needs two locked instructions. A caller that finds it taken
// yields the processor until it is free (the sections are short; the
// rare long ones, Modify and Close with their system calls, only cost a
// waiter its spinning). Not reentrant.
//
// Biased: the goroutine that takes the lock twice in a row through Lock
// (posts, polls, arms) becomes its owner (at a later Lock if the process's
// membarrier registration is still under way, see biasAllowed), and from
// then on takes it with a store of inside and a load of state, and gives it
// back with a store: no locked instruction, which costs about 6 ns on x86
// whatever it is (BENCHMARKS.md, rxe item 36). Any other goroutine takes
// word and first stops the owner: it asks (state biasRevoking), makes every
// thread of the process pass a full barrier (sys.Membarrier), and waits for
// the owner to leave. The barrier stands in for the fence the owner does
// not make between its store of inside and its load of state (x86 may make
// that load first): either that store is visible to the look at inside
// after the barrier, or the owner's load comes after the barrier and sees
// the request. Through Lock, the other goroutine revokes the bias for good
// (biasRevoked: a spin lock from then on); through LockRare (set-up,
// teardown, queries, which a goroutine other than the one that posts may
// well make) it suspends it (biasSuspended), and UnlockRare gives it back
// to the owner. Where membarrier is missing (kernels before 4.14, seccomp)
// or sys.Goroutine cannot tell goroutines apart, a lock that would be
// biased is revoked instead.
//
// gen and fgen count the releases of the shared and the owner's path, so
// that waitRelease can tell that the holder it saw has left; only the
// holder writes them. Taking the shared lock writes nothing but the word:
// a store right after the locked instruction, or a load of the word back,
// costs a poll or a post 1-3 ns on x86 (BENCHMARKS.md, rxe items 28 and
// 33). So an Unlock of a lock that is not held is not detected here; race
// builds use sync.Mutex instead (ringlock_race.go), which the race
// detector understands and which fails on it.
type ringLock struct {
	word   atomic.Uint32
	gen    atomic.Uint32
	inside atomic.Uint32  // 1 while the owner holds the lock; only the owner writes it
	fgen   atomic.Uint32  // the owner's releases
	state  atomic.Uint32  // biasOpen ... biasSuspended, changed under word
	owner  atomic.Uintptr // sys.Goroutine of the owner, set once under word; 0 while none
	last   uintptr        // the goroutine of the last Lock through word, under word
}

// ringLock.state. The owner may take the lock only while it is open, and
// holds it through its own path exactly when inside is set and the state
// is open or revoking: a holder of word that stops the owner waits for
// inside to clear before it sets suspended or revoked, and after that
// inside is set only by an attempt of the owner that is about to give up.
const (
	biasOpen      = iota // no owner yet, or the owner may take it
	biasRevoking         // a holder of word waits for the owner to leave
	biasRevoked          // a spin lock for good
	biasSuspended        // a LockRare holder has stopped the owner until UnlockRare
)

// biasAllowed says whether locks may be biased: membarrier registered
// (yes), or refused, or no sys.Goroutine on this architecture (no).
// Registering takes a grace period of the kernel's
// (MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED waits for one in
// kernel/sched/membarrier.c): about 6 ms on a host, 12-26 ms in the lab's
// guests (BENCHMARKS.md, rxe item 40), which the first post or poll of a
// process would pay if it asked. So a goroutine asks (prepareBias, from
// OpenDevice and from the first claim), and until it has its answer no lock
// is claimed: the rings run as spin locks for those milliseconds and are
// claimed at a later Lock. biasedAny is set once a lock got an owner (then
// waitInlineCopies needs the barrier too).
var (
	biasAllowed atomic.Int32 // biasUnasked, biasAsking, biasYes or biasNo
	biasedAny   atomic.Bool
	testNoBias  atomic.Bool // set only by tests: no lock gets an owner
)

const (
	biasUnasked = iota
	biasAsking
	biasYes
	biasNo
)

// prepareBias starts the registration of membarrier, once, in a goroutine
// of its own, and returns at once.
func prepareBias() {
	if !sys.GoroutineKnown {
		biasAllowed.CompareAndSwap(biasUnasked, biasNo)
		return
	}
	if biasAllowed.Load() == biasUnasked && biasAllowed.CompareAndSwap(biasUnasked, biasAsking) {
		go func() {
			answer := int32(biasNo)
			if sys.RegisterMembarrier() == nil {
				answer = biasYes
			}
			biasAllowed.Store(answer)
		}()
	}
}

// canBias reports whether a lock may get an owner now (ok), and whether
// that is settled (known): not known while membarrier is being registered.
func canBias() (ok, known bool) {
	switch biasAllowed.Load() {
	case biasYes:
		return !testNoBias.Load(), true
	case biasNo:
		return false, true
	}
	prepareBias()
	return false, false
}

// Lock takes the lock for a post, a poll or an arm: through the owner's
// path if the caller owns it, else through word, and it may make the
// caller the owner or revoke another's bias.
func (l *ringLock) Lock() {
	switch l.state.Load() {
	case biasRevoked:
		if atomic.OrUint32((*uint32)(unsafe.Pointer(&l.word)), 1)&1 != 0 {
			l.spin()
		}
		return
	case biasOpen:
		g := sys.Goroutine()
		if l.owner.Load() != g {
			l.lockShared(g, true)
			return
		}
		if ringLockHooks && testHookOwner != nil {
			testHookOwner(0)
		}
		// A plain store, then a load: the compiler keeps their order (a
		// sync/atomic load is ordered after every earlier memory
		// operation), and a revoker's barrier stands in for the CPU's.
		mmio.StoreRelease32(&l.inside, 1)
		if ringLockHooks && testHookOwner != nil {
			testHookOwner(1)
		}
		if l.state.Load() == biasOpen {
			return
		}
		if ringLockHooks && testHookOwner != nil {
			testHookOwner(2)
		}
		mmio.StoreRelease32(&l.inside, 0)
	}
	l.lockShared(sys.Goroutine(), true)
}

// LockRare takes the lock for an operation other than a post, a poll or
// an arm (a state change, Close, a query, a registration): it never makes
// the caller the owner, and it only suspends another's bias, until
// UnlockRare, so a ring set up, queried or drained by one goroutine stays
// biased to the one that posts to it. Release it with UnlockRare.
func (l *ringLock) LockRare() {
	l.lockShared(sys.Goroutine(), false)
}

// UnlockRare releases a lock taken with LockRare, giving a suspended bias
// back to its owner first (the section's writes are visible to an owner
// that sees the bias open). The caller holds word: it does not ask, as
// Unlock does, whether it holds the owner's path, since once the state is
// open again an owner's attempt that is giving up may have inside set for
// a moment.
func (l *ringLock) UnlockRare() {
	if l.state.Load() == biasSuspended {
		l.state.Store(biasOpen)
	}
	mmio.StoreRelease32Pair(&l.gen, l.gen.Load()+1, &l.word, 0)
}

// spin takes word after a first try found it held.
func (l *ringLock) spin() {
	for {
		// Read first, so waiters share the line until it is free.
		if l.word.Load()&1 == 0 && atomic.OrUint32((*uint32)(unsafe.Pointer(&l.word)), 1)&1 == 0 {
			return
		}
		runtime.Gosched()
	}
}

// lockShared takes word, then stops the owner if there is one and it is
// not the caller (hot: for good), or, hot, with no owner yet, makes the
// caller the owner if the last Lock through word was the caller's too and
// canBias allows it by then.
func (l *ringLock) lockShared(g uintptr, hot bool) {
	if atomic.OrUint32((*uint32)(unsafe.Pointer(&l.word)), 1)&1 != 0 {
		l.spin()
	}
	if l.state.Load() != biasOpen {
		return
	}
	switch o := l.owner.Load(); {
	case o == 0:
		if !hot {
			return
		}
		if l.last == g {
			switch ok, known := canBias(); {
			case ok:
				l.owner.Store(g)
				biasedAny.Store(true)
			case known:
				l.state.Store(biasRevoked) // a spin lock from now on
				return
			}
			// Not known yet: a later Lock of g's claims it.
		}
		l.last = g
	case o != g:
		l.stopOwner(hot)
	}
}

// stopOwner waits for the owner to leave and revokes its bias (for good)
// or suspends it; the caller holds word.
func (l *ringLock) stopOwner(revoke bool) {
	l.state.Store(biasRevoking)
	sys.Membarrier()
	for l.inside.Load() != 0 {
		runtime.Gosched()
	}
	if revoke {
		l.state.Store(biasRevoked)
	} else {
		l.state.Store(biasSuspended)
	}
}

// testHookOwner, set only by tests, runs in the owner's path of Lock
// before its store of inside (step 0), after it (step 1), and before it
// clears inside again when it gives up (step 2), in builds
// with the tag ringlockhooks (ringLockHooks; make unit runs the tests that
// need it so): two looks at it cost the owner's path about 0.5 ns.
var testHookOwner func(step int)

// Unlock releases the lock: every write of the section is visible to the
// next holder before it sees the lock free (a release store, as
// pthread_spin_unlock), and the release count moves on before it. Small
// enough to be inlined into every caller.
func (l *ringLock) Unlock() {
	w, n := &l.word, &l.gen
	if l.inside.Load() != 0 && l.state.Load() <= biasRevoking {
		w, n = &l.inside, &l.fgen
	}
	mmio.StoreRelease32Pair(n, n.Load()+1, w, 0)
}

// storeUnlock stores v to *p with release ordering, then unlocks: the
// index store that publishes what the section wrote, and the unlock (three
// inlined stores, MOVs on amd64 and STLRs on arm64).
func (l *ringLock) storeUnlock(p *atomic.Uint32, v uint32) {
	w, n := &l.word, &l.gen
	if l.inside.Load() != 0 && l.state.Load() <= biasRevoking {
		w, n = &l.inside, &l.fgen
	}
	mmio.StoreRelease32Pair(p, v, n, n.Load()+1)
	mmio.StoreRelease32(w, 0)
}

// waitRelease returns once whoever holds the lock now has released it (at
// once if no one does), without taking it: later holders do not delay it.
// The caller's earlier sync/atomic stores are visible to every holder after
// that one: to holders through word as the compare-and-swap that takes it
// is sequentially consistent, and to the owner if the caller made a
// sys.Membarrier after its stores when biasedAny was set
// (waitInlineCopies). Each count is read first: a holder that took the
// lock after it was read came after the caller's stores, and need not be
// waited for. A wait ends when its count moves on or the lock is seen
// free: the count read may be the one an Unlock stored just before it
// cleared the word (or inside).
func (l *ringLock) waitRelease() {
	f := l.fgen.Load()
	for l.inside.Load() != 0 && l.state.Load() <= biasRevoking && l.fgen.Load() == f {
		if testHookWaitRelease != nil {
			testHookWaitRelease()
		}
		runtime.Gosched()
	}
	g := l.gen.Load()
	for l.word.Load()&1 != 0 && l.gen.Load() == g {
		if testHookWaitRelease != nil {
			testHookWaitRelease()
		}
		runtime.Gosched()
	}
}

// fenceOwners makes the caller's earlier stores visible to the owners of
// biased locks before its waitRelease calls look at them (see waitRelease).
func fenceOwners() {
	if biasedAny.Load() {
		sys.Membarrier()
	}
}

// testHookWaitRelease, set only by tests, runs in waitRelease each time it
// finds the lock still held by the holder it waits for.
var testHookWaitRelease func()
