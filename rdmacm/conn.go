package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/goverbs/rdma/internal/unix"
	"github.com/goverbs/rdma/uverbs"
)

// Conn is a connection made through the CM: its ID, and the verbs objects
// built for it on the CM's device: a PD (unless Config.PD), one CQ with a
// completion channel for both queues, and the QP. Post work on QP(); take
// completions with CQ().Poll, or CQ().PollWait to sleep while there are
// none.
//
// The PD is shared: all the process's connections on one device use one
// PD (librdmacm does the same), unless Config.PD gives one. Register the
// connection's memory with Conn.RegMR, which Shutdown and Close
// deregister; memory registered on PD() directly is the caller's to
// deregister, and stays registered until then or until the process's last
// connection on the device is closed.
//
// Shutdown ends the connection in order and waits for the peer; Close
// frees everything without waiting: it disconnects, closes the QP (its
// pending work is flushed), the CQ, the channel, the Conn's MRs, gives up
// its hold on the shared device, then destroys the ID.
type Conn struct {
	cfg   Config
	id    *ID
	ownCh *EventChannel // the Dial side's own event channel

	shared *sharedDevice // the device and PD, nil with Config.PD
	pd     *uverbs.PD
	ch     *uverbs.CompChannel
	cq     *uverbs.CQ
	qp     *uverbs.QP

	mrMu sync.Mutex
	mrs  []*uverbs.MR // registered by RegMR

	peerData []byte
	udQPN    uint32
	udQKey   uint32
	udAH     *uverbs.AH

	closeOnce sync.Once
	closeErr  error
}

// Dial connects to address ("10.0.0.1:7471", "[fe80::1%eth0]:7471" or
// "host:port") and returns an established connection. Everything made on
// the way is freed when it fails, with one of:
//
//   - ctx.Err(), when ctx ends first;
//   - an error matching ErrTimeout (and context.DeadlineExceeded) when
//     Config.ResolveTimeout or Config.ConnectTimeout runs out;
//   - *EventError matching ErrAddrResolve or ErrRouteResolve: no way to the
//     address through an RDMA device;
//   - *EventError matching ErrUnreachable: the peer's CM did not answer, or
//     the handshake could not be completed after the peer's reply
//     (CONNECT_ERROR; the peer went away between its reply and the RTU);
//   - *EventError matching ErrDisconnected: the peer disconnected during
//     the handshake;
//   - *RejectError (ErrRejected, and ErrConnRefused when nothing listens);
//   - an error matching uverbs.ErrNoDevice: no CM or no RDMA device here;
//   - *OpError for a bad address, Config or a local failure (the device,
//     locked memory), which says what to change.
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
//
// rdma-core: rdma_create_ep.
func Resolve(ctx context.Context, address string, cfg *Config) (*Conn, error) {
	d := cfg.withDefaults()
	ps, err := d.portSpace()
	if err != nil {
		return nil, &OpError{Op: "dial", Err: err}
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
	// The wait gets a second more than the kernel's own limit, so that
	// the kernel's ADDR_ERROR or ROUTE_ERROR, if it comes, is what is seen.
	err = limited(ctx, "resolve_addr", d.ResolveTimeout, time.Second, func(ctx context.Context) error {
		return id.resolveAddr(ctx, src, dst, d.ResolveTimeout)
	})
	if err != nil {
		return fail(err)
	}
	// The private data's limit is the device's (IB CM or MPA).
	if err := id.checkConnectData("dial", d.PrivateData); err != nil {
		return fail(err)
	}
	err = limited(ctx, "resolve_route", d.ResolveTimeout, time.Second, func(ctx context.Context) error {
		return id.resolveRoute(ctx, d.ResolveTimeout)
	})
	if err != nil {
		return fail(err)
	}
	if err := c.build(); err != nil {
		return fail(err)
	}
	return c, nil
}

// limited runs f under ctx bounded by limit (plus slack), and returns a
// timeout error naming op and limit when that bound is what ran out.
func limited(ctx context.Context, op string, limit, slack time.Duration, f func(context.Context) error) error {
	lctx, cancel := context.WithTimeoutCause(ctx, limit+slack, &timeoutError{op: op, limit: limit.String()})
	defer cancel()
	err := f(lctx)
	if errors.Is(err, context.DeadlineExceeded) {
		if cause := context.Cause(lctx); cause != nil {
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
	dev, _, ok := c.id.device()
	if !ok {
		return &OpError{Op: "create_qp", Err: fmt.Errorf("%s has no RDMA device: %w", c.id, unix.EINVAL)}
	}
	if c.cfg.PD != nil {
		c.pd = c.cfg.PD
	} else {
		sd, err := devices.acquire(dev)
		if err != nil {
			return err
		}
		c.shared = sd
		c.pd = sd.pd
	}
	vdev := c.pd.Device()
	ch, err := vdev.NewCompChannel()
	if err != nil {
		return err
	}
	c.ch = ch
	cq, err := vdev.CreateCQ(uverbs.CQInit{Depth: c.cfg.CQDepth, Channel: ch})
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
//
// rdma-core: rdma_connect.
func (c *Conn) Connect(ctx context.Context, privateData []byte) error {
	var e Event
	err := limited(ctx, "connect", c.cfg.ConnectTimeout, 0, func(ctx context.Context) (err error) {
		e, err = c.id.Connect(ctx, c.cfg.connParam(), privateData)
		return err
	})
	if err != nil {
		return err
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
// bytes, MaxIWARPPrivateData on iWARP), and returns once it is
// established. When the accept fails the Conn is closed, as Dial closes
// what it made: a request accepted once cannot be answered again. Too much
// private data is refused before anything is sent, and the Conn stays
// open (Reject it then).
//
// rdma-core: rdma_accept.
func (c *Conn) Accept(ctx context.Context, privateData []byte) error {
	if err := c.id.checkAcceptData("accept", privateData); err != nil {
		return err
	}
	request := c.id.isRequest()
	err := limited(ctx, "accept", c.cfg.ConnectTimeout, 0, func(ctx context.Context) error {
		return c.id.Accept(ctx, c.cfg.connParam(), privateData)
	})
	if err != nil && request {
		c.Close()
	}
	return err
}

// Reject refuses the connection request of a Conn from Listener.GetRequest,
// with privateData for the peer (at most MaxRejectPrivateData bytes,
// MaxIWARPPrivateData on iWARP), and closes the Conn. Too much private
// data is refused before anything is sent, and the Conn stays open.
//
// rdma-core: rdma_reject.
func (c *Conn) Reject(privateData []byte) error {
	if err := c.id.checkRejectData("reject", privateData); err != nil {
		return err
	}
	err := c.id.Reject(privateData)
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	return err
}

// ID returns the connection's CM ID.
func (c *Conn) ID() *ID { return c.id }

// QP returns the connection's QP.
//
// rdma-core: the qp of struct rdma_cm_id.
func (c *Conn) QP() *uverbs.QP { return c.qp }

// PD returns the connection's PD: Config.PD, or the PD the process's
// connections on this device share. Register memory with RegMR, or on the
// PD and deregister it yourself.
//
// rdma-core: the pd of struct rdma_cm_id.
func (c *Conn) PD() *uverbs.PD { return c.pd }

// RegMR registers buf on the connection's PD for the connection: Shutdown
// and Close deregister it (after the QP is closed, so no posted work names
// it). Closing the MR earlier is allowed.
//
// rdma-core: rdma_reg_msgs, rdma_reg_read, rdma_reg_write (ibv_reg_mr).
func (c *Conn) RegMR(buf []byte, access uverbs.Access) (*uverbs.MR, error) {
	mr, err := c.pd.RegMR(buf, access)
	if err != nil {
		return nil, err
	}
	c.mrMu.Lock()
	c.mrs = append(c.mrs, mr)
	c.mrMu.Unlock()
	return mr, nil
}

// CQ returns the CQ of both the send and the receive queue.
//
// rdma-core: the send_cq and recv_cq of struct rdma_cm_id.
func (c *Conn) CQ() *uverbs.CQ { return c.cq }

// Channel returns the completion channel of the CQ.
//
// rdma-core: the send_cq_channel and recv_cq_channel of struct rdma_cm_id.
func (c *Conn) Channel() *uverbs.CompChannel { return c.ch }

// Device returns the opened device of the connection. Unless Config.PD
// gave the PD, the process's connections on the device share it: leave
// closing it to the connections.
//
// rdma-core: the verbs of struct rdma_cm_id.
func (c *Conn) Device() *uverbs.Device { return c.pd.Device() }

// DeviceInfo returns the device of the connection as uverbs.Devices lists
// it, the same as ID.DeviceInfo of its ID.
//
// rdma-core: the verbs of struct rdma_cm_id.
func (c *Conn) DeviceInfo() (dev uverbs.DeviceInfo, ok bool) { return c.id.DeviceInfo() }

// Port returns the device port of the connection.
//
// rdma-core: the port_num of struct rdma_cm_id.
func (c *Conn) Port() uint8 {
	_, port, _ := c.id.device()
	return port
}

// PeerPrivateData returns the private data the peer sent: the request's on
// the accepting side, the accept's on the connecting side. The CM pads it
// with zeros to its fixed size (56 bytes for a request, 196 for an accept);
// a protocol that needs the length carries it inside.
//
// rdma-core: the private_data of struct rdma_conn_param in the event.
func (c *Conn) PeerPrivateData() []byte { return c.peerData }

// UDPeer returns, on the connecting side of a UD connection, the address
// handle, QP number and QKey to send to the peer with. The accepting side
// learns nothing of the peer from the CM (a SIDR request carries only
// private data, kernel: core/cma.c cma_ib_req_handler); it answers the
// datagrams it receives, whose completions name the sender.
//
// rdma-core: the ah_attr, qp_num and qkey of struct rdma_ud_param in the event.
func (c *Conn) UDPeer() (ah *uverbs.AH, qpn, qkey uint32) { return c.udAH, c.udQPN, c.udQKey }

// LocalAddr returns the connection's local IP address and port.
//
// rdma-core: rdma_get_local_addr.
func (c *Conn) LocalAddr() netip.AddrPort {
	local, _ := c.id.addrs()
	return local
}

// RemoteAddr returns the peer's address and port.
//
// rdma-core: rdma_get_peer_addr.
func (c *Conn) RemoteAddr() netip.AddrPort {
	_, remote := c.id.addrs()
	return remote
}

// Done is closed when the connection ends: the peer disconnected, the
// device went away, or Disconnect or Close was called and the CM confirmed.
func (c *Conn) Done() <-chan struct{} { return c.id.Done() }

// Disconnect moves the QP to ERR (all posted work comes back flushed on the
// CQ) and tells the peer; Done is closed when the CM confirms. A Conn that
// was never connected gives ErrNotConnected.
//
// rdma-core: rdma_disconnect.
func (c *Conn) Disconnect() error { return c.id.Disconnect() }

// Shutdown ends the connection in order and waits for it, so that nothing
// is freed under work in flight: it disconnects (unless the connection
// ended already), waits until the CM confirms (Done) or ctx ends, closes
// the QP, which waits until the kernel has flushed every posted work
// request onto the CQ (poll it to see them), and deregisters the MRs of
// RegMR. Free the buffers behind them, then Close the Conn. A Conn that
// was never connected gives ErrNotConnected, after the same steps.
func (c *Conn) Shutdown(ctx context.Context) error {
	var errs []error
	select {
	case <-c.Done():
	default:
		err := c.id.Disconnect()
		if err == nil {
			select {
			case <-c.Done():
			case <-ctx.Done():
				errs = append(errs, fmt.Errorf("shutdown: waiting for the CM to confirm the disconnect: %w", ctx.Err()))
			}
		} else {
			errs = append(errs, err)
		}
	}
	errs = append(errs, c.qp.Close(), c.closeMRs())
	return errors.Join(errs...)
}

// closeMRs deregisters the MRs of RegMR.
func (c *Conn) closeMRs() error {
	c.mrMu.Lock()
	mrs := c.mrs
	c.mrs = nil
	c.mrMu.Unlock()
	var errs []error
	for _, mr := range mrs {
		if err := mr.Close(); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close tears the connection down in order without waiting for the peer:
// disconnect (if still connected), QP (flushed work is left on the CQ until
// the CQ is closed; poll before Close, or use Shutdown, to see it), CQ,
// completion channel, the MRs of RegMR, the Conn's hold on the shared
// device (the last connection on a device closes it, with its PD and
// whatever is still registered there), then the ID and its event channel.
// It is idempotent.
//
// rdma-core: rdma_destroy_ep.
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
		keep(c.id.disconnectIfConnected())
		keep(c.udAH.Close())
		keep(c.qp.Close())
		keep(c.cq.Close())
		keep(c.ch.Close())
		keep(c.closeMRs())
		keep(devices.release(c.shared))
		keep(c.id.Close())
		keep(c.ownCh.Close())
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}
