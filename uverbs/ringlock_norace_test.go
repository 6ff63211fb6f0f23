//go:build !race

package uverbs

import (
	"sync/atomic"
	"testing"
	"time"
)

// free reports whether no one holds the lock, for tests.
func (l *ringLock) free() bool { return l.word.Load()&1 == 0 }

// An Unlock of an unlocked lock panics and leaves the lock free: a caller
// that recovers the panic does not find the lock taken for ever.
func TestRingLockUnlockUnlockedPanics(t *testing.T) {
	var l ringLock
	l.Lock()
	l.Unlock()
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("Unlock of an unlocked ringLock did not panic")
			}
		}()
		l.Unlock()
	}()
	if w := l.word.Load(); w != 2 {
		t.Fatalf("lock word %d after a refused Unlock, want 2 (free, as before it)", w)
	}
	l.Lock() // the test's own timeout catches a lock left taken
	l.Unlock()
	// storeUnlock refuses the same way, after its store.
	var index atomic.Uint32
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("storeUnlock of an unlocked ringLock did not panic")
			}
		}()
		l.storeUnlock(&index, 7)
	}()
	if w := l.word.Load(); w != 4 || index.Load() != 7 {
		t.Fatalf("lock word %d, index %d after a refused storeUnlock, want 4 and 7", w, index.Load())
	}
	// A held lock: the index is stored, then the lock freed.
	l.Lock()
	l.storeUnlock(&index, 5)
	if w := l.word.Load(); w != 6 || index.Load() != 5 {
		t.Fatalf("lock word %d, index %d after storeUnlock, want 6 (free) and 5", w, index.Load())
	}
	// The index store comes first: pointed at the lock word itself, the
	// held value it stores is then moved on to free.
	l.Lock()
	held := l.word.Load()
	l.storeUnlock(&l.word, held)
	if w := l.word.Load(); w != held+1 {
		t.Fatalf("lock word %d after storeUnlock of its own held value %d, want %d: the unlock came before the store", w, held, held+1)
	}
}

// waitRelease ends with the holder it found, even when the lock is taken
// again at once: a busy QP cannot hold up Buffer.Close.
func TestRingLockWaitRelease(t *testing.T) {
	var l ringLock
	l.waitRelease() // free: returns at once
	l.Lock()
	held := l.word.Load() // what waitRelease reads while this holder has it
	done := make(chan struct{})
	go func() { l.waitPast(held); close(done) }()
	l.Unlock()
	l.Lock() // a new holder, at once
	<-done   // the test's own timeout catches a wait for the new holder
	l.Unlock()
	if w := l.word.Load(); w != 4 {
		t.Fatalf("lock word %d after two Lock/Unlock pairs, want 4", w)
	}
	l.Lock()
	held = l.word.Load()
	done = make(chan struct{})
	go func() { l.waitPast(held); close(done) }()
	select {
	case <-done:
		t.Fatal("waitPast returned while the holder it found still held the lock")
	case <-time.After(10 * time.Millisecond):
	}
	l.Unlock()
	<-done
}
