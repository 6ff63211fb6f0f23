//go:build !race

package uverbs

import "testing"

func TestRingLockUnlockUnlockedPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Unlock of an unlocked ringLock did not panic")
		}
	}()
	var l ringLock
	l.Unlock()
}
