package rdmacm

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/uverbs"
)

// TestIWARPForceRTS: after an iWARP ESTABLISHED, only the states the
// kernel leaves unreported (uverbs' own record, INIT or RTR) are moved to
// RTS; a QP in RTS needs nothing, and one in ERR, SQD or SQE belongs to a
// connection already over, which is never moved back to RTS.
func TestIWARPForceRTS(t *testing.T) {
	for s, want := range map[uverbs.QPState]bool{
		uverbs.QPStateRTS:   false,
		uverbs.QPStateInit:  true,
		uverbs.QPStateRTR:   true,
		uverbs.QPStateError: false,
		uverbs.QPStateSQD:   false,
		uverbs.QPStateSQE:   false,
		uverbs.QPStateReset: false,
	} {
		if got := iwarpForceRTS(s); got != want {
			t.Errorf("%v: force %v, want %v", s, got, want)
		}
	}
}

// TestConnectCommandError: siw's blocking TCP connect fails the CONNECT
// command itself; no host answering is ErrUnreachable, keeping its errno,
// nothing listening ErrConnRefused, anything else stays as it was.
func TestConnectCommandError(t *testing.T) {
	cmd := func(n unix.Errno) error { return &sys.OpError{Op: "connect", Err: n} }
	for _, n := range []unix.Errno{unix.ETIMEDOUT, unix.EHOSTUNREACH, unix.ENETUNREACH} {
		err := connectCommandError("connect", cmd(n))
		var ee *EventError
		if !errors.As(err, &ee) || ee.Event != EventUnreachable || !errors.Is(err, ErrUnreachable) || !errors.Is(err, n) {
			t.Errorf("%v: %v, want an UNREACHABLE *EventError matching ErrUnreachable and the errno", n, err)
		}
	}
	if err := connectCommandError("connect", cmd(unix.ECONNREFUSED)); !errors.Is(err, ErrConnRefused) {
		t.Errorf("ECONNREFUSED: %v, want ErrConnRefused", err)
	}
	if err := connectCommandError("connect", cmd(unix.EINVAL)); errors.Is(err, ErrUnreachable) || !errors.Is(err, unix.EINVAL) {
		t.Errorf("EINVAL: %v, want it unchanged", err)
	}
	if connectCommandError("connect", nil) != nil {
		t.Error("no error became one")
	}
}
