package rsocket

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/testutil"
	"github.com/goverbs/rdma/uverbs"
)

// Over the lab's siw (soft-iWARP) devices, which have no immediate data,
// both sides speak rsocket's iWARP mode (docs/rsocket.md §7). The client
// connects to the first siw end's address and the CM puts both sides on
// that device (docs/testing.md §3). The interoperability with rdma-core's
// rstream over siw is cmd/rstream's TestInteropRstreamSiw.

// siwPair is pairAt on siw, with both sides' steps in the test's log.
func siwPair(t *testing.T, d *Dialer, lc *ListenConfig) (client, server *Conn) {
	t.Helper()
	if d == nil {
		d = &Dialer{}
	}
	if lc == nil {
		lc = &ListenConfig{}
	}
	d.Logf, lc.Logf = t.Logf, t.Logf
	c, s := pairAt(t, testutil.SiwPair(t)[0].Addr, d, lc)
	for _, x := range []*Conn{c, s} {
		if dev := x.cm.Device().Info(); !x.msgSend || dev.Transport() != uverbs.TransportIWARP {
			t.Fatalf("%v on %s (%v): message SENDs %v, want the iWARP mode", x, dev.Name, dev.Transport(), x.msgSend)
		}
	}
	return c, s
}

func TestSiwEcho(t *testing.T) {
	c, s := siwPair(t, nil, nil)
	echo(t, c, s)
}

// TestSiwBulk moves 32 MiB in random write sizes, with the defaults and
// with the smallest buffers and queues, where credits and segments are
// published after every few messages and the send queue runs full (two
// work requests per data message on iWARP).
func TestSiwBulk(t *testing.T) {
	small := Options{SendBuffer: minBuffer, RecvBuffer: minBuffer, SQSize: minQueueSize, RQSize: minQueueSize}
	for _, tc := range []struct {
		name string
		o    Options
	}{{"defaults", Options{}}, {"small", small}} {
		t.Run(tc.name, func(t *testing.T) {
			c, s := siwPair(t, &Dialer{Options: tc.o}, &ListenConfig{Options: tc.o})
			bulk(t, c, s, 32<<20)
			bulk(t, s, c, 4<<20)
		})
	}
}

// TestSiwShutdown: the control messages (shutdown, disconnect) go as
// SENDs: after the client's CloseWrite the server reads EOF and can still
// write back; the client's Close then ends the server's stream too.
func TestSiwShutdown(t *testing.T) {
	c, s := siwPair(t, nil, nil)
	if _, err := c.Write([]byte("last words")); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 64)
	n, err := readAll(s, got)
	if string(got[:n]) != "last words" || err != nil {
		t.Fatalf("the server read %q, %v; want the data then EOF", got[:n], err)
	}
	if _, err := s.Write([]byte("reply")); err != nil {
		t.Fatalf("the server cannot write after the client's CloseWrite: %v", err)
	}
	n, err = c.Read(got)
	if string(got[:n]) != "reply" || err != nil {
		t.Fatalf("the client read %q, %v", got[:n], err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if _, err := s.Write([]byte("x")); err != nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the server could still write 30 s after the client closed")
}

// readAll reads into b until EOF; a nil error means EOF came.
func readAll(c *Conn, b []byte) (int, error) {
	n := 0
	for {
		k, err := c.Read(b[n:])
		n += k
		if err != nil {
			if err == io.EOF {
				return n, nil
			}
			return n, err
		}
	}
}

// TestSiwCloseQuiet: a server that closes (or shuts its writing side)
// right after accepting, before the client's first message, must not
// speak first (docs/rsocket.md §7): its DISCONNECT waits for that message,
// and the client connects and reads EOF rather than failing to connect.
func TestSiwCloseQuiet(t *testing.T) {
	for _, how := range []string{"Close", "CloseWrite"} {
		t.Run(how, func(t *testing.T) {
			l, addr := listenAt(t, testutil.SiwPair(t)[0].Addr, &ListenConfig{Options: Options{Logf: t.Logf}})
			for i := range 8 {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second*testutil.RaceSlowdown)
				srvErr := make(chan error, 1)
				go func() {
					s, err := l.AcceptConn(ctx)
					if err == nil {
						if how == "Close" {
							err = s.Close()
						} else {
							err = s.CloseWrite()
							defer s.Close()
							// Until the client has read EOF and closed.
							s.Read(make([]byte, 1))
						}
					}
					srvErr <- err
				}()
				c, err := (&Dialer{Options: Options{Logf: t.Logf}}).Dial(ctx, "rdma", addr)
				if err != nil {
					cancel()
					<-srvErr
					t.Fatalf("connection %d: %v", i, err)
				}
				n, err := readAll(c, make([]byte, 16))
				c.Close()
				if n != 0 || err != nil {
					t.Errorf("connection %d: the client read %d bytes, %v; want EOF", i, n, err)
				}
				if err := <-srvErr; err != nil {
					t.Errorf("connection %d: server %s: %v", i, how, err)
				}
				cancel()
			}
		})
	}
}
