package rdmacm

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/uverbs"
)

// connectPair makes one connection with the given configs and returns both
// ends, closed at the end of the test.
// acceptOne accepts one connection on l in the background.
func acceptOne(ctx context.Context, t *testing.T, l *Listener) <-chan *Conn {
	accepted := make(chan *Conn, 1)
	go func() {
		c, err := l.Accept(ctx)
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	return accepted
}

// dialAccepted dials l and returns both ends of the connection.
func dialAccepted(ctx context.Context, t *testing.T, l *Listener) (client, server *Conn) {
	t.Helper()
	accepted := acceptOne(ctx, t, l)
	c, err := Dial(ctx, l.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, <-accepted
}

func connectPair(t *testing.T, ctx context.Context, listenAddr string, scfg, ccfg *Config) (server, client *Conn) {
	t.Helper()
	l, err := Listen(ctx, listenAddr, scfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := acceptOne(ctx, t, l)
	target := l.Addr()
	if target.Addr().IsUnspecified() {
		srv, _ := labAddrs(t)
		target = netip.AddrPortFrom(srv, target.Port())
	}
	c, err := Dial(ctx, target.String(), ccfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	sc := <-accepted
	if sc == nil {
		t.FailNow()
	}
	t.Cleanup(func() { sc.Close() })
	return sc, c
}

// TestQuery: what Query reports of an established connection matches the
// lab's device, the addresses and the port's path.
func TestQuery(t *testing.T) { eachLabPair(t, testQuery) }

func testQuery(t *testing.T) {
	ctx := testCtx(t)
	srv, _ := labAddrs(t)
	dev := labDeviceOf(t, srv)
	sc, c := connectPair(t, ctx, netip.AddrPortFrom(srv, 0).String(), nil, nil)
	for name, conn := range map[string]*Conn{"server": sc, "client": c} {
		info, err := conn.ID().Query()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %+v", name, info)
		if info.Device != dev || info.Port != 1 {
			t.Errorf("%s: device %q port %d, want %q port 1", name, info.Device, info.Port, dev)
		}
		if labIWARP(t) {
			// An iWARP device's GID is made from its MAC address, and the
			// iWARP CM resolves no path (kernel: core/cma.c
			// cma_resolve_iw_route).
			if info.SGID == (uverbs.GID{}) || len(info.Paths) != 0 {
				t.Errorf("%s: SGID %v, paths %+v; want the device's GID and no path", name, info.SGID, info.Paths)
			}
		} else if info.SGID != uverbs.GIDFromIP(net.IP(srv.AsSlice())) || info.DGID != info.SGID {
			t.Errorf("%s: SGID %v DGID %v, want both ::ffff:%v (the CM loops back on one device)", name, info.SGID, info.DGID, srv)
		} else if len(info.Paths) != 1 || info.Paths[0].MTU != uverbs.MTU1024 || info.Paths[0].DGID != info.DGID || info.Paths[0].PKey != 0xffff {
			t.Errorf("%s: paths %+v, want one with MTU 1024 (a 1500-byte veth) and the default PKey 0xffff to %v", name, info.Paths, info.DGID)
		}
		if info.Local != conn.LocalAddr() || info.Remote != conn.RemoteAddr() {
			t.Errorf("%s: addresses %v -> %v disagree with LocalAddr/RemoteAddr", name, info.Local, info.Remote)
		}
	}
	if c.RemoteAddr() != sc.LocalAddr() || sc.RemoteAddr() != c.LocalAddr() {
		t.Errorf("client %v -> %v, server %v -> %v: the ends disagree", c.LocalAddr(), c.RemoteAddr(), sc.LocalAddr(), sc.RemoteAddr())
	}
}

// labDeviceOf returns the lab's rxe device on the netdev of addr.
func labDeviceOf(t *testing.T, addr netip.Addr) string {
	for _, e := range labVeth(t) {
		if e.Addr == addr.String() {
			return e.Device
		}
	}
	t.Fatalf("no lab device has %v", addr)
	return ""
}

// TestOptionsAndParams: the ACK timeout, TOS and connection parameters end
// up in the QPs' attributes.
func TestOptionsAndParams(t *testing.T) {
	ctx := testCtx(t)
	srv, _ := labAddrs(t)
	ccfg := &Config{ACKTimeout: 14, TOS: 32, ConnParam: &ConnParam{ResponderResources: 4, InitiatorDepth: 2, RetryCount: 5, RNRRetryCount: 3}}
	sc, c := connectPair(t, ctx, netip.AddrPortFrom(srv, 0).String(), &Config{ReuseAddr: true}, ccfg)
	ca, err := c.QP().Query(uverbs.QPAttrAll)
	if err != nil {
		t.Fatal(err)
	}
	sa, err := sc.QP().Query(uverbs.QPAttrAll)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("client QP: timeout %d retry %d rnr %d rd_atomic %d dest_rd_atomic %d tclass %d", ca.Timeout, ca.RetryCount, ca.RNRRetry, ca.MaxRDAtomic, ca.MaxDestRDAtomic, ca.AH.TrafficClass)
	t.Logf("server QP: timeout %d retry %d rnr %d rd_atomic %d dest_rd_atomic %d tclass %d", sa.Timeout, sa.RetryCount, sa.RNRRetry, sa.MaxRDAtomic, sa.MaxDestRDAtomic, sa.AH.TrafficClass)
	if ca.Timeout != 14 {
		t.Errorf("client ACK timeout %d, want 14 (RDMA_OPTION_ID_ACK_TIMEOUT)", ca.Timeout)
	}
	if ca.AH.TrafficClass != 32 {
		t.Errorf("client traffic class %d, want the TOS 32", ca.AH.TrafficClass)
	}
	if ca.RetryCount != 5 {
		t.Errorf("client retry count %d, want 5", ca.RetryCount)
	}
	// The server sees the client's initiator depth as its responder
	// resources and the other way round (kernel: core/cma.c
	// cma_set_req_event_data), bounded by the device.
	if sa.MaxDestRDAtomic != 2 || sa.MaxRDAtomic != 4 {
		t.Errorf("server READ depths: dest %d, init %d; want 2 and 4 from the client's request", sa.MaxDestRDAtomic, sa.MaxRDAtomic)
	}
	if ca.MaxDestRDAtomic != 4 {
		t.Errorf("client responder resources %d, want 4", ca.MaxDestRDAtomic)
	}
}

// TestIPv6Wildcard: a listener on [::] takes an IPv4 connection.
func TestIPv6Wildcard(t *testing.T) {
	labAddrs(t)
	ctx := testCtx(t)
	sc, c := connectPair(t, ctx, "[::]:0", nil, nil)
	if sc.QP().State() != uverbs.QPStateRTS || c.QP().State() != uverbs.QPStateRTS {
		t.Fatalf("QP states %v and %v", sc.QP().State(), c.QP().State())
	}
}

// TestIPv6LinkLocal: a connection over the link-local IPv6 address of the
// lab's veth0 (with its zone), resolved by neighbour discovery.
func TestIPv6LinkLocal(t *testing.T) {
	ends := labVeth(t)
	ctx := testCtx(t)
	ifi, err := net.InterfaceByName(ends[0].Netdev)
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	var ll netip.Addr
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is6() && p.Addr().IsLinkLocalUnicast() {
			ll = p.Addr().WithZone(ifi.Name)
		}
	}
	if !ll.IsValid() {
		t.Fatalf("%s has no link-local IPv6 address", ifi.Name)
	}
	// The address may still be tentative (duplicate address detection)
	// right after the lab boots: binding fails until it is not.
	var l *Listener
	for i := 0; ; i++ {
		l, err = Listen(ctx, netip.AddrPortFrom(ll, 0).String(), nil)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EADDRNOTAVAIL) || i == 100 {
			t.Fatalf("listen on %v: %v", ll, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept(ctx)
		if err == nil {
			<-c.Done()
			c.Close()
		}
	}()
	var c *Conn
	for i := 0; ; i++ {
		c, err = Dial(ctx, l.Addr().String(), nil)
		if err == nil {
			break
		}
		// Source address selection skips a tentative address.
		if !errors.Is(err, unix.EADDRNOTAVAIL) || i == 100 {
			t.Fatalf("dial %v: %v", l.Addr(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	defer c.Close()
	info, err := c.ID().Query()
	if err != nil {
		t.Fatal(err)
	}
	if info.DGID != uverbs.GID(ll.As16()) || info.Device != ends[0].Device {
		t.Errorf("connected to %v on %s with DGID %v; want the GID of %v on %s", info.Remote, info.Device, info.DGID, ll, ends[0].Device)
	}
}
