// Command gen generates package abi from the Linux UAPI headers of one pinned
// Debian linux-libc-dev version. Run it with `go generate ./internal/abi`
// from the module root; it needs apt-get, dpkg-deb and a C compiler, which
// only regeneration needs (the generated files are plain Go).
//
// Steps:
//  1. Obtain the headers of linux-libc-dev pinnedVersion: `apt-get download`
//     into a temporary directory and unpack it with dpkg-deb; or the .deb
//     named by $GOVERBS_LINUX_LIBC_DEV_DEB; or /usr/include when the
//     installed linux-libc-dev is exactly pinnedVersion. Anything else fails.
//  2. Run `go tool cgo -godefs` on a copy of godefs_input.go.in (kept as .go.in so that no Go file of the module imports "C") against those headers.
//  3. Run plain `go tool cgo` on the same input to learn the C member names:
//     -godefs strips common member prefixes (remote_addr becomes Addr when it
//     is the only member with an underscore), so its names cannot be used.
//  4. Rename types and members by the rules of package names, add doc comments, gofmt,
//     and write zabi.go plus the test tables in zabi_test.go.
//
// The output starts with the SHA-256 of the generator's inputs and of its own
// body, which abi's tests recompute, so a stale or hand-edited output fails
// `go test` without a C compiler.
package main
