package main

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/goverbs/rdma/rsocket"
	"google.golang.org/grpc"
	testpb "google.golang.org/grpc/interop/grpc_testing"
)

// BenchmarkNewConnPerCall is gRPC interop's channel soak shape: each
// iteration opens a new client connection, makes one unary call of 64
// bytes on it and closes it, so an iteration is the cost of a connection
// (its rsocket or TCP set-up, gRPC's HTTP/2 handshake, one round trip and
// the teardown). The same server, once on an rsocket listener and once on
// a TCP listener on the same veth address, so that the two transports are
// compared. Reported as connections/s too (BENCHMARKS.md, "Connection
// rate: a server accepting from 16 dialers").
func BenchmarkNewConnPerCall(b *testing.B) {
	host := labAddr(b)
	for _, transport := range []string{"rsocket", "tcp"} {
		b.Run(transport, func(b *testing.B) {
			ctx := context.Background()
			var l net.Listener
			var err error
			var opts []grpc.DialOption
			if transport == "rsocket" {
				l, err = rsocket.Listen(ctx, "rdma", net.JoinHostPort(host, "0"))
			} else {
				l, err = net.Listen("tcp", net.JoinHostPort(host, "0"))
				var d net.Dialer
				opts = append(opts, grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
					return d.DialContext(ctx, "tcp", addr)
				}))
			}
			if err != nil {
				b.Fatal(err)
			}
			srv := newServer(echoService{})
			served := make(chan error, 1)
			go func() { served <- srv.Serve(l) }()
			defer func() {
				srv.Stop()
				if err := <-served; err != nil {
					b.Errorf("Serve: %v", err)
				}
			}()
			body := pattern(64, 1)
			start := time.Now()
			for b.Loop() {
				cc, err := newClient(l.Addr().String(), &rsocket.Dialer{}, opts...)
				if err != nil {
					b.Fatal(err)
				}
				cctx, cancel := context.WithTimeout(ctx, rpcTimeout)
				err = unaryEcho(cctx, testpb.NewTestServiceClient(cc), body)
				cancel()
				cc.Close()
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "conns/s")
		})
	}
}
