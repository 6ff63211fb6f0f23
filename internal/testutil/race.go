//go:build race

package testutil

// RaceEnabled reports whether the test binary was built with -race. Under
// the race detector the process keeps shadow memory and history for what
// it touches, so a test of the process's own memory use (RSS) says
// nothing about ours there (docs/testing.md §8).
const RaceEnabled = true

// RaceSlowdown multiplies the time a test waits before it calls a hang a
// failure: code built with -race runs several times slower (the Go
// documentation says 2 to 20 times), and under the lab's TCG on a loaded
// machine a wait sized for the plain build can run out.
const RaceSlowdown = 5
