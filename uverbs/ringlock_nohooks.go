//go:build !race && !ringlockhooks

package uverbs

// ringLockHooks leaves testHookOwner's calls out (ringlock.go).
const ringLockHooks = false
