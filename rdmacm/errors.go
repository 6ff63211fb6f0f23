package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/internal/unix"
	"github.com/goverbs/rdma/uverbs"
)

// ErrNoCM is the error of a machine without the CM (the rdma_ucm module)
// or without any RDMA device. It matches uverbs.ErrNoDevice, which stands
// for both: test for that.
var ErrNoCM = fmt.Errorf("no RDMA connection manager (/dev/infiniband/rdma_cm needs the rdma_ucm module) or %w", uverbs.ErrNoDevice)

// ErrNotSupported is uverbs.ErrNotSupported: the kernel or the device lacks
// what was asked for. On a system other than Linux, the only one with the
// RDMA CM, NewEventChannel, NewAsyncEventChannel, Dial, Resolve, Listen and
// DeviceForAddr fail with an error that matches it.
var ErrNotSupported = rdma.ErrNotSupported

// ErrClosed is returned by calls on a closed ID, Conn or Listener.
var ErrClosed = rdma.ErrClosed

// OpError is the error of a failed CM command; it unwraps to the errno.
type OpError = rdma.OpError

// Errors of connection setup; each failure event becomes an *EventError or
// *RejectError that matches one of them with errors.Is.
var (
	// ErrAddrResolve: the destination address could not be resolved to an
	// RDMA device and GID (ADDR_ERROR: no route, no ARP answer, or no RDMA
	// device on the outgoing netdev).
	ErrAddrResolve = errors.New("address resolution failed")
	// ErrRouteResolve: no route to the destination (ROUTE_ERROR).
	ErrRouteResolve = errors.New("route resolution failed")
	// ErrUnreachable: the peer's CM did not answer (UNREACHABLE, after the
	// CM's retries) or the connection could not be set up (CONNECT_ERROR).
	ErrUnreachable = errors.New("peer unreachable")
	// ErrRejected: the peer refused the connection (REJECTED).
	ErrRejected = errors.New("connection rejected")
	// ErrConnRefused: nothing listens on that port at the peer (RC: REJECTED
	// with reason 8, invalid service ID, also matching ErrRejected; UD:
	// UNREACHABLE with SIDR status 1, also matching ErrUnreachable).
	ErrConnRefused = errors.New("connection refused: nothing listens on that port")
	// ErrDisconnected: the connection ended (DISCONNECTED, DEVICE_REMOVAL)
	// while it was being set up.
	ErrDisconnected = errors.New("disconnected")
	// ErrNotConnected: Disconnect or Shutdown on an ID or Conn that is not
	// connected (never was, or the CM already ended the connection). It
	// also matches unix.EINVAL, the kernel's answer.
	ErrNotConnected = notConnected{}
	// ErrTimeout: the operation did not finish within its configured time
	// (Config.ResolveTimeout, Config.ConnectTimeout). It also matches
	// context.DeadlineExceeded.
	ErrTimeout = errors.New("timed out")
)

type notConnected struct{}

// Error returns the error's text.
func (notConnected) Error() string        { return "not connected" }
func (notConnected) Is(target error) bool { return target == unix.EINVAL }

// IB CM reject reasons (IBA table 112) the CM reports in REJECTED.
const (
	RejectInvalidServiceID = 8  // no listener on the port
	RejectConsumerDefined  = 28 // rdma_reject by the peer application
	RejectVendorOption     = 35 // ECE not supported
)

// sidrUnsupported is the SIDR reply status for a service ID nobody
// listens on (IB_SIDR_UNSUPPORTED, enum ib_cm_sidr_status).
const sidrUnsupported = 1

// EventError is a failure reported by a CM event.
type EventError struct {
	Op     string    // what was being done: "resolve_addr", "connect", ...
	Event  EventType // the event that came instead of the wanted one
	Status int       // the event's status: 0 or a negative errno
}

// Error returns the error's text.
func (e *EventError) Error() string {
	s := fmt.Sprintf("%s: %v", e.Op, e.Event)
	if e.Status < 0 {
		s += ": " + syscall.Errno(-e.Status).Error()
	}
	if e.Event == EventUnreachable && e.Status > 0 {
		// A UD connect answered with a SIDR reply whose status is not
		// success (kernel: core/cma.c cma_sidr_rep_handler).
		s += fmt.Sprintf(": SIDR status %d", e.Status)
		if e.Status == sidrUnsupported {
			return s + " (nothing listens on that port)"
		}
	}
	switch e.Event {
	case EventAddrError:
		s += " (is the address reachable through a netdev with an RDMA device on it? `rdma-link show` lists them)"
	case EventUnreachable:
		s += " (no answer from the peer's CM: is the peer up, with an RDMA device on that address?)"
	case EventConnectError:
		s += " (the handshake could not be completed: the peer went away or gave up after its reply)"
	}
	return s
}

// Is matches the sentinel of the event's kind, and the errno of the status.
func (e *EventError) Is(target error) bool {
	switch target {
	case ErrAddrResolve:
		return e.Event == EventAddrError
	case ErrRouteResolve:
		return e.Event == EventRouteError
	case ErrUnreachable:
		return e.Event == EventUnreachable || e.Event == EventConnectError
	case ErrConnRefused:
		return e.Event == EventUnreachable && e.Status == sidrUnsupported
	case ErrDisconnected:
		return e.Event == EventDisconnected || e.Event == EventDeviceRemoval
	}
	if errno, ok := target.(syscall.Errno); ok && e.Status < 0 {
		return errno == syscall.Errno(-e.Status)
	}
	return false
}

// RejectError is a REJECTED event: the peer (or its CM, when nothing
// listens) refused the connection.
type RejectError struct {
	Op     string
	Reason int // IB CM reject reason: RejectConsumerDefined, RejectInvalidServiceID, ... (on iWARP, eventError)
	// PrivateData is what the peer sent with its reject, zero padded to
	// MaxRejectPrivateData bytes by the IB CM, as sent over iWARP (nil
	// when the CM rejected by itself).
	PrivateData []byte
}

// Error returns the error's text.
func (e *RejectError) Error() string {
	switch e.Reason {
	case RejectInvalidServiceID:
		return e.Op + ": rejected by the peer's CM: nothing listens on that port (reason 8, invalid service ID)"
	case RejectConsumerDefined:
		return e.Op + ": rejected by the peer (reason 28, consumer defined)"
	}
	return fmt.Sprintf("%s: rejected (IB CM reason %d)", e.Op, e.Reason)
}

// Is matches ErrRejected, and ErrConnRefused for reason 8.
func (e *RejectError) Is(target error) bool {
	return target == ErrRejected || target == ErrConnRefused && e.Reason == RejectInvalidServiceID
}

// eventError turns an unwanted event into an error. The iWARP CM has no
// reject reasons: its REJECTED event carries a negated errno (kernel:
// core/cma.c cma_iw_handler), -ECONNRESET when the peer rejected (an MPA
// reject) and -ECONNREFUSED when nothing listens (the TCP connection was
// refused). They are given the IB CM reasons of the same meaning, so that
// a caller tells the cases apart alike on both.
func eventError(op string, e Event) error {
	if e.Type == EventRejected {
		reason := e.Status
		switch e.Status {
		case -int(syscall.ECONNRESET):
			reason = RejectConsumerDefined
		case -int(syscall.ECONNREFUSED):
			reason = RejectInvalidServiceID
		}
		return &RejectError{Op: op, Reason: reason, PrivateData: e.PrivateData}
	}
	return &EventError{Op: op, Event: e.Type, Status: e.Status}
}

// timeoutError is an operation that ran out of its configured time.
type timeoutError struct {
	op    string
	limit string
}

func (e *timeoutError) Error() string { return e.op + ": timed out after " + e.limit }
func (e *timeoutError) Is(target error) bool {
	return target == ErrTimeout || target == context.DeadlineExceeded
}
func (e *timeoutError) Timeout() bool { return true }
