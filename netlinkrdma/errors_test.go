package netlinkrdma

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/internal/nldev"
)

// Each sentinel of the netlink client has its public counterpart, with the
// same text, and an error converted by public matches it and the errno.
func TestPublicErrors(t *testing.T) {
	if len(kinds) != 6 {
		t.Errorf("kinds maps %d sentinels, the package has 6", len(kinds))
	}
	for in, out := range kinds {
		if in.Error() != out.Error() {
			t.Errorf("sentinel text %q here, %q in the client", out, in)
		}
		err := public(&nldev.Error{Op: "rdma link add x type rxe netdev y", Kind: in, Err: unix.EEXIST})
		var pe *Error
		if !errors.As(err, &pe) || !errors.Is(err, out) || !errors.Is(err, unix.EEXIST) || errors.Is(err, in) {
			t.Errorf("public(%v) = %#v: want an *Error matching %v and EEXIST only", in, err, out)
		}
		if want := (&nldev.Error{Op: "rdma link add x type rxe netdev y", Kind: in, Err: unix.EEXIST}).Error(); err.Error() != want {
			t.Errorf("public error reads %q, the client's %q", err, want)
		}
	}
	if err := public(nil); err != nil {
		t.Errorf("public(nil) = %v", err)
	}
	plain := errors.New("other")
	if err := public(plain); err != plain {
		t.Errorf("public(plain) = %v", err)
	}
}
