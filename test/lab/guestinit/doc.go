//go:build linux

// Command guestinit is PID 1 of the lab guest (see package test/lab, which
// embeds this package and internal/proto and builds them as a static binary
// in a module of their own, so both import nothing but the standard library).
//
// It loads the kernel modules listed in /modules/order, opens the
// virtio-serial control port named "lab.ctl", receives the run request,
// mounts the host's root read-only and temporary directories read-write over
// 9p, chroots, builds the RDMA topology over netlink and runs the command.
// The command's stdout and stderr travel back as frames on the control port
// (see internal/proto); the exit status is the last frame.
//
// In the two-guest lab the request also names the guest's role and its side
// of the network between the guests (eth0). The peer guest then reports that
// it is ready and runs the commands the host relays to it, each on a channel
// of its own, until the host says to power off. The primary guest runs the
// lab's command and serves peer requests from its programs on a Unix socket
// (proto.PeerSock), relaying each on a new channel to the host.
package main
