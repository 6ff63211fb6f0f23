//go:build linux

package lab

// prebuiltInits are the guest /init binaries, by GOARCH, that a release
// build of rxelab carries (make dist builds them into initbin/ and rxelab
// with the build tag labinit: initbin_embed.go), so that it needs no Go
// toolchain; other builds carry none, and build /init with the go command
// (guestInit). They are built from the same sources as the embedded
// guestInitSource, so guestInitHash names them too.
var prebuiltInits map[string][]byte
