package mlx5

import (
	"errors"
	"syscall"

	"github.com/goverbs/rdma"
)

// ErrInvalidWR matches every work-request validation error below, which also
// match the errno libmlx5 returns for the same request (errors.Is with
// syscall.EINVAL, ENOMEM or EOPNOTSUPP).
// They match rdma.ErrInvalidWR too, and the provider error of the same
// check (ErrBadOpcode matches rdma.ErrOpcodeNotSupported), so that a
// caller tests one set of errors whatever the device.
var ErrInvalidWR error = &wrError{"mlx5: invalid work request", syscall.EINVAL, nil}

type wrError struct {
	msg   string
	errno syscall.Errno
	same  error // the provider error of the same check
}

func (e *wrError) Error() string { return e.msg }

func (e *wrError) Is(target error) bool {
	return target == ErrInvalidWR || target == rdma.ErrInvalidWR || target == e.errno || (e.same != nil && target == e.same)
}

// Errno is the error number libmlx5 returns for the same refusal.
func (e *wrError) Errno() syscall.Errno { return e.errno }

// Validation errors. The errno is libmlx5's for the same check
// (providers/mlx5/qp.c _mlx5_post_send, mlx5_post_recv,
// srq.c mlx5_post_srq_recv); ErrQueueFull is not an ErrInvalidWR.
var (
	ErrQueueFull = error(&queueFull{})

	ErrBadOpcode = error(&wrError{"mlx5: opcode not supported on this QP type (RC: all of SEND, SEND WITH IMM, RDMA WRITE (WITH IMM), RDMA READ, atomics; UC: SEND and RDMA WRITE, with or without IMM; UD: SEND, SEND WITH IMM)", syscall.EINVAL, rdma.ErrOpcodeNotSupported})

	ErrTooManySGEs = error(&wrError{"mlx5: work request has more scatter/gather entries than the queue allows (max_send_sge / max_recv_sge from QP creation)", syscall.ENOMEM, rdma.ErrTooManySGEs})

	ErrTooManyRecvSGEs = error(&wrError{"mlx5: receive work request has more scatter/gather entries than the queue allows (max_recv_sge from QP or SRQ creation)", syscall.EINVAL, rdma.ErrTooManySGEs})

	ErrInlineTooLong = error(&wrError{"mlx5: inline data is longer than the QP's max_inline_data; send it without the inline flag or create the QP with a larger max_inline_data", syscall.ENOMEM, rdma.ErrInlineTooLong})

	ErrInlineNotAllowed = error(&wrError{"mlx5: the inline flag is valid only for SEND and RDMA WRITE work requests", syscall.EINVAL, rdma.ErrInlineNotAllowed})

	ErrAtomicsDisabled = error(&wrError{"mlx5: atomic operations are not enabled on this QP (the device reported no atomic capability)", syscall.EOPNOTSUPP, rdma.ErrOpcodeNotSupported})

	ErrBadSendFlags = error(&wrError{"mlx5: unknown send flags (valid: FENCE 1, SIGNALED 2, SOLICITED 4, INLINE 8)", syscall.EINVAL, rdma.ErrBadSendFlags})

	ErrUDAddress = error(&wrError{"mlx5: UD sends need an address vector (an AH); connected (RC/UC) QPs take none", syscall.EINVAL, rdma.ErrUDAddress})
)

type queueFull struct{}

func (*queueFull) Error() string {
	return "mlx5: work queue is full: poll the completion queue to retire work requests before posting more, or create the queue with more work requests"
}

func (*queueFull) Is(target error) bool {
	return target == syscall.ENOMEM || target == rdma.ErrQueueFull
}

// Errno is libmlx5's errno for a full queue.
func (*queueFull) Errno() syscall.Errno { return syscall.ENOMEM }

// ErrPoll is returned by CQ.Poll for a completion entry that names no
// registered queue or has an opcode this package does not handle (libmlx5:
// CQ_POLL_ERR). The entry is consumed.
var ErrPoll = errors.New("mlx5: completion entry for an unknown queue or with an unsupported opcode")
