package rsocket

import (
	"errors"
	"net"
	"syscall"

	"github.com/goverbs/rdma"
)

var (
	// ErrProtocol: the peer broke the rsocket protocol (bad private data, a
	// message beyond its credits or beyond the buffer it was given). The
	// connection is ended; the peer is not an rsocket or is misbehaving.
	ErrProtocol = errors.New("rsocket protocol violation by the peer")
	// ErrIOMap: the peer uses rsocket's direct placement (riomap/riowrite,
	// as riostream does), which this package does not offer. We advertise
	// no iomap slots, so the peer's riomap fails (ENOMEM) and the connection
	// ends.
	ErrIOMap = errors.New("the peer uses riomap/riowrite (rsocket iomap), which is not supported: use plain streams")
	// ErrQP: a work request failed on the connection's QP (the peer's host
	// or device went away, its process died, or its memory was not where
	// it said). An error with it also matches syscall.ECONNRESET, since
	// the connection is gone as surely as after the CM's DISCONNECTED.
	ErrQP = errors.New("RDMA transfer failed")
	// ErrNotSupported is uverbs.ErrNotSupported. On a system other than
	// Linux, the only one with the RDMA CM and verbs, Dial and Listen (and
	// those of Dialer and ListenConfig) fail with an error that matches it.
	ErrNotSupported = rdma.ErrNotSupported
)

// Errors of a connection that ended are those of a TCP socket, so code
// written for net.Conn can test them the same way.
var (
	errReset  = syscall.ECONNRESET // Write once the connection ended; Read once it ended without the peer's shutdown
	errPipe   = syscall.EPIPE      // Write after CloseWrite
	errClosed = net.ErrClosed
)
