package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goverbs/rdma/uverbs"
)

// logHook is a Config.Logf that calls on(line) for every line: the tests
// below use it to hold the CM at one step, through the package's own
// logging, with no hook in the code under test.
type logHook struct {
	mu    sync.Mutex
	lines []string
	on    func(line string)
}

func (h *logHook) logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	h.mu.Lock()
	h.lines = append(h.lines, line)
	on := h.on
	h.mu.Unlock()
	if on != nil {
		on(line)
	}
}

// holdAt returns a hook that holds the goroutine logging the first line
// with substr (for a CM event: the channel's reader) until release is
// closed; reached is closed when it gets there.
func holdAt(substr string) (h *logHook, reached, release chan struct{}) {
	reached, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	h = &logHook{on: func(line string) {
		if strings.Contains(line, substr) {
			first := false
			once.Do(func() { first = true; close(reached) })
			if first {
				<-release
			}
		}
	}}
	return h, reached, release
}

func (h *logHook) saw(substr string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range h.lines {
		if strings.Contains(l, substr) {
			return l
		}
	}
	return ""
}

// documentedDialError reports whether err is one of the errors Dial's
// documentation lists for a peer that rejects, goes away or does not
// answer, or a context that ends.
func documentedDialError(err error) bool {
	var rej *RejectError
	var ev *EventError
	return errors.As(err, &rej) || errors.As(err, &ev) ||
		errors.Is(err, ErrTimeout) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// TestAcceptDropsWithdrawnRequest: a client that gives up its request
// before the server takes it (the server's CM then holds a request whose
// peer sent a REJ) costs the server nothing: Accept drops it, says so
// through Logf with the client's address, and returns the next client's
// connection.
func TestAcceptDropsWithdrawnRequest(t *testing.T) {
	ctx := testCtx(t)
	for attempt := 1; ; attempt++ {
		hook := &logHook{}
		arrived := make(chan struct{}, 1)
		hook.on = func(line string) {
			if strings.Contains(line, "event RDMA_CM_EVENT_CONNECT_REQUEST") {
				select {
				case arrived <- struct{}{}:
				default:
				}
			}
		}
		l := listenLab(ctx, t, &Config{Logf: hook.logf})
		// The client that gives up: its Dial is cancelled once the server's
		// CM has its request, and its ID destroyed (the kernel sends a REJ).
		dctx, cancel := context.WithCancel(ctx)
		gaveUp := make(chan error, 1)
		var quitter netip.AddrPort
		go func() {
			c, err := Resolve(dctx, l.Addr().String(), nil)
			if err != nil {
				gaveUp <- err
				return
			}
			quitter = c.LocalAddr()
			err = c.Connect(dctx, nil)
			c.Close()
			gaveUp <- err
		}()
		select {
		case <-arrived:
		case <-ctx.Done():
			t.Fatal("no connection request arrived")
		}
		cancel()
		if err := <-gaveUp; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Dial: %v, want context.Canceled", err)
		}
		time.Sleep(300 * time.Millisecond) // for the REJ to reach the server's CM
		good := make(chan error, 1)
		go func() { good <- echoClient(ctx, l.Addr().String(), "after a withdrawn request") }()
		c, err := l.Accept(ctx)
		if err != nil {
			t.Fatalf("Accept after a withdrawn request: %v (it must drop the request and wait for the next)", err)
		}
		serveEcho(ctx, t, c)
		if err := <-good; err != nil {
			t.Fatalf("client after the withdrawn one: %v", err)
		}
		c.Close()
		l.Close()
		line := hook.saw("dropped")
		if line == "" && hook.saw("accept failed") != "" && attempt < 5 {
			// The REJ came after the request was built: Accept's own
			// retry took it. Try again for the path under test.
			t.Logf("attempt %d: the REJ came late (%s); again", attempt, hook.saw("accept failed"))
			continue
		}
		if line == "" {
			t.Fatalf("no line about the dropped request in the log:\n%s", strings.Join(hook.lines, "\n"))
		}
		if !strings.Contains(line, quitter.Addr().String()) {
			t.Errorf("drop line %q does not name the client %v", line, quitter)
		}
		return
	}
}

// serveEcho answers one message on an accepted connection (the client
// sends first; its RNR retries cover the receive posted after Accept).
func serveEcho(ctx context.Context, t *testing.T, c *Conn) {
	t.Helper()
	ep := newEndpoint(t, c, 4096)
	defer ep.close()
	if err := c.QP().PostRecv([]uverbs.RecvWR{{ID: 1, SGEs: []uverbs.SGE{ep.mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	wc, err := waitWC(ctx, c)
	if err != nil || wc.Status != uverbs.WCSuccess {
		t.Fatalf("server receive: %v %v", wc.Status, err)
	}
	if err := c.QP().PostSend([]uverbs.SendWR{{ID: 2, Op: uverbs.OpSend, Flags: uverbs.SendSignaled,
		SGEs: []uverbs.SGE{ep.mr.SGE(0, int(wc.ByteLen))}}}); err != nil {
		t.Fatal(err)
	}
	if err := echoSent(ctx, c); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done():
	case <-ctx.Done():
		t.Fatal("no DISCONNECTED from the client")
	}
}

// TestDialPeerGoneBeforeRTU: the server accepts and then goes away before
// the client's RTU (the client is held at its CONNECT_RESPONSE). Dial
// returns one of its documented errors, never the failed command's own.
func TestDialPeerGoneBeforeRTU(t *testing.T) {
	ctx := testCtx(t)
	l := listenLab(ctx, t, nil)
	for attempt := 1; ; attempt++ {
		hook, replied, release := holdAt("event RDMA_CM_EVENT_CONNECT_RESPONSE")
		dialed := dialAndClose(ctx, l, &Config{Logf: hook.logf})
		c, err := l.GetRequest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		actx, stop := context.WithCancel(ctx)
		accepted := make(chan error, 1)
		go func() { accepted <- c.Accept(actx, nil) }()
		select {
		case <-replied:
		case <-ctx.Done():
			t.Fatal("the client never saw the reply")
		}
		stop()
		<-accepted
		c.Close()                          // the server's CM sends a REJ
		time.Sleep(300 * time.Millisecond) // for it to reach the client's CM
		close(release)
		err = <-dialed
		if err == nil {
			if attempt < 5 {
				t.Logf("attempt %d: the REJ came after the RTU; again", attempt)
				continue
			}
			t.Fatal("Dial succeeded every time although the server had gone before the RTU")
		}
		var op *OpError
		if errors.As(err, &op) || !documentedDialError(err) {
			t.Fatalf("Dial: %v (%T): want a *RejectError or an *EventError (ErrUnreachable), as Dial documents", err, err)
		}
		if !errors.Is(err, ErrRejected) && !errors.Is(err, ErrUnreachable) && !errors.Is(err, ErrDisconnected) {
			t.Fatalf("Dial: %v: want ErrRejected, ErrUnreachable or ErrDisconnected", err)
		}
		t.Logf("Dial: %v", err)
		return
	}
}

// dialAndClose dials l in the background, closes what it gets and reports
// how the Dial ended.
func dialAndClose(ctx context.Context, l *Listener, cfg *Config) <-chan error {
	dialed := make(chan error, 1)
	go func() {
		c, err := Dial(ctx, l.Addr().String(), cfg)
		if err == nil {
			c.Close()
		}
		dialed <- err
	}()
	return dialed
}

// readers counts the goroutines running an event channel's reader.
func readers() int {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	return strings.Count(string(buf[:n]), "rdmacm.(*EventChannel).read(")
}

// waitFor polls cond for up to limit.
func waitFor(limit time.Duration, cond func() bool) bool {
	for end := time.Now().Add(limit); ; time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// TestListenerCloseWhileRouting: the listener is closed while the
// channel's reader holds a connection request it has not queued yet. The
// reader refuses the request, closes the channel's fd (the last
// reference) and stops; it used to wait for itself for ever.
func TestListenerCloseWhileRouting(t *testing.T) { eachLabPair(t, testListenerCloseWhileRouting) }

func testListenerCloseWhileRouting(t *testing.T) {
	ctx := testCtx(t)
	before := readers()
	hook, routing, closed := holdAt("event RDMA_CM_EVENT_CONNECT_REQUEST")
	l := listenLab(ctx, t, &Config{Logf: hook.logf})
	dialed := make(chan error, 1)
	go func() {
		c, err := Dial(ctx, l.Addr().String(), &Config{ConnectTimeout: 10 * time.Second})
		if err == nil {
			c.Close()
		}
		dialed <- err
	}()
	select {
	case <-routing:
	case <-ctx.Done():
		t.Fatal("no connection request arrived")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	close(closed)
	if err := <-dialed; err == nil || !documentedDialError(err) {
		t.Errorf("Dial to a listener closed under it: %v, want a documented error", err)
	}
	if !waitFor(10*time.Second, func() bool { return readers() == before }) {
		t.Fatalf("%d event channel readers still run after the listener closed (%d before)", readers(), before)
	}
}

// labState is what the churn test compares before and after.
type labState struct {
	fds, goroutines, cmIDs int
}

func readLabState(t *testing.T) labState {
	t.Helper()
	// The command first: the first one may open the runtime's poller.
	out, err := exec.Command("rdma", "res", "show", "cm_id").CombinedOutput()
	if err != nil {
		t.Fatalf("rdma res show cm_id: %v: %s", err, out)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	ids := 0
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "cm-idn") {
			ids++
		}
	}
	return labState{fds: len(fds), goroutines: runtime.NumGoroutine(), cmIDs: ids}
}

// TestChurn: 32 clients exchange echo messages with a server while 8 more
// cancel their Dials at random moments, and a second listener is closed
// twice under Dials in flight. Every good client gets its echo, every
// failed Dial returns a documented error, the server never fails, and
// afterwards the process's fds, goroutines and the kernel's CM IDs are
// back to what they were.
func TestChurn(t *testing.T) {
	ctx := testCtx(t)
	labAddrs(t) // outside the lab: skips, saying how to run it
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	base := readLabState(t)

	l := listenLab(ctx, t, &Config{Backlog: 64, Logf: t.Logf})
	var served, aborted atomic.Int32
	var handlers sync.WaitGroup
	acceptDone := make(chan error, 1)
	go func() {
		for {
			c, err := l.Accept(ctx)
			if err != nil {
				acceptDone <- err
				return
			}
			handlers.Add(1)
			go func() {
				defer handlers.Done()
				defer c.Close()
				if churnServe(ctx, c) == nil {
					served.Add(1)
				} else {
					aborted.Add(1)
				}
			}()
		}
	}()

	var clients sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	const good, quitters = 32, 8
	for i := range good {
		clients.Add(1)
		go func() {
			defer clients.Done()
			if err := echoClient(ctx, l.Addr().String(), fmt.Sprintf("churn client %02d", i)); err != nil {
				fail("good client %d: %v", i, err)
			}
		}()
	}
	for i := range quitters {
		delay := time.Duration(rng.IntN(30)) * time.Millisecond
		clients.Add(1)
		go func() {
			defer clients.Done()
			dctx, cancel := context.WithTimeout(ctx, delay)
			defer cancel()
			err := echoClient(dctx, l.Addr().String(), fmt.Sprintf("quitter %d", i))
			if err != nil && !documentedDialError(err) {
				fail("quitter %d (after %v): %v (%T), not a documented error", i, delay, err, err)
			}
		}()
	}
	// A second listener closed under Dials in flight, twice.
	for round := range 2 {
		l2 := listenLab(ctx, t, nil)
		go func() {
			for {
				c, err := l2.Accept(ctx)
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		var dials sync.WaitGroup
		for i := range 4 {
			dials.Add(1)
			go func() {
				defer dials.Done()
				c, err := Dial(ctx, l2.Addr().String(), &Config{ConnectTimeout: 15 * time.Second})
				if err == nil {
					c.Close()
					return
				}
				if !documentedDialError(err) {
					fail("dial %d to closing listener (round %d): %v (%T), not a documented error", i, round, err, err)
				}
			}()
		}
		time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
		if err := l2.Close(); err != nil {
			t.Error(err)
		}
		dials.Wait()
	}
	clients.Wait()
	l.Close()
	if err := <-acceptDone; !errors.Is(err, ErrClosed) {
		t.Errorf("Accept ended with %v, want ErrClosed (after Close)", err)
	}
	handlers.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	if n := served.Load(); n < good {
		t.Errorf("the server served %d connections, want at least the %d good clients", n, good)
	}
	t.Logf("served %d, aborted %d", served.Load(), aborted.Load())
	var after labState
	if !waitFor(15*time.Second, func() bool { after = readLabState(t); return after == base }) {
		t.Fatalf("after the churn: %+v, before: %+v", after, base)
	}
}

// churnServe echoes one message; a client that went away is not an error
// of the server (it reports it and ends). Shutdown runs on every path once
// the MR is registered, so that the buffer can be freed.
func churnServe(ctx context.Context, c *Conn) (err error) {
	buf, err := uverbs.AllocBuffer(4096)
	if err != nil {
		return err
	}
	defer buf.Close()
	mr, err := c.RegMR(buf.Bytes(), uverbs.AccessLocalWrite)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		err = errors.Join(err, c.Shutdown(sctx))
	}()
	if err := c.QP().PostRecv([]uverbs.RecvWR{{ID: 1, SGEs: []uverbs.SGE{mr.SGE(0, 64)}}}); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	wcs := make([]uverbs.WC, 1)
	if _, err := c.CQ().PollWait(wctx, wcs); err != nil {
		return err
	}
	if wcs[0].Status != uverbs.WCSuccess {
		return fmt.Errorf("wr %d: %v", wcs[0].ID, wcs[0].Status)
	}
	if err := c.QP().PostSend([]uverbs.SendWR{{ID: 2, Op: uverbs.OpSend, Flags: uverbs.SendSignaled,
		SGEs: []uverbs.SGE{mr.SGE(0, int(wcs[0].ByteLen))}}}); err != nil {
		return err
	}
	return echoSent(wctx, c)
}

// TestShutdown: Shutdown disconnects, waits for the CM, flushes the posted
// receives onto the CQ and deregisters the MRs of RegMR, so that the
// buffer behind them can be freed at once; on a request never accepted it
// says ErrNotConnected.
func TestShutdown(t *testing.T) { eachLabPair(t, testShutdown) }

func testShutdown(t *testing.T) {
	ctx := testCtx(t)
	l := listenLab(ctx, t, nil)
	c, s := dialAccepted(ctx, t, l)
	defer c.Close()
	defer s.Close()
	buf, err := uverbs.AllocBuffer(4096)
	if err != nil {
		t.Fatal(err)
	}
	mr, err := c.RegMR(buf.Bytes(), uverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	const posted = 4
	for i := range posted {
		if err := c.QP().PostRecv([]uverbs.RecvWR{{ID: uint64(i), SGEs: []uverbs.SGE{mr.SGE(64*i, 64)}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := buf.Close(); err == nil {
		t.Fatal("the buffer closed while an MR of the connection still registers it")
	}
	if err := c.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	select {
	case <-c.Done():
	default:
		t.Error("Shutdown returned before the CM confirmed the disconnect")
	}
	if err := buf.Close(); err != nil {
		t.Fatalf("the buffer after Shutdown: %v (the MR of RegMR should be gone)", err)
	}
	wcs := make([]uverbs.WC, posted+1)
	n, err := c.CQ().Poll(wcs)
	if err != nil || n != posted {
		t.Fatalf("poll after Shutdown: %d completions, %v; want the %d flushed receives", n, err, posted)
	}
	for _, wc := range wcs[:n] {
		if wc.Status != uverbs.WCFlushError {
			t.Errorf("wr %d: %v, want flushed", wc.ID, wc.Status)
		}
	}
	if err := c.Shutdown(ctx); err != nil {
		t.Errorf("a second Shutdown: %v, want nil (the connection is over)", err)
	}
	select {
	case <-s.Done():
	case <-ctx.Done():
		t.Fatal("the server saw no DISCONNECTED")
	}

	// A request taken and never accepted is not connected.
	dialed := dialAndClose(ctx, l, nil)
	r, err := l.GetRequest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Shutdown(ctx); !errors.Is(err, ErrNotConnected) {
		t.Errorf("Shutdown of a request: %v, want ErrNotConnected", err)
	}
	r.Close() // refuses the request
	if err := <-dialed; !errors.Is(err, ErrRejected) {
		t.Errorf("Dial to a request closed unanswered: %v, want ErrRejected", err)
	}
}
