//go:build !amd64

package main

import "time"

var cyclesBase = time.Now()

// cycles returns nanoseconds from a monotonic clock where there is no
// time-stamp counter to read.
func cycles() int64 { return int64(time.Since(cyclesBase)) }
