// Package nldev is the module's RDMA netlink client: it lists RDMA devices
// with their ports and driver ids, finds the character devices of the
// uverbs and rdma_cm clients, adds and deletes rxe links, and reads the
// subsystem's netns mode and copy-on-fork setting, over NETLINK_RDMA
// sockets of its own (kernel: drivers/infiniband/core/nldev.c; the
// requests are built with github.com/vishvananda/netlink's request type).
//
// Package netlinkrdma is its public face for what is netlink's own, and
// package uverbs lists devices with it. Its errors are *Error values,
// never wrapped, whose Kind is one of the sentinels of errors.go; the
// operations a test replaces with a fake kernel go through client. Off
// Linux (netlinkrdma_other.go) every operation fails with an error that
// matches rdma.ErrNotSupported.
package nldev
