package rsocket

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/goverbs/rdma/rdmacm"
)

// Dialer connects to rsocket servers, with the Options of its connections.
// Its DialContext fits http.Transport.DialContext as it is, and
// grpc.WithContextDialer with the network added (examples/grpc).
type Dialer struct {
	Options
	// Timeout bounds the whole of a Dial, as net.Dialer.Timeout does; 0
	// leaves it to the context and Options' timeouts.
	Timeout time.Duration
	// LocalAddr, if valid, is the address to connect from; its port is
	// ignored.
	LocalAddr netip.Addr
}

// Dial connects to address ("10.0.0.1:7471", "[fd00::1]:7471",
// "host:7471") on network "rdma", "rdma4" or "rdma6" ("tcp", "tcp4" and
// "tcp6" mean the same) with the default Options.
//
// rdma-core: rsocket, rconnect.
func Dial(ctx context.Context, network, address string) (*Conn, error) {
	var d Dialer
	return d.Dial(ctx, network, address)
}

// DialContext is Dial returning a net.Conn.
//
// rdma-core: rsocket, rconnect.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	c, err := d.Dial(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Dial connects as rsocket's rconnect does: it resolves the address and
// route, builds the QP and buffers and posts the receives, sends the
// connection request with this side's rs_conn_data and checks the peer's
// in the reply. Errors are *net.OpError; they wrap rdmacm's errors
// (rdmacm.ErrConnRefused when nothing listens, rdmacm.ErrUnreachable,
// context.DeadlineExceeded, ...) or ErrProtocol for a peer that is not an
// rsocket.
//
// rdma-core: rsocket, rconnect.
func (d *Dialer) Dial(ctx context.Context, network, address string) (*Conn, error) {
	opErr := func(dst netip.AddrPort, err error) error {
		oe := &net.OpError{Op: "dial", Net: network, Err: err}
		if dst.IsValid() {
			oe.Addr = &Addr{dst}
		}
		return oe
	}
	s, err := d.Options.settings()
	if err != nil {
		return nil, opErr(netip.AddrPort{}, err)
	}
	if d.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.Timeout)
		defer cancel()
	}
	dst, err := rdmacm.ParseAddress(ctx, address)
	if err == nil {
		err = ipFamily(network, dst)
	}
	if err != nil {
		return nil, opErr(netip.AddrPort{}, err)
	}
	cfg := s.cmConfig()
	cfg.Source = d.LocalAddr
	cm, err := rdmacm.Resolve(ctx, dst.String(), cfg)
	if err != nil {
		return nil, opErr(dst, err)
	}
	c, err := newConn(cm, s)
	if err == nil {
		if c.msgSend {
			// rs_do_connect asks for one outstanding RDMA READ on iWARP,
			// where some devices' connection set-up issues one (MPA
			// peer-to-peer mode). Connect sends the ConnParam that cfg
			// points to as it is then.
			cfg.ConnParam.InitiatorDepth = 1
		}
		err = cm.Connect(ctx, c.connData())
	}
	var peer connData
	if err == nil {
		peer, err = parseConnData(cm.PeerPrivateData())
	}
	if err != nil {
		cm.Close()
		if c != nil {
			c.freeBuffers()
		}
		return nil, opErr(dst, err)
	}
	c.start(peer)
	s.logf("rsocket %v: connected from %v", c.raddr, c.laddr)
	return c, nil
}

// String names the connection by its addresses.
func (c *Conn) String() string {
	return fmt.Sprintf("rsocket %v->%v", c.laddr, c.raddr)
}
