package unix

import (
	"errors"
	"runtime"

	"github.com/goverbs/rdma"
)

// ErrNotSupported is the module's "not supported" error (rdma.ErrNotSupported):
// the kernel or the device lacks what was asked for, or the system is not
// Linux. uverbs, rdmacm, rsocket and netlinkrdma export it as their
// ErrNotSupported.
var ErrNotSupported = rdma.ErrNotSupported

// ErrNotLinux is the error of every entry point of the module on a GOOS other
// than Linux. It matches ErrNotSupported and errors.ErrUnsupported.
var ErrNotLinux error = notLinux{}

type notLinux struct{}

func (notLinux) Error() string {
	return "RDMA needs Linux (its uverbs, rdma_cm and NETLINK_RDMA interfaces), and this program is built without them (GOOS=" + runtime.GOOS + "): " + ErrNotSupported.Error()
}

func (notLinux) Is(target error) bool {
	return target == ErrNotSupported || target == errors.ErrUnsupported
}
