package rsocket

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkCloseScaling: closing one connection while n pairs of the
// process stay open (rdmacm gives every connection of a device the same
// PD, so a Close that looked at every QP of the PD grew with n). Each
// iteration connects one more pair over the loopback rxe device, then
// closes its client (the active close: DISCONNECT sent, sends drained, QP
// and CM ID destroyed, buffers deregistered) and then its server (whose
// peer is gone); only the two Close calls are timed. The medians are
// reported as client-ms and server-ms. 16 KiB buffers, the other options
// rsocket's defaults.
func BenchmarkCloseScaling(b *testing.B) {
	opts := Options{SendBuffer: 16 << 10, RecvBuffer: 16 << 10}
	for _, n := range []int{8, 64, 256, 1024} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			ctx := context.Background()
			l, err := (&ListenConfig{Options: opts, Backlog: 128}).Listen(ctx, "rdma", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			d := &Dialer{Options: opts}
			connect := func() (c, s *Conn) {
				acc := make(chan error, 1)
				go func() {
					var err error
					s, err = l.AcceptConn(ctx)
					acc <- err
				}()
				c, err := d.Dial(ctx, "rdma", l.Addr().String())
				if err != nil {
					b.Fatalf("connection %d: %v", n, err)
				}
				if err := <-acc; err != nil {
					c.Close()
					b.Fatalf("connection %d: %v", n, err)
				}
				return c, s
			}
			for i := range n {
				c, s := connect()
				b.Cleanup(func() { c.Close(); s.Close() })
				if i == 0 {
					// The same device, the same PD: the case measured.
					if c.cm.QP().PD() != s.cm.QP().PD() {
						b.Fatal("the client and the server of a pair have different PDs")
					}
				}
			}
			var client, server []time.Duration
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				c, s := connect()
				b.StartTimer()
				t0 := time.Now()
				if err := c.Close(); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				client, server = append(client, t1.Sub(t0)), append(server, t2.Sub(t1))
			}
			b.StopTimer()
			b.ReportMetric(medianMS(client), "client-ms")
			b.ReportMetric(medianMS(server), "server-ms")
		})
	}
}

func medianMS(d []time.Duration) float64 {
	slices.Sort(d)
	return float64(d[len(d)/2]) / float64(time.Millisecond)
}
