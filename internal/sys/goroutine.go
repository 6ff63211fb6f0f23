//go:build amd64 || arm64

package sys

// Goroutine returns the address of the calling goroutine's runtime
// descriptor (the g register of the Go ABI, read in assembly): two
// goroutines that run at the same time never share it, and it is never 0.
// An address may be reused by a goroutine started after the first one
// ended. It identifies the holder of a biased lock (uverbs ringLock).
func Goroutine() uintptr

// GoroutineKnown reports whether Goroutine tells goroutines apart on this
// architecture.
const GoroutineKnown = true
