package provider

import (
	"errors"
	"syscall"

	"github.com/goverbs/rdma/internal/unix"
)

// ErrQueueFull: the queue has no room for all the work requests of a
// post. libibverbs' providers return ENOMEM here (rdma-core
// providers/rxe/rxe.c rxe_post_one_recv, post_one_send; providers/mlx5/qp.c
// mlx5_wq_overflow), and errors.Is(err, syscall.ENOMEM) holds.
var ErrQueueFull error = &queueFull{}

type queueFull struct{}

func (*queueFull) Error() string {
	return "work queue is full: poll the completion queue to retire work requests before posting more, or create the QP with a larger max_send_wr/max_recv_wr"
}

func (*queueFull) Is(target error) bool { return target == syscall.ENOMEM }

// ErrInvalidWR matches every work-request validation error below. The
// providers return EINVAL for the same checks (rdma-core
// providers/rxe/rxe.c validate_send_wr), and errors.Is(err,
// syscall.EINVAL) holds for each of them.
var ErrInvalidWR = errors.New("invalid work request")

type invalidWR struct{ msg string }

func (e *invalidWR) Error() string { return e.msg }

func (e *invalidWR) Is(target error) bool {
	return target == ErrInvalidWR || target == syscall.EINVAL
}

// Validation errors. Each is returned wrapped with the values that failed;
// test for them with errors.Is.
var (
	ErrTooManySGEs = error(&invalidWR{"work request has more scatter/gather entries than the queue allows (max_send_sge / max_recv_sge from QP creation)"})

	ErrInlineTooLong = error(&invalidWR{"inline data is longer than the QP's max_inline_data; send it without the inline flag or create the QP with a larger max_inline_data"})

	ErrInlineNotAllowed = error(&invalidWR{"the inline flag is valid only for SEND and RDMA WRITE work requests"})

	ErrAtomicAlignment = error(&invalidWR{"atomic remote address must be 8-byte aligned"})

	ErrAtomicLength = error(&invalidWR{"atomic work request needs a local buffer of at least 8 bytes for the original value"})

	ErrOpcodeNotSupported = error(&invalidWR{"opcode not supported on this QP type (RC: all; UC: RDMA WRITE, SEND, with IMM or INV; UD: SEND, SEND WITH IMM)"})

	ErrOpcodeNotImplemented = error(&invalidWR{"opcode not implemented by this library yet (BIND_MW, FLUSH, ATOMIC_WRITE)"})

	ErrBadSendFlags = error(&invalidWR{"unknown send flags (valid: FENCE 1, SIGNALED 2, SOLICITED 4, INLINE 8, IP_CSUM 16)"})

	ErrLengthOverflow = error(&invalidWR{"total scatter/gather length does not fit in 32 bits"})

	ErrUDAddress = error(&invalidWR{"UD sends need an address handle (non-zero AH number); connected (RC/UC) QPs take no UD address"})
)

// ErrNotSupported: the kernel or the device lacks what was asked for, or
// this package does not implement it for the device's driver, or the system
// is not Linux (uverbs names it in its API).
var ErrNotSupported = unix.ErrNotSupported
