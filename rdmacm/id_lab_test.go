package rdmacm

import (
	"errors"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/uverbs"
)

// TestIDLevel drives both sides through the CM's own objects, step by step,
// on one event channel, as a librdmacm program does with
// rdma_create_id/rdma_get_cm_event.
func TestIDLevel(t *testing.T) { eachLabPair(t, testIDLevel) }

func testIDLevel(t *testing.T) {
	ctx := testCtx(t)
	srv, _ := labAddrs(t)
	ch, err := NewEventChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	lid, err := ch.CreateID(PortSpaceTCP)
	if err != nil {
		t.Fatal(err)
	}
	defer lid.Close()
	if err := lid.Bind(netip.AddrPortFrom(srv, 0)); err != nil {
		t.Fatal(err)
	}
	if err := lid.Listen(4); err != nil {
		t.Fatal(err)
	}
	linfo, err := lid.Query()
	if err != nil {
		t.Fatal(err)
	}
	dev, ok := lid.DeviceInfo()
	port := lid.Port()
	if !ok || dev.Name != labDeviceOf(t, srv) || port != 1 {
		t.Fatalf("listener bound to %v: device %v %d %v", srv, dev.Name, port, ok)
	}
	vdev, err := uverbs.OpenDevice(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer vdev.Close()
	pd, err := vdev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	cq, err := vdev.CreateCQ(uverbs.CQInit{Depth: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer cq.Close()
	qinit := uverbs.QPInit{SendCQ: cq, RecvCQ: cq, Cap: uverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}

	// Wrong order: a route before an address, a QP before a device.
	cid, err := ch.CreateID(PortSpaceTCP)
	if err != nil {
		t.Fatal(err)
	}
	defer cid.Close()
	if err := cid.ResolveRoute(ctx); !errors.Is(err, unix.EINVAL) {
		t.Errorf("ResolveRoute before ResolveAddr: %v, want EINVAL", err)
	}
	if _, err := cid.CreateQP(pd, qinit); !errors.Is(err, unix.EINVAL) {
		t.Errorf("CreateQP before ResolveAddr: %v, want EINVAL", err)
	}
	if _, err := cid.Connect(ctx, DefaultConnParam(), nil); !errors.Is(err, unix.EINVAL) {
		t.Errorf("Connect without a QP: %v, want EINVAL", err)
	}
	if err := cid.Accept(ctx, DefaultConnParam(), nil); !errors.Is(err, unix.EINVAL) {
		t.Errorf("Accept on an ID that is not a request: %v, want EINVAL", err)
	}

	if err := cid.ResolveAddr(ctx, netip.AddrPort{}, linfo.Local); err != nil {
		t.Fatal(err)
	}
	if err := cid.ResolveRoute(ctx); err != nil {
		t.Fatal(err)
	}
	cqp, err := cid.CreateQP(pd, qinit)
	if err != nil {
		t.Fatal(err)
	}
	defer cqp.Close()
	if _, err := cid.CreateQP(pd, qinit); !errors.Is(err, unix.EBUSY) {
		t.Errorf("a second CreateQP: %v, want EBUSY", err)
	}
	if cqp.State() != uverbs.QPStateInit {
		t.Fatalf("client QP %v after CreateQP, want INIT", cqp.State())
	}

	connected := make(chan error, 1)
	go func() {
		e, err := cid.Connect(ctx, DefaultConnParam(), []byte("hi"))
		if err == nil && e.Type != EventEstablished {
			err = errors.New(e.Type.String())
		}
		connected <- err
	}()
	e, err := lid.GetEvent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// MPA (iWARP) carries no QP number.
	wantQPN := cqp.QPN()
	if labIWARP(t) {
		wantQPN = 0
	}
	if e.Type != EventConnectRequest || e.Request == nil || string(e.PrivateData[:2]) != "hi" || e.RemoteQPN != wantQPN {
		t.Fatalf("listener event %v: request %v, private data %q, remote QPN %#x (client QP %#x)", e.Type, e.Request, e.PrivateData[:2], e.RemoteQPN, cqp.QPN())
	}
	req := e.Request
	defer req.Close()
	sqp, err := req.CreateQP(pd, qinit)
	if err != nil {
		t.Fatal(err)
	}
	defer sqp.Close()
	if err := req.Accept(ctx, DefaultConnParam(), nil); err != nil {
		t.Fatal(err)
	}
	if err := <-connected; err != nil {
		t.Fatal(err)
	}
	for _, qp := range []*uverbs.QP{cqp, sqp} {
		a, err := qp.Query(uverbs.QPAttrDestQPN | uverbs.QPAttrState)
		if err != nil {
			t.Fatal(err)
		}
		if a.State != uverbs.QPStateRTS {
			t.Errorf("QP %#x: %v", qp.QPN(), a.State)
		}
	}
	// An iWARP QP has no destination QP number: MPA carries none.
	if a, _ := cqp.Query(uverbs.QPAttrDestQPN); !labIWARP(t) && a.DestQPN != sqp.QPN() {
		t.Errorf("client QP's destination %#x, server QP %#x", a.DestQPN, sqp.QPN())
	}
	// Disconnect from the server: both sides get DISCONNECTED.
	if err := req.Disconnect(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []*ID{cid, req} {
		e, err := id.GetEvent(ctx)
		if err != nil || e.Type != EventDisconnected {
			t.Fatalf("%v: event %v, %v; want DISCONNECTED", id, e.Type, err)
		}
	}
	if err := req.Disconnect(); err != nil {
		t.Errorf("a second Disconnect: %v, want nothing done", err)
	}
	if err := lid.Disconnect(); !errors.Is(err, unix.EINVAL) {
		t.Errorf("Disconnect of a listener: %v, want EINVAL", err)
	}
	if err := req.Close(); err != nil {
		t.Fatal(err)
	}
	if err := req.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := req.Bind(netip.AddrPortFrom(srv, 0)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Bind after Close: %v, want ErrClosed", err)
	}
}

// EventChannel.Close closes the IDs still open on it, as the kernel's
// close of the fd destroys them: a GetEvent waiting on one returns
// ErrClosed, so do later calls on them, their Close returns nil, the
// channel makes no more IDs, and the port the listening ID held is free
// again (its DESTROY_ID ran).
func TestEventChannelCloseClosesIDs(t *testing.T) {
	ctx := testCtx(t)
	srv, _ := labAddrs(t)
	ch, err := NewEventChannel()
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
	if err := lid.Listen(4); err != nil {
		t.Fatal(err)
	}
	info, err := lid.Query()
	if err != nil {
		t.Fatal(err)
	}
	cid, err := ch.CreateID(PortSpaceTCP)
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { _, err := lid.GetEvent(ctx); waited <- err }()

	if err := ch.Close(); err != nil {
		t.Fatalf("Close of a channel with two IDs open: %v", err)
	}
	select {
	case err := <-waited:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("GetEvent on an ID of the closed channel: %v, want ErrClosed", err)
		}
	case <-ctx.Done():
		t.Fatal("closing the channel did not end a GetEvent on its ID")
	}
	if err := cid.Bind(netip.AddrPortFrom(srv, 0)); !errors.Is(err, ErrClosed) {
		t.Errorf("Bind on an ID of the closed channel: %v, want ErrClosed", err)
	}
	for _, id := range []*ID{lid, cid} {
		if err := id.Close(); err != nil {
			t.Errorf("ID.Close after its channel's Close: %v", err)
		}
	}
	if _, err := ch.CreateID(PortSpaceTCP); !errors.Is(err, ErrClosed) {
		t.Errorf("CreateID on the closed channel: %v, want ErrClosed", err)
	}

	again, err := NewEventChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	id, err := again.CreateID(PortSpaceTCP)
	if err != nil {
		t.Fatal(err)
	}
	if err := id.Bind(info.Local); err != nil {
		t.Errorf("Bind to %v, the port of the listening ID its channel closed: %v", info.Local, err)
	}
}

// Listener.Close leaves open the connections it accepted, whose IDs live
// on its event channel: their IDs answer, and a SEND still goes through.
func TestListenerCloseKeepsConns(t *testing.T) {
	srvAddr, _ := labAddrs(t)
	ctx := testCtx(t)
	l, err := Listen(ctx, netip.AddrPortFrom(srvAddr, 0).String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan *Conn, 1)
	go func() {
		c, err := l.Accept(ctx)
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	c, err := Dial(ctx, l.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sc := <-accepted
	if sc == nil {
		c.Close()
		t.FailNow()
	}
	cli, srv := newEndpoint(t, c, 4096), newEndpoint(t, sc, 4096)
	defer cli.close()
	defer srv.close()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.ID().Query(); err != nil {
		t.Fatalf("the accepted connection's ID after the Listener closed: %v", err)
	}
	if err := sc.QP().PostRecv([]uverbs.RecvWR{{ID: 7, SGEs: []uverbs.SGE{srv.mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if err := c.QP().PostSend([]uverbs.SendWR{{ID: 1, Op: uverbs.OpSend, Flags: uverbs.SendSignaled, SGEs: []uverbs.SGE{cli.mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if wc, err := waitWC(ctx, c); err != nil || wc.Status != uverbs.WCSuccess || wc.ID != 1 {
		t.Fatalf("send after the Listener closed: %+v, %v", wc, err)
	}
	if wc, err := waitWC(ctx, sc); err != nil || wc.Status != uverbs.WCSuccess || wc.ID != 7 {
		t.Fatalf("receive after the Listener closed: %+v, %v", wc, err)
	}
}
