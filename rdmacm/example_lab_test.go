package rdmacm_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/testutil"
	"github.com/goverbs/rdma/rdmacm"
	"github.com/goverbs/rdma/uverbs"
)

// TestLabExampleDial runs ExampleDial against a server on the lab's veth
// pair that takes the request as ExampleListener_GetRequest does (a
// receive posted before the accept), and checks what each side saw.
func TestLabExampleDial(t *testing.T) {
	ends := testutil.VethPair(t)
	if ends[0].Addr != "10.77.0.1" {
		t.Fatalf("ExampleDial dials 10.77.0.1, the lab's %s is on %s", ends[0].Device, ends[0].Addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l, err := rdmacm.Listen(ctx, "10.77.0.1:7471", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan string, 1)
	go func() {
		got <- serveOne(ctx, l)
	}()
	if out := testutil.Stdout(t, ExampleDial); out != fmt.Sprintf("send: %v\n", uverbs.WCSuccess) {
		t.Errorf("ExampleDial printed %q", out)
	}
	if msg := <-got; msg != "hello" {
		t.Errorf("the server received %q, want hello", msg)
	}
}

// serveOne accepts one connection, receives one message and returns it (or
// what went wrong).
func serveOne(ctx context.Context, l *rdmacm.Listener) string {
	c, err := l.GetRequest(ctx)
	if err != nil {
		return err.Error()
	}
	defer c.Close()
	buf, err := uverbs.AllocBuffer(4096)
	if err != nil {
		return err.Error()
	}
	defer buf.Close()
	mr, err := c.RegMR(buf.Bytes(), uverbs.AccessLocalWrite)
	if err != nil {
		return err.Error()
	}
	defer c.Shutdown(ctx)
	if err := c.QP().PostRecv([]uverbs.RecvWR{{ID: 1, SGEs: []uverbs.SGE{mr.SGE(0, 4096)}}}); err != nil {
		return err.Error()
	}
	if err := c.Accept(ctx, nil); err != nil {
		return err.Error()
	}
	wcs := make([]uverbs.WC, 1)
	if _, err := c.CQ().PollWait(ctx, wcs); err != nil {
		return err.Error()
	}
	if err := wcs[0].Status.Err(); err != nil {
		return err.Error()
	}
	return string(buf.Bytes()[:wcs[0].ByteLen])
}
