//go:build linux

// Package peer is for tests that need a second host: in the two-guest lab
// (rxelab -guests 2, see package test/lab) a program in the primary guest
// runs commands in the peer guest and powers the peer off abruptly, as if
// its host died.
//
// The two guests are joined by a network of their own: eth0 in each, with
// an rxe device on it, so RDMA between LocalDev and Dev is real two-host
// RoCEv2. Addr and Dev name the peer, LocalAddr and LocalDev this guest.
//
// Commands run in the peer as root, with the host's file systems mounted at
// the same paths as in the primary guest (the host's root read-only, /tmp
// read-write), so a test binary can run itself in the peer:
//
//	srv := peer.Command(ctx, os.Args[0], "-test.run=^TestHelperServer$")
//	srv.Env = append(os.Environ(), "HELPER=1")
//	if err := srv.Start(); err != nil { ... }
//	... // talk to peer.Addr()
//	if err := peer.PowerOff(ctx); err != nil { ... }
//	err := srv.Wait() // errors.Is(err, peer.ErrGone)
//
// Requests travel from this guest's /init over the lab's control port to the
// host, which relays them to the peer's /init (or, for PowerOff, kills the
// peer's QEMU); none of it uses the guests' network.
package peer
