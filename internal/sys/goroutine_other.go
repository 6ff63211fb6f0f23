//go:build !amd64 && !arm64

package sys

// Goroutine would return the calling goroutine's identity; on this
// architecture it is not read, and every goroutine gets 1.
func Goroutine() uintptr { return 1 }

// GoroutineKnown reports whether Goroutine tells goroutines apart on this
// architecture.
const GoroutineKnown = false
