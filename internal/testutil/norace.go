//go:build !race

package testutil

// RaceEnabled reports whether the test binary was built with -race
// (race.go).
const RaceEnabled = false

// RaceSlowdown multiplies the time a test waits before it calls a hang a
// failure; 1 without -race (race.go).
const RaceSlowdown = 1
