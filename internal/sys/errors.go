package sys

import "github.com/goverbs/rdma"

// OpError is the error of a failed kernel operation; the public packages
// return it and name it (rdma.OpError).
type OpError = rdma.OpError

// Wrap returns nil for a nil err, else an *OpError for op.
func Wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return &OpError{Op: op, Err: err}
}

// ErrClosed is returned by any call on an object that was closed.
var ErrClosed = rdma.ErrClosed
