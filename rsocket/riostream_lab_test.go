package rsocket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/testutil"
)

// rdma-core's riostream (rdmacm-utils) against this package. riostream
// asks for one iomap slot and, on each connection, calls riomap before it
// sends a byte; we advertise none, so its riomap fails with ENOMEM and it
// shuts the connection down in order (docs/rsocket.md §5). Our side, doing
// what riostream's peer does first (the 16-byte exchange of sync_test),
// must see the end of the stream, not hang and not fail otherwise.

// riomapRefused is riostream's report of its failed riomap (perror).
const riomapRefused = "riomap: Cannot allocate memory"

// riostreamSync is riostream's sync_test on our side: the client sends 16
// bytes and reads 16, the server reads 16 and sends 16.
func riostreamSync(c net.Conn, client bool) error {
	buf := make([]byte, 16)
	if client {
		if _, err := c.Write(buf); err != nil {
			return fmt.Errorf("sending the sync: %w", err)
		}
	}
	if _, err := io.ReadFull(c, buf); err != nil {
		return fmt.Errorf("receiving the sync: %w", err)
	}
	if !client {
		if _, err := c.Write(buf); err != nil {
			return fmt.Errorf("sending the sync: %w", err)
		}
	}
	return nil
}

// riostreamCmd starts riostream with args and returns its exit code
// channel and output.
func riostreamCmd(t *testing.T, args ...string) (<-chan int, *testutil.SyncBuffer, *testutil.SyncBuffer) {
	t.Helper()
	rio, err := exec.LookPath("riostream")
	if err != nil {
		t.Fatalf("riostream (rdmacm-utils) is needed: %v", err)
	}
	out, errOut := &testutil.SyncBuffer{}, &testutil.SyncBuffer{}
	cmd := exec.Command(rio, args...)
	cmd.Stdout, cmd.Stderr = out, errOut
	t.Logf("riostream %s", strings.Join(args, " "))
	return testutil.StartProcess(t, cmd), out, errOut
}

// riostreamExit waits for riostream to end, checks its exit status and
// that it reported the failed riomap, and logs its output.
func riostreamExit(t *testing.T, ctx context.Context, exited <-chan int, out, errOut *testutil.SyncBuffer, wantCode int, wantRefusals int) {
	t.Helper()
	select {
	case code := <-exited:
		t.Logf("riostream exit status %d, stdout:\n%sstderr:\n%s", code, out, errOut)
		if code != wantCode {
			t.Errorf("riostream exit status %d, want %d", code, wantCode)
		}
	case <-ctx.Done():
		t.Fatalf("riostream still running after our side ended\nstdout:\n%sstderr:\n%s", out, errOut)
	}
	if n := strings.Count(errOut.String(), riomapRefused); n != wantRefusals {
		t.Errorf("riostream reported %q %d times, want %d", riomapRefused, n, wantRefusals)
	}
}

// TestRiostreamClient: riostream as the client, our Listener as the server.
func TestRiostreamClient(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		// conns is how many connections riostream makes, code its exit
		// status, refusals how often its riomap fails.
		conns, code, refusals int
	}{
		// One connection (custom mode): riostream exits 255.
		{"custom/blocking", []string{"-S", "4096", "-C", "10", "-T", "b"}, 1, 255, 1},
		{"custom/nonblocking", []string{"-S", "4096", "-C", "10"}, 1, 255, 1},
		// Without -S, -C or -I riostream runs 4 latency tests on one
		// connection and 4 bandwidth tests on a second; it ignores each
		// test's failure and exits 0.
		{"all-sizes", nil, 2, 0, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, addr := labListen(t, &ListenConfig{Options: Options{Logf: t.Logf}})
			host, port, _ := net.SplitHostPort(addr)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			exited, out, errOut := riostreamCmd(t, append([]string{"-s", host, "-p", port}, tc.args...)...)
			for i := range tc.conns {
				c, err := l.AcceptConn(ctx)
				if err != nil {
					t.Fatalf("connection %d: %v\nriostream stdout:\n%sstderr:\n%s", i+1, err, out, errOut)
				}
				c.SetDeadline(time.Now().Add(time.Minute))
				err = riostreamSync(c, false)
				c.Close()
				t.Logf("connection %d from %v: %v", i+1, c.RemoteAddr(), err)
				// riostream shuts down before sending: the read ends at
				// EOF with nothing read.
				if !errors.Is(err, io.EOF) || !strings.HasPrefix(err.Error(), "receiving") {
					t.Errorf("connection %d: our server got %v; want EOF on receiving the sync", i+1, err)
				}
			}
			riostreamExit(t, ctx, exited, out, errOut, tc.code, tc.refusals)
		})
	}
}

// TestRiostreamServer: riostream as the server, our Dialer as the client.
func TestRiostreamServer(t *testing.T) {
	ends := testutil.VethPair(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"custom/blocking", []string{"-S", "4096", "-C", "10", "-T", "b"}},
		{"custom/nonblocking", []string{"-S", "4096", "-C", "10"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			portSeq++
			port := portSeq
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			exited, out, errOut := riostreamCmd(t, append([]string{"-b", ends[0].Addr, "-p", strconv.Itoa(port)}, tc.args...)...)
			if err := testutil.WaitListening(ctx, port, true, exited); err != nil {
				t.Fatalf("%v\nriostream stdout:\n%sstderr:\n%s", err, out, errOut)
			}
			d := &Dialer{Options: Options{Logf: t.Logf}}
			c, err := d.Dial(ctx, Network, fmt.Sprintf("%s:%d", ends[0].Addr, port))
			if err != nil {
				t.Fatalf("%v\nriostream stdout:\n%sstderr:\n%s", err, out, errOut)
			}
			c.SetDeadline(time.Now().Add(time.Minute))
			err = riostreamSync(c, true)
			c.Close()
			t.Logf("our client: %v", err)
			// Our 16 bytes may go out before riostream's shutdown
			// arrives, or find it there (ECONNRESET); either way the
			// stream then ends.
			sendReset := errors.Is(err, syscall.ECONNRESET) && strings.HasPrefix(err.Error(), "sending")
			recvEOF := errors.Is(err, io.EOF) && strings.HasPrefix(err.Error(), "receiving")
			if !sendReset && !recvEOF {
				t.Errorf("our client got %v; want EOF on receiving the sync, or ECONNRESET on sending it", err)
			}
			riostreamExit(t, ctx, exited, out, errOut, 255, 1)
		})
	}
}
