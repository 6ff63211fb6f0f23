package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"

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
func (l *Listener) Addr() netip.AddrPort { return l.addr }

// ID returns the listening CM ID.
func (l *Listener) ID() *ID { return l.id }

// Accept waits for a connection request, builds its QP and CQ, accepts it
// with Config.PrivateData and returns the established connection. A
// request that fails on the way (the client gave up, or the handshake
// broke) is dropped with a line through Config.Logf, and Accept waits for
// the next. Accept returns an error only when ctx ends, the listener is
// closed or its device goes away, or this side cannot build connections
// at all (the device cannot be opened, locked memory runs out: see
// GetRequest).
func (l *Listener) Accept(ctx context.Context) (*Conn, error) {
	for {
		c, err := l.GetRequest(ctx)
		if err != nil {
			return nil, err
		}
		if err := c.Accept(ctx, l.cfg.PrivateData); err != nil {
			remote := c.RemoteAddr()
			c.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			l.id.log("connection request from %v: accept failed, waiting for the next request: %v", remote, err)
			continue
		}
		return c, nil
	}
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
		if e.Type != EventConnectRequest || e.Request == nil {
			if e.Type == EventDeviceRemoval {
				return nil, &EventError{Op: "get_request", Event: e.Type, Status: e.Status}
			}
			continue
		}
		c := &Conn{cfg: l.cfg, id: e.Request, peerData: e.PrivateData}
		err = c.id.locked("query addr", c.id.requestDeviceLocked)
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
			continue
		}
		return nil, fmt.Errorf("connection request from %v: %w", remote, err)
	}
}

// Close stops listening: requests not yet taken are refused. Connections
// already returned stay open until closed.
func (l *Listener) Close() error {
	if l == nil {
		return nil
	}
	err := l.id.Close()
	if cerr := l.ch.Close(); err == nil {
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
	dev, port, ok := id.Device()
	if !ok {
		return uverbs.DeviceInfo{}, 0, &OpError{Op: "bind", Err: fmt.Errorf("%v names no single RDMA device (a wildcard address?): %w", addr, unix.EINVAL)}
	}
	return dev, port, nil
}
