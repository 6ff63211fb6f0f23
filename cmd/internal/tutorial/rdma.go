package tutorial

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/goverbs/rdma/internal/cmdline"
	"github.com/goverbs/rdma/internal/unix"
	"github.com/goverbs/rdma/rdmacm"
	"github.com/goverbs/rdma/uverbs"
)

// rdmaEndpoint is an Endpoint over an rdmacm connection: memory is
// registered on the connection's PD, completions come from its one CQ,
// waited for on its completion channel (no busy polling).
type rdmaEndpoint struct {
	conn *rdmacm.Conn
	bufs []*uverbs.Buffer // the MRs on them are the Conn's (RegMR)

	// ended is cancelled when the connection ends, so that a wait on the
	// completion channel stops.
	ended  context.Context
	cancel context.CancelFunc

	wcs    [16]uverbs.WC
	queued []uverbs.WC
	grace  bool // the wait for completions after the end has been done

	connected    bool
	disconnected bool
}

func newRDMAEndpoint(conn *rdmacm.Conn) *rdmaEndpoint {
	e := &rdmaEndpoint{conn: conn}
	e.ended, e.cancel = context.WithCancel(context.Background())
	go func() {
		select {
		case <-conn.Done():
		case <-e.ended.Done():
		}
		e.cancel()
	}()
	return e
}

func (e *rdmaEndpoint) Register(name string, size int, access uverbs.Access) (*Region, error) {
	buf, err := uverbs.AllocBuffer(size)
	if err != nil {
		return nil, err
	}
	mr, err := e.conn.RegMR(buf.Bytes(), access) // Shutdown deregisters it
	if err != nil {
		buf.Close()
		return nil, err
	}
	e.bufs = append(e.bufs, buf)
	return &Region{Name: name, Buf: buf.Bytes(), Addr: mr.Addr(), LKey: mr.LKey(), RKey: mr.RKey()}, nil
}

func (e *rdmaEndpoint) PostSend(wr uverbs.SendWR) error {
	return e.conn.QP().PostSend([]uverbs.SendWR{wr})
}

func (e *rdmaEndpoint) PostRecv(wr uverbs.RecvWR) error {
	return e.conn.QP().PostRecv([]uverbs.RecvWR{wr})
}

func (e *rdmaEndpoint) PeerPrivateData() []byte { return e.conn.PeerPrivateData() }
func (e *rdmaEndpoint) Done() <-chan struct{}   { return e.conn.Done() }

// endGrace is how long Next still waits for completions once the
// connection has ended: the peer's last messages and the flushes of what
// is posted here.
const endGrace = time.Second

// Next returns the next completion, sleeping on the completion channel
// while the CQ is empty (CQ.PollWait). Once the connection has ended it
// waits up to endGrace for more, then reports errPeerGone.
func (e *rdmaEndpoint) Next(ctx context.Context) (uverbs.WC, error) {
	for len(e.queued) == 0 {
		if err := ctx.Err(); err != nil {
			return uverbs.WC{}, err
		}
		var wctx context.Context
		var cancel context.CancelFunc
		if e.ended.Err() != nil {
			if e.grace {
				return uverbs.WC{}, errPeerGone
			}
			e.grace = true
			wctx, cancel = context.WithTimeout(ctx, endGrace)
		} else {
			wctx, cancel = mergeCancel(e.ended, ctx)
		}
		n, err := e.conn.CQ().PollWait(wctx, e.wcs[:])
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return uverbs.WC{}, ctx.Err()
			}
			if wctx.Err() != nil {
				continue // ended or grace over
			}
			return uverbs.WC{}, err
		}
		e.queued = e.wcs[:n]
	}
	wc := e.queued[0]
	e.queued = e.queued[1:]
	return wc, nil
}

// mergeCancel returns a context that ends with a or b.
func mergeCancel(a, b context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(a)
	stop := context.AfterFunc(b, cancel)
	return ctx, func() { stop(); cancel() }
}

// disconnect ends the connection and waits up to limit for the CM to
// confirm.
func (e *rdmaEndpoint) disconnect(tr *Trace, limit time.Duration) {
	select {
	case <-e.conn.Done():
		return
	default:
	}
	if !e.connected || e.disconnected {
		return
	}
	e.disconnected = true
	tr.Slow("rdma_disconnect")
	if err := e.conn.Disconnect(); err != nil {
		tr.Slow("disconnect: %v", err)
		return
	}
	select {
	case <-e.conn.Done():
		tr.Slow("DISCONNECTED")
	case <-time.After(limit):
	}
}

// close frees everything in the order that never frees memory under work
// in flight: Shutdown (disconnect unless done, flush the QP, deregister the
// MRs), then the buffers, then the rest of the connection. A peer that does
// not confirm the disconnect within closeWait is not waited for.
func (e *rdmaEndpoint) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	errs := []error{e.conn.Shutdown(ctx)}
	if errors.Is(errs[0], rdmacm.ErrNotConnected) || errors.Is(errs[0], context.DeadlineExceeded) {
		errs[0] = nil
	}
	for _, b := range e.bufs {
		errs = append(errs, b.Close())
	}
	errs = append(errs, e.conn.Close())
	e.cancel()
	return errors.Join(errs...)
}

const closeWait = 2 * time.Second

// dumpQP traces the QP's attributes as roce-lab's dump_qp does.
func dumpQP(tr *Trace, qp *uverbs.QP) {
	if !tr.Enabled() {
		return
	}
	a, err := qp.Query(0)
	if err != nil {
		tr.Slow("query QP %#x: %v", qp.QPN(), err)
		return
	}
	tr.Slow("QP dump: qpn=%#x state=%v mtu=%v sq_psn=%#x rq_psn=%#x dest_qpn=%#x max_rd_atomic=%d max_dest_rd_atomic=%d retry=%d rnr_retry=%d timeout=%d",
		qp.QPN(), a.State, a.PathMTU, a.SQPSN, a.RQPSN, a.DestQPN, a.MaxRDAtomic, a.MaxDestRDAtomic, a.RetryCount, a.RNRRetry, a.Timeout)
	tr.Slow("QP caps: max_send_wr=%d max_recv_wr=%d max_sge={s=%d,r=%d} max_inline=%d",
		a.Cap.MaxSendWR, a.Cap.MaxRecvWR, a.Cap.MaxSendSGE, a.Cap.MaxRecvSGE, a.Cap.MaxInline)
}

func traceBuilt(tr *Trace, conn *rdmacm.Conn) {
	tr.Slow("built on %s port %d: PD, completion channel, CQ of %d entries, RC QP %#x", conn.Device().Name(), conn.Port(), conn.CQ().Depth(), conn.QP().QPN())
	dumpQP(tr, conn.QP())
}

// privateText describes private data for the trace: its length without the
// CM's zero padding, and the bytes.
func privateText(b []byte) string {
	n := len(b)
	for n > 0 && b[n-1] == 0 {
		n--
	}
	if n == 0 {
		return fmt.Sprintf("%d bytes, all zero", len(b))
	}
	return fmt.Sprintf("%d bytes (%d before the zero padding): % x", len(b), n, b[:n])
}

// cmConfig is the connection configuration of a mode.
func cmConfig(o Options, tr *Trace) *rdmacm.Config {
	param := o.Mode.Param
	cfg := &rdmacm.Config{SendDepth: 16, RecvDepth: 16, ConnParam: &param, Backlog: 64}
	if tr.Enabled() {
		cm := tr.With("cm")
		cfg.Logf = func(format string, args ...any) { cm.Slow(format, args...) }
	}
	return cfg
}

// system is what a run takes from the machine rather than from the
// command line; tests give their own (Options.sys).
type system struct {
	devices          func() ([]uverbs.DeviceInfo, error) // the RDMA devices
	afterEstablished func(ctx context.Context)           // runs once a client is connected; nil: nothing
	linger           time.Duration                       // how long a server waits for its client to disconnect first
}

// machine is the system the programs run on.
var machine = system{devices: uverbs.Devices, linger: 30 * time.Second}

// needDevice refuses to start without an RDMA device, with the advice of
// uverbs.ErrNoDevice.
func needDevice(e system) error {
	devs, err := e.devices()
	if err != nil {
		return err
	}
	if len(devs) == 0 {
		return uverbs.ErrNoDevice
	}
	return nil
}

// Server listens and serves each connection in its own goroutine until ctx
// ends; it then closes the listener and every connection and returns nil.
func Server(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	if err := needDevice(o.sys); err != nil {
		return err
	}
	out := &cmdline.LockedWriter{W: stdout}
	var tw io.Writer
	if o.Verbose {
		tw = &cmdline.LockedWriter{W: stderr}
	}
	tr := NewTrace(tw, "server")
	host := o.Addr
	if host == "" {
		host = "0.0.0.0"
	}
	addr := net.JoinHostPort(host, strconv.Itoa(o.Port))
	tr.Slow("create CM channel + listen on %s", addr)
	l, err := rdmacm.Listen(ctx, addr, cmConfig(o, tr))
	if err != nil {
		return explain("listen on "+addr, addr, err)
	}
	// Bound to an address, the listener has its device: refuse a mode it
	// cannot run before listening for clients. On a wildcard address each
	// request is checked (serveConn).
	if dev, ok := l.ID().DeviceInfo(); ok {
		if err := o.Mode.checkDevice(o.Proto, dev); err != nil {
			l.Close()
			return err
		}
	}
	fmt.Fprintf(out, "listening on %v (--proto %s, mode %s)\n", l.Addr(), o.Proto.Name, o.Mode.Name)
	tr.Slow("wait CONNECT_REQUEST")
	var wg sync.WaitGroup
	served := 0
	for {
		conn, err := l.GetRequest(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if errors.Is(err, rdmacm.ErrClosed) {
				l.Close()
				wg.Wait()
				return err
			}
			// A request that could not be set up was rejected; serve on.
			fmt.Fprintf(stderr, "rdma-server: %v\n", err)
			continue
		}
		served++
		wg.Add(1)
		go func() {
			defer wg.Done()
			peer := conn.RemoteAddr()
			if err := serveConn(ctx, o, conn, tr.With(peer.String()), out); err != nil {
				if ctx.Err() != nil {
					err = errors.New("stopped")
				}
				fmt.Fprintf(out, "%v: connection failed: %v\n", peer, err)
			} else {
				fmt.Fprintf(out, "%v: connection closed\n", peer)
			}
		}()
	}
	tr.Slow("stop: close the listener and every connection")
	l.Close()
	wg.Wait()
	fmt.Fprintf(out, "stopped after %d connection(s)\n", served)
	return nil
}

// serveConn answers one connection request and runs the server side.
func serveConn(ctx context.Context, o Options, conn *rdmacm.Conn, tr *Trace, out io.Writer) (err error) {
	peer := conn.RemoteAddr()
	ep := newRDMAEndpoint(conn)
	defer func() { err = errors.Join(err, ep.close()) }()
	fmt.Fprintf(out, "%v: connection request\n", peer)
	tr.Slow("CONNECT_REQUEST from %v to %v, private data %s", peer, conn.LocalAddr(), privateText(conn.PeerPrivateData()))
	traceBuilt(tr, conn)
	if err := o.Mode.checkDevice(o.Proto, conn.Device().Info()); err != nil {
		conn.ID().Reject(nil)
		return err
	}
	s := o.Mode.newSession(env{
		mode: o.Mode.Name, message: geekMessage(false, os.Getpid()), tr: tr,
		out: func(format string, args ...any) { fmt.Fprintf(out, "%v: %s\n", peer, fmt.Sprintf(format, args...)) },
	})
	tep := traced{ep, tr}
	pd, err := s.prepare(tep)
	if err != nil {
		conn.ID().Reject(nil)
		return err
	}
	tr.Slow("rdma_accept: responder_resources=%d initiator_depth=%d retry=%d rnr_retry=%d, private data %d bytes",
		o.Mode.Param.ResponderResources, o.Mode.Param.InitiatorDepth, o.Mode.Param.RetryCount, o.Mode.Param.RNRRetryCount, len(pd))
	if err := conn.Accept(ctx, pd); err != nil {
		return explain("accept", peer.String(), err)
	}
	ep.connected = true
	tr.Slow("ESTABLISHED")
	dumpQP(tr, conn.QP())
	// The QP retransmits as often as the client's request said; the geek
	// C client asks for 0 (02_read-write/rdma-common.c build_params). Not
	// on iWARP, where TCP retransmits and the QP has no retry count (siw
	// reports 0: kernel drivers/infiniband/sw/siw/siw_verbs.c
	// siw_query_qp).
	info := conn.Device().Info()
	if a, err := conn.QP().Query(0); err == nil && a.RetryCount == 0 && info.Transport() != uverbs.TransportIWARP {
		fmt.Fprintf(out, "%v: note: the client connected with retry count 0: one lost or late packet ends the connection (IBV_WC_RETRY_EXC_ERR)\n", peer)
	}
	if err := s.run(ctx, tep); err != nil {
		return err
	}
	// The client ends the connection when it is done.
	select {
	case <-conn.Done():
		tr.Slow("DISCONNECTED by the client")
		ep.disconnected = true
	case <-time.After(o.sys.linger):
		ep.disconnect(tr, 5*time.Second)
	case <-ctx.Done():
		ep.disconnect(tr, 5*time.Second)
	}
	return nil
}

// Client connects and runs the client side.
func Client(ctx context.Context, o Options, stdout, stderr io.Writer) (err error) {
	if err := needDevice(o.sys); err != nil {
		return err
	}
	var tw io.Writer
	if o.Verbose {
		tw = stderr
	}
	tr := NewTrace(tw, "client")
	addr := net.JoinHostPort(o.Addr, strconv.Itoa(o.Port))
	tr.Slow("create CM channel + ID; resolve address and route of %s", addr)
	conn, err := rdmacm.Resolve(ctx, addr, cmConfig(o, tr))
	if err != nil {
		return explain("connect to "+addr, addr, err)
	}
	ep := newRDMAEndpoint(conn)
	defer func() { err = errors.Join(err, ep.close()) }()
	traceBuilt(tr, conn)
	if err := o.Mode.checkDevice(o.Proto, conn.Device().Info()); err != nil {
		return err
	}
	s := o.Mode.newSession(env{
		client: true, mode: o.Mode.Name, message: o.Message, tr: tr,
		out: func(format string, args ...any) { fmt.Fprintf(stdout, format+"\n", args...) },
	})
	tep := traced{ep, tr}
	pd, err := s.prepare(tep)
	if err != nil {
		return err
	}
	p := o.Mode.Param
	tr.Slow("rdma_connect: responder_resources=%d initiator_depth=%d retry=%d rnr_retry=%d, private data %d bytes",
		p.ResponderResources, p.InitiatorDepth, p.RetryCount, p.RNRRetryCount, len(pd))
	if err := conn.Connect(ctx, pd); err != nil {
		return explain("connect to "+addr, addr, err)
	}
	ep.connected = true
	tr.Slow("ESTABLISHED with %v from %v, private data %s", conn.RemoteAddr(), conn.LocalAddr(), privateText(conn.PeerPrivateData()))
	dumpQP(tr, conn.QP())
	if o.sys.afterEstablished != nil {
		o.sys.afterEstablished(ctx)
	}
	if err := s.run(ctx, tep); err != nil {
		return err
	}
	ep.disconnect(tr, 5*time.Second)
	return nil
}

// explain turns a CM failure into one line saying what to do.
func explain(op, addr string, err error) error {
	says := func(format string, args ...any) error {
		return &explained{msg: op + ": " + fmt.Sprintf(format, args...), err: err}
	}
	switch {
	case errors.Is(err, context.Canceled),
		errors.Is(err, uverbs.ErrNoDevice), errors.Is(err, rdmacm.ErrNoCM):
		return err
	case errors.Is(err, rdmacm.ErrConnRefused):
		return says("nothing listens there: start rdma-server (same --proto, mode and -p) on that host first")
	case errors.Is(err, rdmacm.ErrRejected):
		return says("the server rejected the connection (%v)", err)
	case errors.Is(err, rdmacm.ErrAddrResolve), errors.Is(err, rdmacm.ErrRouteResolve):
		return says("cannot reach %s through an RDMA device: %v", addr, err)
	case errors.Is(err, unix.ENODEV):
		return says("no route to %s through an RDMA device: give an address on a netdev with an RDMA device (rxe or RoCE; the CM cannot use rxe on lo)", addr)
	case errors.Is(err, rdmacm.ErrUnreachable), errors.Is(err, rdmacm.ErrTimeout):
		return says("%s does not answer: is the host up, with an RDMA device? (%v)", addr, err)
	case errors.Is(err, unix.EADDRINUSE):
		return says("port in use (another rdma-server?): choose another with -p")
	case errors.Is(err, unix.EADDRNOTAVAIL):
		return says("not an address of this host with an RDMA device on its netdev: give -a one of its addresses, or add a device with `rdma-link add rxe0 netdev <netdev>`")
	}
	return fmt.Errorf("%s: %w", op, err)
}

// explained is an error with our own advice in place of the CM's text.
type explained struct {
	msg string
	err error
}

func (e *explained) Error() string { return e.msg }
func (e *explained) Unwrap() error { return e.err }
