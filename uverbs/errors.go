package uverbs

import (
	"errors"
	"strings"

	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/internal/unix"
)

// ErrNoDevice is returned when the machine has no RDMA device at all.
var ErrNoDevice = errors.New("no RDMA device: create a soft-RoCE device with `rdma-link add rxe0 netdev eth0` (needs the rdma_rxe kernel module)")

// ErrNotSupported is returned (wrapped) when the kernel or the device does not
// implement a command: the write() ABI answers EOPNOTSUPP for a command that
// is disabled for the device (kernel: core/uverbs_main.c ib_uverbs_write), and
// the ioctl ABI answers EPROTONOSUPPORT for an unknown object, method or
// mandatory attribute and ENOTTY when it is absent altogether
// (kernel: core/uverbs_ioctl.c). The errno stays reachable with errors.Is.
// On a system other than Linux, the only one with uverbs, Devices,
// LookupDevice, Open, OpenDevice and AllocBuffer fail with an error that
// matches it.
var ErrNotSupported = rdma.ErrNotSupported

// ErrClosed is returned by any call on a closed Device (or on an object whose
// Device was closed).
var ErrClosed = rdma.ErrClosed

// OpError is the error of a failed kernel command. Op names the command in the
// kernel's terms ("get_context", "query_port", ...), Err is usually a
// unix.Errno, so errors.Is(err, unix.EINVAL) works.
type OpError = rdma.OpError

// DeviceNotFoundError is returned when a device is asked for by a name that
// does not exist.
type DeviceNotFoundError struct {
	Name      string   // the name asked for
	Available []string // the RDMA devices that do exist
}

// Error returns the error's text.
func (e *DeviceNotFoundError) Error() string {
	if len(e.Available) == 0 {
		return "RDMA device " + quote(e.Name) + " not found; " + ErrNoDevice.Error()
	}
	return "RDMA device " + quote(e.Name) + " not found; available: " + strings.Join(e.Available, ", ")
}

// Is makes errors.Is(err, ErrNoDevice) true when no device exists at all.
func (e *DeviceNotFoundError) Is(target error) bool {
	return target == ErrNoDevice && len(e.Available) == 0
}

func quote(s string) string { return "\"" + s + "\"" }

// notSupported marks an errno that means "this command does not exist here".
// It unwraps to the errno and matches ErrNotSupported.
type notSupported struct{ errno unix.Errno }

func (e *notSupported) Error() string {
	return e.errno.Error() + " (" + ErrNotSupported.Error() + ")"
}
func (e *notSupported) Unwrap() error        { return e.errno }
func (e *notSupported) Is(target error) bool { return target == ErrNotSupported }

// classifyIoctl rewrites the errnos that the ioctl ABI uses for "no such
// method" into errors that match ErrNotSupported. rdma-core falls back to the
// write() ABI on exactly these (rdma-core: libibverbs/cmd_fallback.c).
func classifyIoctl(err error) error {
	if err == nil {
		return nil // before op, which escapes: a successful command allocates nothing here
	}
	var op *sys.OpError
	if !errors.As(err, &op) {
		return err
	}
	var errno unix.Errno
	if !errors.As(op.Err, &errno) {
		return err
	}
	switch errno {
	case unix.EOPNOTSUPP, unix.EPROTONOSUPPORT, unix.ENOTTY:
		return &sys.OpError{Op: op.Op, Err: &notSupported{errno}}
	}
	return err
}

// classifyWrite does the same for the write() ABI, where a command that is
// out of range or disabled for the device returns EOPNOTSUPP
// (kernel: core/uverbs_main.c ib_uverbs_write, uverbs_uapi.c).
func classifyWrite(err error) error {
	if err == nil {
		return nil // as in classifyIoctl
	}
	var op *sys.OpError
	if !errors.As(err, &op) {
		return err
	}
	var errno unix.Errno
	if errors.As(op.Err, &errno) && errno == unix.EOPNOTSUPP {
		return &sys.OpError{Op: op.Op, Err: &notSupported{errno}}
	}
	return err
}
