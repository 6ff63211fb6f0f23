//go:build !race

package uverbs

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// free reports whether no one holds the lock, for tests.
func (l *ringLock) free() bool { return l.word.Load()&1 == 0 }

// storeUnlock makes its store first, then frees the lock, and each release
// moves the count on.
func TestRingLockStoreUnlock(t *testing.T) {
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
