package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goverbs/rdma/uverbs"
)

// echoServer accepts connections on l until acceptCtx ends and echoes one
// message on each: it posts a receive before accepting, waits for it, sends
// the bytes back and waits (within ctx) for the client to disconnect. The
// echo's send may come back flushed by that disconnect (see echoSent); the
// client checks that the echo arrived.
func echoServer(acceptCtx, ctx context.Context, t *testing.T, l *Listener, wg *sync.WaitGroup) {
	for {
		c, err := l.GetRequest(acceptCtx)
		if err != nil {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ep := newEndpoint(t, c, 4096)
			defer ep.close()
			if err := c.QP().PostRecv([]uverbs.RecvWR{{ID: 1, SGEs: []uverbs.SGE{ep.mr.SGE(0, 64)}}}); err != nil {
				t.Error(err)
				return
			}
			if err := c.Accept(ctx, nil); err != nil {
				t.Errorf("accept: %v", err)
				return
			}
			wc, err := waitWC(ctx, c)
			if err != nil || wc.Status != uverbs.WCSuccess {
				t.Errorf("server receive: %v %v", wc.Status, err)
				return
			}
			if err := c.QP().PostSend([]uverbs.SendWR{{ID: 2, Op: uverbs.OpSend, Flags: uverbs.SendSignaled,
				SGEs: []uverbs.SGE{ep.mr.SGE(0, int(wc.ByteLen))}}}); err != nil {
				t.Error(err)
				return
			}
			if err := echoSent(ctx, c); err != nil {
				t.Error(err)
				return
			}
			select {
			case <-c.Done():
			case <-ctx.Done():
				t.Errorf("server: no DISCONNECTED from %v", c.RemoteAddr())
			}
		}()
	}
}

// echoSent waits for the completion of the echo's send. A receiver's
// completion comes before its ACK reaches the sender's completer, so a
// client that disconnects once it has its echo may move this QP to the
// error state first (docs/kernel-behaviour.md §2): a flushed send is then
// accepted once the client's disconnect has arrived; the client checks the
// echo.
func echoSent(ctx context.Context, c *Conn) error {
	wc, err := waitWC(ctx, c)
	switch {
	case err != nil:
		return fmt.Errorf("server send: %w", err)
	case wc.Status == uverbs.WCSuccess:
		return nil
	case wc.Status != uverbs.WCFlushError:
		return fmt.Errorf("server send: %v", wc.Status)
	}
	select {
	case <-c.Done():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("server send: %v, and no DISCONNECTED from the client", wc.Status)
	}
}

// echoClient connects, sends msg and checks the echo.
func echoClient(ctx context.Context, addr, msg string) error {
	c, err := Dial(ctx, addr, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	buf, err := uverbs.AllocBuffer(4096)
	if err != nil {
		return err
	}
	defer buf.Close()
	mr, err := c.PD().RegMR(buf.Bytes(), uverbs.AccessLocalWrite)
	if err != nil {
		return err
	}
	defer mr.Close()
	if err := c.QP().PostRecv([]uverbs.RecvWR{{ID: 1, SGEs: []uverbs.SGE{mr.SGE(64, 64)}}}); err != nil {
		return err
	}
	copy(buf.Bytes(), msg)
	if err := c.QP().PostSend([]uverbs.SendWR{{ID: 2, Op: uverbs.OpSend, Flags: uverbs.SendSignaled, SGEs: []uverbs.SGE{mr.SGE(0, len(msg))}}}); err != nil {
		return err
	}
	sendFlushed := false
	for got := 0; got < 2; got++ {
		wc, err := waitWC(ctx, c)
		if err != nil {
			return err
		}
		// A server that disconnects once its echo is sent (churnServe) may
		// flush our send before our completer took its ACK (see echoSent);
		// the echo below proves it arrived.
		if wc.ID == 2 && wc.Status == uverbs.WCFlushError {
			sendFlushed = true
			continue
		}
		if wc.Status != uverbs.WCSuccess {
			return fmt.Errorf("completion of wr %d: %v", wc.ID, wc.Status)
		}
	}
	if sendFlushed {
		select {
		case <-c.Done():
		case <-ctx.Done():
			return fmt.Errorf("completion of wr 2: %v, and no DISCONNECTED from the server", uverbs.WCFlushError)
		}
	}
	if echo := string(buf.Bytes()[64 : 64+len(msg)]); echo != msg {
		return fmt.Errorf("echo %q, sent %q", echo, msg)
	}
	return nil
}

// TestManyClients: 16 clients connect to one listener at once; each gets
// its own echo.
func TestManyClients(t *testing.T) { eachLabPair(t, testManyClients) }

func testManyClients(t *testing.T) {
	ctx := testCtx(t)
	l := listenLab(ctx, t, nil)
	sctx, stop := context.WithCancel(ctx)
	var handlers sync.WaitGroup
	served := make(chan struct{})
	go func() { echoServer(sctx, ctx, t, l, &handlers); close(served) }()
	const clients = 16
	errs := make(chan error, clients)
	for i := range clients {
		go func() { errs <- echoClient(ctx, l.Addr().String(), fmt.Sprintf("client %02d says hello", i)) }()
	}
	for range clients {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	stop()
	<-served
	handlers.Wait()
	l.Close()
}

// TestClientKilled: a client process killed mid-connection gives the server
// a DISCONNECTED and flushed completions for its connection only; another
// client's connection goes on (docs/robustness.md §1 item 11).
func TestClientKilled(t *testing.T) { eachLabPair(t, testClientKilled) }

func testClientKilled(t *testing.T) {
	if addr := os.Getenv("GOVERBS_RDMACM_KILLED_CLIENT"); addr != "" {
		killedClient(addr)
		return
	}
	ctx := testCtx(t)
	l := listenLab(ctx, t, nil)

	// The doomed client runs in a child process.
	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestClientKilled$")
	child.Env = append(os.Environ(), "GOVERBS_RDMACM_KILLED_CLIENT="+l.Addr().String())
	stdout, _ := child.StdoutPipe()
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	doomed, err := l.GetRequest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dep := newEndpoint(t, doomed, 4096)
	defer dep.close()
	const posted = 8
	for i := range posted {
		if err := doomed.QP().PostRecv([]uverbs.RecvWR{{ID: uint64(100 + i), SGEs: []uverbs.SGE{dep.mr.SGE(i*64, 64)}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := doomed.Accept(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// The child sends one message, then says "ready" and waits to die.
	wc, err := waitWC(ctx, doomed)
	if err != nil || wc.Status != uverbs.WCSuccess || wc.ID != 100 {
		t.Fatalf("first message from the child: %+v %v", wc, err)
	}
	ready := make([]byte, 6)
	if _, err := io.ReadFull(stdout, ready); err != nil || string(ready) != "ready\n" {
		t.Fatalf("child said %q, %v", ready, err)
	}

	// A second, healthy client.
	var handlers sync.WaitGroup
	sctx, stop := context.WithCancel(ctx)
	defer stop()

	child.Process.Signal(syscall.SIGKILL)
	child.Wait()
	select {
	case <-doomed.Done():
	case <-ctx.Done():
		t.Fatal("no DISCONNECTED after the client process was killed")
	}
	// Every other receive comes back flushed.
	flushed := 0
	wcs := make([]uverbs.WC, 16)
	deadline := time.Now().Add(20 * time.Second)
	for flushed < posted-1 && time.Now().Before(deadline) {
		n, err := doomed.CQ().Poll(wcs)
		if err != nil {
			t.Fatal(err)
		}
		for _, wc := range wcs[:n] {
			if wc.Status != uverbs.WCFlushError {
				t.Errorf("completion of wr %d after the peer died: %v, want %v", wc.ID, wc.Status, uverbs.WCFlushError)
			}
			flushed++
		}
		if n == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if flushed != posted-1 {
		t.Fatalf("%d of %d posted receives came back after the peer died", flushed, posted-1)
	}

	// The listener and the healthy path still work.
	served := make(chan struct{})
	go func() { echoServer(sctx, ctx, t, l, &handlers); close(served) }()
	if err := echoClient(ctx, l.Addr().String(), "still alive"); err != nil {
		t.Fatalf("a client after the killed one: %v", err)
	}
	stop()
	<-served
	handlers.Wait()
}

// killedClient is the child of TestClientKilled.
func killedClient(addr string) {
	ctx := context.Background()
	c, err := Dial(ctx, addr, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child dial:", err)
		os.Exit(2)
	}
	buf, _ := uverbs.AllocBuffer(4096)
	mr, err := c.PD().RegMR(buf.Bytes(), uverbs.AccessLocalWrite)
	if err != nil {
		os.Exit(2)
	}
	copy(buf.Bytes(), "first and last")
	c.QP().PostSend([]uverbs.SendWR{{ID: 1, Op: uverbs.OpSend, Flags: uverbs.SendSignaled, SGEs: []uverbs.SGE{mr.SGE(0, 14)}}})
	if wc, err := waitWC(ctx, c); err != nil || wc.Status != uverbs.WCSuccess {
		os.Exit(2)
	}
	fmt.Println("ready")
	time.Sleep(time.Minute)
	os.Exit(3)
}

// TestTeardownWithUnreadEvents: closing connections whose events nobody
// read never blocks (docs/robustness.md §1 item 20).
func TestTeardownWithUnreadEvents(t *testing.T) { eachLabPair(t, testTeardownWithUnreadEvents) }

func testTeardownWithUnreadEvents(t *testing.T) {
	ctx := testCtx(t)
	l := listenLab(ctx, t, nil)
	c, sc := dialAccepted(ctx, t, l)
	// The client disconnects; the server's DISCONNECTED (and the client's)
	// stay queued, unread. Then everything closes, listener first.
	if err := c.Disconnect(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sc.Done():
	case <-ctx.Done():
		t.Fatal("the server got no DISCONNECTED")
	}
	err := within(t, 10*time.Second, "closing with unread events", func() error {
		return errors.Join(l.Close(), sc.Close(), c.Close())
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := sc.ID().GetEvent(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("GetEvent after Close: %v, want ErrClosed", err)
	}
	if err := sc.QP().PostSend([]uverbs.SendWR{{ID: 1, Op: uverbs.OpSend}}); !errors.Is(err, uverbs.ErrClosed) {
		t.Fatalf("PostSend after Close: %v, want ErrClosed", err)
	}

}

// TestCloseQPFirst: a connection whose QP its owner closed first still
// tells the peer when it closes.
func TestCloseQPFirst(t *testing.T) { eachLabPair(t, testCloseQPFirst) }

func testCloseQPFirst(t *testing.T) {
	ctx := testCtx(t)
	srv, _ := labAddrs(t)
	sc, c := connectPair(t, ctx, netip.AddrPortFrom(srv, 0).String(), nil, nil)
	if err := c.QP().Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close after QP().Close(): %v", err)
	}
	select {
	case <-sc.Done():
	case <-ctx.Done():
		t.Fatal("the peer got no DISCONNECTED")
	}
}
