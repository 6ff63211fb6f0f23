//go:build !race

package uverbs

import "testing"

// Outside race builds an elided lock (SingleGoroutine) does nothing: a
// second Lock does not wait for the first, and the word is never written.
func TestRingLockSingleElided(t *testing.T) {
	var l ringLock
	l.elide("a test's queue")
	l.Lock()
	l.Lock()
	if l.heldNow() {
		t.Fatal("an elided lock was taken")
	}
	l.waitRelease()
	l.Unlock()
	l.Unlock()
}
