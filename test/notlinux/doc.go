// Package notlinux holds the test that the module's entry points fail with
// ErrNotSupported on a GOOS other than Linux. Its test file builds only
// there, or on Linux under the build tag goverbs_notlinux, which selects the
// non-Linux files of the module (internal/unix): make goos runs it that way,
// and compiles it for darwin, windows and freebsd, where nothing runs it.
package notlinux
