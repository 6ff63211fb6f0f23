package netlinkrdma

import (
	"github.com/goverbs/rdma/internal/nldev"
)

// The client lives in internal/nldev, which package uverbs uses too to
// list devices (uverbs.Devices is the module's one device listing); this
// file is its public face for what is netlink's own: links, char devices,
// the netns mode and the copy-on-fork setting.

// Chardev is the character device through which user space reaches an RDMA
// kernel client: /dev/infiniband/uverbsN for verbs, /dev/infiniband/rdma_cm
// for the connection manager, with its device number, ABI version and (for
// uverbs) driver id, a uverbs.DriverID. Path and Dev give its path and
// device number.
type Chardev = nldev.Chardev

// Error is a failed RDMA netlink operation: Op spelled as its iproute2
// equivalent, Kind one of the sentinel errors below (or nil), Err the cause
// (usually the errno) and Msg what to do about it.
type Error = nldev.Error

// Sentinel errors. Every error this package returns is an *Error; test for
// these with errors.Is. The errno the kernel returned matches too:
// errors.Is(err, unix.EEXIST).
var (
	// ErrExists: the netdev already carries an rxe device (EEXIST), or an
	// RDMA device of that name exists (ENFILE from the kernel's name check).
	ErrExists = nldev.ErrExists
	// ErrNoNetdev: the netdev named in LinkAdd does not exist in this
	// network namespace (ENODEV).
	ErrNoNetdev = nldev.ErrNoNetdev
	// ErrNoRXE: the kernel cannot create rxe links: rdma_rxe is neither
	// loaded nor loadable, or its crc32 dependency is missing.
	ErrNoRXE = nldev.ErrNoRXE
	// ErrPermission: the operation needs CAP_NET_ADMIN (EPERM, EACCES).
	ErrPermission = nldev.ErrPermission
	// ErrDeviceNotFound: no RDMA device of that name (or index) exists.
	ErrDeviceNotFound = nldev.ErrDeviceNotFound
	// ErrNoRDMA: the kernel has no NETLINK_RDMA: ib_core is not loaded and
	// cannot be, or the kernel lacks CONFIG_INFINIBAND.
	ErrNoRDMA = nldev.ErrNoRDMA
	// ErrNotSupported: the system is not Linux, whose kernel alone has
	// NETLINK_RDMA; every function fails with it there. It is the same
	// value as uverbs.ErrNotSupported.
	ErrNotSupported = nldev.ErrNotSupported
)

// LinkAdd creates a Soft-RoCE (rxe) RDMA device called name on top of the
// network device netdev, and returns once the new device is listed by
// uverbs.Devices (it waits up to 5 seconds). The kernel loads rdma_rxe on demand
// (request_module("rdma-link-rxe"), core/nldev.c), so no modprobe is needed
// when the module is installed. It needs CAP_NET_ADMIN.
//
// Errors match ErrExists (the netdev already has an rxe device, or the name
// is taken), ErrNoNetdev, ErrNoRXE and ErrPermission.
//
// Equivalent to: `rdma link add NAME type rxe netdev NETDEV`.
func LinkAdd(name, netdev string) error { return nldev.LinkAdd(name, netdev) }

// LinkDel removes the RDMA device called name. Only software devices (rxe,
// siw) can be removed this way. It needs CAP_NET_ADMIN.
//
// LinkDel blocks until every process has closed the device's uverbs file
// descriptors and mappings: rxe cannot revoke them (core/uverbs_main.c
// ib_uverbs_remove_one waits for its users). Close all verbs objects first.
//
// Errors match ErrDeviceNotFound and ErrPermission.
//
// Equivalent to: `rdma link delete NAME`.
func LinkDel(name string) error { return nldev.LinkDel(name) }

// DeviceChardev asks which char device serves the client typ ("uverbs" for
// verbs) for the device with index devIndex. The kernel loads the client's module
// on demand ("rdma-client-<typ>", core/device.c ib_get_client_nl_info).
//
// rdma-core's libibverbs does this to find /dev/infiniband/uverbsN, its ABI
// and the driver id (libibverbs/ibdev_nl.c); iproute2 has no equivalent.
func DeviceChardev(devIndex uint32, typ string) (Chardev, error) {
	return nldev.DeviceChardev(devIndex, typ)
}

// GlobalChardev asks for the char device of a client that is not tied to a
// device: "rdma_cm" gives /dev/infiniband/rdma_cm with ABI 4 (ucma.c
// ucma_get_global_nl_info). It loads rdma_ucm on demand.
func GlobalChardev(typ string) (Chardev, error) { return nldev.GlobalChardev(typ) }

// CopyOnFork reports whether the kernel copies pinned (registered) anonymous
// pages into a forked child instead of sharing them, which makes
// MADV_DONTFORK and ibv_fork_init unnecessary. Kernels from 5.13 on do
// (RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK = 1); older kernels do not send the
// attribute, and CopyOnFork returns false for them.
//
// Equivalent to: `rdma system show` (the copy-on-fork field).
func CopyOnFork() (bool, error) { return nldev.CopyOnFork() }

// NetnsMode returns the RDMA subsystem's network namespace mode: "shared"
// (the default: every namespace sees every device) or "exclusive" (a device
// is visible only in the namespace it belongs to).
//
// Equivalent to: `rdma system show netns`.
func NetnsMode() (string, error) { return nldev.NetnsMode() }
