package rsocket

import (
	"context"
	"errors"
	"net"
	"sync"

	"github.com/goverbs/rdma/rdmacm"
)

// ListenConfig makes Listeners whose connections have its Options.
type ListenConfig struct {
	Options
	// Backlog is how many accepted connections wait for Accept; default 128.
	// Connection requests beyond it wait in the CM.
	Backlog int
}

// Listen listens on address (":7471", "10.0.0.1:7471", "[::]:7471") on
// network "rdma", "rdma4" or "rdma6" with the default Options.
//
// rdma-core: rsocket, rbind, rlisten.
func Listen(ctx context.Context, network, address string) (*Listener, error) {
	var lc ListenConfig
	return lc.Listen(ctx, network, address)
}

// Listener accepts rsocket connections. As rsocket's listener does, it
// answers each connection request in the background as soon as it comes
// (rs_accept): Accept only takes an established connection.
type Listener struct {
	cm      *rdmacm.Listener
	set     settings
	addr    *Addr
	conns   chan *Conn
	closing chan struct{}
	setups  sync.WaitGroup
	loop    sync.WaitGroup
	once    sync.Once
	err     error // why the accept loop ended, if not Close
	cerr    error // what Close returned
}

// most answers in flight at once; more requests wait in the CM
const maxSetups = 64

// Listen binds address and listens (rlisten with SO_REUSEADDR, as
// rstream's server sets it).
//
// rdma-core: rsocket, rbind, rlisten.
func (lc *ListenConfig) Listen(ctx context.Context, network, address string) (*Listener, error) {
	opErr := func(err error) error { return &net.OpError{Op: "listen", Net: network, Err: err} }
	s, err := lc.Options.settings()
	if err != nil {
		return nil, opErr(err)
	}
	ap, err := rdmacm.ParseAddress(ctx, address)
	if err == nil {
		err = ipFamily(network, ap)
	}
	if err != nil {
		return nil, opErr(err)
	}
	cfg := s.cmConfig()
	cfg.Backlog = lc.Backlog
	cm, err := rdmacm.Listen(ctx, ap.String(), cfg)
	if err != nil {
		return nil, opErr(err)
	}
	backlog := lc.Backlog
	if backlog <= 0 {
		backlog = 128
	}
	l := &Listener{cm: cm, set: s, addr: &Addr{cm.Addr()}, conns: make(chan *Conn, backlog), closing: make(chan struct{})}
	l.loop.Add(1)
	go l.serve()
	return l, nil
}

// serve takes connection requests and answers each in a goroutine of its
// own, so that a client that stalls its handshake holds up no other.
func (l *Listener) serve() {
	defer l.loop.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-l.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	slots := make(chan struct{}, maxSetups)
	for {
		req, err := l.cm.GetRequest(ctx)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, rdmacm.ErrClosed) {
				l.err = err
			}
			// Answers in flight still send on conns (or, once the
			// Listener closes, close what they made).
			l.setups.Wait()
			close(l.conns)
			return
		}
		select {
		case slots <- struct{}{}:
		case <-l.closing:
			req.Close()
			continue
		}
		l.setups.Add(1)
		go func() {
			defer l.setups.Done()
			defer func() { <-slots }()
			from := req.RemoteAddr() // gone once answer rejects and closes req
			c, err := l.answer(ctx, req)
			if err != nil {
				l.set.logf("rsocket: connection request from %v: %v", from, err)
				return
			}
			select {
			case l.conns <- c:
			case <-l.closing:
				c.Close()
			}
		}()
	}
}

// answer is rs_accept: check the request's rs_conn_data (a peer of another
// protocol version is rejected with no private data, as rsocket does),
// build the buffers, post the receives and accept with our rs_conn_data.
func (l *Listener) answer(ctx context.Context, req *rdmacm.Conn) (*Conn, error) {
	peer, err := parseConnData(req.PeerPrivateData())
	if err != nil {
		req.Reject(nil)
		return nil, err
	}
	c, err := newConn(req, l.set)
	if err == nil {
		// MPA: the responder sends its first FPDU only after the
		// initiator's first one; siw fails the client's connection
		// (EPROTO) if data follow its MPA reply before it has read the
		// reply (kernel: drivers/infiniband/sw/siw/siw_cm.c
		// siw_recv_mpa_rr, "peer sent extra data").
		c.quiet = c.msgSend
		err = req.Accept(ctx, c.connData())
	}
	if err != nil {
		req.Close()
		if c != nil {
			c.freeBuffers()
		}
		return nil, err
	}
	c.start(peer)
	l.set.logf("rsocket %v: accepted on %v", c.raddr, c.laddr)
	return c, nil
}

// Accept returns the next established connection (net.Listener).
//
// rdma-core: raccept.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.AcceptConn(context.Background())
	if err != nil {
		return nil, err // not a net.Conn holding a nil *Conn
	}
	return c, nil
}

// AcceptConn waits for the next established connection, or until ctx ends.
//
// rdma-core: raccept.
func (l *Listener) AcceptConn(ctx context.Context) (*Conn, error) {
	select {
	case c, ok := <-l.conns:
		if ok {
			return c, nil
		}
	case <-ctx.Done():
		return nil, l.opError(ctx.Err())
	}
	select {
	case <-l.closing:
		return nil, l.opError(errClosed)
	default:
	}
	if l.err != nil {
		return nil, l.opError(l.err)
	}
	return nil, l.opError(errClosed)
}

func (l *Listener) opError(err error) error {
	return &net.OpError{Op: "accept", Net: Network, Addr: l.addr, Err: err}
}

// Addr returns the address the Listener listens on (an *Addr).
//
// rdma-core: rgetsockname.
func (l *Listener) Addr() net.Addr { return l.addr }

// Close stops listening: requests not answered yet are refused, and
// connections established but not yet accepted are closed. Connections
// already returned by Accept stay open. Close is idempotent, safe on a
// nil *Listener, and returns again what it returned first.
//
// rdma-core: rclose.
func (l *Listener) Close() error {
	if l == nil {
		return nil
	}
	l.once.Do(func() {
		close(l.closing)
		l.cerr = l.cm.Close()
		l.loop.Wait()
		l.setups.Wait()
		for c := range l.conns {
			c.Close()
		}
	})
	return l.cerr
}
