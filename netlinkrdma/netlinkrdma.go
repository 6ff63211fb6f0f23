package netlinkrdma

import (
	"errors"

	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/internal/nldev"
)

// The client lives in internal/nldev, which package uverbs uses too to
// list devices (uverbs.Devices is the module's one device listing); this
// file is its public face for what is netlink's own: links, char devices,
// the netns mode and the copy-on-fork setting.

// Chardev is the character device through which user space reaches an RDMA
// kernel client: /dev/infiniband/uverbsN for verbs, /dev/infiniband/rdma_cm
// for the connection manager.
type Chardev struct {
	Name  string // node name under /dev/infiniband, e.g. "uverbs0", "rdma_cm"
	Major uint32
	Minor uint32
	// ABI is the client's ABI version: for "uverbs" the driver's
	// (uverbs_abi_ver, 2 for rxe), for "rdma_cm" RDMA_USER_CM_ABI_VERSION (4).
	ABI uint64
	// DriverID is the enum rdma_driver_id of the device ("uverbs" only;
	// rdma.DriverRXE for rxe). It is what rdma-core matches a provider by.
	DriverID rdma.DriverID
}

// Path returns the device node, "/dev/infiniband/" + Name.
func (c Chardev) Path() string { return nldev.Chardev(c).Path() }

// Dev returns the device number as unix.Mkdev builds it, for comparing with
// Stat_t.Rdev of Path.
func (c Chardev) Dev() uint64 { return nldev.Chardev(c).Dev() }

// Error is a failed RDMA netlink operation.
type Error struct {
	// Op is the operation, spelled as its iproute2 equivalent, e.g.
	// "rdma link add rxe0 type rxe netdev eth0".
	Op string
	// Kind is one of the sentinel errors below, or nil.
	Kind error
	// Err is the cause, usually the unix.Errno from the kernel.
	Err error
	// Msg says what went wrong and what to do about it.
	Msg string
}

func (e *Error) Error() string { return (*nldev.Error)(e).Error() }

// Unwrap returns Kind and Err, so errors.Is matches either.
func (e *Error) Unwrap() []error { return (*nldev.Error)(e).Unwrap() }

// Sentinel errors. Every error this package returns is an *Error; test for
// these with errors.Is. The errno the kernel returned matches too:
// errors.Is(err, unix.EEXIST).
var (
	// ErrExists: the netdev already carries an rxe device (EEXIST), or an
	// RDMA device of that name exists (ENFILE from the kernel's name check).
	ErrExists = errors.New("RDMA link already exists")
	// ErrNoNetdev: the netdev named in LinkAdd does not exist in this
	// network namespace (ENODEV).
	ErrNoNetdev = errors.New("no such network device")
	// ErrNoRXE: the kernel cannot create rxe links: rdma_rxe is neither
	// loaded nor loadable, or its crc32 dependency is missing.
	ErrNoRXE = errors.New("soft-RoCE (rdma_rxe) not available in the kernel")
	// ErrPermission: the operation needs CAP_NET_ADMIN (EPERM, EACCES).
	ErrPermission = errors.New("permission denied")
	// ErrDeviceNotFound: no RDMA device of that name (or index) exists.
	ErrDeviceNotFound = errors.New("no such RDMA device")
	// ErrNoRDMA: the kernel has no NETLINK_RDMA: ib_core is not loaded and
	// cannot be, or the kernel lacks CONFIG_INFINIBAND.
	ErrNoRDMA = errors.New("RDMA subsystem not available in the kernel")
	// ErrNotSupported: the system is not Linux, whose kernel alone has
	// NETLINK_RDMA; every function fails with it there. It is the same
	// value as uverbs.ErrNotSupported.
	ErrNotSupported = rdma.ErrNotSupported
)

// kinds maps the client's sentinels to this package's (same text; a test
// checks both).
var kinds = map[error]error{
	nldev.ErrExists:         ErrExists,
	nldev.ErrNoNetdev:       ErrNoNetdev,
	nldev.ErrNoRXE:          ErrNoRXE,
	nldev.ErrPermission:     ErrPermission,
	nldev.ErrDeviceNotFound: ErrDeviceNotFound,
	nldev.ErrNoRDMA:         ErrNoRDMA,
}

// public turns the client's *nldev.Error into this package's *Error. The
// client returns its errors as *nldev.Error, never wrapped (nldev's wrap),
// which TestPublicErrors relies on too.
func public(err error) error {
	e, ok := err.(*nldev.Error)
	if !ok {
		return err
	}
	pe := Error(*e)
	if k, ok := kinds[e.Kind]; ok {
		pe.Kind = k
	}
	return &pe
}

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
func LinkAdd(name, netdev string) error { return public(nldev.LinkAdd(name, netdev)) }

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
func LinkDel(name string) error { return public(nldev.LinkDel(name)) }

// DeviceChardev asks which char device serves the client typ ("uverbs" for
// verbs) for the device with index devIndex. The kernel loads the client's module
// on demand ("rdma-client-<typ>", core/device.c ib_get_client_nl_info).
//
// rdma-core's libibverbs does this to find /dev/infiniband/uverbsN, its ABI
// and the driver id (libibverbs/ibdev_nl.c); iproute2 has no equivalent.
func DeviceChardev(devIndex uint32, typ string) (Chardev, error) {
	c, err := nldev.DeviceChardev(devIndex, typ)
	return Chardev(c), public(err)
}

// GlobalChardev asks for the char device of a client that is not tied to a
// device: "rdma_cm" gives /dev/infiniband/rdma_cm with ABI 4 (ucma.c
// ucma_get_global_nl_info). It loads rdma_ucm on demand.
func GlobalChardev(typ string) (Chardev, error) {
	c, err := nldev.GlobalChardev(typ)
	return Chardev(c), public(err)
}

// CopyOnFork reports whether the kernel copies pinned (registered) anonymous
// pages into a forked child instead of sharing them, which makes
// MADV_DONTFORK and ibv_fork_init unnecessary. Kernels from 5.13 on do
// (RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK = 1); older kernels do not send the
// attribute, and CopyOnFork returns false for them.
//
// Equivalent to: `rdma system show` (the copy-on-fork field).
func CopyOnFork() (bool, error) {
	on, err := nldev.CopyOnFork()
	return on, public(err)
}

// NetnsMode returns the RDMA subsystem's network namespace mode: "shared"
// (the default: every namespace sees every device) or "exclusive" (a device
// is visible only in the namespace it belongs to).
//
// Equivalent to: `rdma system show netns`.
func NetnsMode() (string, error) {
	mode, err := nldev.NetnsMode()
	return mode, public(err)
}
