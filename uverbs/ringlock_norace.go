//go:build !race

package uverbs

// raceBuild: an elided ringLock does nothing (ringlock.go).
const raceBuild = false
