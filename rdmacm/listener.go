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

// Listener listens for connections on an address through the CM. All its
// connections share its event channel (the kernel reports a request's
// events on the listener's fd); each connection's events still go to that
// connection alone.
type Listener struct {
	cfg  Config
	ch   *EventChannel
	id   *ID
	addr netip.AddrPort

	amu     sync.Mutex
	pending []pendingAccept // accepted, waiting for the client's RTU
	closed  bool            // Close has taken pending
}

// Listen listens on address ("10.0.0.1:7471", ":7471" for every address,
// "[::]:7471"). Port 0 picks a free port (Addr tells which).
//
// rdma-core: rdma_create_id + rdma_bind_addr + rdma_listen.
func Listen(ctx context.Context, address string, cfg *Config) (*Listener, error) {
	d := cfg.withDefaults()
	ps, err := d.portSpace()
	if err != nil {
		return nil, &OpError{Op: "listen", Err: err}
	}
	addr, err := ParseAddress(ctx, address)
	if err != nil {
		return nil, &OpError{Op: "listen", Err: err}
	}
	ch, id, err := newChannelID(ps, d.Logf)
	if err != nil {
		return nil, err
	}
	l := &Listener{cfg: d, ch: ch, id: id}
	if d.ReuseAddr {
		if err := id.SetReuseAddr(true); err != nil {
			l.Close()
			return nil, err
		}
	}
	if err := id.Bind(addr); err != nil {
		l.Close()
		return nil, err
	}
	if err := id.Listen(d.Backlog); err != nil {
		l.Close()
		return nil, err
	}
	info, err := id.Query()
	if err != nil {
		l.Close()
		return nil, err
	}
	l.addr = info.Local
	return l, nil
}

// Addr returns the address the listener is bound to, with the port the
// kernel picked if 0 was asked for.
//
// rdma-core: rdma_get_local_addr.
func (l *Listener) Addr() netip.AddrPort { return l.addr }

// ID returns the listening CM ID.
func (l *Listener) ID() *ID { return l.id }

// Accept waits for a connection request, builds its QP and CQ, accepts it
// with Config.PrivateData and returns the established connection. A
// request that fails on the way (the client gave up, or the handshake
// broke, or its client sent no RTU within Config.ConnectTimeout) is
// dropped with a line through Config.Logf, and Accept waits for the next.
// Accept returns an error only when ctx ends, the listener is closed or
// its device goes away, or this side cannot build connections at all (the
// device cannot be opened, locked memory runs out: see GetRequest).
//
// Accept answers every request that has arrived, not only the first:
// it builds and accepts each of them before it waits, and returns
// whichever connection is established first; the others are returned by
// the next calls. So a burst of requests costs one wait for the clients'
// RTUs, not one per request, and Accept may be called from several
// goroutines.
//
// rdma-core: rdma_get_request, then rdma_accept.
func (l *Listener) Accept(ctx context.Context) (*Conn, error) {
	// A listener on a wildcard address has no device, and is held to the
	// IB CM's limit, the smaller.
	if err := l.id.checkAcceptData("accept", l.cfg.PrivateData); err != nil {
		return nil, err
	}
	for {
		// Answer every request queued now, waiting for none.
		for {
			e, ok, err := l.id.nextEvent()
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			c, err := l.request(e)
			if err != nil {
				return nil, err
			}
			if c != nil {
				l.startAccept(c)
			}
		}
		c, next := l.established()
		if c != nil {
			l.id.wake() // another caller may find the next one ready
			return c, nil
		}
		if err := l.wait(ctx, next); err != nil {
			return nil, err
		}
	}
}

// wait waits for an event of the listener or of a pending accept, or for
// the deadline next (if not zero).
func (l *Listener) wait(ctx context.Context, next time.Time) error {
	var timeout <-chan time.Time
	if !next.IsZero() {
		t := time.NewTimer(time.Until(next))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-l.id.notify:
	case <-timeout:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// pendingAccept is a request Accept has accepted: it waits for the
// client's RTU (ESTABLISHED) until deadline.
type pendingAccept struct {
	c        *Conn
	deadline time.Time
}

// startAccept accepts c's request (its QP to RTS, then ACCEPT) and adds it
// to the accepts waiting for their RTU; the request's events then wake the
// listener's waiters too.
func (l *Listener) startAccept(c *Conn) {
	c.id.also.Store(&l.id.notify)
	err := c.id.locked("accept", func() error {
		return c.id.acceptLocked("accept", c.cfg.connParam(), l.cfg.PrivateData)
	})
	if err != nil {
		remote := c.RemoteAddr()
		c.Close()
		l.id.log("connection request from %v: accept failed, waiting for the next request: %v", remote, err)
		return
	}
	l.amu.Lock()
	if l.closed {
		// Close has taken the pending accepts already.
		l.amu.Unlock()
		c.Close()
		return
	}
	l.pending = append(l.pending, pendingAccept{c: c, deadline: time.Now().Add(l.cfg.ConnectTimeout)})
	l.amu.Unlock()
}

// established takes a connection of the pending accepts that is
// established, and drops those that failed or ran out of time; if none is
// established it returns the earliest deadline left (zero if none).
func (l *Listener) established() (*Conn, time.Time) {
	l.amu.Lock()
	defer l.amu.Unlock()
	now := time.Now()
	var next time.Time
	for i := 0; i < len(l.pending); {
		p := l.pending[i]
		e, ok, err := p.c.id.nextEvent()
		if !ok && err == nil && now.Before(p.deadline) {
			if next.IsZero() || p.deadline.Before(next) {
				next = p.deadline
			}
			i++
			continue
		}
		l.pending = append(l.pending[:i], l.pending[i+1:]...)
		if ok && e.Type == EventEstablished && e.Status == 0 && p.c.id.isIWARP() {
			// As Accept: take the QP's state from the kernel, which
			// moved it (establishedIWARPLocked).
			err = p.c.id.locked("accept", p.c.id.establishedIWARPLocked)
			ok = err == nil
		}
		switch {
		case ok && e.Type == EventEstablished && e.Status == 0:
			return p.c, time.Time{}
		case ok && e.Type == EventDisconnected && e.Status == 0:
			// Established, used and ended before its RTU was seen (see
			// awaitEstablished): handed over with the event queued.
			p.c.id.unget(e)
			return p.c, time.Time{}
		}
		remote := p.c.RemoteAddr()
		p.c.Close()
		switch {
		case err != nil:
			l.id.log("connection request from %v: accept failed, waiting for the next request: %v", remote, err)
		case !ok:
			l.id.log("connection request from %v: no RTU within %v, dropped", remote, l.cfg.ConnectTimeout)
		default:
			l.id.log("connection request from %v: accept failed, waiting for the next request: %v", remote, eventError("accept", e))
		}
	}
	return nil, next
}

// GetRequest waits for a connection request and returns it as a Conn whose
// PD, CQ and QP are built (QP in INIT) and whose PeerPrivateData is the
// request's: register memory and post receives, then Accept or Reject it.
//
// A request whose client has given it up before it is handed over is
// dropped (with a line through Config.Logf) and GetRequest waits for the
// next; a request given up later makes Conn.Accept fail. GetRequest
// returns an error when ctx ends, the listener is closed (ErrClosed) or
// its device goes away (an *EventError for DEVICE_REMOVAL), or when this
// side cannot build the connection (opening the device, the CQ or the QP
// fails: an *OpError naming the client); the request is then rejected.
//
// rdma-core: rdma_get_request.
func (l *Listener) GetRequest(ctx context.Context) (*Conn, error) {
	for {
		e, err := l.id.GetEvent(ctx)
		if err != nil {
			return nil, err
		}
		c, err := l.request(e)
		if c != nil || err != nil {
			return c, err
		}
	}
}

// request turns a listener's event into a Conn with its QP built: nil and
// no error for an event that is no request, or a request dropped because
// its client gave it up; an error when the listener can take no more.
func (l *Listener) request(e Event) (*Conn, error) {
	if e.Type != EventConnectRequest || e.Request == nil {
		if e.Type == EventDeviceRemoval {
			return nil, &EventError{Op: "get_request", Event: e.Type, Status: e.Status}
		}
		return nil, nil
	}
	c := &Conn{cfg: l.cfg, id: e.Request, peerData: e.PrivateData}
	err := c.id.locked("query addr", c.id.requestDeviceLocked)
	if err == nil {
		err = c.build()
	}
	if err == nil {
		return c, nil
	}
	remote := c.RemoteAddr()
	c.id.Reject(nil)
	c.Close()
	switch {
	case errors.Is(err, ErrClosed):
		return nil, err
	case errors.Is(err, errRequestGone):
		l.id.log("connection request from %v dropped: %v", remote, err)
		return nil, nil
	}
	return nil, fmt.Errorf("connection request from %v: %w", remote, err)
}

// Close stops listening: requests not yet taken are refused. Connections
// already returned stay open until closed.
//
// rdma-core: rdma_destroy_ep.
func (l *Listener) Close() error {
	if l == nil {
		return nil
	}
	err := l.id.Close()
	l.amu.Lock()
	pending := l.pending
	l.pending, l.closed = nil, true
	l.amu.Unlock()
	for _, p := range pending {
		p.c.Close()
	}
	// Not Close: the connections accepted on the channel outlive the
	// Listener, as net.Listener's do.
	if cerr := l.ch.release(); err == nil {
		err = cerr
	}
	return err
}

// DeviceForAddr returns the RDMA device and port the CM uses for the local
// address addr (it binds a throw-away ID there), so that a server can open
// that device, allocate a PD of its own and register its memory once for
// all its connections (Config.PD).
func DeviceForAddr(addr netip.Addr) (uverbs.DeviceInfo, uint8, error) {
	ch, err := NewEventChannel()
	if err != nil {
		return uverbs.DeviceInfo{}, 0, err
	}
	defer ch.Close()
	id, err := ch.CreateID(PortSpaceTCP)
	if err != nil {
		return uverbs.DeviceInfo{}, 0, err
	}
	defer id.Close()
	if err := id.Bind(netip.AddrPortFrom(addr, 0)); err != nil {
		return uverbs.DeviceInfo{}, 0, err
	}
	dev, port, ok := id.device()
	if !ok {
		return uverbs.DeviceInfo{}, 0, &OpError{Op: "bind", Err: fmt.Errorf("%v names no single RDMA device (a wildcard address?): %w", addr, unix.EINVAL)}
	}
	return dev, port, nil
}
