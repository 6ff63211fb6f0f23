//go:build race

package uverbs

import "sync"

// ringLock is sync.Mutex in race builds: ringlock.go's release store is
// invisible to the race detector.
type ringLock struct{ sync.Mutex }
