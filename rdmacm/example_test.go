package rdmacm_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/goverbs/rdma/rdmacm"
	"github.com/goverbs/rdma/uverbs"
)

// A client: connect, send one message, wait for its completion.
func ExampleDial() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := rdmacm.Dial(ctx, "10.77.0.1:7471", nil) // the lab's server address
	switch {
	case errors.Is(err, rdmacm.ErrConnRefused):
		log.Fatal("nothing listens on 10.77.0.1:7471")
	case err != nil:
		log.Fatal(err) // *rdmacm.RejectError, *rdmacm.EventError, rdmacm.ErrTimeout, ...
	}
	defer c.Close() // disconnect, QP, CQ, MRs, device, CM ID: in that order

	buf, err := uverbs.AllocBuffer(4096)
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Close() // after Shutdown: no work in flight names it any more
	mr, err := c.RegMR(buf.Bytes(), uverbs.AccessLocalWrite)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Shutdown(ctx) // disconnect, wait, flush the QP, deregister mr

	n := copy(buf.Bytes(), "hello")
	err = c.QP().PostSend([]uverbs.SendWR{{ID: 1, Op: uverbs.OpSend, Flags: uverbs.SendSignaled,
		SGEs: []uverbs.SGE{mr.SGE(0, n)}}})
	if err != nil {
		log.Fatal(err)
	}
	// PollWait polls; while the CQ is empty it arms it, polls again and
	// sleeps on its completion channel.
	wcs := make([]uverbs.WC, 1)
	if _, err := c.CQ().PollWait(ctx, wcs); err != nil {
		log.Fatal(err)
	}
	fmt.Println("send:", wcs[0].Status)
}

// A server: look at each request's private data, then accept or reject it;
// post a receive before accepting so the client's first SEND finds it.
func ExampleListener_GetRequest() {
	ctx := context.Background()
	l, err := rdmacm.Listen(ctx, "10.0.0.1:7471", &rdmacm.Config{RecvDepth: 64})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	for {
		c, err := l.GetRequest(ctx) // a client that gave up is skipped
		if err != nil {
			log.Fatal(err) // the listener or its device is gone
		}
		// The CM pads private data to 56 bytes: this protocol puts a
		// one-byte version first.
		if c.PeerPrivateData()[0] != 1 {
			c.Reject([]byte("unsupported version"))
			continue
		}
		go func() {
			defer c.Close()
			buf, _ := uverbs.AllocBuffer(1 << 16)
			defer buf.Close()
			mr, _ := c.RegMR(buf.Bytes(), uverbs.AccessLocalWrite)
			defer c.Shutdown(ctx)
			c.QP().PostRecv([]uverbs.RecvWR{{ID: 1, SGEs: []uverbs.SGE{mr.SGE(0, 1<<16)}}})
			if err := c.Accept(ctx, []byte("welcome")); err != nil {
				log.Print(err) // the client gave up: serve the others
				return
			}
			fmt.Println("connected:", c.RemoteAddr())
			<-c.Done() // until the peer disconnects
		}()
	}
}

// Closing in order when the program gives the PD (Config.PD) and registers
// memory on it itself: its MRs first, then the Conn, whose Close always
// releases what the Conn holds, then the PD. A PD's Close is refused with
// uverbs.ErrBusy, and the PD stays open, while an MR or the connection's QP
// still uses it.
func ExampleConn_Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dev, err := uverbs.Open("rxe1") // the device of the route to the peer
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close() // last: it would also close whatever is still open
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	c, err := rdmacm.Dial(ctx, "10.77.0.2:7471", &rdmacm.Config{PD: pd})
	if err != nil {
		log.Fatal(err)
	}
	buf, err := uverbs.AllocBuffer(4096)
	if err != nil {
		log.Fatal(err)
	}
	mr, err := pd.RegMR(buf.Bytes(), uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite)
	if err != nil {
		log.Fatal(err)
	}
	// ... send mr.Addr() and mr.RKey() to the peer, which WRITEs into buf ...

	if err := c.Shutdown(ctx); err != nil { // no work in flight names mr any more
		log.Print(err)
	}
	if err := mr.Close(); err != nil {
		log.Fatal(err)
	}
	if err := c.Close(); err != nil {
		log.Print(err) // the connection's resources are released all the same
	}
	if err := pd.Close(); errors.Is(err, uverbs.ErrBusy) {
		log.Fatal(err) // names what is still open on the PD: close that first
	}
	if err := buf.Close(); err != nil {
		log.Fatal(err)
	}
}
