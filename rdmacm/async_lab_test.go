package rdmacm

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/uverbs"
)

// The asynchronous path (cm_async.go): many IDs with a step in flight,
// their events taken from one channel. Interop of this path with
// rdma-core's cmtime, both ways, is cmd/cmtime's TestInteropCmtime.

// verbsOf opens each device the CM names once, with one PD and one CQ
// shared by the test's QPs.
type verbsOf struct {
	t   *testing.T
	mu  sync.Mutex
	pds map[string]*uverbs.PD
	cqs map[string]*uverbs.CQ
}

func newVerbs(t *testing.T) *verbsOf {
	v := &verbsOf{t: t, pds: map[string]*uverbs.PD{}, cqs: map[string]*uverbs.CQ{}}
	t.Cleanup(func() {
		for name, pd := range v.pds {
			v.cqs[name].Close()
			pd.Close()
			pd.Device().Close()
		}
	})
	return v
}

// qp makes id's QP on its device.
func (v *verbsOf) qp(id *ID) (*uverbs.QP, error) {
	dev, ok := id.DeviceInfo()
	if !ok {
		return nil, errors.New(id.String() + " has no device")
	}
	v.mu.Lock()
	pd := v.pds[dev.Name]
	if pd == nil {
		d, err := uverbs.OpenDevice(dev)
		if err != nil {
			v.mu.Unlock()
			return nil, err
		}
		if pd, err = d.AllocPD(); err != nil {
			d.Close()
			v.mu.Unlock()
			return nil, err
		}
		cq, err := d.CreateCQ(uverbs.CQInit{Depth: 256})
		if err != nil {
			pd.Close()
			d.Close()
			v.mu.Unlock()
			return nil, err
		}
		v.pds[dev.Name], v.cqs[dev.Name] = pd, cq
	}
	cq := v.cqs[dev.Name]
	v.mu.Unlock()
	return id.CreateQP(pd, uverbs.QPInit{SendCQ: cq, RecvCQ: cq, Cap: uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
}

// asyncServer listens on an async channel and accepts every request from
// the one goroutine that takes the events, answering each DISCONNECTED;
// it counts the connections established. stop ends it and frees
// everything.
type asyncServer struct {
	addr        netip.AddrPort
	mu          sync.Mutex
	established int
	stop        func()
}

func startAsyncServer(t *testing.T, ctx context.Context) *asyncServer {
	t.Helper()
	srv, _ := labAddrs(t)
	ch, err := NewAsyncEventChannel()
	if err != nil {
		t.Fatal(err)
	}
	lid, err := ch.CreateID(PortSpaceTCP)
	if err != nil {
		t.Fatal(err)
	}
	if err := lid.Bind(netip.AddrPortFrom(srv, 0)); err != nil {
		t.Fatal(err)
	}
	if err := lid.Listen(0); err != nil {
		t.Fatal(err)
	}
	info, err := lid.Query()
	if err != nil {
		t.Fatal(err)
	}
	s := &asyncServer{addr: info.Local}
	v := newVerbs(t)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		qps := map[*ID]*uverbs.QP{}
		drop := func(id *ID) {
			if qp := qps[id]; qp != nil {
				qp.Close()
			}
			delete(qps, id)
			id.Close()
		}
		defer func() {
			lid.Close()
			for id := range qps {
				drop(id)
			}
			ch.Close()
		}()
		evs := make([]Event, 16)
		for {
			n, err := ch.GetEvents(sctx, evs)
			if err != nil {
				if sctx.Err() == nil {
					t.Errorf("server: %v", err)
				}
				return
			}
			for _, e := range evs[:n] {
				switch e.Type {
				case EventConnectRequest:
					if e.ID != lid || e.Request == nil {
						t.Errorf("CONNECT_REQUEST on %v with request %v, want the listener's", e.ID, e.Request)
						continue
					}
					qp, err := v.qp(e.Request)
					if err == nil {
						qps[e.Request] = qp
						err = e.Request.StartAccept(DefaultConnParam(), nil)
					}
					if err != nil {
						t.Errorf("accepting %v: %v", e.Request, err)
						drop(e.Request)
					}
				case EventEstablished:
					if labIWARP(t) {
						// The kernel moved the QP to RTS;
						// CompleteConnect takes that state. A
						// client that already disconnected (its
						// TCP close needs nothing from us) left
						// the QP in ERR, or SQD or SQE on the way
						// (6.12 reports it; 6.1 does not): the
						// connection was established all the same.
						if err := e.ID.CompleteConnect(); err != nil {
							t.Errorf("complete connect of %v: %v", e.ID, err)
						} else if st := e.ID.QP().State(); st == uverbs.QPStateInit || st == uverbs.QPStateRTR || st == uverbs.QPStateReset {
							t.Errorf("%v: QP in %v after CompleteConnect, want RTS (or ERR, SQD, SQE for a client gone already)", e.ID, st)
						}
					}
					s.mu.Lock()
					s.established++
					s.mu.Unlock()
				case EventDisconnected:
					e.ID.Disconnect()
					drop(e.ID)
				case EventTimewaitExit:
				default:
					// A client that gave up (the close tests).
					drop(e.ID)
				}
			}
		}
	}()
	s.stop = func() { cancel(); <-done }
	t.Cleanup(s.stop)
	return s
}

// asyncStep starts a step on every ID and takes events until each has its
// answer; it returns each ID's answer.
func asyncStep(ctx context.Context, t *testing.T, ch *EventChannel, ids []*ID, start func(*ID) error) map[*ID]Event {
	return asyncStepThen(ctx, t, ch, ids, start, nil)
}

// asyncStepThen is asyncStep that runs then on each answer as it comes.
func asyncStepThen(ctx context.Context, t *testing.T, ch *EventChannel, ids []*ID, start func(*ID) error, then func(Event)) map[*ID]Event {
	t.Helper()
	got := make(map[*ID]Event, len(ids))
	for _, id := range ids {
		if err := start(id); err != nil {
			t.Fatalf("starting the step on %v: %v", id, err)
		}
	}
	evs := make([]Event, 8)
	for len(got) < len(ids) {
		n, err := ch.GetEvents(ctx, evs)
		if err != nil {
			t.Fatalf("%d of %d answers, then %v", len(got), len(ids), err)
		}
		for _, e := range evs[:n] {
			if e.Type == EventTimewaitExit {
				continue
			}
			if _, dup := got[e.ID]; dup || e.ID == nil {
				t.Fatalf("event %v for %v: a second answer, or no ID", e.Type, e.ID)
			}
			got[e.ID] = e
			if then != nil {
				then(e)
			}
		}
	}
	return got
}

func wantAll(t *testing.T, step string, got map[*ID]Event, want EventType) {
	t.Helper()
	for id, e := range got {
		if e.Type != want || e.Status != 0 || e.Err() != nil {
			t.Fatalf("%s on %v: %v (status %d, %v), want %v", step, id, e.Type, e.Status, e.Err(), want)
		}
	}
}

// asyncConnectAll takes n IDs through every step to established, all
// steps in flight for all IDs at once, on one channel.
func asyncConnectAll(ctx context.Context, t *testing.T, ch *EventChannel, v *verbsOf, dst netip.AddrPort, n int) []*ID {
	t.Helper()
	ids := make([]*ID, n)
	for i := range ids {
		id, err := ch.CreateID(PortSpaceTCP)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
		t.Cleanup(func() { id.Close() })
	}
	got := asyncStep(ctx, t, ch, ids, func(id *ID) error {
		return id.StartResolveAddr(netip.AddrPort{}, dst, 5*time.Second)
	})
	wantAll(t, "resolve addr", got, EventAddrResolved)
	got = asyncStep(ctx, t, ch, ids, func(id *ID) error { return id.StartResolveRoute(5 * time.Second) })
	wantAll(t, "resolve route", got, EventRouteResolved)
	for _, id := range ids {
		qp, err := v.qp(id)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { qp.Close() })
	}
	// Each reply is answered as it comes (a server may wait for the RTU of
	// one connection before it accepts the next).
	// On iWARP the answer is ESTABLISHED, which CompleteConnect answers
	// too.
	answer := EventConnectResponse
	if labIWARP(t) {
		answer = EventEstablished
	}
	got = asyncStepThen(ctx, t, ch, ids, func(id *ID) error { return id.StartConnect(DefaultConnParam(), []byte("hello")) }, func(e Event) {
		if e.Type != answer {
			return
		}
		if err := e.ID.CompleteConnect(); err != nil {
			t.Errorf("complete connect of %v: %v", e.ID, err)
		} else if s := e.ID.QP().State(); s != uverbs.QPStateRTS {
			t.Errorf("%v: QP in %v after CompleteConnect, want RTS", e.ID, s)
		}
	})
	wantAll(t, "connect", got, answer)
	return ids
}

// Many IDs in flight in each step, against an async server: every
// connection is established and then torn down from one reader. On siw,
// fewer (each connection is a TCP connection and an MPA exchange).
func TestAsyncManyInFlight(t *testing.T) { eachLabPair(t, testAsyncManyInFlight) }

func testAsyncManyInFlight(t *testing.T) {
	ctx := testCtx(t)
	srv := startAsyncServer(t, ctx)
	ch, err := NewAsyncEventChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	n := 48
	if labIWARP(t) {
		n = 6
	}
	ids := asyncConnectAll(ctx, t, ch, newVerbs(t), srv.addr, n)
	got := asyncStep(ctx, t, ch, ids, func(id *ID) error { return id.Disconnect() })
	wantAll(t, "disconnect", got, EventDisconnected)
	for _, id := range ids {
		select {
		case <-id.Done():
		default:
			t.Fatalf("%v: Done open after DISCONNECTED", id)
		}
	}
	// On iWARP the client's DISCONNECTED does not wait for the server's
	// event loop (the TCP close ends the connection), so the server may
	// still be taking its ESTABLISHED events.
	for {
		srv.mu.Lock()
		est := srv.established
		srv.mu.Unlock()
		if est == n {
			break
		}
		if ctx.Err() != nil || !labIWARP(t) {
			t.Fatalf("the server saw %d connections established, want %d", est, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The async client against the blocking Listener.
func TestAsyncClientListener(t *testing.T) {
	ctx := testCtx(t)
	l := listenLab(ctx, t, nil)
	const n = 16
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range n {
			c, err := l.Accept(ctx)
			if err != nil {
				t.Errorf("accept: %v", err)
				return
			}
			if got := string(c.PeerPrivateData()[:5]); got != "hello" {
				t.Errorf("request's private data %q, want hello", got)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				select {
				case <-c.Done():
				case <-ctx.Done():
					t.Errorf("no DISCONNECTED on %v", c.RemoteAddr())
				}
			}()
		}
	}()
	t.Cleanup(func() { l.Close(); wg.Wait() }) // before listenLab's
	ch, err := NewAsyncEventChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	ids := asyncConnectAll(ctx, t, ch, newVerbs(t), l.Addr(), n)
	got := asyncStep(ctx, t, ch, ids, func(id *ID) error { return id.Disconnect() })
	wantAll(t, "disconnect", got, EventDisconnected)
	wg.Wait()
}

// Failures come as events (or as the starting command's error), matching
// the errors of the waiting methods; misuse of the two kinds of channel
// says what to use.
func TestAsyncErrors(t *testing.T) {
	ctx := testCtx(t)
	srvAddr, _ := labAddrs(t)
	ch, err := NewAsyncEventChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	newID := func() *ID {
		id, err := ch.CreateID(PortSpaceTCP)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { id.Close() })
		return id
	}

	// No answer to ARP: ADDR_ERROR, several IDs at once.
	a := srvAddr.As4()
	a[3] = 99
	nobody := netip.AddrPortFrom(netip.AddrFrom4(a), 7471)
	ids := []*ID{newID(), newID(), newID()}
	got := asyncStep(ctx, t, ch, ids, func(id *ID) error {
		return id.StartResolveAddr(netip.AddrPort{}, nobody, 500*time.Millisecond)
	})
	for id, e := range got {
		if e.Type != EventAddrError || !errors.Is(e.Err(), ErrAddrResolve) {
			t.Errorf("%v resolving %v: %v, %v; want ADDR_ERROR matching ErrAddrResolve", id, nobody, e.Type, e.Err())
		}
	}

	// No route: the command itself fails, as ResolveAddr does.
	err = newID().StartResolveAddr(netip.AddrPort{}, netip.MustParseAddrPort("192.0.2.1:7471"), 500*time.Millisecond)
	if !errors.Is(err, ErrAddrResolve) || !errors.Is(err, unix.ENETUNREACH) {
		t.Errorf("resolving 192.0.2.1: %v, want ErrAddrResolve with ENETUNREACH", err)
	}

	// Nothing listens on the port: REJECTED, matching ErrConnRefused.
	l := listenLab(ctx, t, nil)
	closedPort := l.Addr()
	l.Close()
	v := newVerbs(t)
	id := newID()
	got = asyncStep(ctx, t, ch, []*ID{id}, func(id *ID) error {
		return id.StartResolveAddr(netip.AddrPort{}, closedPort, 5*time.Second)
	})
	wantAll(t, "resolve addr", got, EventAddrResolved)
	got = asyncStep(ctx, t, ch, []*ID{id}, func(id *ID) error { return id.StartResolveRoute(5 * time.Second) })
	wantAll(t, "resolve route", got, EventRouteResolved)
	qp, err := v.qp(id)
	if err != nil {
		t.Fatal(err)
	}
	defer qp.Close()
	got = asyncStep(ctx, t, ch, []*ID{id}, func(id *ID) error { return id.StartConnect(DefaultConnParam(), nil) })
	if e := got[id]; e.Type != EventRejected || !errors.Is(e.Err(), ErrConnRefused) {
		t.Errorf("connect to %v where nothing listens: %v, %v; want REJECTED matching ErrConnRefused", closedPort, e.Type, e.Err())
	}
	if err := id.CompleteConnect(); !errors.Is(err, unix.EINVAL) {
		t.Errorf("CompleteConnect without a CONNECT_RESPONSE: %v, want EINVAL", err)
	}

	// The waiting methods refuse async IDs, the Start methods routed ones,
	// and a routed channel has no GetEvents.
	aid := newID()
	if err := aid.ResolveAddr(ctx, netip.AddrPort{}, closedPort); !errors.Is(err, unix.EINVAL) {
		t.Errorf("ResolveAddr on an async ID: %v, want EINVAL", err)
	}
	if _, err := aid.GetEvent(ctx); !errors.Is(err, unix.EINVAL) {
		t.Errorf("ID.GetEvent on an async ID: %v, want EINVAL", err)
	}
	rch, err := NewEventChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer rch.Close()
	rid, err := rch.CreateID(PortSpaceTCP)
	if err != nil {
		t.Fatal(err)
	}
	defer rid.Close()
	if err := rid.StartResolveRoute(0); !errors.Is(err, unix.EINVAL) {
		t.Errorf("StartResolveRoute on a routed ID: %v, want EINVAL", err)
	}
	if _, err := rch.GetEvent(ctx); !errors.Is(err, unix.EINVAL) {
		t.Errorf("GetEvent on a routed channel: %v, want EINVAL", err)
	}
}

// IDs closed while their connection requests are in flight, a reader
// cancelled while it waits, and a channel closed under a waiting reader:
// nothing hangs, the requests are answered by the kernel, and nothing
// leaks (the leak tracer checks fds and mappings at the end).
func TestAsyncCloseInFlight(t *testing.T) {
	ctx := testCtx(t)
	l := pendingListener(t, ctx) // never accepts: requests stay pending
	ch, err := NewAsyncEventChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	v := newVerbs(t)
	const n = 12
	ids := make([]*ID, n)
	for i := range ids {
		if ids[i], err = ch.CreateID(PortSpaceTCP); err != nil {
			t.Fatal(err)
		}
		id := ids[i]
		t.Cleanup(func() { id.Close() })
	}
	got := asyncStep(ctx, t, ch, ids, func(id *ID) error {
		return id.StartResolveAddr(netip.AddrPort{}, l.Addr(), 5*time.Second)
	})
	wantAll(t, "resolve addr", got, EventAddrResolved)
	got = asyncStep(ctx, t, ch, ids, func(id *ID) error { return id.StartResolveRoute(5 * time.Second) })
	wantAll(t, "resolve route", got, EventRouteResolved)
	qps := make([]*uverbs.QP, n)
	for i, id := range ids {
		if qps[i], err = v.qp(id); err != nil {
			t.Fatal(err)
		}
		qp := qps[i]
		t.Cleanup(func() { qp.Close() })
		if err := id.StartConnect(DefaultConnParam(), nil); err != nil {
			t.Fatal(err)
		}
	}
	// Half the IDs go while their requests are in flight; their events
	// never come.
	for i := 0; i < n/2; i++ {
		qps[i].Close()
		if err := ids[i].Close(); err != nil {
			t.Errorf("closing %v with a request in flight: %v", ids[i], err)
		}
	}
	// A reader whose context ends returns ctx's error.
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(300*time.Millisecond, cancel)
	for {
		e, err := ch.GetEvent(cctx)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("reader with a cancelled context: %v, want context.Canceled", err)
			}
			break
		}
		if e.ID == nil || e.ID.takenClosed() {
			t.Errorf("event %v of a closed ID %v", e.Type, e.ID)
		}
	}
	// A reader waiting when the channel goes (its last IDs closed, then
	// the channel) returns ErrClosed.
	errc := make(chan error, 1)
	go func() {
		for {
			if _, err := ch.GetEvent(ctx); err != nil {
				errc <- err
				return
			}
		}
	}()
	for i := n / 2; i < n; i++ {
		qps[i].Close()
		ids[i].Close()
	}
	ch.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("reader of a closed channel: %v, want ErrClosed", err)
		}
	case <-ctx.Done():
		t.Fatal("the reader of a closed channel did not return")
	}
	if _, err := ch.GetEvent(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("GetEvent after Close: %v, want ErrClosed", err)
	}
	// The listener's pending requests from the closed IDs are gone (the
	// kernel rejected or timed them out): it can still be closed cleanly.
	if err := l.Close(); err != nil {
		t.Errorf("closing the listener: %v", err)
	}
}
