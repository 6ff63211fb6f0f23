//go:build linux

// Package lab boots a Debian kernel that has rdma_rxe under QEMU and runs one
// host command inside it, as root, with the host's root file system mounted
// read-only over 9p, the host's /tmp mounted read-write, and a fixed RDMA
// topology:
//
//   - rxe0 on lo: verbs tests with an out-of-band exchange, GID index 1 is
//     ::ffff:127.0.0.1;
//   - rxe1 on veth0 (10.77.0.1/24) and rxe2 on veth1 (10.77.0.2/24): tests
//     through the RDMA CM;
//   - on amd64 guests, unless Config.NoSiw: siw1 on veth2 (10.79.0.1/24) and
//     siw2 on veth3 (10.79.0.2/24), soft-iWARP, added after the rxe devices.
//     Debian's kernels lack siw.ko, so the lab builds it from the kernel's
//     own linux-headers and linux-source packages (siw.go) and keeps it
//     beside the kernel in the cache.
//
// The command sees GOVERBS_LAB=1, GOVERBS_LAB_KERNEL (uname -r),
// GOVERBS_LAB_LO_DEV, GOVERBS_LAB_VETH and GOVERBS_LAB_SIW (device:netdev:ipv4,
// comma separated; GOVERBS_LAB_SIW only with siw), and GOVERBS_LAB_MODULES,
// the directory where the modules loaded at boot stay (name.ko), for a test
// that unloads one and loads it again. debugfs is mounted at
// /sys/kernel/debug. Its stdout and stderr are streamed back separately from the
// kernel console, and its exit status is returned by Run.
//
// Everything the lab needs is set up on first use: missing Debian packages are
// installed with apt-get, the kernel package is downloaded with
// apt-get download and unpacked with dpkg-deb, the guest's /init (the
// guestinit program, embedded here as source) is built with the Go toolchain,
// and an initramfs with /init and the needed modules is written. All of it is
// cached in $GOVERBS_LAB_CACHE (default $HOME/.cache/goverbs-lab); concurrent
// runs share the cache safely.
//
// QEMU runs under TCG unless GOVERBS_LAB_ACCEL=kvm: KVM guests were seen to
// hang during boot on some hosts, so KVM is opt-in. Under TCG a boot rarely
// hangs or panics before the command starts (an int3 oops in sched_clock_cpu
// was seen); Run then boots once more, which cannot run the command twice.
//
// # Two guests
//
// With Config.Guests = 2 (rxelab -guests 2) a peer VM boots next to the VM
// that runs the command (the primary), for faults that need a second host.
// Each has the topology above plus eth0, a virtio-net device joined to the
// other guest's by QEMU's socket netdev over a socketpair made by the host
// (no host network or port), with an rxe device on it: rxe_a on 10.78.0.1/24
// in the primary, rxe_b on 10.78.0.2/24 in the peer. The command starts once
// both guests are ready and sees GOVERBS_LAB_ROLE, GOVERBS_LAB_LOCAL_DEV,
// GOVERBS_LAB_LOCAL_ADDR, GOVERBS_LAB_PEER_DEV, GOVERBS_LAB_PEER_ADDR and
// GOVERBS_LAB_PEER_SOCK. Through package test/lab/peer (or rxelab -peer and
// rxelab -poweroff-peer in scripts) it runs commands in the peer, with the
// same host shares, and powers the peer off: the host kills the peer's QEMU,
// with no shutdown. The run's status is the primary command's.
//
// Once the peer is powered off, the host reads and drops what the primary
// sends to it, as the wire to a dead host would; left unread, the socket
// would fill and QEMU would stop taking packets from the primary's NIC, so
// that rxe's retransmissions stalled instead of failing with
// IBV_WC_RETRY_EXC_ERR.
//
// The control protocol between the host, the guests' /init and package peer
// is defined once, in internal/proto.
//
// # arm64 guests
//
// With Config.Arch = "arm64" (rxelab -arch arm64) the guest is
// qemu-system-aarch64's virt board running Debian's arm64 kernel of the
// series. Its userland is Debian's arm64 packages (userlandPackages and
// their dependencies), downloaded with apt-get download through an apt state
// of its own in the cache and unpacked with dpkg-deb; the guest mounts it
// over the host's /usr, so the command (an arm64 binary, e.g. built with
// GOARCH=arm64) finds an arm64 sh, rdma, python3 and rdma-core's tools at
// the usual paths, and everything outside /usr is the host's.
//
// GOVERBS_LAB_APPEND adds words to the guest kernel's command line (for
// debugging, e.g. GOVERBS_LAB_APPEND=loglevel=7 with rxelab -v).
//
// The command line front end is test/rxelab.
package lab
