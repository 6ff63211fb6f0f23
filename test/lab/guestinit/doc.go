// Command guestinit is PID 1 of the lab guest (see package test/lab, which
// embeds main.go and builds it as a static binary in a module of its own, so
// main.go imports nothing but the standard library).
//
// It loads the kernel modules listed in /modules/order, opens the
// virtio-serial control port named "lab.ctl", receives the run request,
// mounts the host's root read-only and temporary directories read-write over
// 9p, chroots, builds the RDMA topology over netlink and runs the command.
// The command's stdout and stderr travel back as frames on the control port;
// the exit status is the last frame.
package main
