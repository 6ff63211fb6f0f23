//go:build !race && ringlockhooks

package uverbs

// ringLockHooks compiles testHookOwner's calls in (ringlock.go).
const ringLockHooks = true
