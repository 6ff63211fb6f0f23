package rxe

import (
	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// The errors of a refused post are the providers' (uverbs/internal/provider):
// librxe's errnos for the same checks, ENOMEM for a full queue and EINVAL
// for the others, match them through errors.Is.
var (
	ErrQueueFull            = rdma.ErrQueueFull
	ErrInvalidWR            = rdma.ErrInvalidWR
	ErrTooManySGEs          = rdma.ErrTooManySGEs
	ErrInlineTooLong        = rdma.ErrInlineTooLong
	ErrInlineNotAllowed     = rdma.ErrInlineNotAllowed
	ErrAtomicAlignment      = rdma.ErrAtomicAlignment
	ErrAtomicLength         = rdma.ErrAtomicLength
	ErrOpcodeNotSupported   = rdma.ErrOpcodeNotSupported
	ErrOpcodeNotImplemented = provider.ErrOpcodeNotImplemented
	ErrBadSendFlags         = rdma.ErrBadSendFlags
	ErrLengthOverflow       = rdma.ErrLengthOverflow
	ErrUDAddress            = rdma.ErrUDAddress
)
