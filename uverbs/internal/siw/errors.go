package siw

import (
	"errors"
	"syscall"

	"github.com/goverbs/rdma"
)

// ErrQueueFull is returned when the next slot of a send or receive ring
// still holds a work request the kernel has not taken yet (its VALID flag
// is set, docs/siw.md §3). libsiw returns ENOMEM here, and
// errors.Is(err, syscall.ENOMEM) and errors.Is(err, rdma.ErrQueueFull)
// hold.
var ErrQueueFull error = &queueFull{}

type queueFull struct{}

func (*queueFull) Error() string {
	return "siw: work queue is full: the kernel has not yet taken the oldest work requests; poll the completion queue and post again, or create the queue with more entries"
}

func (*queueFull) Is(target error) bool {
	return target == syscall.ENOMEM || target == rdma.ErrQueueFull
}

// ErrInvalidWR matches every refusal of a work request below, those that
// break a limit (which also match syscall.EINVAL, libsiw's and the
// kernel's errno for them) and those that ask for something iWARP or siw
// does not have (which also match syscall.EOPNOTSUPP). Every refusal also
// matches rdma.ErrInvalidWR, as every provider's refusals do, and the
// refusals of the shared checks match their provider counterpart (siw's
// ErrTooManySGEs matches rdma.ErrTooManySGEs); what iWARP or siw lacks
// matches rdma.ErrNotSupported too (uverbs.ErrNotSupported), since no
// other value of the request would make the device take it.
var ErrInvalidWR = errors.New("siw: invalid work request")

type refusal struct {
	msg   string
	errno syscall.Errno
	same  error // the provider error it matches too, or nil
}

func (e *refusal) Error() string { return e.msg }

func (e *refusal) Is(target error) bool {
	return target == ErrInvalidWR || target == rdma.ErrInvalidWR || target == e.errno || (e.same != nil && target == e.same)
}

func invalid(msg string, same error) error { return &refusal{msg, syscall.EINVAL, same} }
func unsupported(msg string) error {
	return &refusal{msg, syscall.EOPNOTSUPP, rdma.ErrNotSupported}
}

// Refusals. Each is returned wrapped with the device name and the values
// that failed; test for them with errors.Is.
var (
	// What iWARP or siw lacks (syscall.EOPNOTSUPP).
	ErrNoImmediate        = unsupported("siw (iWARP) has no immediate data: SEND_WITH_IMM and RDMA_WRITE_WITH_IMM cannot be posted; send the value in the message instead")
	ErrNoAtomics          = unsupported("siw has no atomic operations (it reports atomic_cap NONE): ATOMIC_CMP_AND_SWP and ATOMIC_FETCH_AND_ADD cannot be posted")
	ErrOpcodeNotSupported = unsupported("siw: opcode not supported (siw user QPs take RDMA_WRITE, SEND, SEND_WITH_INV and RDMA_READ)")
	ErrQPType             = unsupported("siw (iWARP) has only RC QPs: UC and UD QPs cannot be created")

	// Limits and rules of siw's rings (syscall.EINVAL).
	ErrTooManySGEs      = invalid("siw: work request has more scatter/gather entries than the queue allows (max_send_sge / max_recv_sge from QP creation, at most 6)", rdma.ErrTooManySGEs)
	ErrInlineTooLong    = invalid("siw: inline data is longer than the QP's max_inline_data (siw holds at most 80 bytes inline); send it without the inline flag", rdma.ErrInlineTooLong)
	ErrInlineNotAllowed = invalid("siw: the inline flag is valid only for SEND and RDMA WRITE work requests", rdma.ErrInlineNotAllowed)
	ErrReadSGE          = invalid("siw (iWARP): an RDMA READ writes into exactly one local buffer: give it one SGE", nil)
	ErrReadFence        = invalid("siw cannot fence an RDMA READ: post it without the fence flag (fence the request after it instead)", nil)
	ErrBadSendFlags     = invalid("siw: send flags siw does not have (valid: FENCE 1, SIGNALED 2, SOLICITED 4, INLINE 8; siw has no IP_CSUM 16)", rdma.ErrBadSendFlags)
	ErrLengthOverflow   = invalid("siw: total scatter/gather length does not fit in 32 bits", rdma.ErrLengthOverflow)
	ErrUDAddress        = invalid("siw: RC QPs take no UD address (AH, remote QPN, Q_Key)", rdma.ErrUDAddress)
)

// ErrMovedToError is matched by the error of a post after which the QP was
// moved to ERROR because the kernel refused a request it took from the
// send ring (qpState.doorbell): everything posted completes flushed.
var ErrMovedToError = errors.New("the QP was moved to ERROR")
