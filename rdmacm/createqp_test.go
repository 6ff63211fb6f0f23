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
