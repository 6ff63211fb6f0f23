package mlx5

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/goverbs/rdma"
)

// Every refusal of the encoder matches the provider error of the same
// check and rdma.ErrInvalidWR through errors.Is, keeps libmlx5's errno,
// and says mlx5 in its text; a full queue matches rdma.ErrQueueFull and
// ENOMEM and is no ErrInvalidWR.
func TestErrorsMatchProvider(t *testing.T) {
	for _, tc := range []struct {
		err, same error
		errno     syscall.Errno
	}{
		{ErrBadOpcode, rdma.ErrOpcodeNotSupported, syscall.EINVAL},
		{ErrAtomicsDisabled, rdma.ErrOpcodeNotSupported, syscall.EOPNOTSUPP},
		{ErrBadSendFlags, rdma.ErrBadSendFlags, syscall.EINVAL},
		{ErrTooManySGEs, rdma.ErrTooManySGEs, syscall.ENOMEM},
		{ErrTooManyRecvSGEs, rdma.ErrTooManySGEs, syscall.EINVAL},
		{ErrInlineTooLong, rdma.ErrInlineTooLong, syscall.ENOMEM},
		{ErrInlineNotAllowed, rdma.ErrInlineNotAllowed, syscall.EINVAL},
		{ErrUDAddress, rdma.ErrUDAddress, syscall.EINVAL},
		{ErrInvalidWR, rdma.ErrInvalidWR, syscall.EINVAL},
	} {
		err := fmt.Errorf("%w: detail", tc.err)
		if !errors.Is(err, tc.same) || !errors.Is(err, rdma.ErrInvalidWR) || !errors.Is(err, ErrInvalidWR) || !errors.Is(err, tc.errno) {
			t.Errorf("%v: want it to match %v, both ErrInvalidWRs and %v", tc.err, tc.same, tc.errno)
		}
		if errors.Is(err, rdma.ErrQueueFull) {
			t.Errorf("%v matches ErrQueueFull", tc.err)
		}
	}
	if errors.Is(ErrBadSendFlags, rdma.ErrTooManySGEs) {
		t.Error("a refusal matches the provider error of another check")
	}
	full := fmt.Errorf("%w: detail", ErrQueueFull)
	if !errors.Is(full, rdma.ErrQueueFull) || !errors.Is(full, syscall.ENOMEM) || errors.Is(full, rdma.ErrInvalidWR) {
		t.Errorf("a full queue: %v, want rdma.ErrQueueFull and ENOMEM, not ErrInvalidWR", full)
	}
}
