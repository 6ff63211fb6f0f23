//go:build linux

// Command rxelab runs one command inside the rxe lab: a Debian kernel with
// rdma_rxe booted under QEMU (see package test/lab). The command's stdout and
// stderr are streamed to rxelab's, and its exit status becomes rxelab's.
//
//	rxelab [-kernel 6.1|6.12] [-arch amd64|arm64] [-guests 1|2] [-no-siw] [-timeout 10m] [-boot-timeout 3m] [-v] [--] CMD [ARGS...]
//
// amd64 guests also have siw (soft-iWARP): siw1 and siw2 on veth2/veth3
// (10.79.0.1, 10.79.0.2), from a siw.ko the lab builds for the kernel from
// Debian's linux-headers and linux-source packages on first use; -no-siw
// boots without it.
//
// With -guests 2 a peer VM boots too (see package test/lab). Inside the
// primary guest, rxelab -peer [--] CMD [ARGS...] runs CMD in the peer (its
// output and status pass through; 125 if the peer is off) and
// rxelab -poweroff-peer powers the peer off at once.
//
// The kernel series also comes from GOVERBS_LAB_KERNEL (the flag wins). The
// command runs as root with the same working directory and the same absolute
// paths as on the host, so it works as a go test -exec wrapper:
//
//	go test -exec "rxelab -kernel 6.12" ./...
//
// -arch arm64 (or GOVERBS_LAB_ARCH=arm64) boots Debian's arm64 kernel on
// qemu-system-aarch64 with an arm64 userland mounted over the host's /usr;
// the command must be an arm64 binary or script:
//
//	GOARCH=arm64 go test -exec "rxelab -arch arm64 -kernel 6.12" ./...
//
// Failures of the lab itself exit with 125, a command that runs past
// -timeout with 124.
//
// Environment: GOVERBS_LAB_ACCEL=kvm runs the VM under KVM instead of the
// default TCG (KVM guests were seen to hang during boot on some hosts, so
// it is opt-in); GOVERBS_LAB_CACHE sets the cache directory (default
// $HOME/.cache/goverbs-lab); GOVERBS_LAB_APPEND adds words to the guest
// kernel's command line.
//
// The package's tests boot both kernels and need root to install QEMU and
// the kernels, which takes minutes, so a plain `go test ./...` skips them,
// as root too: they run only when GOVERBS_LAB_SELFTEST=1 asks (make test
// and make unit set it), and then they fail rather than skip when the lab
// cannot work. -short skips them even then.
package main
