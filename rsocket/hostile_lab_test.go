package rsocket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/testutil"
	"github.com/goverbs/rdma/rdmacm"
	"github.com/goverbs/rdma/uverbs"
)

// A peer that is not an rsocket, or a broken one, built straight on the
// CM: its rs_conn_data and its messages are whatever the test makes them.
// Our side must refuse it with ErrProtocol (or ErrIOMap), never panic or
// hang, and stay usable for others (docs/rsocket.md §1, §2.1).

// hostileHeader is an rs_conn_data with the given fields; the addresses
// and keys are made up (the peer never gets to use them).
func hostileHeader(version uint8, credits uint16, slots uint32) []byte {
	b := make([]byte, connDataLen)
	d := connData{Version: version, Flags: connFlagIOMap, Credits: credits,
		TargetSGL: rsSGE{Addr: 0x7f0000001000, Key: 0x1234, Length: slots},
		DataBuf:   rsSGE{Addr: 0x7f0000002000, Key: 0x5678, Length: 64 << 10}}
	d.marshal(b)
	return b
}

// hostileHeaders are bad rs_conn_data and what our side's error says.
// The CM pads private data with zeros to its fixed size, so a short one
// arrives as a full header whose missing fields are 0.
var hostileHeaders = []struct {
	name string
	data []byte
	want string
}{
	{"empty", nil, "protocol version 0"},
	{"short", []byte{protocolVersion, connFlagIOMap}, "grants no credits"},
	{"version 2", hostileHeader(2, 384, targetSGEs), "protocol version 2"},
	{"no credits", hostileHeader(protocolVersion, 0, targetSGEs), "grants no credits"},
	{"no target slots", hostileHeader(protocolVersion, 384, 0), "offers 0 target slots"},
	{"65537 target slots", hostileHeader(protocolVersion, 384, 1<<16+1), "offers 65537 target slots"},
}

// rsocket's connection parameters (docs/rsocket.md §1), for raw peers.
var hostileConnParam = &rdmacm.ConnParam{RetryCount: 7, RNRRetryCount: 7}

// hostileCtx bounds one case, so that a case that hangs fails alone.
func hostileCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// hostileLog collects a Listener's log lines; wait finds them in order.
type hostileLog struct {
	mu      sync.Mutex
	lines   []string
	next    int // lines before it were matched already
	changed chan struct{}
}

func newHostileLog() *hostileLog { return &hostileLog{changed: make(chan struct{}, 1)} }

func (h *hostileLog) logf(format string, args ...any) {
	h.mu.Lock()
	h.lines = append(h.lines, fmt.Sprintf(format, args...))
	h.mu.Unlock()
	select {
	case h.changed <- struct{}{}:
	default:
	}
}

// wait returns the first line after the last one matched that holds all
// of parts, waiting for it until ctx ends.
func (h *hostileLog) wait(ctx context.Context, parts ...string) (string, error) {
	for {
		h.mu.Lock()
	lines:
		for i := h.next; i < len(h.lines); i++ {
			for _, p := range parts {
				if !strings.Contains(h.lines[i], p) {
					continue lines
				}
			}
			h.next = i + 1
			line := h.lines[i]
			h.mu.Unlock()
			return line, nil
		}
		all := strings.Join(h.lines, "\n")
		h.mu.Unlock()
		select {
		case <-h.changed:
		case <-ctx.Done():
			return "", fmt.Errorf("no log line with %q; the log:\n%s", parts, all)
		}
	}
}

// TestHostileConnDataToListener: connection requests with bad
// rs_conn_data are rejected, each with a log line that says why, and the
// Listener then serves a good client.
func TestHostileConnDataToListener(t *testing.T) {
	logs := newHostileLog()
	l, addr := labListen(t, &ListenConfig{Options: Options{Logf: logs.logf}})
	for _, tc := range hostileHeaders {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			ctx := hostileCtx(t)
			c, err := rdmacm.Dial(ctx, addr, &rdmacm.Config{PrivateData: tc.data, ConnParam: hostileConnParam})
			if err == nil {
				c.Close()
				t.Fatal("the Listener accepted the connection")
			}
			if !errors.Is(err, rdmacm.ErrRejected) {
				t.Fatalf("Dial: %v; want a rejection", err)
			}
			line, werr := logs.wait(ctx, "connection request from", ErrProtocol.Error(), tc.want)
			if werr != nil {
				t.Fatal(werr)
			}
			t.Logf("rejected: %v; the Listener logged: %s", err, line)
		})
	}

	// None of them reached Accept, and a good client gets through.
	c, s := hostileGoodPair(t, hostileCtx(t), l, addr)
	hostileExchange(t, c, s)
}

// hostileExchange checks that c and s carry data both ways.
func hostileExchange(t *testing.T, c, s *Conn) {
	t.Helper()
	for _, p := range [][2]*Conn{{c, s}, {s, c}} {
		msg := []byte("still serving")
		wrote := make(chan error, 1)
		go func() {
			_, err := p[0].Write(msg)
			wrote <- err
		}()
		p[1].SetReadDeadline(time.Now().Add(60 * time.Second))
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(p[1], got); err != nil || string(got) != string(msg) {
			t.Fatalf("read %q, %v; want %q", got, err, msg)
		}
		if err := <-wrote; err != nil {
			t.Fatal(err)
		}
	}
}

// TestHostileConnDataToDial: a listener that accepts with bad
// rs_conn_data makes Dial fail with ErrProtocol, and Dial frees what it
// built (the leak tracer of TestMain checks the fds and mappings).
func TestHostileConnDataToDial(t *testing.T) {
	ends := testutil.VethPair(t)
	for _, tc := range hostileHeaders {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			ctx := hostileCtx(t)
			rl, err := rdmacm.Listen(ctx, ends[0].Addr+":0", &rdmacm.Config{PrivateData: tc.data, ConnParam: hostileConnParam})
			if err != nil {
				t.Fatal(err)
			}
			defer rl.Close()
			type accepted struct {
				c   *rdmacm.Conn
				err error
			}
			acc := make(chan accepted, 1)
			go func() {
				c, err := rl.Accept(ctx)
				acc <- accepted{c, err}
			}()
			c, err := Dial(ctx, "rdma", rl.Addr().String())
			if err == nil {
				c.Close()
				t.Fatal("Dial took the listener's connection data")
			}
			var oe *net.OpError
			if !errors.As(err, &oe) || !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Dial: %v (%T); want a *net.OpError wrapping ErrProtocol that says %q", err, err, tc.want)
			}
			t.Logf("Dial: %v", err)
			// The raw listener's side of it is not what is judged.
			if a := <-acc; a.err == nil {
				a.c.Close()
			} else {
				t.Logf("the raw listener's Accept: %v", a.err)
			}
		})
	}
}

// hostilePeer is a client that connects with valid rs_conn_data and then
// sends what it likes.
type hostilePeer struct {
	t    *testing.T
	cm   *rdmacm.Conn
	buf  *uverbs.Buffer // its target slots, then room to write from
	mr   *uverbs.MR
	peer connData // our Listener's
	wcs  [16]uverbs.WC
}

const hostileRQ = 32

func dialHostile(t *testing.T, ctx context.Context, addr string) *hostilePeer {
	t.Helper()
	cm, err := rdmacm.Resolve(ctx, addr, &rdmacm.Config{SendDepth: 64, RecvDepth: hostileRQ, ConnParam: hostileConnParam})
	if err != nil {
		t.Fatal(err)
	}
	p := &hostilePeer{t: t, cm: cm}
	t.Cleanup(p.close)
	if p.buf, err = uverbs.AllocBuffer(4096); err != nil {
		t.Fatal(err)
	}
	if p.mr, err = cm.RegMR(p.buf.Bytes(), uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite); err != nil {
		t.Fatal(err)
	}
	// Receives for our side's credit updates; they carry no SGE.
	if err := cm.QP().PostRecv(make([]uverbs.RecvWR, hostileRQ)); err != nil {
		t.Fatal(err)
	}
	hdr := make([]byte, connDataLen)
	d := connData{Version: protocolVersion, Flags: connFlagIOMap, Credits: hostileRQ,
		TargetSGL: rsSGE{Addr: p.mr.Addr(), Key: p.mr.RKey(), Length: targetSGEs},
		DataBuf:   rsSGE{Addr: p.mr.Addr() + 2048, Key: p.mr.RKey(), Length: 1024}}
	d.marshal(hdr)
	if err := cm.Connect(ctx, hdr); err != nil {
		t.Fatal(err)
	}
	if p.peer, err = parseConnData(cm.PeerPrivateData()); err != nil {
		t.Fatalf("our Listener's connection data: %v", err)
	}
	return p
}

// post posts wrs, each signalled.
func (p *hostilePeer) post(wrs []uverbs.SendWR) {
	p.t.Helper()
	for i := range wrs {
		wrs[i].ID, wrs[i].Flags = uint64(i+1), wrs[i].Flags|uverbs.SendSignaled
	}
	if err := p.cm.QP().PostSend(wrs); err != nil {
		p.t.Fatal(err)
	}
}

// waitSent waits for n successful send completions.
func (p *hostilePeer) waitSent(ctx context.Context, n int) {
	p.t.Helper()
	for done := 0; done < n; {
		got, err := p.cm.CQ().PollWait(ctx, p.wcs[:])
		if err != nil {
			p.t.Fatalf("%d of %d sends completed: %v", done, n, err)
		}
		for _, wc := range p.wcs[:got] {
			if wc.Opcode.IsRecv() {
				continue // a credit update of ours
			}
			if wc.Status != uverbs.WCSuccess {
				p.t.Fatalf("send %d: %v", wc.ID, wc.Status)
			}
			done++
		}
	}
}

// hostileTake polls c's completions, as its calls do, while wait runs
// and once after.
func hostileTake(c *Conn, wait func()) {
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			c.mu.Lock()
			c.pollLocked()
			c.mu.Unlock()
		}
	}()
	wait()
	close(stop)
	<-stopped
	// The receive completions of what the peer saw acknowledged are on
	// the CQ already (rxe completes a receive before it acknowledges).
	c.mu.Lock()
	c.pollLocked()
	c.mu.Unlock()
}

func (p *hostilePeer) close() {
	p.cm.Close() // also deregisters the MR
	p.buf.Close()
}

// TestHostileMessages: a peer with a valid handshake that then sends what
// no rsocket sends. Read returns what was queued before, then an error
// matching ErrProtocol (ErrIOMap for an iomap message), within the read
// deadline; Write fails the same way; Close is clean.
func TestHostileMessages(t *testing.T) {
	logs := newHostileLog()
	const rq = 16
	l, addr := labListen(t, &ListenConfig{Options: Options{RQSize: rq, Logf: logs.logf}})
	// Each case builds its messages from our Listener's connection data
	// and the peer's memory; 0-byte writes need no valid target.
	cases := []struct {
		name string
		wrs  func(p *hostilePeer) []uverbs.SendWR
		// wantData is what Read returns before the error.
		wantData string
		wantErr  error
		wantText string
	}{
		{"data of 0 bytes", func(p *hostilePeer) []uverbs.SendWR {
			return []uverbs.SendWR{{Op: uverbs.OpWriteImm, Imm: immediate(opData, 0), RemoteAddr: p.peer.DataBuf.Addr, RKey: p.peer.DataBuf.Key}}
		}, "", ErrProtocol, "0 bytes"},
		{"more than published", func(p *hostilePeer) []uverbs.SendWR {
			// Both halves are published once the connection starts.
			return []uverbs.SendWR{{Op: uverbs.OpWriteImm, Imm: immediate(opData, 2*p.peer.DataBuf.Length+1), RemoteAddr: p.peer.DataBuf.Addr, RKey: p.peer.DataBuf.Key}}
		}, "", ErrProtocol, "beyond the"},
		{"data then more than published", func(p *hostilePeer) []uverbs.SendWR {
			copy(p.buf.Bytes()[3072:], "abc")
			return []uverbs.SendWR{
				{Op: uverbs.OpWriteImm, Imm: immediate(opData, 3), SGEs: []uverbs.SGE{p.mr.SGE(3072, 3)}, RemoteAddr: p.peer.DataBuf.Addr, RKey: p.peer.DataBuf.Key},
				{Op: uverbs.OpWriteImm, Imm: immediate(opData, 2*p.peer.DataBuf.Length-2), RemoteAddr: p.peer.DataBuf.Addr + 3, RKey: p.peer.DataBuf.Key},
			}
		}, "abc", ErrProtocol, "beyond the"},
		{"iomap sgl", func(p *hostilePeer) []uverbs.SendWR {
			return []uverbs.SendWR{{Op: uverbs.OpWriteImm, Imm: immediate(opIOMapSGL, 0), RemoteAddr: p.peer.DataBuf.Addr, RKey: p.peer.DataBuf.Key}}
		}, "", ErrIOMap, ""},
		{"send without immediate", func(p *hostilePeer) []uverbs.SendWR {
			return []uverbs.SendWR{{Op: uverbs.OpSend}}
		}, "", ErrProtocol, "without immediate"},
		{"more messages than credits", func(p *hostilePeer) []uverbs.SendWR {
			// One byte each into the first segment, one message more
			// than the receive queue depth our side granted.
			wrs := make([]uverbs.SendWR, rq+1)
			for i := range wrs {
				p.buf.Bytes()[3072+i] = byte('a' + i)
				wrs[i] = uverbs.SendWR{Op: uverbs.OpWriteImm, Imm: immediate(opData, 1), SGEs: []uverbs.SGE{p.mr.SGE(3072+i, 1)},
					RemoteAddr: p.peer.DataBuf.Addr + uint64(i), RKey: p.peer.DataBuf.Key}
			}
			return wrs
		}, "abcdefghijklmnop", ErrProtocol, "credits exceeded"},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			ctx := hostileCtx(t)
			p := dialHostile(t, ctx, addr)
			s, err := l.AcceptConn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			if want := p.cm.LocalAddr().String(); s.RemoteAddr().String() != want {
				t.Fatalf("accepted %v; the peer is %v", s.RemoteAddr(), want)
			}
			// Our side takes completions when it is called, as rsocket
			// does; here it takes them as a Write would, with nothing
			// read, until every message was acknowledged (one beyond the
			// receives it posted waits, RNR, until they are reposted).
			wrs := tc.wrs(p)
			p.post(wrs)
			hostileTake(s, func() { p.waitSent(ctx, len(wrs)) })

			// Read what came before, then the error; a hang ends at the
			// deadline with an error that does not match.
			s.SetReadDeadline(time.Now().Add(60 * time.Second))
			var got []byte
			buf := make([]byte, 64)
			for {
				n, err := s.Read(buf)
				got = append(got, buf[:n]...)
				if err == nil {
					continue
				}
				var oe *net.OpError
				if !errors.As(err, &oe) || !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantText) {
					t.Fatalf("Read after %d bytes: %v; want a *net.OpError wrapping %q that says %q", len(got), err, tc.wantErr, tc.wantText)
				}
				t.Logf("Read after %d bytes: %v", len(got), err)
				break
			}
			if string(got) != tc.wantData {
				t.Errorf("Read returned %q before the error; the peer sent %q in good order", got, tc.wantData)
			}
			// The violation was logged with the peer's address when our
			// side took the completions.
			if _, err := logs.wait(ctx, s.RemoteAddr().String(), tc.wantErr.Error(), tc.wantText); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Write([]byte("x")); !errors.Is(err, tc.wantErr) {
				t.Errorf("Write after the violation: %v; want %v", err, tc.wantErr)
			}
			if err := s.Close(); err != nil {
				t.Errorf("Close after the violation: %v", err)
			}
		})
	}

	// The Listener still serves.
	c, s := hostileGoodPair(t, hostileCtx(t), l, addr)
	hostileExchange(t, c, s)
}

func hostileGoodPair(t *testing.T, ctx context.Context, l *Listener, addr string) (c, s *Conn) {
	t.Helper()
	c, err := Dial(ctx, "rdma", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if s, err = l.AcceptConn(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if s.RemoteAddr().String() != c.LocalAddr().String() {
		t.Fatalf("Accept returned a connection from %v; the good client is %v", s.RemoteAddr(), c.LocalAddr())
	}
	return c, s
}
