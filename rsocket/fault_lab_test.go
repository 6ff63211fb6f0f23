package rsocket

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/internal/testutil"
	"github.com/goverbs/rdma/rdmacm"
)

// Faults, deadlines, close and leaks. What must happen is waited for up to
// faultWait; no test passes or fails on how fast it happens.
const faultWait = 60 * time.Second * testutil.RaceSlowdown

// The process TestFaultPeerKilled kills is the test binary run again with
// these set: its role ("client" or "server") and the address to dial or
// listen on.
const (
	faultPeerEnv = "GOVERBS_RSOCKET_FAULT_PEER"
	faultAddrEnv = "GOVERBS_RSOCKET_FAULT_ADDR"
)

// TestFaultPeerKilled: a peer process killed with SIGKILL in the middle of
// a transfer both ways, as client and as server. Its kernel frees its
// memory, QP and CM ID, so we see a CM DISCONNECTED with no in-band
// disconnect first (docs/rsocket.md §4) or, before it, one of our RDMA
// writes failing (remote access error): what the peer sent stays readable
// and verifies, then Read and Write return ECONNRESET either way, never
// io.EOF, which only an orderly shutdown gives. Close then succeeds and
// leaves nothing behind.
func TestFaultPeerKilled(t *testing.T) {
	if role := os.Getenv(faultPeerEnv); role != "" {
		os.Exit(faultPeer(role, os.Getenv(faultAddrEnv)))
	}
	for _, role := range []string{"client", "server"} {
		t.Run("peer_is_"+role, func(t *testing.T) { faultKillPeer(t, role) })
	}
}

func faultKillPeer(t *testing.T, role string) {
	base := faultBaseline(t)
	var l *Listener
	var addr string
	if role == "client" {
		l, addr = labListen(t, nil)
	} else {
		ends := testutil.VethPair(t)
		portSeq++
		addr = fmt.Sprintf("%s:%d", ends[0].Addr, portSeq)
	}
	p := faultStartPeer(t, role, addr)
	ctx, cancel := context.WithTimeout(context.Background(), faultWait)
	defer cancel()
	var c *Conn
	var err error
	if role == "client" {
		type res struct {
			c   *Conn
			err error
		}
		acc := make(chan res, 1)
		go func() {
			c, err := l.AcceptConn(ctx)
			acc <- res{c, err}
		}()
		select {
		case r := <-acc:
			c, err = r.c, r.err
		case <-p.exited:
			t.Fatalf("the peer ended before connecting: %v\n%s", p.cmd.ProcessState, p.stderr)
		}
	} else {
		if err := p.waitLine(ctx, "listening"); err != nil {
			t.Fatalf("the peer did not listen: %v\n%s", err, p.stderr)
		}
		c, err = Dial(ctx, "rdma", addr)
	}
	if err != nil {
		t.Fatalf("connecting with the peer: %v\n%s", err, p.stderr)
	}
	defer c.Close()

	f := faultStartFlow(c, 1, 0)
	if !faultPoll(func() bool { return f.read.Load() >= 1<<20 && f.written.Load() >= 1<<20 || f.ended() }) || f.ended() {
		t.Fatalf("before the kill: %d bytes read (%v), %d written (%v)\n%s", f.read.Load(), f.readErr, f.written.Load(), f.writeErr, p.stderr)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the peer ended by itself (%v), not by our SIGKILL:\n%s", p.cmd.ProcessState, p.stderr)
	}
	readAtKill, writtenAtKill := f.read.Load(), f.written.Load()
	if !faultPoll(f.ended2) {
		t.Fatalf("%v after the peer was killed: Read ended: %v (%v), Write ended: %v (%v)", faultWait,
			isClosed(f.readDone), f.readErr, isClosed(f.writeDone), f.writeErr)
	}
	t.Logf("killed after %d bytes read, %d written; in the end %d read, %d written", readAtKill, writtenAtKill, f.read.Load(), f.written.Load())
	faultWantReset(t, "Read", f.readErr)
	faultWantReset(t, "Write", f.writeErr)
	// The connection stays reset.
	_, err = c.Read(make([]byte, 10))
	faultWantReset(t, "a later Read", err)
	_, err = c.Write([]byte("x"))
	faultWantReset(t, "a later Write", err)
	if err := c.Close(); err != nil {
		t.Errorf("Close of a reset connection: %v", err)
	}
	if l != nil {
		l.Close()
	}
	p.close()
	base.check(t)
}

func faultWantReset(t *testing.T, what string, err error) {
	t.Helper()
	var oe *net.OpError
	switch {
	case err == io.EOF:
		t.Errorf("%s: io.EOF, but the peer was killed: want ECONNRESET", what)
	case !errors.Is(err, syscall.ECONNRESET) || !errors.As(err, &oe):
		t.Errorf("%s: %v (%T), want a *net.OpError matching syscall.ECONNRESET", what, err, err)
	}
}

// faultPeer is the process TestFaultPeerKilled kills: it connects, then
// streams faultByte seed 0 to us and discards what we send, until killed.
func faultPeer(role, addr string) int {
	ctx := context.Background()
	var c *Conn
	var err error
	switch role {
	case "client":
		c, err = Dial(ctx, "rdma", addr)
	case "server":
		var l *Listener
		if l, err = Listen(ctx, "rdma", addr); err == nil {
			fmt.Println("listening")
			c, err = l.AcceptConn(ctx)
		}
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	go func() {
		_, err := io.Copy(io.Discard, c)
		fmt.Fprintln(os.Stderr, "reading:", err)
		os.Exit(3)
	}()
	_, err = io.Copy(c, &faultStream{})
	fmt.Fprintln(os.Stderr, "writing:", err)
	return 3
}

type faultProc struct {
	cmd    *exec.Cmd
	stdout *bufio.Reader
	pipe   *os.File
	stderr *testutil.SyncBuffer
	exited chan struct{}
}

// faultStartPeer runs faultPeer in a process of its own; the test's end
// kills it if it still runs.
func faultStartPeer(t *testing.T, role, addr string) *faultProc {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProc{stdout: bufio.NewReader(r), pipe: r, stderr: &testutil.SyncBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], "-test.run=^TestFaultPeerKilled$", "-test.count=1")
	p.cmd.Env = append(os.Environ(), faultPeerEnv+"="+role, faultAddrEnv+"="+addr)
	p.cmd.Stdout, p.cmd.Stderr = w, p.stderr
	err = p.cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		t.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
		p.close()
	})
	return p
}

// waitLine waits for the peer to print want.
func (p *faultProc) waitLine(ctx context.Context, want string) error {
	got := make(chan string, 1)
	go func() {
		s, _ := p.stdout.ReadString('\n')
		got <- strings.TrimSpace(s)
	}()
	select {
	case s := <-got:
		if s != want {
			return fmt.Errorf("it printed %q, want %q", s, want)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *faultProc) close() { p.pipe.Close() }

// TestFaultDialNoListener: a Dial to a port nobody listens on fails with
// ErrConnRefused (the peer's CM rejects the request), not with a timeout.
func TestFaultDialNoListener(t *testing.T) {
	base := faultBaseline(t)
	ends := testutil.VethPair(t)
	portSeq++
	addr := fmt.Sprintf("%s:%d", ends[0].Addr, portSeq)
	var c *Conn
	var err error
	start := time.Now()
	faultWithin(t, "Dial to a port with no listener", func() { c, err = Dial(context.Background(), "rdma", addr) })
	t.Logf("Dial failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
	if c != nil {
		c.Close()
		t.Fatal("Dial to a port with no listener succeeded")
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "dial" || !errors.Is(err, rdmacm.ErrConnRefused) {
		t.Errorf("Dial: %v (%T), want a dial *net.OpError matching rdmacm.ErrConnRefused", err, err)
	}
	base.check(t)
}

// TestDeadlineWrite: a peer that never reads. Write fills the peer's
// receive buffer (all of it: both halves are published at the start) and
// waits; a write deadline set while it waits ends it with
// os.ErrDeadlineExceeded and the count of bytes that went; a deadline
// that passed gives the same at once with nothing written; once the
// deadline is cleared and the peer reads, the rest follows and the peer
// gets exactly the bytes written, in order.
func TestDeadlineWrite(t *testing.T) {
	const peerBuf = 64 << 10
	c, s := pair(t, nil, &ListenConfig{Options: Options{RecvBuffer: peerBuf}})
	data := make([]byte, 1<<20)
	faultFill(data, 7, 0)

	var n int
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		n, err = c.Write(data)
	}()
	if !faultPoll(func() bool { return faultQueued(s) == peerBuf && faultBlocked("(*Conn).waitWrite") || isClosed(done) }) {
		t.Fatalf("the peer's buffer did not fill: %d of %d bytes queued", faultQueued(s), peerBuf)
	}
	if isClosed(done) {
		t.Fatalf("Write returned while the peer reads nothing: %d, %v", n, err)
	}
	c.SetWriteDeadline(time.Now())
	faultWithin(t, "Write after its deadline passed", func() { <-done })
	faultWantTimeout(t, "write", n, err)
	if n != peerBuf {
		t.Errorf("Write returned %d, but the peer holds %d bytes", n, peerBuf)
	}

	c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	var n2 int
	faultWithin(t, "Write with a near deadline", func() { n2, err = c.Write(data[n:]) })
	faultWantTimeout(t, "write", n2, err)
	if n2 != 0 {
		t.Errorf("Write with the peer's buffer full wrote %d bytes", n2)
	}
	c.SetWriteDeadline(time.Now().Add(-time.Second))
	n2, err = c.Write(data[n:])
	faultWantTimeout(t, "write", n2, err)

	c.SetWriteDeadline(time.Time{})
	wrote := make(chan error, 1)
	go func() {
		k, err := c.Write(data[n:])
		if err == nil && k != len(data)-n {
			err = fmt.Errorf("wrote %d of %d", k, len(data)-n)
		}
		if err == nil {
			err = c.CloseWrite()
		}
		wrote <- err
	}()
	var got []byte
	faultWithin(t, "the peer reading to the end", func() { got, err = io.ReadAll(s) })
	if err != nil {
		t.Fatalf("the peer's read: %v", err)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("the rest of the data: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("the peer got %d bytes, first difference at %d; want the %d written", len(got), faultDiff(got, data), len(data))
	}
}

func faultWantTimeout(t *testing.T, op string, n int, err error) {
	t.Helper()
	var oe *net.OpError
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &oe) || oe.Op != op || !oe.Timeout() {
		t.Errorf("%s: %d, %v (%T), want a %s *net.OpError matching os.ErrDeadlineExceeded", op, n, err, err, op)
	}
	if op == "read" && n != 0 {
		t.Errorf("read: %d bytes with a deadline error", n)
	}
}

// TestDeadlineRead: a passed deadline fails Read at once, data queued or
// not (the data stays for the next Read); a near one ends a waiting Read;
// a deadline moved earlier or later while a Read waits takes effect; the
// connection works both ways afterwards.
func TestDeadlineRead(t *testing.T) {
	c, s := pair(t, nil, nil)
	buf := make([]byte, 100)

	c.SetReadDeadline(time.Now().Add(-time.Second))
	n, err := c.Read(buf)
	faultWantTimeout(t, "read", n, err)
	if _, err := s.Write([]byte("queued")); err != nil {
		t.Fatal(err)
	}
	if !faultPoll(func() bool { return faultQueued(c) == 6 }) {
		t.Fatalf("6 bytes sent, %d arrived", faultQueued(c))
	}
	n, err = c.Read(buf)
	faultWantTimeout(t, "read", n, err)
	c.SetReadDeadline(time.Time{})
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "queued" {
		t.Fatalf("Read after clearing the deadline: %q, %v; want the data queued before", buf[:n], err)
	}

	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	faultWithin(t, "Read with a near deadline", func() { n, err = c.Read(buf) })
	faultWantTimeout(t, "read", n, err)

	// Moved earlier while a Read waits.
	c.SetReadDeadline(time.Time{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		n, err = c.Read(buf)
	}()
	faultWaitBlocked(t, "(*Conn).waitRead")
	c.SetReadDeadline(time.Now())
	faultWithin(t, "a waiting Read whose deadline was moved to now", func() { <-done })
	faultWantTimeout(t, "read", n, err)

	// Moved later while a Read waits: the first deadline must not end it.
	// The move has to happen before the first deadline; on a machine too
	// slow for that, try again with a longer one.
	for wait := 500 * time.Millisecond; ; wait *= 2 {
		if wait > faultWait {
			t.Fatal("could not move a deadline before it passed")
		}
		first := time.Now().Add(wait)
		c.SetReadDeadline(first)
		done := make(chan struct{})
		go func() {
			defer close(done)
			n, err = c.Read(buf)
		}()
		faultWaitBlocked(t, "(*Conn).waitRead")
		c.SetReadDeadline(time.Now().Add(time.Hour))
		if time.Now().After(first) {
			c.SetReadDeadline(time.Now())
			<-done
			continue
		}
		// Nothing can be waited on here: the Read must simply not end
		// when the first deadline passes.
		time.Sleep(time.Until(first) + 200*time.Millisecond)
		if isClosed(done) {
			t.Fatalf("Read ended at the deadline it had before the move: %d, %v", n, err)
		}
		if _, err := s.Write([]byte("later")); err != nil {
			t.Fatal(err)
		}
		faultWithin(t, "a Read whose deadline was moved later, given data", func() { <-done })
		if err != nil || string(buf[:n]) != "later" {
			t.Fatalf("Read: %q, %v; want \"later\"", buf[:n], err)
		}
		break
	}

	// Still a working connection, both ways.
	c.SetReadDeadline(time.Time{})
	faultExchange(t, c, s, 256<<10)
}

// faultExchange sends size bytes each way at once and checks them.
func faultExchange(t *testing.T, c, s *Conn, size int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i, ends := range [][2]*Conn{{c, s}, {s, c}} {
		out := make([]byte, size)
		faultFill(out, int64(10+i), 0)
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := ends[0].Write(out); err != nil {
				errs <- fmt.Errorf("write: %w", err)
			}
		}()
		go func() {
			defer wg.Done()
			in := make([]byte, size)
			if _, err := io.ReadFull(ends[1], in); err != nil {
				errs <- fmt.Errorf("read: %w", err)
			} else if !bytes.Equal(in, out) {
				errs <- fmt.Errorf("received data differs at byte %d", faultDiff(in, out))
			}
		}()
	}
	faultWithin(t, "exchanging data", wg.Wait)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestCloseUnblocks: Close ends a Read and a Write waiting in other
// goroutines with net.ErrClosed; the Write's count is what the peer then
// reads before io.EOF.
func TestCloseUnblocks(t *testing.T) {
	const peerBuf = 32 << 10
	c, s := pair(t, nil, &ListenConfig{Options: Options{RecvBuffer: peerBuf}})
	data := make([]byte, 256<<10)
	faultFill(data, 3, 0)
	var rn, wn int
	var rerr, werr error
	rdone, wdone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(rdone)
		rn, rerr = c.Read(make([]byte, 100))
	}()
	go func() {
		defer close(wdone)
		wn, werr = c.Write(data)
	}()
	faultWaitBlocked(t, "(*Conn).waitRead")
	if !faultPoll(func() bool { return faultQueued(s) == peerBuf && faultBlocked("(*Conn).waitWrite") || isClosed(wdone) }) || isClosed(wdone) {
		t.Fatalf("Write did not wait on a full peer buffer: %d bytes queued there; Write: %v", faultQueued(s), werr)
	}
	faultWithin(t, "Close", func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	faultWithin(t, "the waiting Read and Write after Close", func() { <-rdone; <-wdone })
	faultWantClosed(t, "the waiting Read", rerr)
	faultWantClosed(t, "the waiting Write", werr)
	if rn != 0 || wn != peerBuf {
		t.Errorf("Read returned %d bytes, Write %d; want 0 and %d", rn, wn, peerBuf)
	}
	_, err := c.Read(make([]byte, 1))
	faultWantClosed(t, "Read after Close", err)
	_, err = c.Write([]byte("x"))
	faultWantClosed(t, "Write after Close", err)
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	var got []byte
	faultWithin(t, "the peer reading to the end", func() { got, err = io.ReadAll(s) })
	if err != nil || !bytes.Equal(got, data[:wn]) {
		t.Errorf("the peer read %d bytes (%v), differing at %d; want the %d written, then io.EOF", len(got), err, faultDiff(got, data[:wn]), wn)
	}
}

func faultWantClosed(t *testing.T, what string, err error) {
	t.Helper()
	var oe *net.OpError
	if !errors.Is(err, net.ErrClosed) || !errors.As(err, &oe) {
		t.Errorf("%s: %v (%T), want a *net.OpError matching net.ErrClosed", what, err, err)
	}
}

// TestCloseBothWays: a Read and a Write at once on each end, both ways,
// each writer ending with CloseWrite, so that both ends shut down their
// writing side at about the same time and each must still tell the other;
// then, on a new pair with data flowing both ways, Close of one end: its
// Read and Write end with net.ErrClosed, the peer reads what came and then
// io.EOF, and its Write fails with ECONNRESET (docs/rsocket.md §4).
func TestCloseBothWays(t *testing.T) {
	const size = 8 << 20
	c, s := pair(t, nil, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i, ends := range [][2]*Conn{{c, s}, {s, c}} {
		seed := int64(20 + i)
		wg.Add(2)
		go func() {
			defer wg.Done()
			buf := make([]byte, 100<<10)
			for off, k := 0, 1; off < size; off, k = off+k, k*3%(100<<10)+1 {
				k = min(k, size-off)
				faultFill(buf[:k], seed, int64(off))
				if _, err := ends[0].Write(buf[:k]); err != nil {
					errs <- fmt.Errorf("write: %w", err)
					return
				}
			}
			if err := ends[0].CloseWrite(); err != nil {
				errs <- fmt.Errorf("CloseWrite: %w", err)
			}
		}()
		go func() {
			defer wg.Done()
			got, err := io.ReadAll(ends[1])
			want := make([]byte, size)
			faultFill(want, seed, 0)
			if err != nil || !bytes.Equal(got, want) {
				errs <- fmt.Errorf("read %d bytes (%v), differing at %d; want %d, then io.EOF", len(got), err, faultDiff(got, want), size)
			}
		}()
	}
	faultWithin(t, "8 MiB each way", wg.Wait)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	c.Close()
	s.Close()

	c, s = pair(t, nil, nil)
	fc, fs := faultStartFlow(c, 30, 31), faultStartFlow(s, 31, 30)
	flowing := func() bool {
		return fc.read.Load() >= 1<<20 && fs.read.Load() >= 1<<20 || fc.ended() || fs.ended()
	}
	if !faultPoll(flowing) || fc.ended() || fs.ended() {
		t.Fatalf("before Close: read %d and %d bytes; ended: %v %v %v %v", fc.read.Load(), fs.read.Load(), fc.readErr, fc.writeErr, fs.readErr, fs.writeErr)
	}
	faultWithin(t, "Close", func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if !faultPoll(func() bool { return fc.ended2() && fs.ended2() }) {
		t.Fatalf("%v after Close, not every Read and Write ended", faultWait)
	}
	faultWantClosed(t, "Read on the closed end", fc.readErr)
	faultWantClosed(t, "Write on the closed end", fc.writeErr)
	if fs.readErr != io.EOF {
		t.Errorf("the peer's Read: %v, want io.EOF", fs.readErr)
	}
	faultWantReset(t, "the peer's Write", fs.writeErr)
	if got, sent := fs.read.Load(), fc.written.Load(); got != sent {
		t.Errorf("the peer read %d bytes, %d were written", got, sent)
	}
	t.Logf("closed after %d bytes one way, %d the other", fc.written.Load(), fs.written.Load())
}

// TestCloseWrite: after CloseWrite the peer reads everything, then io.EOF
// (again on each Read), and can still write back; our Write fails with
// EPIPE.
func TestCloseWrite(t *testing.T) {
	const size = 300 << 10 // more than a receive buffer
	c, s := pair(t, nil, nil)
	out, back := make([]byte, size), make([]byte, size)
	faultFill(out, 40, 0)
	faultFill(back, 41, 0)
	wrote := make(chan error, 1)
	go func() {
		_, err := c.Write(out)
		if err == nil {
			err = c.CloseWrite()
		}
		wrote <- err
	}()
	var got []byte
	var err error
	faultWithin(t, "reading to io.EOF", func() { got, err = io.ReadAll(s) })
	if err != nil || !bytes.Equal(got, out) {
		t.Fatalf("read %d bytes (%v), differing at %d; want %d, then io.EOF", len(got), err, faultDiff(got, out), size)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if n, err := s.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Errorf("Read after io.EOF: %d, %v; want io.EOF again", n, err)
	}
	_, err = c.Write([]byte("x"))
	var oe *net.OpError
	if !errors.Is(err, syscall.EPIPE) || !errors.As(err, &oe) {
		t.Errorf("Write after CloseWrite: %v, want a *net.OpError matching EPIPE", err)
	}

	go func() {
		_, err := s.Write(back)
		if err == nil {
			err = s.CloseWrite()
		}
		wrote <- err
	}()
	faultWithin(t, "reading the answer to io.EOF", func() { got, err = io.ReadAll(c) })
	if err != nil || !bytes.Equal(got, back) {
		t.Fatalf("the answer: %d bytes (%v), differing at %d; want %d, then io.EOF", len(got), err, faultDiff(got, back), size)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("the answer: %v", err)
	}
	for _, x := range []*Conn{c, s} {
		if err := x.Close(); err != nil {
			t.Errorf("Close after both sides shut down: %v", err)
		}
	}
}

// TestCloseRead: after CloseRead, Read returns io.EOF and Write goes on;
// CloseWrite then ends the connection: the peer reads the data, then
// io.EOF, and its Write fails with ECONNRESET.
func TestCloseRead(t *testing.T) {
	c, s := pair(t, nil, nil)
	if err := c.CloseRead(); err != nil {
		t.Fatal(err)
	}
	var n int
	var err error
	faultWithin(t, "Read after CloseRead", func() { n, err = c.Read(make([]byte, 10)) })
	if n != 0 || err != io.EOF {
		t.Errorf("Read after CloseRead: %d, %v; want io.EOF", n, err)
	}
	out := make([]byte, 200<<10)
	faultFill(out, 50, 0)
	wrote := make(chan error, 1)
	go func() {
		_, err := c.Write(out)
		if err == nil {
			err = c.CloseWrite()
		}
		wrote <- err
	}()
	var got []byte
	faultWithin(t, "the peer reading to io.EOF", func() { got, err = io.ReadAll(s) })
	if err != nil || !bytes.Equal(got, out) {
		t.Fatalf("the peer read %d bytes (%v), differing at %d; want %d, then io.EOF", len(got), err, faultDiff(got, out), len(out))
	}
	if err := <-wrote; err != nil {
		t.Fatalf("Write after CloseRead: %v", err)
	}
	_, err = s.Write([]byte("x"))
	faultWantReset(t, "the peer's Write after both our sides shut down", err)
}

// TestManyConns: 100 clients dial one listener at once; each sends 8 KiB
// of its own, the server echoes it, the client checks it. Buffers and
// queues are made small (16 KiB, 32 work requests) so that 200 connections
// fit in the lab's memory. A hundred resolutions at once on a loaded
// machine under TCG can take longer than the default 2 s each, so they get
// the test's own limit.
func TestManyConns(t *testing.T) {
	const conns, size = 100, 8 << 10
	base := faultBaseline(t)
	opts := Options{SendBuffer: 16 << 10, RecvBuffer: 16 << 10, SQSize: 32, RQSize: 32, ResolveTimeout: faultWait}
	l, addr := labListen(t, &ListenConfig{Options: opts})
	ctx, cancel := context.WithTimeout(context.Background(), faultWait)
	defer cancel()

	var served sync.WaitGroup
	accepted := make(chan *Conn, conns)
	served.Add(1)
	go func() {
		defer served.Done()
		for range conns {
			s, err := l.AcceptConn(ctx)
			if err != nil {
				t.Errorf("accept: %v", err)
				return
			}
			accepted <- s
			served.Add(1)
			go func() {
				defer served.Done()
				if _, err := io.Copy(s, s); err != nil {
					t.Errorf("echo: %v", err)
				}
				if err := s.CloseWrite(); err != nil {
					t.Errorf("echo CloseWrite: %v", err)
				}
			}()
		}
	}()

	d := &Dialer{Options: opts}
	errs := make(chan error, conns)
	clients := make(chan *Conn, conns)
	for i := range conns {
		go func() {
			c, err := d.Dial(ctx, "rdma", addr)
			if err != nil {
				errs <- fmt.Errorf("client %d: %w", i, err)
				return
			}
			clients <- c
			out := make([]byte, size)
			faultFill(out, int64(100+i), 0)
			wrote := make(chan error, 1)
			go func() {
				_, err := c.Write(out)
				if err == nil {
					err = c.CloseWrite()
				}
				wrote <- err
			}()
			got, err := io.ReadAll(c)
			if werr := <-wrote; werr != nil {
				err = werr
			}
			if err == nil && !bytes.Equal(got, out) {
				err = fmt.Errorf("echo of %d bytes differs at %d", len(got), faultDiff(got, out))
			}
			if err != nil {
				err = fmt.Errorf("client %d: %w", i, err)
			}
			errs <- err
		}()
	}
	start := time.Now()
	faultWithin(t, fmt.Sprintf("%d connections echoing", conns), func() {
		for range conns {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
	})
	faultWithin(t, "the echo servers", served.Wait)
	t.Logf("%d connections echoed %d bytes each in %v", conns, size, time.Since(start).Round(time.Millisecond))
	close(clients)
	close(accepted)
	if len(clients) != conns || len(accepted) != conns {
		t.Errorf("%d clients connected, %d accepted; want %d", len(clients), len(accepted), conns)
	}
	faultWithin(t, "closing every connection", func() {
		for _, ch := range []chan *Conn{clients, accepted} {
			for c := range ch {
				if err := c.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}
		}
	})
	l.Close()
	base.check(t)
}

// TestCloseListener: Close ends an Accept waiting in another goroutine
// with net.ErrClosed, and later Accepts fail the same way at once.
func TestCloseListener(t *testing.T) {
	l, _ := labListen(t, nil)
	var c net.Conn
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err = l.Accept()
	}()
	faultWaitBlocked(t, "(*Listener).AcceptConn")
	faultWithin(t, "Listener.Close", func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	faultWithin(t, "Accept after Close", func() { <-done })
	if c != nil { // a nil *Conn in a net.Conn is not nil either
		t.Errorf("Accept returned a net.Conn (%#v) with its error", c)
	}
	var oe *net.OpError
	if !errors.Is(err, net.ErrClosed) || !errors.As(err, &oe) || oe.Op != "accept" {
		t.Errorf("the waiting Accept: %v (%T), want an accept *net.OpError matching net.ErrClosed", err, err)
	}
	faultWithin(t, "a later Accept", func() { _, err = l.Accept() })
	if !errors.Is(err, net.ErrClosed) {
		t.Errorf("a later Accept: %v, want net.ErrClosed", err)
	}
}

// TestLeak: after connections end in every way they can (echo and Close,
// unread data, half closes, Close under waiting Reads and Writes, Close
// while WriteTo and ReadFrom hold the buffers, a failed Dial, connections
// the Listener closes unaccepted), goroutines, fds, traced mappings and
// the kernel's CM IDs and QPs are back to what they were.
func TestLeak(t *testing.T) {
	base := faultBaseline(t)
	l, addr := labListen(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), faultWait)
	defer cancel()
	connect := func() (*Conn, *Conn) {
		t.Helper()
		c, err := Dial(ctx, "rdma", addr)
		if err != nil {
			t.Fatal(err)
		}
		s, err := l.AcceptConn(ctx)
		if err != nil {
			c.Close()
			t.Fatal(err)
		}
		return c, s
	}

	// Echo, then Close both.
	c, s := connect()
	var kinds []string
	for _, o := range faultRDMAObjects(t) {
		kinds = append(kinds, strings.Fields(o)[0])
	}
	if !slices.Contains(kinds, "cm_id") || !slices.Contains(kinds, "qp") {
		t.Fatalf("with connections open, rdma resource shows %q of this process; want its CM IDs and QPs", kinds)
	}
	faultExchange(t, c, s, 100<<10)
	faultCloseAll(t, c, s)

	// Unread data on both sides.
	c, s = connect()
	faultWithin(t, "writing unread data", func() {
		if _, err := c.Write(make([]byte, 20<<10)); err != nil {
			t.Error(err)
		}
		if _, err := s.Write(make([]byte, 30<<10)); err != nil {
			t.Error(err)
		}
	})
	faultCloseAll(t, c, s)

	// Both halves closed first; the server closes first.
	c, s = connect()
	faultWithin(t, "half closes", func() {
		c.CloseWrite()
		s.CloseWrite()
		c.CloseRead()
	})
	faultCloseAll(t, s, c)

	// Close under a Read and a Write that wait, after a read deadline.
	c, s = connect()
	c.SetReadDeadline(time.Now())
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Read after its deadline: %v", err)
	}
	c.SetReadDeadline(time.Time{})
	waiting := make(chan error, 2)
	go func() { _, err := c.Read(make([]byte, 1)); waiting <- err }()
	go func() { _, err := c.Write(make([]byte, 1<<20)); waiting <- err }()
	faultWaitBlocked(t, "(*Conn).waitRead")
	faultWaitBlocked(t, "(*Conn).waitWrite")
	faultCloseAll(t, c)
	faultWithin(t, "the waiting Read and Write", func() {
		for range 2 {
			faultWantClosed(t, "after Close", <-waiting)
		}
	})
	faultCloseAll(t, s)

	// Close while WriteTo hands the receive buffer to a writer and while
	// ReadFrom hands the send buffer to a reader: the last of them frees
	// the buffers.
	c, s = connect()
	w := &faultGate{entered: make(chan struct{}), release: make(chan struct{})}
	r := &faultGate{entered: make(chan struct{}), release: make(chan struct{})}
	if _, err := c.Write([]byte("hello")); err != nil { // before ReadFrom holds the writing side
		t.Fatal(err)
	}
	borrowed := make(chan error, 2)
	go func() { _, err := s.WriteTo(w); borrowed <- err }()
	go func() { _, err := c.ReadFrom(r); borrowed <- err }()
	faultWithin(t, "WriteTo and ReadFrom handing out the buffers", func() { <-w.entered; <-r.entered })
	faultCloseAll(t, s, c)
	close(w.release)
	close(r.release)
	faultWithin(t, "WriteTo and ReadFrom after Close", func() {
		for range 2 {
			faultWantClosed(t, "WriteTo or ReadFrom", <-borrowed)
		}
	})

	// A Dial nobody answers.
	portSeq++
	if c, err := Dial(ctx, "rdma", fmt.Sprintf("%s:%d", l.Addr().(*Addr).Addr(), portSeq)); err == nil {
		c.Close()
		t.Error("Dial to a port with no listener succeeded")
	}

	// Connections the Listener set up and nobody accepted: Listener.Close
	// closes them, and their clients see the end.
	var dialed []*Conn
	for range 3 {
		c, err := Dial(ctx, "rdma", addr)
		if err != nil {
			t.Fatal(err)
		}
		dialed = append(dialed, c)
	}
	// All three set up on the listener's side: Close then ends them in order.
	if !faultPoll(func() bool { return len(l.conns) == len(dialed) }) {
		t.Fatalf("%d of %d connections wait for Accept", len(l.conns), len(dialed))
	}
	faultWithin(t, "Listener.Close", func() { l.Close() })
	for _, c := range dialed {
		var err error
		faultWithin(t, "Read from a connection the listener closed", func() { _, err = c.Read(make([]byte, 1)) })
		if err != io.EOF {
			t.Errorf("Read from a connection the listener closed unaccepted: %v, want io.EOF", err)
		}
	}
	faultCloseAll(t, dialed...)
	base.check(t)
}

func faultCloseAll(t *testing.T, conns ...*Conn) {
	t.Helper()
	faultWithin(t, "Close", func() {
		for _, c := range conns {
			if err := c.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		}
	})
}

// faultGate is a Writer and a Reader whose first call says it was entered
// and then waits to be released.
type faultGate struct {
	entered, release chan struct{}
	once             sync.Once
}

func (g *faultGate) Write(p []byte) (int, error) { g.wait(); return len(p), nil }
func (g *faultGate) Read(p []byte) (int, error) {
	g.wait()
	return copy(p, "data after Close"), nil
}
func (g *faultGate) wait() {
	g.once.Do(func() { close(g.entered) })
	<-g.release
}

// faultBaselines are the process's goroutines, fds, traced resources and
// kernel RDMA objects at the start of a test.
type faultBaselines struct {
	goroutines, fds int
	traced          map[string]bool
}

func faultBaseline(t *testing.T) faultBaselines {
	t.Helper()
	testutil.RequireRDMA(t) // the baseline reads the device's resources
	b := faultBaselines{goroutines: runtime.NumGoroutine(), fds: faultFDs(t), traced: map[string]bool{}}
	for _, l := range sys.Leaks() {
		b.traced[l] = true
	}
	if objs := faultRDMAObjects(t); len(objs) > 0 {
		t.Errorf("RDMA objects of this process before the test (left by another):\n%s", strings.Join(objs, "\n"))
	}
	return b
}

// check waits until all of it is back to the baseline.
func (b faultBaselines) check(t *testing.T) {
	t.Helper()
	if !faultPoll(func() bool { return runtime.NumGoroutine() <= b.goroutines }) {
		buf := make([]byte, 1<<20)
		var ours []string
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "/rsocket.") || strings.Contains(g, "/rdmacm.") || strings.Contains(g, "/uverbs.") {
				ours = append(ours, g)
			}
		}
		t.Errorf("%d goroutines, %d before; of this module:\n%s", runtime.NumGoroutine(), b.goroutines, strings.Join(ours, "\n\n"))
	}
	if !faultPoll(func() bool { return faultFDs(t) == b.fds }) {
		t.Errorf("%d open fds, %d before", faultFDs(t), b.fds)
	}
	var traced []string
	if !faultPoll(func() bool {
		traced = traced[:0]
		for _, l := range sys.Leaks() {
			if !b.traced[l] {
				traced = append(traced, l)
			}
		}
		return len(traced) == 0
	}) {
		t.Errorf("still open:\n%s", strings.Join(traced, "\n"))
	}
	var objs []string
	if !faultPoll(func() bool { objs = faultRDMAObjects(t); return len(objs) == 0 }) {
		t.Errorf("RDMA objects of this process after everything was closed:\n%s", strings.Join(objs, "\n"))
	}
}

func faultFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// faultRDMAObjects lists the CM IDs and QPs the kernel holds for this
// process (`rdma resource show cm_id` and `qp`). The kernel names the
// thread that made an object: a QP's pid is often one of our threads'.
func faultRDMAObjects(t *testing.T) []string {
	t.Helper()
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	ours := func(o map[string]any) bool {
		pid, ok := o["pid"].(float64)
		if !ok {
			return false // the kernel's own
		}
		if int(pid) == os.Getpid() {
			return true
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", int(pid))); err == nil {
			return true
		}
		// A thread that is gone: known by the program's name.
		_, err := os.Stat(fmt.Sprintf("/proc/%d", int(pid)))
		return errors.Is(err, os.ErrNotExist) && o["comm"] == strings.TrimSpace(string(comm))
	}
	var out []string
	for _, kind := range []string{"cm_id", "qp"} {
		raw := testutil.RunTool(t, "rdma", "-j", "resource", "show", kind)
		var objs []map[string]any
		if err := json.Unmarshal([]byte(raw), &objs); err != nil {
			t.Fatalf("rdma resource show %s: %v in %q", kind, err, raw)
		}
		for _, o := range objs {
			if ours(o) {
				j, _ := json.Marshal(o)
				out = append(out, kind+" "+string(j))
			}
		}
	}
	return out
}

// faultFlow reads and writes a connection in two goroutines until each
// fails: it writes faultByte stream sendSeed and checks that it reads
// stream recvSeed.
type faultFlow struct {
	read, written       atomic.Int64
	readDone, writeDone chan struct{}
	readErr, writeErr   error // set before the channel is closed
}

func faultStartFlow(c *Conn, sendSeed, recvSeed int64) *faultFlow {
	f := &faultFlow{readDone: make(chan struct{}), writeDone: make(chan struct{})}
	go func() {
		defer close(f.readDone)
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			off := f.read.Load()
			if i := faultCheck(buf[:n], recvSeed, off); i >= 0 {
				f.readErr = fmt.Errorf("byte %d of the stream differs", off+int64(i))
				return
			}
			f.read.Add(int64(n))
			if err != nil {
				f.readErr = err
				return
			}
		}
	}()
	go func() {
		defer close(f.writeDone)
		buf := make([]byte, 64<<10)
		for {
			faultFill(buf, sendSeed, f.written.Load())
			n, err := c.Write(buf)
			f.written.Add(int64(n))
			if err != nil {
				f.writeErr = err
				return
			}
		}
	}()
	return f
}

// ended: the Read or the Write loop ended; ended2: both did.
func (f *faultFlow) ended() bool  { return isClosed(f.readDone) || isClosed(f.writeDone) }
func (f *faultFlow) ended2() bool { return isClosed(f.readDone) && isClosed(f.writeDone) }

// faultByte is byte off of test stream seed (a multiplicative hash): a
// lost, repeated or misplaced chunk shows.
func faultByte(seed, off int64) byte {
	return byte((uint64(off) + uint64(seed)<<40) * 0x9E3779B97F4A7C15 >> 56)
}

func faultFill(p []byte, seed, off int64) {
	for i := range p {
		p[i] = faultByte(seed, off+int64(i))
	}
}

// faultCheck returns the index of the first byte of p that is not stream
// seed at off, or -1.
func faultCheck(p []byte, seed, off int64) int {
	for i, b := range p {
		if b != faultByte(seed, off+int64(i)) {
			return i
		}
	}
	return -1
}

// faultStream is stream seed 0, without end.
type faultStream struct{ off int64 }

func (s *faultStream) Read(p []byte) (int, error) {
	faultFill(p, 0, s.off)
	s.off += int64(len(p))
	return len(p), nil
}

// faultDiff is the first index where a and b differ, or the shorter length.
func faultDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// faultQueued is how many received bytes wait to be read on c.
func faultQueued(c *Conn) uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pollLocked() // completions are taken by calls, as a Read would
	return c.rbufQueued
}

// faultPoll waits up to faultWait for cond.
func faultPoll(cond func() bool) bool {
	deadline := time.Now().Add(faultWait)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// faultWithin runs f and fails the test if it has not returned within
// faultWait.
func faultWithin(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(faultWait):
		t.Fatalf("%s: still waiting after %v", what, faultWait)
	}
}

// faultBlocked reports whether a goroutine sleeps in fn (a function as
// runtime.Stack names it, e.g. "(*Conn).waitRead").
func faultBlocked(fn string) bool {
	buf := make([]byte, 1<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		// In a select (Accept, or a Wait for another sleeper's read), or
		// asleep on the completion channel: parked in the netpoller.
		head, _, _ := strings.Cut(g, "\n")
		onChannel := strings.Contains(g, "uverbs.(*CompChannel).Wait(") && strings.Contains(head, "[IO wait")
		if (onChannel || strings.Contains(head, "[select")) && strings.Contains(g, "rsocket."+fn+"(") {
			return true
		}
	}
	return false
}

func faultWaitBlocked(t *testing.T, fn string) {
	t.Helper()
	if !faultPoll(func() bool { return faultBlocked(fn) }) {
		t.Fatalf("no goroutine waits in %s", fn)
	}
}
