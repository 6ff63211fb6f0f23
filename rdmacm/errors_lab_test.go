package rdmacm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/uverbs"
)

// Connection failures a user must be able to tell apart (docs/robustness.md
// §1 items 13-15): each is a typed error, within a bounded time.

// within fails the test if f takes longer than limit: a hang guard, with a
// generous limit, not a timing target.
func within(t *testing.T, limit time.Duration, what string, f func() error) error {
	t.Helper()
	start := time.Now()
	err := f()
	if d := time.Since(start); d > limit {
		t.Errorf("%s took %v, more than %v", what, d, limit)
	}
	return err
}

func TestNoListener(t *testing.T) { eachLabPair(t, testNoListener) }

func testNoListener(t *testing.T) {
	srv, _ := labAddrs(t)
	ctx := testCtx(t)
	err := within(t, 20*time.Second, "dial to a port with no listener", func() error {
		c, err := Dial(ctx, netip.AddrPortFrom(srv, uint16(freePort())).String(), nil)
		c.Close()
		return err
	})
	var rej *RejectError
	if !errors.As(err, &rej) || !errors.Is(err, ErrConnRefused) || !errors.Is(err, ErrRejected) || rej.Reason != RejectInvalidServiceID {
		t.Fatalf("dial to a port nobody listens on: %v (%T), want a *RejectError with reason 8 matching ErrConnRefused", err, err)
	}
	if !strings.Contains(err.Error(), "nothing listens on that port") {
		t.Errorf("error %q does not say that nothing listens", err)
	}
}

func TestRejectWithPrivateData(t *testing.T) { eachLabPair(t, testRejectWithPrivateData) }

func testRejectWithPrivateData(t *testing.T) {
	ctx := testCtx(t)
	l := listenLab(ctx, t, nil)
	go func() {
		c, err := l.GetRequest(ctx)
		if err != nil {
			return
		}
		if !bytes.HasPrefix(c.PeerPrivateData(), []byte("let me in")) {
			c.Reject([]byte("wrong request data"))
			return
		}
		c.Reject([]byte("go away"))
	}()
	_, err := Dial(ctx, l.Addr().String(), &Config{PrivateData: []byte("let me in")})
	var rej *RejectError
	if !errors.As(err, &rej) || !errors.Is(err, ErrRejected) || errors.Is(err, ErrConnRefused) {
		t.Fatalf("dial to a listener that rejects: %v, want a *RejectError matching ErrRejected only", err)
	}
	// The IB CM pads the private data to its field, MPA (iWARP) does not.
	want := MaxRejectPrivateData
	if labIWARP(t) {
		want = len("go away")
	}
	if rej.Reason != RejectConsumerDefined || len(rej.PrivateData) != want || !bytes.HasPrefix(rej.PrivateData, []byte("go away")) {
		t.Fatalf("reject reason %d, private data %q (%d bytes); want 28 and %q in %d bytes", rej.Reason, rej.PrivateData, len(rej.PrivateData), "go away", want)
	}
}

func TestAddressUnreachable(t *testing.T) { eachLabPair(t, testAddressUnreachable) }

func testAddressUnreachable(t *testing.T) {
	srv, _ := labAddrs(t)
	ctx := testCtx(t)
	// An address on the veth subnet that no host has: ARP gets no answer.
	a := srv.As4()
	a[3] = 99
	dst := netip.AddrPortFrom(netip.AddrFrom4(a), 7471)
	err := within(t, 10*time.Second, "dial to an address nobody has", func() error {
		_, err := Dial(ctx, dst.String(), &Config{ResolveTimeout: 500 * time.Millisecond})
		return err
	})
	if !errors.Is(err, ErrAddrResolve) {
		t.Fatalf("dial to %v: %v, want ErrAddrResolve", dst, err)
	}
	t.Logf("no answer: %v", err)
	// No route at all (TEST-NET-1 has none in the lab).
	err = within(t, 10*time.Second, "dial to an address without a route", func() error {
		_, err := Dial(ctx, "192.0.2.1:7471", &Config{ResolveTimeout: 500 * time.Millisecond})
		return err
	})
	if !errors.Is(err, ErrAddrResolve) || !errors.Is(err, unix.ENETUNREACH) {
		t.Fatalf("dial to 192.0.2.1: %v, want ErrAddrResolve with ENETUNREACH", err)
	}
	t.Logf("unroutable: %v", err)
}

// pendingListener accepts nothing: requests stay pending.
func pendingListener(t *testing.T, ctx context.Context) *Listener {
	l := listenLab(ctx, t, nil)
	t.Cleanup(func() { l.Close() })
	return l
}

func TestConnectTimeout(t *testing.T) { eachLabPair(t, testConnectTimeout) }

func testConnectTimeout(t *testing.T) {
	ctx := testCtx(t)
	l := pendingListener(t, ctx)
	err := within(t, 15*time.Second, "dial with a 1 s connect timeout", func() error {
		_, err := Dial(ctx, l.Addr().String(), &Config{ConnectTimeout: time.Second})
		return err
	})
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("dial to a listener that never answers: %v, want ErrTimeout", err)
	}
}

func TestDialCancel(t *testing.T) {
	ctx := testCtx(t)
	l := pendingListener(t, ctx)
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(500*time.Millisecond, cancel)
	err := within(t, 10*time.Second, "a cancelled dial", func() error {
		_, err := Dial(cctx, l.Addr().String(), nil)
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled dial: %v, want context.Canceled", err)
	}
	// Everything the dial made is freed: the leak tracer checks the fds and
	// mappings at the end of the run.
}

func TestBadInput(t *testing.T) { eachLabPair(t, testBadInput) }

func testBadInput(t *testing.T) {
	srv, _ := labAddrs(t)
	ctx := testCtx(t)
	// The private data limits are the IB CM's, or MPA's on iWARP.
	maxReq, maxAcc, maxRej := MaxConnectPrivateData, MaxAcceptPrivateData, MaxRejectPrivateData
	if labIWARP(t) {
		maxReq, maxAcc, maxRej = MaxIWARPPrivateData, MaxIWARPPrivateData, MaxIWARPPrivateData
	}
	for _, tc := range []struct {
		name, addr string
		cfg        *Config
		want       string
	}{
		{"no port", srv.String(), nil, "want host:port"},
		{"bad port", srv.String() + ":http2x", nil, "not a number"},
		{"wildcard", "0.0.0.0:7471", nil, "give the server's address"},
		{"long private data", netip.AddrPortFrom(srv, 7471).String(), &Config{PrivateData: make([]byte, maxReq+1)}, fmt.Sprintf("at most %d", maxReq)},
		{"qp type", netip.AddrPortFrom(srv, 7471).String(), &Config{QPType: 3}, "RC and UD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Dial(ctx, tc.addr, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Dial(%q): %v, want an error saying %q", tc.addr, err, tc.want)
			}
		})
	}
	// Listening on an address this machine does not have.
	_, err := Listen(ctx, "192.0.2.1:7471", nil)
	if err == nil || !errors.Is(err, unix.EADDRNOTAVAIL) && !errors.Is(err, unix.ENODEV) {
		t.Fatalf("Listen on a foreign address: %v, want EADDRNOTAVAIL", err)
	}
	t.Logf("foreign address: %v", err)
	// The same port twice.
	l := listenLab(ctx, t, nil)
	_, err = Listen(ctx, l.Addr().String(), nil)
	if !errors.Is(err, unix.EADDRINUSE) {
		t.Fatalf("second Listen on %v: %v, want EADDRINUSE", l.Addr(), err)
	}
	// Accept with too much private data is refused before anything is sent.
	go Dial(ctx, l.Addr().String(), &Config{ConnectTimeout: 5 * time.Second})
	c, err := l.GetRequest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Accept(ctx, make([]byte, maxAcc+1)); !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), fmt.Sprintf("at most %d", maxAcc)) {
		t.Fatalf("accept with %d bytes of private data: %v", maxAcc+1, err)
	}
	if err := c.Reject(make([]byte, maxRej+1)); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("reject with %d bytes of private data: %v", maxRej+1, err)
	}
}

// TestListenerClosedWithPendingRequests: requests never taken are refused
// when the listener closes.
func TestListenerClosedWithPendingRequests(t *testing.T) {
	eachLabPair(t, testListenerClosedWithPendingRequests)
}

func testListenerClosedWithPendingRequests(t *testing.T) {
	ctx := testCtx(t)
	l := listenLab(ctx, t, nil)
	errc := make(chan error, 1)
	go func() {
		c, err := Dial(ctx, l.Addr().String(), nil)
		c.Close()
		errc <- err
	}()
	// Wait until the request is queued on the listener, then close it.
	for i := 0; ; i++ {
		l.id.qmu.Lock()
		n := len(l.id.queue)
		l.id.qmu.Unlock()
		if n > 0 {
			break
		}
		if i > 200 {
			t.Fatal("no connection request arrived")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	err := <-errc
	if !errors.Is(err, ErrRejected) && !errors.Is(err, ErrUnreachable) {
		t.Fatalf("dial whose request was pending when the listener closed: %v, want a rejection", err)
	}
	t.Logf("pending request: %v", err)
}

func TestNoListenerUD(t *testing.T) {
	srv, _ := labAddrs(t)
	ctx := testCtx(t)
	err := within(t, 20*time.Second, "UD dial to a port with no listener", func() error {
		_, err := Dial(ctx, netip.AddrPortFrom(srv, uint16(freePort())).String(), &Config{QPType: uverbs.UD})
		return err
	})
	if !errors.Is(err, ErrConnRefused) || !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "nothing listens") {
		t.Fatalf("UD dial to a port nobody listens on: %v, want UNREACHABLE with SIDR status 1 matching ErrConnRefused", err)
	}
}
