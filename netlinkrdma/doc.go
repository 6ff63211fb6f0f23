// Package netlinkrdma manages RDMA devices through the kernel's RDMA netlink
// interface (NETLINK_RDMA, the "nldev" client of <rdma/rdma_netlink.h>): it
// creates and removes Soft-RoCE (rxe) links, reports the RDMA subsystem's
// network namespace mode and copy-on-fork setting, and finds the char devices (/dev/infiniband/uverbsN,
// /dev/infiniband/rdma_cm) that the verbs and connection-manager packages
// open.
//
// It is the pure-Go counterpart of
//
//	modprobe rdma_rxe
//	rdma link add rxe0 type rxe netdev eth0
//
// The kernel loads rdma_rxe by itself when a link of type rxe is requested,
// and loads ib_uverbs and rdma_ucm when their char devices are asked for,
// so a program that calls LinkAdd and DeviceChardev needs no modprobe.
//
// It builds on github.com/vishvananda/netlink: RdmaLinkAdd and
// RdmaSystemGetNetnsMode where that package has the operation, and requests
// made with its nl package for the rest (device, port and char device
// queries, DELLINK by index, the copy-on-fork setting).
//
// # Creating and removing an rxe device
//
//	if err := netlinkrdma.LinkAdd("rxe0", "eth0"); err != nil {
//		// errors.Is(err, netlinkrdma.ErrExists), ErrNoNetdev, ErrNoRXE,
//		// ErrPermission; err.Error() says what to do.
//		log.Fatal(err)
//	}
//	defer netlinkrdma.LinkDel("rxe0")
//
// Changing links needs CAP_NET_ADMIN. LinkDel blocks until every user of
// the device has closed its uverbs file descriptors and mappings.
//
// # Listing devices
//
// Devices, their ports, netdevs, drivers and GUIDs are listed by package
// uverbs (uverbs.Devices, uverbs.LookupDevice), which asks RDMA netlink
// through the same client and reads sysfs when netlink is unavailable.
//
// # Char devices
//
//	info, err := uverbs.LookupDevice("rxe0")
//	cd, err := netlinkrdma.DeviceChardev(info.Index, "uverbs")
//	// cd.Path() == "/dev/infiniband/uverbs0", cd.ABI == 2 and
//	// cd.DriverID == 14 for rxe.
//	cm, err := netlinkrdma.GlobalChardev("rdma_cm") // cm.ABI == 4
//
// # Errors
//
// Every error is an *Error naming the operation as its iproute2 command.
// errors.Is matches the package's sentinel errors and the kernel's errno.
//
// # Close
//
// Nothing here has a Close: every request opens and closes its own netlink
// socket, so the module's rule for Close (package uverbs, Close) has
// nothing to apply to.
//
// # Network namespaces
//
// Requests go to the kernel from the calling thread's network namespace. In
// the default "shared" netns mode (see NetnsMode) every namespace sees
// every RDMA device, but a port's netdev is only reported in the namespace
// that holds the netdev.
package netlinkrdma
