package rsocket

import (
	"fmt"
	"time"

	"github.com/goverbs/rdma/rdmacm"
	"github.com/goverbs/rdma/uverbs"
)

// Options are the per-connection settings rsocket reads from its
// configuration files and setsockopt, with rsocket's defaults
// (librdmacm/rsocket.c rs_configure; docs/rsocket.md §3). None has to match
// the peer's: each side tells the other what it needs in the connection's
// private data.
type Options struct {
	// SendBuffer is the bytes of send buffer (rsocket's sbuf); default
	// 128 KiB, at least 4 KiB. rsocket's SO_SNDBUF doubles the value it is
	// given: SO_SNDBUF v there is SendBuffer 2v here.
	SendBuffer int
	// RecvBuffer is the bytes of receive buffer the peer writes into
	// (rbuf), published to the peer in halves; default 128 KiB, at least
	// 4 KiB, rounded up to a multiple of 64. SO_RCVBUF v there is
	// RecvBuffer 2v here.
	RecvBuffer int
	// SQSize and RQSize are the work requests of the send and receive
	// queues; default 384 each, within [16, 65534]. RQSize is also the
	// number of messages the peer may send ahead of our reads (credits).
	SQSize int
	RQSize int
	// Inline is the largest write sent inline (copied into the work
	// request); default 64, negative for none (rsocket's RDMA_INLINE 0).
	// The device may give more.
	Inline int
	// KeepAlive, if positive, is the period of keepalives on an idle
	// connection: a 0-byte RDMA WRITE the peer's device acknowledges and its
	// program never sees, as rsocket sends with SO_KEEPALIVE and
	// TCP_KEEPIDLE. A peer that is gone then ends the connection (the write
	// fails after the transport's retries) instead of leaving Read waiting.
	KeepAlive time.Duration
	// Spin is how often Read and Write poll the completion queue before
	// they sleep; default 256, about the 10 µs rsocket polls for
	// (polling_time) on a current x86 core, where one round costs about
	// 35 ns (an empty poll and the connection's checks). A sleep costs
	// more than that: arming the CQ, parking the goroutine, the wake-up.
	// Negative: never spin.
	Spin int

	// ResolveTimeout bounds address and route resolution (Dial); default
	// 2 s each. ConnectTimeout bounds the connection handshake; default
	// 30 s. CloseTimeout bounds how long Close, CloseWrite and CloseRead wait for data
	// already written to reach the peer; default 10 s.
	ResolveTimeout time.Duration
	ConnectTimeout time.Duration
	CloseTimeout   time.Duration

	// Logf, if set, receives each step of connection setup and teardown.
	// It is called from more than one goroutine, at the same time too, so
	// it must be safe for concurrent use (log.Printf and testing.T.Logf
	// are).
	Logf func(format string, args ...any)
}

// Defaults of rsocket (rs_configure: def_mem, def_wmem, def_sqsize,
// def_rqsize, def_inline).
const (
	DefaultBuffer    = 128 << 10
	DefaultQueueSize = 384
	DefaultInline    = 64
	defaultSpin      = 256
	minBuffer        = 4096
	maxBuffer        = 1 << 30
)

// settings are Options with the defaults filled in and checked.
type settings struct {
	Options
	sbufSize, rbufSize uint32
}

func (o *Options) settings() (settings, error) {
	s := settings{Options: *o}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&s.SendBuffer, DefaultBuffer)
	def(&s.RecvBuffer, DefaultBuffer)
	def(&s.SQSize, DefaultQueueSize)
	def(&s.RQSize, DefaultQueueSize)
	def(&s.Inline, DefaultInline)
	def(&s.Spin, defaultSpin)
	if s.CloseTimeout == 0 {
		s.CloseTimeout = 10 * time.Second
	}
	switch {
	case s.SendBuffer < 0 || s.SendBuffer > maxBuffer:
		return s, fmt.Errorf("SendBuffer %d: give 0 for the default or up to %d bytes", s.SendBuffer, maxBuffer)
	case s.RecvBuffer < 0 || s.RecvBuffer > maxBuffer:
		return s, fmt.Errorf("RecvBuffer %d: give 0 for the default or up to %d bytes", s.RecvBuffer, maxBuffer)
	case s.SQSize < 0 || s.SQSize > maxQueueSize, s.RQSize < 0 || s.RQSize > maxQueueSize:
		return s, fmt.Errorf("SQSize %d, RQSize %d: give 0 for the default (%d) or %d to %d", s.SQSize, s.RQSize, DefaultQueueSize, minQueueSize, maxQueueSize)
	case s.KeepAlive < 0:
		return s, fmt.Errorf("KeepAlive %v: give 0 for none or a period", s.KeepAlive)
	}
	s.Inline = max(s.Inline, 0)
	s.SendBuffer = max(s.SendBuffer, minBuffer)
	s.RecvBuffer = (max(s.RecvBuffer, minBuffer) + 63) &^ 63
	s.SQSize = max(s.SQSize, minQueueSize)
	s.RQSize = max(s.RQSize, minQueueSize)
	if s.Spin < 0 {
		s.Spin = 0
	}
	s.sbufSize, s.rbufSize = uint32(s.SendBuffer), uint32(s.RecvBuffer)
	return s, nil
}

// cmConfig is the CM configuration of an rsocket connection: an RC QP whose
// send queue also holds the control messages, one CQ for both queues, and
// the connection parameters rsocket sends (rs_do_connect: no RDMA READ, 7
// retries, infinite RNR retries, which rsocket relies on: its receives are
// not counted, docs/rsocket.md §2.4).
func (s *settings) cmConfig() *rdmacm.Config {
	sq := s.SQSize + ctrlInFlight
	return &rdmacm.Config{
		QPType:         uverbs.RC,
		SendDepth:      sq,
		RecvDepth:      s.RQSize,
		SendSGE:        2, // the send buffer is a ring: a write may wrap
		RecvSGE:        1, // receives carry no SGE; the QP needs one
		MaxInline:      s.Inline,
		CQDepth:        sq + s.RQSize,
		ConnParam:      &rdmacm.ConnParam{RetryCount: 7, RNRRetryCount: 7},
		ResolveTimeout: s.ResolveTimeout,
		ConnectTimeout: s.ConnectTimeout,
		ReuseAddr:      true,
		Logf:           s.Logf,
	}
}

func (s *settings) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}
