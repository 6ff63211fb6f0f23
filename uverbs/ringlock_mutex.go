//go:build ringmutex

package uverbs

// ringMutex: ringLock is a sync.Mutex, built to compare the two
// (BENCHMARKS.md, "Ring locks").
const ringMutex = true
