// Command grpc runs gRPC-Go over RDMA: the server serves on an
// rsocket.Listener and the client dials with an rsocket.Dialer, so every
// RPC travels over an rsocket stream instead of TCP. The service is
// gRPC's own test service (google.golang.org/grpc/interop/grpc_testing),
// which keeps this module free of generated code: UnaryCall and
// FullDuplexCall echo the payloads they get.
//
// Server (address of an RDMA device's netdev, and a CM port):
//
//	grpc -listen 10.0.0.1:7471
//
// Client: unary echoes of -size bytes, then a stream of as many messages:
//
//	grpc -server 10.0.0.1:7471 -size 1048576 -count 10
//
// It is a module of its own so that github.com/goverbs/rdma does not depend
// on gRPC.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"time"

	"github.com/goverbs/rdma/rsocket"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
)

// maxMsg is the largest message either side takes (gRPC's default is
// 4 MiB, which a 4 MiB payload exceeds by its framing).
const maxMsg = 64 << 20

// echoService answers UnaryCall and FullDuplexCall with the payload it got.
type echoService struct {
	testpb.UnimplementedTestServiceServer
}

func (echoService) EmptyCall(context.Context, *testpb.Empty) (*testpb.Empty, error) {
	return &testpb.Empty{}, nil
}

func (echoService) UnaryCall(_ context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	return &testpb.SimpleResponse{Payload: req.GetPayload()}, nil
}

func (echoService) FullDuplexCall(stream testpb.TestService_FullDuplexCallServer) error {
	for {
		req, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := stream.Send(&testpb.StreamingOutputCallResponse{Payload: req.GetPayload()}); err != nil {
			return err
		}
	}
}

// newServer returns a gRPC server with svc registered.
func newServer(svc testpb.TestServiceServer, opts ...grpc.ServerOption) *grpc.Server {
	opts = append([]grpc.ServerOption{grpc.MaxRecvMsgSize(maxMsg), grpc.MaxSendMsgSize(maxMsg)}, opts...)
	s := grpc.NewServer(opts...)
	testpb.RegisterTestServiceServer(s, svc)
	return s
}

// serve serves svc on l until ctx ends, then stops gracefully: RPCs in
// flight complete, new ones are refused.
func serve(ctx context.Context, l net.Listener, svc testpb.TestServiceServer) error {
	s := newServer(svc)
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	s.GracefulStop()
	return <-done
}

// dialer is what grpc.WithContextDialer takes: gRPC gives the address of
// the target ("passthrough:///10.0.0.1:7471" gives "10.0.0.1:7471").
func dialer(d *rsocket.Dialer) func(context.Context, string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		return d.DialContext(ctx, "rdma", addr)
	}
}

// newClient returns a client of the server at addr over rsocket. The
// passthrough scheme hands addr to the dialer as it is, with no DNS.
func newClient(addr string, d *rsocket.Dialer, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	opts = append([]grpc.DialOption{
		grpc.WithContextDialer(dialer(d)),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsg), grpc.MaxCallSendMsgSize(maxMsg)),
	}, opts...)
	return grpc.NewClient("passthrough:///"+addr, opts...)
}

// pattern returns n bytes that differ with seed.
func pattern(n, seed int) []byte {
	b := make([]byte, n)
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// runClient makes count unary echoes of size bytes, then streams count
// messages of size bytes through FullDuplexCall, checking every echo.
func runClient(ctx context.Context, cc *grpc.ClientConn, size, count int, out io.Writer) error {
	client := testpb.NewTestServiceClient(cc)
	start := time.Now()
	for i := range count {
		body := pattern(size, i)
		resp, err := client.UnaryCall(ctx, &testpb.SimpleRequest{Payload: &testpb.Payload{Body: body}})
		if err != nil {
			return fmt.Errorf("UnaryCall %d: %w", i, err)
		}
		if !bytes.Equal(resp.GetPayload().GetBody(), body) {
			return fmt.Errorf("UnaryCall %d: the echo of %d bytes differs (%d bytes came back)", i, size, len(resp.GetPayload().GetBody()))
		}
	}
	fmt.Fprintf(out, "unary:  %d x %d bytes echoed in %v\n", count, size, time.Since(start).Round(time.Millisecond))

	start = time.Now()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := client.FullDuplexCall(sctx)
	if err != nil {
		return fmt.Errorf("FullDuplexCall: %w", err)
	}
	sent := make(chan error, 1)
	go func() {
		for i := range count {
			if err := stream.Send(&testpb.StreamingOutputCallRequest{Payload: &testpb.Payload{Body: pattern(size, i)}}); err != nil {
				sent <- err
				return
			}
		}
		sent <- stream.CloseSend()
	}()
	for i := range count {
		resp, err := stream.Recv()
		if err != nil {
			return fmt.Errorf("FullDuplexCall: message %d: %w", i, err)
		}
		if !bytes.Equal(resp.GetPayload().GetBody(), pattern(size, i)) {
			return fmt.Errorf("FullDuplexCall: the echo of message %d differs", i)
		}
	}
	if _, err := stream.Recv(); err != io.EOF {
		return fmt.Errorf("FullDuplexCall: after %d echoes: %v, want the end of the stream", count, err)
	}
	if err := <-sent; err != nil {
		return fmt.Errorf("FullDuplexCall: send: %w", err)
	}
	fmt.Fprintf(out, "stream: %d x %d bytes echoed in %v\n", count, size, time.Since(start).Round(time.Millisecond))
	return nil
}

func main() {
	listen := flag.String("listen", "", "serve on this address (ip:port of an RDMA device's netdev)")
	server := flag.String("server", "", "call the server at this address (ip:port)")
	size := flag.Int("size", 1<<20, "client: bytes per message")
	count := flag.Int("count", 10, "client: messages per test")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	switch {
	case *listen != "" && *server == "":
		var l *rsocket.Listener
		if l, err = rsocket.Listen(ctx, "rdma", *listen); err == nil {
			fmt.Printf("serving on %v (Ctrl-C stops)\n", l.Addr())
			err = serve(ctx, l, echoService{})
		}
	case *server != "" && *listen == "":
		var cc *grpc.ClientConn
		if cc, err = newClient(*server, &rsocket.Dialer{}); err == nil {
			err = runClient(ctx, cc, *size, *count, os.Stdout)
			cc.Close()
		}
	default:
		err = errors.New("give -listen (server) or -server (client)")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "grpc:", err)
		os.Exit(1)
	}
}
