package rsocket

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/internal/testutil"
)

// BenchmarkCloseScaling: closing one connection while n pairs of the
// process stay open (rdmacm gives every connection of a device the same
// PD, so a Close that looked at every QP of the PD grew with n). Each
// iteration connects one more pair over the lab's veth pair, then closes
// its client (the active close: DISCONNECT sent, sends drained, QP and CM
// ID destroyed, buffers deregistered) and then its server (whose peer is
// gone); only the two Close calls are timed. The medians are reported as
// client-ms and server-ms. 16 KiB buffers, the other options rsocket's
// defaults. The n pairs are connected once, each n adding to the last.
func BenchmarkCloseScaling(b *testing.B) {
	opts := Options{SendBuffer: 16 << 10, RecvBuffer: 16 << 10}
	ctx := context.Background()
	ends := testutil.VethPair(b)
	// A few descriptors per connection (its CM event channel and
	// completion channel among them): 1024 pairs need more than the
	// lab's hard limit of 4096, which root may raise.
	if err := raiseNoFile(8*(1024+64) + 256); err != nil {
		b.Fatal(err)
	}
	l, err := (&ListenConfig{Options: opts}).Listen(ctx, "rdma", ends[0].Addr+":0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	d := &Dialer{Options: opts}
	k := 0
	connect := func(b *testing.B) (c, s *Conn) {
		k++
		acc := make(chan error, 1)
		go func() {
			var err error
			s, err = l.AcceptConn(ctx)
			acc <- err
		}()
		c, err := d.Dial(ctx, "rdma", l.Addr().String())
		if err != nil {
			b.Fatalf("connection %d: %v", k, err)
		}
		if err := <-acc; err != nil {
			c.Close()
			b.Fatalf("connection %d: %v", k, err)
		}
		return c, s
	}
	var open []*Conn
	b.Cleanup(func() {
		for _, c := range open {
			c.Close()
		}
	})
	for _, n := range []int{8, 64, 256, 1024} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for len(open) < 2*n {
				c, s := connect(b)
				open = append(open, c, s)
			}
			if open[0].cm.QP().PD() != open[len(open)-1].cm.QP().PD() {
				b.Fatal("the connections do not share one PD: not the case measured")
			}
			var client, server []time.Duration
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				c, s := connect(b)
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

// raiseNoFile raises RLIMIT_NOFILE to at least want descriptors.
func raiseNoFile(want uint64) error {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return err
	}
	if rl.Cur >= want {
		return nil
	}
	rl.Cur, rl.Max = want, max(rl.Max, want)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return fmt.Errorf("raising RLIMIT_NOFILE to %d for the connections: %w (run as root, or raise ulimit -n)", want, err)
	}
	return nil
}

func medianMS(d []time.Duration) float64 {
	slices.Sort(d)
	return float64(d[len(d)/2]) / float64(time.Millisecond)
}
