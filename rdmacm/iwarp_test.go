package rdmacm

import (
	"errors"
	"testing"

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
