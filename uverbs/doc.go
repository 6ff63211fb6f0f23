// Package uverbs is the RDMA verbs API, spoken directly to the kernel's
// /dev/infiniband/uverbsN character devices without libibverbs or cgo.
//
// # Devices and contexts
//
// Devices lists the RDMA devices (rdma-core: ibv_get_device_list). It asks
// the kernel over NETLINK_RDMA first, as rdma-core does, and reads sysfs
// (/sys/class/infiniband_verbs, /sys/class/infiniband) when netlink is not
// available. Open opens one by name and returns a *Context
// (rdma-core: ibv_open_device); everything else is created from a Context.
//
//	ctx, err := uverbs.Open("rxe0")
//	if err != nil {
//		return err // errors.Is(err, uverbs.ErrNoDevice): no RDMA device at all
//	}
//	defer ctx.Close()
//	dev, err := ctx.QueryDevice()
//	port, err := ctx.QueryPort(1)
//	gids, err := ctx.GIDs(1)
//
// A machine without RDMA hardware can use Soft-RoCE: `rdma-link add rxe0
// netdev eth0` (or `rdma link add rxe0 type rxe netdev eth0`) creates an rxe
// device over any Ethernet interface; it needs the rdma_rxe kernel module.
//
// # Command transports
//
// The kernel offers two command ABIs on the same descriptor: the write()
// ABI (a header and a fixed struct per command, with "extended" commands for
// newer fields) and the ioctl ABI (RDMA_VERBS_IOCTL with typed attributes).
// Both are used: write() for everything it offers (GET_CONTEXT, which also
// creates the async event file, and EX_QUERY_DEVICE), the ioctl ABI for what
// only it offers (GID table queries, port_cap_flags2). A command that has an
// ioctl method tries it first and falls back to write() or sysfs for the
// life of the Context when the kernel does not know the method.
//
// # Errors
//
// Failed commands return an *OpError naming the command ("get_context",
// "query_port", "query_gid_entry", ...) that unwraps to the kernel's errno:
// errors.Is(err, unix.EINVAL) works. A command the kernel or device does not
// implement also matches ErrNotSupported. A closed Context gives errors
// matching ErrClosed. ErrNoDevice says how to create a device.
//
// # Async events
//
// Every Context has an async event file: port state changes, CQ overflows,
// QP and SRQ errors. NextEvent waits for one through Go's netpoller and
// honours a context.Context; Events ranges over them. Events of objects carry
// the user handle the object was created with.
//
// # Lifetimes
//
// Close is idempotent and safe on a nil Context. Closing a Context makes the
// kernel destroy every object created through it. A soft-RoCE device cannot
// be deleted (`rdma link delete`) while any process holds one of its
// contexts or mappings open: close them first.
package uverbs
