// Package unix stands in for golang.org/x/sys/unix in the module, so that the
// module builds on every GOOS although RDMA here is Linux's: uverbs,
// rdma_cm and NETLINK_RDMA exist only in the Linux kernel, and x/sys/unix
// lacks Linux's names elsewhere (darwin) or does not build at all (windows).
//
// On Linux its names are those of golang.org/x/sys/unix: the types and
// constants are aliases of them and the functions call them, so behaviour
// there is x/sys/unix's. Elsewhere the constants carry Linux's values (they
// describe the Linux ABI, and distinct errnos keep switch statements valid),
// Errno is syscall.Errno, and every function fails with ErrNotLinux.
//
// Only the names the module uses are here; a file that needs another one adds
// it to both unix_linux.go and unix_other.go (make goos builds the latter).
// System calls that pass pointers as uintptr (Syscall, RawSyscall) are not
// wrapped: the compiler keeps such a pointer alive only in a direct call, so
// internal/sys calls x/sys/unix for them in files built for Linux only.
//
// The files that exist in a Linux and a non-Linux version (here, in
// internal/sys and in internal/nldev) take the non-Linux one on Linux too
// under the build tag goverbs_notlinux, so that make goos runs
// test/notlinux, the test of that build, on a Linux machine.
package unix
