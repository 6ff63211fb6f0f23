package sys

import "errors"

// OpError is the error of a failed kernel operation. Op names the command in
// the kernel's terms ("create_qp", "resolve_addr", "mmap cq ring") and Err is
// usually a unix.Errno, so errors.Is(err, unix.EINVAL) works.
type OpError struct {
	Op  string
	Err error
}

func (e *OpError) Error() string {
	if e.Err == nil {
		return e.Op
	}
	return e.Op + ": " + e.Err.Error()
}

func (e *OpError) Unwrap() error { return e.Err }

// Wrap returns nil for a nil err, else an *OpError for op.
func Wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return &OpError{Op: op, Err: err}
}

// ErrClosed is returned by any call on an object that was closed.
var ErrClosed = errors.New("object is closed")
