//go:build !ringmutex

package uverbs

// ringMutex: ringLock is the spin lock (ringlock.go).
const ringMutex = false
