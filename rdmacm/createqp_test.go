package rdmacm

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/uverbs"
)

// CreateQP refuses a SingleGoroutine QP, whose ring locks the CM's own
// goroutine would bypass when it moves the QP to the error state, with an
// error that names the option and says what to do; nothing reaches a
// device.
func TestCreateQPRefusesSingleGoroutine(t *testing.T) {
	id := newID(&EventChannel{}, PortSpaceTCP)
	qp, err := id.CreateQP(nil, uverbs.QPInit{SingleGoroutine: true})
	if qp != nil || !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), "SingleGoroutine") || !strings.Contains(err.Error(), "leave it unset") {
		t.Fatalf("CreateQP with SingleGoroutine = %v, %v; want EINVAL naming the option", qp, err)
	}
}

var opSink string

// The INIT_QP_ATTR command is named as before for every state, and the
// name costs the three states of a connection no allocation.
func TestInitQPAttrOp(t *testing.T) {
	for s := uverbs.QPStateReset; s <= uverbs.QPState(9); s++ {
		if got, want := initQPAttrOp(s), "init_qp_attr "+s.String(); got != want {
			t.Errorf("initQPAttrOp(%d) = %q, want %q", s, got, want)
		}
	}
	for _, s := range []uverbs.QPState{uverbs.QPStateInit, uverbs.QPStateRTR, uverbs.QPStateRTS} {
		// Kept in a package variable, as a command's name escapes into
		// its error: otherwise the compiler may build it on the stack.
		if n := testing.AllocsPerRun(100, func() { opSink = initQPAttrOp(s) }); n != 0 {
			t.Errorf("initQPAttrOp(%v): %v allocations, want 0", s, n)
		}
	}
}
