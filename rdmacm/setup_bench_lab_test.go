package rdmacm

import (
	"context"
	"testing"
)

// BenchmarkDialAccept: one connection set up and torn down per iteration,
// Dial against a Listener's Accept on the veth pair (resolve, route, QP,
// connect, RTU, disconnect, destroy on both sides). cmd/cmtime measures
// the same steps one by one against librdmacm's cmtime.
func BenchmarkDialAccept(b *testing.B) {
	ctx := context.Background()
	l := listenLab(ctx, b, &Config{Backlog: 128})
	accepted := make(chan *Conn, 1)
	go func() {
		for {
			c, err := l.Accept(ctx)
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	b.ReportAllocs()
	for b.Loop() {
		c, err := Dial(ctx, l.Addr().String(), nil)
		if err != nil {
			b.Fatal(err)
		}
		s := <-accepted
		c.Close()
		<-s.Done()
		s.Close()
	}
}
