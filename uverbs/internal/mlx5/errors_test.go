package mlx5

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// Every refusal of the encoder matches the provider error of the same
// check and provider.ErrInvalidWR through errors.Is, keeps libmlx5's errno,
// and says mlx5 in its text; a full queue matches provider.ErrQueueFull and
// ENOMEM and is no ErrInvalidWR.
func TestErrorsMatchProvider(t *testing.T) {
	for _, tc := range []struct {
		err, same error
		errno     syscall.Errno
	}{
		{ErrBadOpcode, provider.ErrOpcodeNotSupported, syscall.EINVAL},
		{ErrAtomicsDisabled, provider.ErrOpcodeNotSupported, syscall.EOPNOTSUPP},
		{ErrBadSendFlags, provider.ErrBadSendFlags, syscall.EINVAL},
		{ErrTooManySGEs, provider.ErrTooManySGEs, syscall.ENOMEM},
		{ErrTooManyRecvSGEs, provider.ErrTooManySGEs, syscall.EINVAL},
		{ErrInlineTooLong, provider.ErrInlineTooLong, syscall.ENOMEM},
		{ErrInlineNotAllowed, provider.ErrInlineNotAllowed, syscall.EINVAL},
		{ErrUDAddress, provider.ErrUDAddress, syscall.EINVAL},
		{ErrInvalidWR, provider.ErrInvalidWR, syscall.EINVAL},
	} {
		err := fmt.Errorf("%w: detail", tc.err)
		if !errors.Is(err, tc.same) || !errors.Is(err, provider.ErrInvalidWR) || !errors.Is(err, ErrInvalidWR) || !errors.Is(err, tc.errno) {
			t.Errorf("%v: want it to match %v, both ErrInvalidWRs and %v", tc.err, tc.same, tc.errno)
		}
		if errors.Is(err, provider.ErrQueueFull) {
			t.Errorf("%v matches ErrQueueFull", tc.err)
		}
	}
	if errors.Is(ErrBadSendFlags, provider.ErrTooManySGEs) {
		t.Error("a refusal matches the provider error of another check")
	}
	full := fmt.Errorf("%w: detail", ErrQueueFull)
	if !errors.Is(full, provider.ErrQueueFull) || !errors.Is(full, syscall.ENOMEM) || errors.Is(full, provider.ErrInvalidWR) {
		t.Errorf("a full queue: %v, want provider.ErrQueueFull and ENOMEM, not ErrInvalidWR", full)
	}
}
