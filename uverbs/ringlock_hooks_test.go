//go:build !race && ringlockhooks

package uverbs

import (
	"sync/atomic"
	"testing"
	"time"
)

// ownerParked starts a goroutine that biases a new lock to itself, then
// takes it once more with testHookOwner set, and increments *n under it.
// The hook parks that Lock at each step in park: it sends on at[step] and
// waits on go[step]. done closes when the goroutine has released the lock.
func ownerParked(t *testing.T, n *int, park ...int) (l *ringLock, at, resume [3]chan struct{}, done chan struct{}) {
	t.Helper()
	if !waitBias() {
		t.Fatal("locks cannot be biased here: membarrier(2) is missing")
	}
	l = new(ringLock)
	for i := range at {
		at[i], resume[i] = make(chan struct{}), make(chan struct{})
	}
	parks := map[int]bool{}
	for _, p := range park {
		parks[p] = true
	}
	testHookOwner = func(step int) {
		if parks[step] {
			close(at[step])
			<-resume[step]
		}
	}
	t.Cleanup(func() { testHookOwner = nil })
	done = make(chan struct{})
	go func() {
		defer close(done)
		for range 2 { // the hook is not reached: no owner yet
			l.Lock()
			l.Unlock()
		}
		l.Lock()
		*n++
		l.Unlock()
	}()
	return l, at, resume, done
}

// An owner that passed its first look at the state and stopped before its
// store of inside, while another goroutine revoked the bias (Lock) or
// suspended it (LockRare) and took the lock, must not enter when it goes
// on: it looks at the state again after the store. It enters once the
// other has left.
func TestRingLockOwnerLateStore(t *testing.T) {
	for _, rare := range []bool{false, true} {
		var n int
		l, at, resume, done := ownerParked(t, &n, 0)
		<-at[0]
		if rare {
			l.LockRare() // suspends (inside is clear) and holds word
		} else {
			l.Lock() // revokes and holds word
		}
		close(resume[0])
		time.Sleep(20 * time.Millisecond)
		if n != 0 {
			t.Fatalf("LockRare %v: the owner entered while another goroutine held the lock", rare)
		}
		n++
		if rare {
			l.UnlockRare()
		} else {
			l.Unlock()
		}
		<-done
		if want := map[bool]uint32{false: biasRevoked, true: biasOpen}[rare]; n != 2 || !l.free() || l.state.Load() != want {
			t.Fatalf("LockRare %v: n %d, free %v, state %d; want 2, true, %d", rare, n, l.free(), l.state.Load(), want)
		}
	}
}

// The owner's attempt that gives up after the revocation leaves inside set
// for a moment; an Unlock (or storeUnlock) of the holder of word in that
// moment must release word, not the owner's path.
func TestRingLockOwnerGivesUp(t *testing.T) {
	for _, store := range []bool{false, true} {
		var n int
		var index atomic.Uint32
		l, at, resume, done := ownerParked(t, &n, 0, 1)
		<-at[0]
		l.Lock() // revokes and holds word
		close(resume[0])
		<-at[1] // the owner has stored inside, and will find the bias revoked
		n++
		if store {
			l.storeUnlock(&index, 1)
		} else {
			l.Unlock()
		}
		close(resume[1])
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("storeUnlock %v: the owner never got the lock: the unlock released the owner's path instead of word", store)
		}
		if n != 2 || !l.free() {
			t.Fatalf("storeUnlock %v: n %d, free %v; want 2, true", store, n, l.free())
		}
	}
}

// The owner's attempt that gives up while the bias is suspended still has
// inside set when the LockRare holder leaves: UnlockRare must release word,
// or the ring stays locked for good.
func TestRingLockRareOwnerGivesUp(t *testing.T) {
	var n int
	l, at, resume, done := ownerParked(t, &n, 0, 2)
	<-at[0]
	l.LockRare() // suspends and holds word
	close(resume[0])
	<-at[2] // the owner stored inside, found the bias suspended, has not cleared inside
	n++
	l.UnlockRare()
	close(resume[2])
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the owner never got the lock: word %d, inside %d, state %d", l.word.Load(), l.inside.Load(), l.state.Load())
	}
	if n != 2 || !l.free() {
		t.Fatalf("n %d, free %v; want 2, true", n, l.free())
	}
}
