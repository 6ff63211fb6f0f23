//go:build race

package uverbs

// free reports whether no one holds the lock, for tests.
func (l *ringLock) free() bool {
	if !l.TryLock() {
		return false
	}
	l.Unlock()
	return true
}

// waitBias reports that no lock is biased: race builds do not bias.
func waitBias() bool { return false }
