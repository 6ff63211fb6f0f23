package uverbs

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/internal/unix"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// Device is an open RDMA device: the uverbs file descriptor with its kernel
// user context (ib_ucontext) and the async event file. Every verbs object is
// created from a Device. Its methods may be called from several goroutines.
//
// Close releases it; closing the descriptor makes the kernel destroy every
// object still created through it.
//
// rdma-core: struct ibv_context.
type Device struct {
	dev DeviceInfo

	// mu is held shared by every command and exclusively by Close, so that
	// the descriptor is never closed (and its number reused) under a call.
	mu     sync.RWMutex
	closed bool
	fd     *sys.FD
	async  *sys.EventFile

	numCompVectors int

	// The provider's context (provider.go).
	deviceProvider

	closeOnce sync.Once
	closeErr  error

	hookMu   sync.Mutex
	hooks    map[uint64]func()
	nextHook uint64
	closing  bool // Close has started: no more hooks

	// doorbells holds the POST_SEND doorbells of the rxe and siw QPs, a
	// slot each in shared off-heap pages (provider.Doorbells).
	doorbells provider.Doorbells

	devAttr atomic.Pointer[DeviceAttr] // Query, cached for the size checks (limits.go)

	regMu sync.Mutex
	reg   *registry // open objects, created on first use (objects.go)

	portPath transportChoice // QUERY_PORT: ioctl, else write()
	gidPath  transportChoice // QUERY_GID_ENTRY/TABLE: ioctl, else sysfs
}

// Open opens the RDMA device called name (for example "rxe0"); an empty name
// opens the first device. It opens the uverbs character device and creates
// the kernel user context with GET_CONTEXT, which also creates the async
// event file read by NextEvent.
//
// rdma-core: ibv_open_device.
func Open(name string) (*Device, error) {
	dev, err := LookupDevice(name)
	if err != nil {
		return nil, err
	}
	return OpenDevice(dev)
}

// OpenDevice opens a device returned by Devices.
//
// rdma-core: ibv_open_device.
func OpenDevice(dev DeviceInfo) (*Device, error) {
	if err := checkDriverABI(&dev); err != nil {
		return nil, &OpError{Op: "open " + dev.Name, Err: fmt.Errorf("%v: %w", err, ErrNotSupported)}
	}
	// O_RDWR: mmap of driver rings needs a writable descriptor
	// (docs/abi.md §1.5). sys.Open adds O_CLOEXEC.
	fd, err := sys.Open(dev.Path, unix.O_RDWR, "uverbs "+dev.Name)
	if err != nil {
		return nil, explainOpenError(dev, err)
	}
	c := &Device{dev: dev, fd: fd}
	if dev.DriverID == DriverUnknown && dev.Source == "sysfs" {
		// sysfs does not say which driver this is, and the kernel refuses
		// an ioctl whose header names another driver (EINVAL): use the
		// write() ABI and sysfs only.
		c.portPath.v.Store(choiceFallback)
		c.gidPath.v.Store(choiceFallback)
	}
	if err := c.openContext(); err != nil {
		fd.Close()
		return nil, err
	}
	return c, nil
}

func explainOpenError(dev DeviceInfo, err error) error {
	switch {
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("%w: the uverbs device node of %s is missing (is the ib_uverbs module loaded and /dev mounted?)", err, dev.Name)
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return fmt.Errorf("%w: no permission to open %s (it is normally mode 0666; check the device node and any container device rules)", err, dev.Path)
	}
	return err
}

// Info returns what discovery found about the device.
func (c *Device) Info() DeviceInfo { return c.dev }

// Name returns the device name, e.g. "rxe0".
//
// rdma-core: ibv_get_device_name.
func (c *Device) Name() string { return c.dev.Name }

// NumCompVectors returns the number of completion vectors of the device
// (rdma-core: ibv_context.num_comp_vectors).
func (c *Device) NumCompVectors() int { return c.numCompVectors }

// Close closes the async event file and the device descriptor. The kernel
// then destroys every object still created through the Device. Objects that
// registered a close hook (those that own mappings) are released first. Close
// is idempotent and safe on a nil *Device; a NextEvent waiting in another
// goroutine returns ErrClosed.
//
// rdma-core: ibv_close_device.
func (c *Device) Close() error {
	if c == nil {
		return nil
	}
	c.closeOnce.Do(func() {
		// Children first: they may still need the descriptor to destroy
		// themselves and must unmap their rings.
		c.hookMu.Lock()
		hooks := c.hooks
		c.hooks = nil
		c.closing = true
		c.hookMu.Unlock()
		ids := make([]uint64, 0, len(hooks))
		for id := range hooks {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] > ids[j] })
		for _, id := range ids {
			hooks[id]()
		}

		c.mu.Lock() // waits for commands in flight
		c.closed = true
		c.mu.Unlock()
		errA := c.async.Close()
		errF := c.fd.Close()
		c.closeProvider()
		c.doorbells.Close()
		c.closeErr = errors.Join(errA, errF)
	})
	return c.closeErr
}

// onClose registers f to run when the Device closes, before its descriptor
// is closed; hooks run newest first. The returned function unregisters f
// (call it when the object is closed on its own). If the Device is already
// closed, f is not registered and ok is false.
func (c *Device) onClose(f func()) (cancel func(), ok bool) {
	c.hookMu.Lock()
	defer c.hookMu.Unlock()
	if c.closing {
		return func() {}, false
	}
	if c.hooks == nil {
		c.hooks = make(map[uint64]func())
	}
	c.nextHook++
	id := c.nextHook
	c.hooks[id] = f
	return func() {
		c.hookMu.Lock()
		delete(c.hooks, id)
		c.hookMu.Unlock()
	}, true
}
