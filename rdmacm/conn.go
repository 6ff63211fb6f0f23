package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sys/unix"

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

	// PD, if set, is used for the connection instead of a PD of its own; it
	// must be on the device the CM picks for the connection. Without it each
	// connection opens its device and allocates a PD, closed with it.
	PD *uverbs.PD

	// PrivateData is sent with the connection request by Dial (at most
	// MaxConnectPrivateData bytes) and with the accept by Listener.Accept
	// (at most MaxAcceptPrivateData).
	PrivateData []byte
	// ConnParam is sent with the request or the accept; nil means
	// DefaultConnParam.
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
	// events, QP transitions.
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
	return DefaultConnParam
}

// Conn is a connection made through the CM: its ID, and the verbs objects
// built for it on the CM's device: a PD (unless Config.PD), one CQ with a
// completion channel for both queues, and the QP. Post work on QP(); take
// completions with CQ().Poll, or CQ().PollWait to sleep while there are
// none.
//
// Close disconnects, closes the QP (its pending work is flushed), the CQ,
// the channel, the PD and device it opened, then destroys the ID.
type Conn struct {
	cfg   Config
	id    *ID
	ownCh *EventChannel // the Dial side's own event channel

	ctx *uverbs.Context // opened for the connection, nil with Config.PD
	pd  *uverbs.PD
	ch  *uverbs.CompChannel
	cq  *uverbs.CQ
	qp  *uverbs.QP

	peerData []byte
	udQPN    uint32
	udQKey   uint32
	udAH     *uverbs.AH

	closeOnce sync.Once
	closeErr  error
}

// Dial connects to address ("10.0.0.1:7471", "[fe80::1%eth0]:7471" or
// "host:port") and returns an established connection.
// Failures: *EventError matching ErrAddrResolve, ErrRouteResolve or
// ErrUnreachable, *RejectError (ErrRejected, ErrConnRefused), an error
// matching ErrTimeout, or ctx.Err(); everything made on the way is freed.
//
// rdma-core: rdma_getaddrinfo + rdma_create_ep + rdma_connect.
func Dial(ctx context.Context, address string, cfg *Config) (*Conn, error) {
	c, err := Resolve(ctx, address, cfg)
	if err != nil {
		return nil, err
	}
	if err := c.Connect(ctx, c.cfg.PrivateData); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Resolve does the first half of Dial: it resolves address and route and
// builds the PD, CQ and QP (in INIT, or RTS for UD) on the device the CM
// picked, so that memory can be registered and receives posted before
// Connect.
func Resolve(ctx context.Context, address string, cfg *Config) (*Conn, error) {
	d := cfg.withDefaults()
	ps, err := d.portSpace()
	if err != nil {
		return nil, &OpError{Op: "dial", Err: err}
	}
	limit := MaxConnectPrivateData
	if ps == PortSpaceUDP {
		limit = MaxUDConnectData
	}
	if len(d.PrivateData) > limit {
		return nil, &OpError{Op: "dial", Err: fmt.Errorf("%d bytes of private data, the CM carries at most %d in a connection request: %w", len(d.PrivateData), limit, unix.EINVAL)}
	}
	dst, err := ParseAddress(ctx, address)
	if err != nil {
		return nil, &OpError{Op: "dial", Err: err}
	}
	if !dst.Addr().IsValid() || dst.Addr().IsUnspecified() {
		return nil, &OpError{Op: "dial", Err: fmt.Errorf("address %q: give the server's address: %w", address, unix.EINVAL)}
	}
	ch, id, err := newChannelID(ps, d.Logf)
	if err != nil {
		return nil, err
	}
	c := &Conn{cfg: d, id: id, ownCh: ch}
	fail := func(err error) (*Conn, error) {
		c.Close()
		return nil, err
	}
	if err := c.setOptions(); err != nil {
		return fail(err)
	}
	var src netip.AddrPort
	if d.Source.IsValid() {
		src = netip.AddrPortFrom(d.Source, 0)
	}
	rctx, cancel := context.WithTimeoutCause(ctx, d.ResolveTimeout+time.Second, &timeoutError{op: "resolve_addr", limit: d.ResolveTimeout.String()})
	err = id.ResolveAddr(rctx, src, dst, d.ResolveTimeout)
	cancel()
	if err != nil {
		return fail(causeOf(rctx, err))
	}
	rctx, cancel = context.WithTimeoutCause(ctx, d.ResolveTimeout+time.Second, &timeoutError{op: "resolve_route", limit: d.ResolveTimeout.String()})
	err = id.ResolveRoute(rctx, d.ResolveTimeout)
	cancel()
	if err != nil {
		return fail(causeOf(rctx, err))
	}
	if err := c.build(); err != nil {
		return fail(err)
	}
	return c, nil
}

// causeOf returns the timeout cause when ctx ran out of its own limit.
func causeOf(ctx context.Context, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		if cause := context.Cause(ctx); cause != nil {
			return cause
		}
	}
	return err
}

// setOptions applies the ID options of the Config, before route
// resolution (the route carries the TOS; the ACK timeout is read at RTS).
func (c *Conn) setOptions() error {
	if c.cfg.TOS != 0 {
		if err := c.id.SetTOS(c.cfg.TOS); err != nil {
			return err
		}
	}
	if c.cfg.ACKTimeout != 0 {
		if err := c.id.SetACKTimeout(c.cfg.ACKTimeout); err != nil {
			return err
		}
	}
	return nil
}

// newChannelID opens an event channel of its own for one ID (a Dial's or a
// Listener's) and creates the ID on it.
func newChannelID(ps PortSpace, logf func(string, ...any)) (*EventChannel, *ID, error) {
	ch, err := NewEventChannel()
	if err != nil {
		return nil, nil, err
	}
	id, err := ch.CreateID(ps)
	if err != nil {
		ch.Close()
		return nil, nil, err
	}
	id.SetLogf(logf)
	return ch, id, nil
}

// build makes the verbs objects on the ID's device.
func (c *Conn) build() error {
	dev, _, ok := c.id.Device()
	if !ok {
		return &OpError{Op: "create_qp", Err: fmt.Errorf("%s has no RDMA device: %w", c.id, unix.EINVAL)}
	}
	if c.cfg.PD != nil {
		c.pd = c.cfg.PD
	} else {
		ctx, err := uverbs.OpenDevice(dev)
		if err != nil {
			return err
		}
		c.ctx = ctx
		pd, err := ctx.AllocPD()
		if err != nil {
			return err
		}
		c.pd = pd
	}
	vctx := c.pd.Context()
	ch, err := vctx.NewCompChannel()
	if err != nil {
		return err
	}
	c.ch = ch
	cq, err := vctx.CreateCQ(uverbs.CQInit{Depth: c.cfg.CQDepth, Channel: ch})
	if err != nil {
		return err
	}
	c.cq = cq
	qp, err := c.id.CreateQP(c.pd, uverbs.QPInit{SendCQ: cq, RecvCQ: cq, Cap: uverbs.QPCap{
		MaxSendWR: c.cfg.SendDepth, MaxRecvWR: c.cfg.RecvDepth,
		MaxSendSGE: c.cfg.SendSGE, MaxRecvSGE: c.cfg.RecvSGE, MaxInline: c.cfg.MaxInline,
	}})
	if err != nil {
		return err
	}
	c.qp = qp
	return nil
}

// Connect sends the connection request with privateData and returns once the
// connection is established (see ID.Connect). On failure the Conn stays
// to be closed.
func (c *Conn) Connect(ctx context.Context, privateData []byte) error {
	cctx, cancel := context.WithTimeoutCause(ctx, c.cfg.ConnectTimeout, &timeoutError{op: "connect", limit: c.cfg.ConnectTimeout.String()})
	defer cancel()
	e, err := c.id.Connect(cctx, c.cfg.connParam(), privateData)
	if err != nil {
		return causeOf(cctx, err)
	}
	c.peerData = e.PrivateData
	if c.id.ps == PortSpaceUDP {
		return c.setUDPeer(e)
	}
	return nil
}

// setUDPeer keeps the peer of a UD connection and its address handle.
func (c *Conn) setUDPeer(e Event) error {
	c.udQPN, c.udQKey = e.RemoteQPN, e.QKey
	ah, err := c.pd.CreateAH(e.AH)
	if err != nil {
		return err
	}
	c.udAH = ah
	return nil
}

// Accept accepts the connection request of a Conn from
// Listener.GetRequest, with privateData (at most MaxAcceptPrivateData
// bytes), and returns once it is established.
func (c *Conn) Accept(ctx context.Context, privateData []byte) error {
	actx, cancel := context.WithTimeoutCause(ctx, c.cfg.ConnectTimeout, &timeoutError{op: "accept", limit: c.cfg.ConnectTimeout.String()})
	defer cancel()
	return causeOf(actx, c.id.Accept(actx, c.cfg.connParam(), privateData))
}

// Reject refuses the connection request of a Conn from Listener.GetRequest,
// with privateData for the peer (at most MaxRejectPrivateData bytes), and
// closes the Conn.
func (c *Conn) Reject(privateData []byte) error {
	err := c.id.Reject(privateData)
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	return err
}

// ID returns the connection's CM ID.
func (c *Conn) ID() *ID { return c.id }

// QP returns the connection's QP.
func (c *Conn) QP() *uverbs.QP { return c.qp }

// PD returns the connection's PD: register memory for the connection there.
func (c *Conn) PD() *uverbs.PD { return c.pd }

// CQ returns the CQ of both the send and the receive queue.
func (c *Conn) CQ() *uverbs.CQ { return c.cq }

// Channel returns the completion channel of the CQ.
func (c *Conn) Channel() *uverbs.CompChannel { return c.ch }

// Context returns the device context of the connection.
func (c *Conn) Context() *uverbs.Context { return c.pd.Context() }

// Port returns the device port of the connection.
func (c *Conn) Port() uint8 {
	_, port, _ := c.id.Device()
	return port
}

// PeerPrivateData returns the private data the peer sent: the request's on
// the accepting side, the accept's on the connecting side. The CM pads it
// with zeros to its fixed size (56 bytes for a request, 196 for an accept);
// a protocol that needs the length carries it inside.
func (c *Conn) PeerPrivateData() []byte { return c.peerData }

// UDPeer returns, on the connecting side of a UD connection, the address
// handle, QP number and QKey to send to the peer with. The accepting side
// learns nothing of the peer from the CM (a SIDR request carries only
// private data, kernel: core/cma.c cma_ib_req_handler); it answers the
// datagrams it receives, whose completions name the sender.
func (c *Conn) UDPeer() (ah *uverbs.AH, qpn, qkey uint32) { return c.udAH, c.udQPN, c.udQKey }

// LocalAddr returns the connection's local IP address and port.
func (c *Conn) LocalAddr() netip.AddrPort {
	local, _ := c.id.addrs()
	return local
}

// RemoteAddr returns the peer's address and port.
func (c *Conn) RemoteAddr() netip.AddrPort {
	_, remote := c.id.addrs()
	return remote
}

// Done is closed when the connection ends: the peer disconnected, the
// device went away, or Disconnect or Close was called and the CM confirmed.
func (c *Conn) Done() <-chan struct{} { return c.id.Done() }

// Disconnect moves the QP to ERR (all posted work comes back flushed on the
// CQ) and tells the peer; Done is closed when the CM confirms.
func (c *Conn) Disconnect() error { return c.id.Disconnect() }

// Close tears the connection down in order: disconnect (if still
// connected), QP (flushed work is left on the CQ until the CQ is closed;
// poll before Close to see it), CQ, completion channel, then the device
// with its PD and any memory still registered there (unless Config.PD), then
// the ID and its event channel. It never waits for the peer and is
// idempotent. Memory registered on the Conn's PD may be deregistered before
// Close (after Disconnect and polling, or QP().Close(), so that no posted
// work names it) or left to Close.
func (c *Conn) Close() error {
	if c == nil {
		return nil
	}
	c.closeOnce.Do(func() {
		var errs []error
		keep := func(err error) {
			if err != nil && !errors.Is(err, ErrClosed) {
				errs = append(errs, err)
			}
		}
		c.id.mu.Lock()
		if !c.id.closed && c.id.state == stateConnected && c.id.ps == PortSpaceTCP {
			if err := c.id.disconnectLocked(); err != nil && !errors.Is(err, unix.EINVAL) {
				keep(err)
			}
		}
		c.id.mu.Unlock()
		keep(c.udAH.Close())
		keep(c.qp.Close())
		keep(c.cq.Close())
		keep(c.ch.Close())
		// A PD of the Conn's own goes with its device: closing the device
		// makes the kernel destroy what is still registered on the PD
		// (kernel: core/uverbs_main.c ib_uverbs_close), and the MRs'
		// Close then does nothing. A PD from Config.PD stays.
		keep(c.ctx.Close())
		keep(c.id.Close())
		keep(c.ownCh.Close())
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}
