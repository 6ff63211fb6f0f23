package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goverbs/rdma/rsocket"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Generous bounds for a busy machine running the lab under emulation; no
// test passes or fails on how long something took.
const (
	rpcTimeout  = 5 * time.Minute
	waitTimeout = 2 * time.Minute
)

// labService is the program's echo service with hooks for the tests.
type labService struct {
	echoService
	started chan struct{} // EmptyCall: a token as each call begins
	release chan struct{} // EmptyCall: returns once this is closed...
	ended   chan error    // ...or sends its context's error here when that ends first
	barrier *barrier      // UnaryCall, if set: waits for all the others first
}

func newLabService() *labService {
	return &labService{started: make(chan struct{}, 256), release: make(chan struct{}), ended: make(chan error, 256)}
}

func (s *labService) EmptyCall(ctx context.Context, _ *testpb.Empty) (*testpb.Empty, error) {
	s.started <- struct{}{}
	select {
	case <-s.release:
		return &testpb.Empty{}, nil
	case <-ctx.Done():
		s.ended <- ctx.Err()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

func (s *labService) UnaryCall(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	if s.barrier != nil {
		if err := s.barrier.arrive(ctx); err != nil {
			return nil, status.FromContextError(err).Err()
		}
	}
	return s.echoService.UnaryCall(ctx, req)
}

// barrier lets its callers through once n of them are waiting at once.
type barrier struct {
	n, arrived atomic.Int32
	all        chan struct{}
}

func newBarrier(n int) *barrier {
	b := &barrier{all: make(chan struct{})}
	b.n.Store(int32(n))
	return b
}

func (b *barrier) arrive(ctx context.Context) error {
	if b.arrived.Add(1) == b.n.Load() {
		close(b.all)
	}
	select {
	case <-b.all:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watchedListener tells when gRPC closes it and counts the connections it
// accepted.
type watchedListener struct {
	net.Listener
	accepted  atomic.Int32
	closed    chan struct{}
	closeOnce sync.Once
}

func (l *watchedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

func (l *watchedListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.closed) })
	return err
}

// labServer is a gRPC server on an rsocket listener in the lab.
type labServer struct {
	addr   string
	srv    *grpc.Server
	lis    *watchedListener
	served chan error // what Serve returned
	once   sync.Once
	err    error
}

// serveErr waits for Serve to return and returns its error.
func (s *labServer) serveErr(t *testing.T) error {
	t.Helper()
	s.once.Do(func() { s.err = recvWithin(t, s.served, "Serve to return") })
	return s.err
}

var portSeq = 7800

// startServer serves svc on the lab's first veth address and a fresh CM
// port. Cleanup stops it and checks how Serve ended.
func startServer(t *testing.T, svc testpb.TestServiceServer) *labServer {
	t.Helper()
	host := labAddr(t)
	portSeq++
	l, err := rsocket.Listen(context.Background(), "rdma", net.JoinHostPort(host, strconv.Itoa(portSeq)))
	if err != nil {
		t.Fatal(err)
	}
	s := &labServer{addr: l.Addr().String(), srv: newServer(svc),
		lis: &watchedListener{Listener: l, closed: make(chan struct{})}, served: make(chan error, 1)}
	go func() { s.served <- s.srv.Serve(s.lis) }()
	t.Cleanup(func() {
		s.srv.Stop()
		if err := s.serveErr(t); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

// client returns a ClientConn to the server; cleanup closes it.
func (s *labServer) client(t *testing.T) *grpc.ClientConn {
	t.Helper()
	cc, err := newClient(s.addr, &rsocket.Dialer{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func recvWithin[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitTimeout):
		t.Fatalf("still waiting for %s after %v", what, waitTimeout)
		var zero T
		return zero
	}
}

func rpcContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	t.Cleanup(func() {
		// A call that stalled until the deadline: the stacks say where
		// (taken before the server's cleanup stops it).
		if t.Failed() && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			buf := make([]byte, 4<<20)
			t.Logf("goroutines at the RPC deadline:\n%s", buf[:runtime.Stack(buf, true)])
		}
		cancel()
	})
	return ctx
}

func unaryEcho(ctx context.Context, c testpb.TestServiceClient, body []byte, opts ...grpc.CallOption) error {
	resp, err := c.UnaryCall(ctx, &testpb.SimpleRequest{Payload: &testpb.Payload{Body: body}}, opts...)
	if err != nil {
		return err
	}
	if got := resp.GetPayload().GetBody(); !bytes.Equal(got, body) {
		return fmt.Errorf("the echo of %d bytes differs (%d bytes came back)", len(body), len(got))
	}
	return nil
}

// TestUnary: unary echoes from empty to 4 MiB over one rsocket connection,
// whose peer address is the server's rsocket address.
func TestUnary(t *testing.T) {
	s := startServer(t, newLabService())
	c := testpb.NewTestServiceClient(s.client(t))
	ctx := rpcContext(t)
	for i, n := range []int{0, 1, 100, 16<<10 - 5, 64<<10 + 3, 1 << 20, 4 << 20} {
		var p peer.Peer
		if err := unaryEcho(ctx, c, pattern(n, i), grpc.Peer(&p)); err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if p.Addr.Network() != rsocket.Network || p.Addr.String() != s.addr {
			t.Fatalf("the RPC went to %s %v, want %s %v", p.Addr.Network(), p.Addr, rsocket.Network, s.addr)
		}
	}
	if n := s.lis.accepted.Load(); n != 1 {
		t.Fatalf("the server accepted %d connections, want 1", n)
	}
}

// TestBidiStream: FullDuplexCall with sending and receiving at once, in
// messages of mixed sizes up to 1 MiB, then an orderly end of the stream.
func TestBidiStream(t *testing.T) {
	s := startServer(t, newLabService())
	c := testpb.NewTestServiceClient(s.client(t))
	sizes := []int{1, 1000, 70000, 1 << 20, 0, 33, 512 << 10, 5}
	for round := range 3 {
		if err := streamEcho(rpcContext(t), c, sizes, round); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

// streamEcho sends messages of the given sizes on a FullDuplexCall while
// it reads their echoes, and checks each and the end of the stream.
func streamEcho(ctx context.Context, c testpb.TestServiceClient, sizes []int, seed int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.FullDuplexCall(ctx)
	if err != nil {
		return err
	}
	sent := make(chan error, 1)
	go func() {
		for i, n := range sizes {
			if err := stream.Send(&testpb.StreamingOutputCallRequest{Payload: &testpb.Payload{Body: pattern(n, seed*1000+i)}}); err != nil {
				sent <- fmt.Errorf("send %d: %w", i, err)
				return
			}
		}
		sent <- stream.CloseSend()
	}()
	for i, n := range sizes {
		resp, err := stream.Recv()
		if err != nil {
			return fmt.Errorf("receive %d: %w", i, err)
		}
		if !bytes.Equal(resp.GetPayload().GetBody(), pattern(n, seed*1000+i)) {
			return fmt.Errorf("message %d (%d bytes): the echo differs (%d bytes)", i, n, len(resp.GetPayload().GetBody()))
		}
	}
	if _, err := stream.Recv(); err != io.EOF {
		return fmt.Errorf("after %d echoes: %v, want the end of the stream", len(sizes), err)
	}
	return <-sent
}

// TestLargeMessages: 4 MiB messages, above gRPC's default limit once
// framed, unary and streamed both ways.
func TestLargeMessages(t *testing.T) {
	s := startServer(t, newLabService())
	c := testpb.NewTestServiceClient(s.client(t))
	ctx := rpcContext(t)
	for i := range 2 {
		if err := unaryEcho(ctx, c, pattern(4<<20, i)); err != nil {
			t.Fatalf("unary %d: %v", i, err)
		}
	}
	if err := streamEcho(ctx, c, []int{4 << 20, 4 << 20, 4 << 20}, 7); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrent64: 64 RPCs on one ClientConn, all in their handlers at
// once (each waits for the other 63), each with its own payload.
func TestConcurrent64(t *testing.T) {
	const n = 64
	svc := newLabService()
	svc.barrier = newBarrier(n)
	s := startServer(t, svc)
	c := testpb.NewTestServiceClient(s.client(t))
	ctx := rpcContext(t)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			if err := unaryEcho(ctx, c, pattern(1000+i*517, i)); err != nil {
				errs <- fmt.Errorf("RPC %d: %w", i, err)
				return
			}
			errs <- nil
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if got := svc.barrier.arrived.Load(); got != n {
		t.Errorf("%d handlers ran, want %d", got, n)
	}
	if got := s.lis.accepted.Load(); got != 1 {
		t.Errorf("the server accepted %d connections, want 1", got)
	}
}

// TestDeadline: an RPC whose handler blocks ends with DeadlineExceeded, not
// before its deadline; the handler's context ends too, and the connection
// goes on serving.
func TestDeadline(t *testing.T) {
	svc := newLabService()
	s := startServer(t, svc)
	c := testpb.NewTestServiceClient(s.client(t))
	if err := unaryEcho(rpcContext(t), c, []byte("warm-up")); err != nil {
		t.Fatal(err)
	}
	// On a loaded machine the deadline may pass before the request reaches
	// the handler; then the call is tried again with a longer one.
	for d := 5 * time.Second; ; d *= 4 {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		deadline, _ := ctx.Deadline()
		_, err := c.EmptyCall(ctx, &testpb.Empty{})
		cancel()
		if status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("EmptyCall with a handler that blocks: %v, want DeadlineExceeded", err)
		}
		if early := time.Until(deadline); early > 0 {
			t.Fatalf("DeadlineExceeded %v before the deadline", early)
		}
		if len(svc.started) > 0 || d >= time.Minute {
			break
		}
		t.Logf("the handler did not start within the %v deadline; again with %v", d, 4*d)
	}
	recvWithin(t, svc.started, "the handler to start")
	herr := recvWithin(t, svc.ended, "the handler's context to end")
	if !errors.Is(herr, context.DeadlineExceeded) && !errors.Is(herr, context.Canceled) {
		t.Fatalf("the handler's context ended with %v", herr)
	}
	if err := unaryEcho(rpcContext(t), c, []byte("after the deadline")); err != nil {
		t.Fatal(err)
	}
}

// TestCancel: cancelling an RPC in its handler ends it with Canceled on the
// client and cancels the handler's context.
func TestCancel(t *testing.T) {
	svc := newLabService()
	s := startServer(t, svc)
	c := testpb.NewTestServiceClient(s.client(t))
	ctx, cancel := context.WithCancel(rpcContext(t))
	done := make(chan error, 1)
	go func() {
		_, err := c.EmptyCall(ctx, &testpb.Empty{})
		done <- err
	}()
	recvWithin(t, svc.started, "the handler to start")
	cancel()
	if err := recvWithin(t, done, "the cancelled RPC to return"); status.Code(err) != codes.Canceled {
		t.Fatalf("cancelled EmptyCall: %v, want Canceled", err)
	}
	if herr := recvWithin(t, svc.ended, "the handler's context to end"); !errors.Is(herr, context.Canceled) {
		t.Fatalf("the handler's context ended with %v, want context.Canceled", herr)
	}
	if err := unaryEcho(rpcContext(t), c, []byte("after the cancel")); err != nil {
		t.Fatal(err)
	}
}

// TestGracefulStop: GracefulStop with RPCs in their handlers closes the
// listener at once (a new client is refused), waits for those RPCs, which
// complete, and only then returns.
func TestGracefulStop(t *testing.T) {
	const inFlight = 8
	svc := newLabService()
	s := startServer(t, svc)
	c := testpb.NewTestServiceClient(s.client(t))
	ctx := rpcContext(t)
	results := make(chan error, inFlight)
	for range inFlight {
		go func() {
			_, err := c.EmptyCall(ctx, &testpb.Empty{})
			results <- err
		}()
	}
	for range inFlight {
		recvWithin(t, svc.started, "the handlers to start")
	}
	stopped := make(chan struct{})
	go func() {
		s.srv.GracefulStop()
		close(stopped)
	}()
	recvWithin(t, s.lis.closed, "GracefulStop to close the listener")

	late := testpb.NewTestServiceClient(s.client(t))
	if _, err := late.EmptyCall(ctx, &testpb.Empty{}); status.Code(err) != codes.Unavailable {
		t.Errorf("a new client during GracefulStop: %v, want Unavailable", err)
	}
	select {
	case <-stopped:
		t.Fatal("GracefulStop returned while RPCs were in their handlers")
	default:
	}
	close(svc.release)
	for i := range inFlight {
		if err := recvWithin(t, results, "the RPCs in flight"); err != nil {
			t.Errorf("RPC %d in flight during GracefulStop: %v", i, err)
		}
	}
	recvWithin(t, stopped, "GracefulStop to return")
	if err := s.serveErr(t); err != nil {
		t.Errorf("Serve after GracefulStop: %v", err)
	}
	select {
	case err := <-svc.ended:
		t.Errorf("a handler's context ended (%v) during GracefulStop", err)
	default:
	}
}

// TestProgram runs the program's server and client code: serve until its
// context ends, runClient's unary and streamed echoes.
func TestProgram(t *testing.T) {
	host := labAddr(t)
	portSeq++
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	l, err := rsocket.Listen(ctx, "rdma", net.JoinHostPort(host, strconv.Itoa(portSeq)))
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- serve(ctx, l, echoService{}) }()
	cc, err := newClient(l.Addr().String(), &rsocket.Dialer{})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	var out bytes.Buffer
	if err := runClient(rpcContext(t), cc, 300<<10, 6, &out); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", out.String())
	for _, want := range []string{"unary:  6 x 307200 bytes echoed", "stream: 6 x 307200 bytes echoed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	stop()
	if err := recvWithin(t, served, "serve to return"); err != nil {
		t.Fatalf("serve: %v", err)
	}
}
