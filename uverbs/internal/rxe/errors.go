package rxe

import "github.com/goverbs/rdma/uverbs/internal/provider"

// The errors of a refused post are the providers' (uverbs/internal/provider):
// librxe's errnos for the same checks, ENOMEM for a full queue and EINVAL
// for the others, match them through errors.Is.
var (
	ErrQueueFull            = provider.ErrQueueFull
	ErrInvalidWR            = provider.ErrInvalidWR
	ErrTooManySGEs          = provider.ErrTooManySGEs
	ErrInlineTooLong        = provider.ErrInlineTooLong
	ErrInlineNotAllowed     = provider.ErrInlineNotAllowed
	ErrAtomicAlignment      = provider.ErrAtomicAlignment
	ErrAtomicLength         = provider.ErrAtomicLength
	ErrOpcodeNotSupported   = provider.ErrOpcodeNotSupported
	ErrOpcodeNotImplemented = provider.ErrOpcodeNotImplemented
	ErrBadSendFlags         = provider.ErrBadSendFlags
	ErrLengthOverflow       = provider.ErrLengthOverflow
	ErrUDAddress            = provider.ErrUDAddress
)
