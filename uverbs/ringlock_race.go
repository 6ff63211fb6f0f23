//go:build race

package uverbs

import (
	"sync"
	"sync/atomic"

	"github.com/goverbs/rdma/internal/mmio"
)

// ringLock is sync.Mutex in race builds: ringlock.go's release store is
// invisible to the race detector.
type ringLock struct{ sync.Mutex }

// waitRelease returns once whoever holds the lock now has released it.
func (l *ringLock) waitRelease() {
	l.Lock()
	l.Unlock() //nolint:staticcheck // an empty section: the wait is the point
}

// storeUnlock stores v to *p with release ordering, then unlocks.
func (l *ringLock) storeUnlock(p *atomic.Uint32, v uint32) {
	mmio.StoreRelease32(p, v)
	l.Unlock()
}

// LockRare and UnlockRare are Lock and Unlock: race builds do not bias.
func (l *ringLock) LockRare() { l.Lock() }

func (l *ringLock) UnlockRare() { l.Unlock() }

// fenceOwners has nothing to do: race builds do not bias.
func fenceOwners() {}

// prepareBias has nothing to prepare: race builds do not bias.
func prepareBias() {}
