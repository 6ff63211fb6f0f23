package provider

import (
	"syscall"

	"github.com/goverbs/rdma"
)

// ErrOpcodeNotImplemented: an opcode the kernel knows but no provider
// encodes yet. Like every validation error it matches rdma.ErrInvalidWR
// and syscall.EINVAL.
var ErrOpcodeNotImplemented error = notImplemented{}

type notImplemented struct{}

func (notImplemented) Error() string {
	return "opcode not implemented by this library yet (BIND_MW, FLUSH, ATOMIC_WRITE)"
}

func (notImplemented) Is(target error) bool {
	return target == rdma.ErrInvalidWR || target == syscall.EINVAL
}
