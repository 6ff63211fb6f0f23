package nldev

import (
	"errors"

	"github.com/goverbs/rdma/internal/unix"
)

// The sentinel errors, documented in netlinkrdma.
var (
	ErrExists         = errors.New("RDMA link already exists")
	ErrNoNetdev       = errors.New("no such network device")
	ErrNoRXE          = errors.New("soft-RoCE (rdma_rxe) not available in the kernel")
	ErrPermission     = errors.New("permission denied")
	ErrDeviceNotFound = errors.New("no such RDMA device")
	ErrNoRDMA         = errors.New("RDMA subsystem not available in the kernel")
	ErrNotSupported   = unix.ErrNotSupported
)

// Error is a failed RDMA netlink operation.
type Error struct {
	// Op is the operation, spelled as its iproute2 equivalent, e.g.
	// "rdma link add rxe0 type rxe netdev eth0".
	Op string
	// Kind is one of the package's sentinel errors, or nil.
	Kind error
	// Err is the cause, usually the unix.Errno from the kernel.
	Err error
	// Msg says what went wrong and what to do about it.
	Msg string
}

func (e *Error) Error() string {
	s := e.Op + ": "
	switch {
	case e.Msg != "":
		s += e.Msg
	case e.Kind != nil:
		s += e.Kind.Error()
	}
	if e.Err != nil {
		if e.Msg != "" || e.Kind != nil {
			s += " ("
		}
		var errno unix.Errno
		if errors.As(e.Err, &errno) && unix.ErrnoName(errno) != "" {
			// e.g. "EEXIST: file exists"
			s += unix.ErrnoName(errno) + ": " + e.Err.Error()
		} else {
			s += e.Err.Error()
		}
		if e.Msg != "" || e.Kind != nil {
			s += ")"
		}
	}
	return s
}

// Unwrap returns the sentinel and the cause, so errors.Is matches either.
func (e *Error) Unwrap() []error {
	var errs []error
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

const rootHint = "this needs CAP_NET_ADMIN: run as root (or grant the capability)"

// wrap turns an error from a netlink exchange into an *Error, naming the
// conditions every request shares. Operation-specific errnos (NEWLINK,
// DELLINK, GET_CHARDEV) are classified by their callers first.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	var errno unix.Errno
	errors.As(err, &errno)
	switch errno {
	case unix.EPERM, unix.EACCES:
		return &Error{Op: op, Kind: ErrPermission, Err: err, Msg: rootHint}
	case unix.EPROTONOSUPPORT:
		// socket(AF_NETLINK, SOCK_RAW, NETLINK_RDMA) fails with
		// EPROTONOSUPPORT while no RDMA core (ib_core) is in the kernel.
		return &Error{Op: op, Kind: ErrNoRDMA, Err: err,
			Msg: "the kernel has no RDMA netlink (NETLINK_RDMA): load ib_core (`modprobe ib_core`, as root) " +
				"or use a kernel built with CONFIG_INFINIBAND"}
	}
	return &Error{Op: op, Err: err}
}
