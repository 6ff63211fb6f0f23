//go:build race

package uverbs

// raceBuild: an elided ringLock checks that no two goroutines hold it.
const raceBuild = true
