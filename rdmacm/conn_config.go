package rdmacm

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/goverbs/rdma/internal/unix"
	"github.com/goverbs/rdma/uverbs"
)

// Config describes the connections Dial, Resolve, Listen and a Listener
// make: the QP and CQ sizes, the connection parameters and time limits.
// The zero Config (or nil) gives an RC connection with 16 send and 16
// receive work requests of one SGE each.
type Config struct {
	// QPType is uverbs.RC (the default) or uverbs.UD.
	QPType uverbs.QPType

	SendDepth int // send work requests the QP holds; default 16
	RecvDepth int // receive work requests; default 16
	SendSGE   int // SGEs per send work request; default 1
	RecvSGE   int // SGEs per receive work request; default 1
	MaxInline int // bytes of inline data per send work request
	// CQDepth is the size of the connection's one CQ, shared by sends and
	// receives; default SendDepth+RecvDepth.
	CQDepth int

	// PD, if set, is used for the connection; it must be on the device the
	// CM picks for the connection, and the caller closes it after the
	// connection. Without it the connection uses the PD that all the
	// process's connections on that device share, as librdmacm does
	// (librdmacm/cma.c ucma_init_device, cma_dev->pd): the device is opened
	// and the PD allocated by the first connection on it, and both are
	// closed with the last.
	PD *uverbs.PD

	// PrivateData is sent with the connection request by Dial (at most
	// MaxConnectPrivateData bytes) and with the accept by Listener.Accept
	// (at most MaxAcceptPrivateData); on an iWARP device at most
	// MaxIWARPPrivateData each (a Listener needs an address of that
	// device: on a wildcard address it is held to the IB limits).
	PrivateData []byte
	// ConnParam is sent with the request or the accept; nil means
	// DefaultConnParam().
	ConnParam *ConnParam

	// Source is the local address to connect from (Dial); unset lets the
	// kernel pick by route.
	Source netip.Addr
	// ResolveTimeout bounds address and route resolution, each; default 2 s.
	ResolveTimeout time.Duration
	// ConnectTimeout bounds a connection's setup after its route is known
	// (Dial and Connect: from the request to ESTABLISHED; Accept: from the
	// accept to ESTABLISHED); default 30 s. The CM itself gives up only
	// after 15 retries of about 4 s each.
	ConnectTimeout time.Duration

	// ACKTimeout, if not 0, sets the QP's ACK timeout to 4.096 µs × 2^n
	// (RDMA_OPTION_ID_ACK_TIMEOUT) instead of the one the CM derives.
	ACKTimeout uint8
	// TOS, if not 0, sets the type of service (RDMA_OPTION_ID_TOS).
	TOS uint8
	// ReuseAddr lets Listen bind an address still in use (RDMA_OPTION_ID_REUSEADDR).
	ReuseAddr bool
	// Backlog of Listen; 0 means the kernel's limit.
	Backlog int

	// Logf, if set, receives each CM step of the connection: commands,
	// events, QP transitions. The caller's goroutine and the event
	// channel's reader call it, at the same time too, so it must be safe
	// for concurrent use (log.Printf and testing.T.Logf are).
	Logf func(format string, args ...any)
}

func (c *Config) withDefaults() Config {
	var d Config
	if c != nil {
		d = *c
	}
	if d.QPType == 0 {
		d.QPType = uverbs.RC
	}
	if d.SendDepth <= 0 {
		d.SendDepth = 16
	}
	if d.RecvDepth <= 0 {
		d.RecvDepth = 16
	}
	if d.SendSGE <= 0 {
		d.SendSGE = 1
	}
	if d.RecvSGE <= 0 {
		d.RecvSGE = 1
	}
	if d.CQDepth <= 0 {
		d.CQDepth = d.SendDepth + d.RecvDepth
	}
	if d.ResolveTimeout <= 0 {
		d.ResolveTimeout = 2 * time.Second
	}
	if d.ConnectTimeout <= 0 {
		d.ConnectTimeout = 30 * time.Second
	}
	return d
}

func (c *Config) portSpace() (PortSpace, error) {
	switch c.QPType {
	case uverbs.RC:
		return PortSpaceTCP, nil
	case uverbs.UD:
		return PortSpaceUDP, nil
	}
	return 0, fmt.Errorf("QP type %v: the CM connects RC and UD QPs: %w", c.QPType, unix.EINVAL)
}

func (c *Config) connParam() ConnParam {
	if c.ConnParam != nil {
		return *c.ConnParam
	}
	return DefaultConnParam()
}
