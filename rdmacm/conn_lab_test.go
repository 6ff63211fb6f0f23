package rdmacm

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/testutil"
	"github.com/goverbs/rdma/uverbs"
)

// labAddrs returns the two addresses of the test's device pair (the rxe
// pair, or the pair eachLabPair runs the test on): the server listens on
// the first, the client connects from the second.
func labAddrs(t testing.TB) (server, client netip.Addr) {
	t.Helper()
	ends := labPair(t).Ends
	return netip.MustParseAddr(ends[0].Addr), netip.MustParseAddr(ends[1].Addr)
}

// pairs holds the device pair of each subtest eachLabPair runs, by its
// *testing.T.
var pairs sync.Map

// eachLabPair runs f as a subtest named by the device kind on every pair
// of devices the lab has (testutil.LabPairs: rxe and, where the guest has
// it, siw); labAddrs, labVeth and labIWARP in f give that pair. The tests
// that do not apply to siw are listed, with the reason, in docs/testing.md
// ("What does not apply to siw").
func eachLabPair(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	for _, p := range testutil.LabPairs(t) {
		t.Run(p.Kind, func(t *testing.T) {
			pairs.Store(t, p)
			defer pairs.Delete(t)
			f(t)
		})
	}
}

// labPair is the test's device pair: the one eachLabPair gave, else the rxe
// pair.
func labPair(t testing.TB) testutil.LabPair {
	t.Helper()
	if p, ok := pairs.Load(t); ok {
		return p.(testutil.LabPair)
	}
	return testutil.LabPair{Kind: "rxe", Ends: testutil.VethPair(t)}
}

// labIWARP reports whether the test runs on iWARP devices (siw).
func labIWARP(t testing.TB) bool { return labPair(t).IWARP }

// listenLab listens on the server's lab address with a port the kernel
// picks; the listener is closed when the test ends (Close is idempotent).
func listenLab(ctx context.Context, t testing.TB, cfg *Config) *Listener {
	t.Helper()
	srv, _ := labAddrs(t)
	l, err := Listen(ctx, netip.AddrPortFrom(srv, 0).String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// exchange sends msg over c with a SEND and receives the peer's message into
// a posted receive; it returns what arrived.
type endpoint struct {
	t   *testing.T
	c   *Conn
	buf *uverbs.Buffer
	mr  *uverbs.MR
}

func newEndpoint(t *testing.T, c *Conn, size int) *endpoint {
	t.Helper()
	buf, err := uverbs.AllocBuffer(size)
	if err != nil {
		t.Fatal(err)
	}
	mr, err := c.PD().RegMR(buf.Bytes(), uverbs.AccessLocalWrite|uverbs.AccessRemoteRead|uverbs.AccessRemoteWrite)
	if err != nil {
		buf.Close()
		t.Fatal(err)
	}
	return &endpoint{t: t, c: c, buf: buf, mr: mr}
}

// close closes the connection with the memory still registered on its PD
// (Close frees it with the device), then the MR, which is then a no-op.
func (e *endpoint) close() {
	e.t.Helper()
	if err := e.c.Close(); err != nil {
		e.t.Errorf("closing the connection with its memory registered: %v", err)
	}
	if err := e.mr.Close(); err != nil {
		e.t.Errorf("MR.Close after the connection's Close: %v", err)
	}
	if err := e.buf.Close(); err != nil {
		e.t.Errorf("Buffer.Close: %v", err)
	}
}

// waitWC waits for one completion through the completion channel.
func waitWC(ctx context.Context, c *Conn) (uverbs.WC, error) {
	var wcs [1]uverbs.WC
	_, err := c.CQ().PollWait(ctx, wcs[:])
	return wcs[0], err
}

func TestDialListen(t *testing.T) { eachLabPair(t, testDialListen) }

func testDialListen(t *testing.T) {
	srvAddr, _ := labAddrs(t)
	ctx := testCtx(t)
	// The caller's goroutine and the event reader both log (Config.Logf).
	var logs logHook
	l, err := Listen(ctx, netip.AddrPortFrom(srvAddr, 0).String(), &Config{PrivateData: []byte("accept-data")})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Addr().Port() == 0 || l.Addr().Addr() != srvAddr {
		t.Fatalf("listener address %v, want %v with a port picked", l.Addr(), srvAddr)
	}
	type result struct {
		c   *Conn
		err error
	}
	accepted := make(chan result, 1)
	go func() {
		c, err := l.Accept(ctx)
		accepted <- result{c, err}
	}()
	c, err := Dial(ctx, l.Addr().String(), &Config{PrivateData: []byte("request-data"),
		Logf: logs.logf})
	if err != nil {
		t.Fatal(err)
	}
	logs.mu.Lock()
	t.Logf("client steps:\n%s", strings.Join(logs.lines, "\n"))
	logs.mu.Unlock()
	r := <-accepted
	if r.err != nil {
		c.Close()
		t.Fatal(r.err)
	}
	sc := r.c
	cli, srv := newEndpoint(t, c, 4096), newEndpoint(t, sc, 4096)
	defer cli.close()
	defer srv.close()

	// The IB CM pads private data to its message's field; MPA (iWARP)
	// carries it as it was given.
	reqLen, accLen := MaxConnectPrivateData, MaxAcceptPrivateData
	if labIWARP(t) {
		reqLen, accLen = len("request-data"), len("accept-data")
	}
	if got := sc.PeerPrivateData(); len(got) != reqLen || !bytes.HasPrefix(got, []byte("request-data")) {
		t.Errorf("server got request private data %q (%d bytes), want %q in %d bytes", got, len(got), "request-data", reqLen)
	}
	if got := c.PeerPrivateData(); len(got) != accLen || !bytes.HasPrefix(got, []byte("accept-data")) {
		t.Errorf("client got accept private data %q (%d bytes), want %q in %d bytes", got, len(got), "accept-data", accLen)
	}
	if got := c.RemoteAddr(); got != l.Addr() {
		t.Errorf("client remote address %v, want %v", got, l.Addr())
	}
	if got, want := sc.RemoteAddr(), c.LocalAddr(); got != want {
		t.Errorf("server sees the client at %v, the client says it is at %v", got, want)
	}
	for _, conn := range []*Conn{c, sc} {
		if s := conn.QP().State(); s != uverbs.QPStateRTS {
			t.Errorf("QP %#x is %v after connection setup, want RTS", conn.QP().QPN(), s)
		}
	}

	// SEND from the client into a receive posted by the server, then an
	// RDMA WRITE and READ with the server's rkey.
	if err := sc.QP().PostRecv([]uverbs.RecvWR{{ID: 7, SGEs: []uverbs.SGE{srv.mr.SGE(0, 4096)}}}); err != nil {
		t.Fatal(err)
	}
	copy(cli.buf.Bytes(), "hello over the CM")
	if err := c.QP().PostSend([]uverbs.SendWR{{ID: 1, Op: uverbs.OpSend, Flags: uverbs.SendSignaled, SGEs: []uverbs.SGE{cli.mr.SGE(0, 17)}}}); err != nil {
		t.Fatal(err)
	}
	if wc, err := waitWC(ctx, c); err != nil || wc.Status != uverbs.WCSuccess || wc.ID != 1 {
		t.Fatalf("client send: %+v, %v", wc, err)
	}
	wc, err := waitWC(ctx, sc)
	if err != nil || wc.Status != uverbs.WCSuccess || wc.ID != 7 || wc.ByteLen != 17 {
		t.Fatalf("server receive: %+v, %v", wc, err)
	}
	if got := string(srv.buf.Bytes()[:17]); got != "hello over the CM" {
		t.Fatalf("server received %q", got)
	}
	copy(cli.buf.Bytes()[100:], "written")
	if err := c.QP().PostSend([]uverbs.SendWR{{ID: 2, Op: uverbs.OpWrite, Flags: uverbs.SendSignaled,
		SGEs: []uverbs.SGE{cli.mr.SGE(100, 7)}, RemoteAddr: srv.mr.Addr() + 200, RKey: srv.mr.RKey()}}); err != nil {
		t.Fatal(err)
	}
	if wc, err := waitWC(ctx, c); err != nil || wc.Status != uverbs.WCSuccess {
		t.Fatalf("client write: %+v, %v", wc, err)
	}
	if got := string(srv.buf.Bytes()[200:207]); got != "written" {
		t.Fatalf("server memory after WRITE: %q", got)
	}
	if err := c.QP().PostSend([]uverbs.SendWR{{ID: 3, Op: uverbs.OpRead, Flags: uverbs.SendSignaled,
		SGEs: []uverbs.SGE{cli.mr.SGE(1000, 17)}, RemoteAddr: srv.mr.Addr(), RKey: srv.mr.RKey()}}); err != nil {
		t.Fatal(err)
	}
	if wc, err := waitWC(ctx, c); err != nil || wc.Status != uverbs.WCSuccess {
		t.Fatalf("client read: %+v, %v", wc, err)
	}
	if got := string(cli.buf.Bytes()[1000:1017]); got != "hello over the CM" {
		t.Fatalf("client memory after READ: %q", got)
	}

	// The client disconnects: both sides see it.
	if err := c.Disconnect(); err != nil {
		t.Fatal(err)
	}
	for name, conn := range map[string]*Conn{"client": c, "server": sc} {
		select {
		case <-conn.Done():
		case <-ctx.Done():
			t.Fatalf("%s: no DISCONNECTED event", name)
		}
	}
}

func errorsIsRefused(err error) bool { return errors.Is(err, ErrConnRefused) }

func labVeth(t *testing.T) [2]testutil.VethEnd { return labPair(t).Ends }

func loDevice(t *testing.T) string { return testutil.LoopbackDevice(t) }
