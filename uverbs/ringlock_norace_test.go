//go:build !race

package uverbs

import (
	"github.com/goverbs/rdma/internal/sys"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// free reports whether no one holds the lock, for tests.
func (l *ringLock) free() bool {
	return l.word.Load()&1 == 0 && (l.inside.Load() == 0 || l.state.Load() > biasRevoking)
}

// waitBias waits until canBias is settled and returns its answer (for tests).
func waitBias() bool {
	prepareBias()
	for biasAllowed.Load() == biasAsking {
		runtime.Gosched()
	}
	ok, _ := canBias()
	return ok
}

// sharedOnly keeps every lock of the test unbiased, for the tests of the
// shared path.
func sharedOnly(t *testing.T) {
	waitBias() // settled first: while it is not, no lock is revoked either
	testNoBias.Store(true)
	t.Cleanup(func() { testNoBias.Store(false) })
}

// storeUnlock makes its store first, then frees the lock, and each release
// moves the count on.
func TestRingLockStoreUnlock(t *testing.T) {
	sharedOnly(t)
	var l ringLock
	var index atomic.Uint32
	l.Lock()
	l.storeUnlock(&index, 5)
	if !l.free() || index.Load() != 5 || l.gen.Load() != 1 {
		t.Fatalf("after storeUnlock: free %v, index %d, releases %d; want true, 5, 1", l.free(), index.Load(), l.gen.Load())
	}
	l.Lock()
	l.Unlock()
	if !l.free() || l.gen.Load() != 2 {
		t.Fatalf("after Unlock: free %v, releases %d; want true, 2", l.free(), l.gen.Load())
	}
	// Pointed at the lock word itself, the store of a held value is then
	// undone by the unlock: if the unlock came first, the lock would stay
	// taken.
	l.Lock()
	l.storeUnlock(&l.word, 1)
	if !l.free() {
		t.Fatal("storeUnlock freed the lock before its own store")
	}
}

// waitRelease ends with the holder it found, even when the lock is taken
// again at once: a busy QP cannot hold up Buffer.Close.
func TestRingLockWaitRelease(t *testing.T) {
	sharedOnly(t)
	var l ringLock
	l.waitRelease() // free: returns at once
	l.Lock()
	done := make(chan struct{})
	go func() { l.waitRelease(); close(done) }()
	select {
	case <-done:
		t.Fatal("waitRelease returned while the holder it found still held the lock")
	case <-time.After(10 * time.Millisecond):
	}
	l.Unlock()
	l.Lock() // a new holder, at once
	<-done   // the test's own timeout catches a wait for the new holder
	l.Unlock()
}

// waitRelease also ends when it finds the lock free: the count it read may
// be the one an Unlock stored just before clearing the word, which no later
// change of the count follows while the QP stays idle.
func TestRingLockWaitReleaseHalfUnlock(t *testing.T) {
	sharedOnly(t)
	var l ringLock
	l.Lock()
	l.gen.Store(l.gen.Load() + 1) // Unlock's first store
	waiting := make(chan struct{})
	var once sync.Once
	testHookWaitRelease = func() { once.Do(func() { close(waiting) }) }
	defer func() { testHookWaitRelease = nil }()
	done := make(chan struct{})
	go func() { l.waitRelease(); close(done) }()
	<-waiting       // waitRelease has read the new count and found the lock held
	l.word.Store(0) // Unlock's second store
	<-done          // the test's own timeout catches a wait for ever
}

// biased returns a lock biased to the calling goroutine: two Locks in a
// row make it the owner.
func biased(t *testing.T) *ringLock {
	t.Helper()
	if !waitBias() {
		t.Fatal("locks cannot be biased here: membarrier(2) with MEMBARRIER_CMD_PRIVATE_EXPEDITED is missing (Linux 4.14 or later, not refused by seccomp)")
	}
	l := new(ringLock)
	for range 2 {
		l.Lock()
		l.Unlock()
	}
	if l.owner.Load() != sys.Goroutine() || l.state.Load() != biasOpen {
		t.Fatalf("after two Locks: owner %#x, state %d; want %#x, open", l.owner.Load(), l.state.Load(), sys.Goroutine())
	}
	return l
}

// The owner takes and releases the lock without touching word; another
// goroutine's Lock waits for the owner to leave, then holds word, and the
// bias is gone for good.
func TestRingLockBias(t *testing.T) {
	l := biased(t)
	l.Lock()
	if l.word.Load() != 0 || l.inside.Load() != 1 || l.free() {
		t.Fatalf("the owner's Lock: word %d, inside %d; want 0, 1", l.word.Load(), l.inside.Load())
	}
	l.Unlock()
	if l.inside.Load() != 0 || l.fgen.Load() != 1 || l.gen.Load() != 2 {
		t.Fatalf("the owner's Unlock: inside %d, owner's releases %d, shared releases %d; want 0, 1, 2", l.inside.Load(), l.fgen.Load(), l.gen.Load())
	}

	l.Lock()
	var n int // guarded by l
	got := make(chan struct{})
	go func() {
		l.Lock()
		n++
		l.Unlock()
		close(got)
	}()
	select {
	case <-got:
		t.Fatal("another goroutine took the lock while its owner held it")
	case <-time.After(20 * time.Millisecond):
	}
	n++
	l.Unlock()
	<-got
	if st := l.state.Load(); st != biasRevoked {
		t.Fatalf("state %d after another goroutine took the lock; want revoked", st)
	}
	l.Lock() // the old owner, now through word
	if l.word.Load()&1 == 0 || l.inside.Load() != 0 || n != 2 {
		t.Fatalf("the old owner's Lock after the revocation: word %d, inside %d, n %d; want held, 0, 2", l.word.Load(), l.inside.Load(), n)
	}
	l.storeUnlock(&l.inside, 0)
	if !l.free() {
		t.Fatal("storeUnlock after the revocation left the lock held")
	}
}

// LockRare never makes its caller the owner, so a ring set up by one
// goroutine (Modify, registrations) is biased to the one that posts; and
// another goroutine's LockRare only suspends the bias: it waits for the
// owner to leave, the owner waits for it, and after UnlockRare the owner
// takes the lock through its own path again.
func TestRingLockRare(t *testing.T) {
	if !waitBias() {
		t.Fatal("locks cannot be biased here: membarrier(2) is missing")
	}
	var l ringLock
	for range 3 {
		l.LockRare()
		l.UnlockRare()
	}
	if l.owner.Load() != 0 {
		t.Fatal("LockRare made its caller the owner")
	}
	owner := make(chan uintptr)
	lock, unlock := make(chan struct{}), make(chan struct{})
	go func() {
		for range 2 {
			l.Lock()
			l.Unlock()
		}
		owner <- sys.Goroutine()
		for range lock {
			l.Lock()
			<-unlock
			l.Unlock()
			owner <- 0
		}
	}()
	g := <-owner
	if l.owner.Load() != g {
		t.Fatalf("owner %#x after two Locks of goroutine %#x", l.owner.Load(), g)
	}

	lock <- struct{}{} // the owner takes it through its own path
	for l.inside.Load() == 0 {
		runtime.Gosched()
	}
	rare := make(chan struct{})
	go func() { l.LockRare(); close(rare) }()
	select {
	case <-rare:
		t.Fatal("LockRare took the lock while its owner held it")
	case <-time.After(20 * time.Millisecond):
	}
	unlock <- struct{}{}
	<-owner
	<-rare
	if st := l.state.Load(); st != biasSuspended {
		t.Fatalf("state %d under another goroutine's LockRare; want suspended", st)
	}
	lock <- struct{}{} // the owner waits while the bias is suspended
	select {
	case <-owner:
		t.Fatal("the owner took the lock while another held it through LockRare")
	case <-time.After(20 * time.Millisecond):
	}
	l.UnlockRare()
	unlock <- struct{}{}
	<-owner
	if st := l.state.Load(); st != biasOpen || l.owner.Load() != g {
		t.Fatalf("after UnlockRare: state %d, owner %#x; want open, %#x", st, l.owner.Load(), g)
	}
	lock <- struct{}{} // through its own path again
	for l.inside.Load() == 0 {
		runtime.Gosched()
	}
	if l.word.Load() != 0 {
		t.Fatal("the owner took word after the suspension ended")
	}
	unlock <- struct{}{}
	<-owner
	close(lock)
	l.LockRare() // the test's goroutine again
	l.UnlockRare()
}

// Where no lock can be biased, a lock becomes a plain spin lock at the
// second Lock of one goroutine: the owner's path is never taken.
func TestRingLockNoBias(t *testing.T) {
	sharedOnly(t)
	var l ringLock
	for range 3 {
		l.Lock()
		if l.word.Load()&1 == 0 || l.inside.Load() != 0 {
			t.Fatal("a lock that cannot be biased was taken without word")
		}
		l.Unlock()
	}
	if l.owner.Load() != 0 || l.state.Load() != biasRevoked {
		t.Fatalf("owner %#x, state %d; want none, revoked", l.owner.Load(), l.state.Load())
	}
}

// While membarrier is being registered, a goroutine's second Lock in a row
// neither claims the lock nor revokes it; once the answer is in, its next
// Lock claims it.
func TestRingLockClaimAfterRegistration(t *testing.T) {
	if !waitBias() {
		t.Fatal("locks cannot be biased here: membarrier(2) is missing")
	}
	biasAllowed.Store(biasAsking) // as while the registration is under way
	t.Cleanup(func() { biasAllowed.Store(biasYes) })
	var l ringLock
	for range 3 {
		l.Lock()
		l.Unlock()
	}
	if l.owner.Load() != 0 || l.state.Load() != biasOpen {
		t.Fatalf("during the registration: owner %#x, state %d; want none, open", l.owner.Load(), l.state.Load())
	}
	biasAllowed.Store(biasYes)
	l.Lock()
	l.Unlock()
	if l.owner.Load() != sys.Goroutine() || l.state.Load() != biasOpen {
		t.Fatalf("after it: owner %#x, state %d; want this goroutine, open", l.owner.Load(), l.state.Load())
	}
}

// waitRelease waits for an owner that holds the lock through its own path,
// and only for that one.
func TestRingLockWaitReleaseOwner(t *testing.T) {
	l := biased(t)
	l.Lock()
	done := make(chan struct{})
	go func() { l.waitRelease(); close(done) }()
	select {
	case <-done:
		t.Fatal("waitRelease returned while the owner held the lock")
	case <-time.After(10 * time.Millisecond):
	}
	l.Unlock()
	l.Lock() // the owner again, at once
	<-done   // the test's own timeout catches a wait for the new hold
	l.Unlock()
	if l.state.Load() != biasOpen {
		t.Fatal("waitRelease revoked the bias")
	}
}

// TestRingLockExcludesBiased is TestRingLockExcludes on a lock biased to
// one of the workers before the others start: the revocation comes while
// the owner takes and releases it.
func TestRingLockExcludesBiased(t *testing.T) {
	if !waitBias() {
		t.Fatal("locks cannot be biased here: membarrier(2) is missing")
	}
	var l ringLock
	ready := make(chan struct{})
	excludeRun(t, &l, func(w int) {
		if w == 0 {
			for range 2 {
				l.Lock()
				l.Unlock()
			}
			close(ready)
			return
		}
		<-ready
	})
	if l.owner.Load() == 0 || l.state.Load() != biasRevoked {
		t.Fatalf("owner %#x, state %d after the workers: want an owner, revoked", l.owner.Load(), l.state.Load())
	}
}

// BenchmarkRingLock: one Lock and Unlock by the owner of a biased lock,
// and by a goroutine of a lock whose bias was revoked (a spin lock).
func BenchmarkRingLock(b *testing.B) {
	b.Run("owner", func(b *testing.B) {
		if !waitBias() {
			b.Fatal("locks cannot be biased here: membarrier(2) is missing")
		}
		var l ringLock
		for range 2 {
			l.Lock()
			l.Unlock()
		}
		if l.owner.Load() != sys.Goroutine() {
			b.Fatal("the lock is not biased to the benchmark's goroutine")
		}
		for b.Loop() {
			l.Lock()
			l.Unlock()
		}
	})
	b.Run("revoked", func(b *testing.B) {
		var l ringLock
		l.state.Store(biasRevoked)
		for b.Loop() {
			l.Lock()
			l.Unlock()
		}
	})
}
