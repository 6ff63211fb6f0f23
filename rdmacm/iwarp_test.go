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
// RTS; a QP the kernel reports in ERR or SQD is a connection already over.
func TestIWARPForceRTS(t *testing.T) {
	for _, c := range []struct {
		s     uverbs.QPState
		force bool
		dead  bool
	}{
		{uverbs.QPStateRTS, false, false},
		{uverbs.QPStateInit, true, false},
		{uverbs.QPStateRTR, true, false},
		{uverbs.QPStateError, false, true},
		{uverbs.QPStateSQD, false, true},
		{uverbs.QPStateSQE, false, true},
		{uverbs.QPStateReset, false, true},
	} {
		force, err := iwarpForceRTS(c.s)
		if force != c.force || (err != nil) != c.dead {
			t.Errorf("%v: force %v, err %v; want force %v, dead %v", c.s, force, err, c.force, c.dead)
		}
		if c.dead && !errors.Is(err, ErrDisconnected) {
			t.Errorf("%v: %v does not match ErrDisconnected", c.s, err)
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
