package rdmacm

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/testutil"
	"github.com/goverbs/rdma/uverbs"
)

// Interop with librdmacm's examples rdma_server and rdma_client
// (rdmacm-utils; rdma-core librdmacm/examples): each side posts a 16-byte
// receive before the connection is established, the client sends 16 bytes,
// the server answers with 16 bytes (inline: both create their QP with
// max_inline_data 16), then both disconnect.

func lookTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if testutil.InLab() {
			t.Fatalf("%s (rdmacm-utils) is not installed in the lab: %v", name, err)
		}
		t.Skipf("%s not installed (Debian: rdmacm-utils)", name)
	}
	return p
}

var portSeq = 7600

// freePort returns a port for one test; the lab guest runs nothing else.
func freePort() int {
	portSeq++
	return portSeq
}

// runTool starts a C tool and returns a function that waits for it and
// returns its output.
func runTool(ctx context.Context, t *testing.T, name string, args ...string) func() (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, lookTool(t, name), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return func() (string, error) {
		err := cmd.Wait()
		return out.String(), err
	}
}

// exchange16 is the Go side of the example's exchange on an established
// or accepted connection: recv posted before, then send (client: first).
func exchange16(ctx context.Context, c *Conn, ep *endpoint, first bool, msg string) (string, error) {
	send := func() error {
		copy(ep.buf.Bytes()[16:32], msg)
		if err := c.QP().PostSend([]uverbs.SendWR{{ID: 2, Op: uverbs.OpSend, Flags: uverbs.SendSignaled | uverbs.SendInline,
			SGEs: []uverbs.SGE{ep.mr.SGE(16, 16)}}}); err != nil {
			return err
		}
		wc, err := waitWC(ctx, c)
		if err == nil && (wc.Status != uverbs.WCSuccess || wc.ID != 2) {
			err = fmt.Errorf("send completion %v (wr %d)", wc.Status, wc.ID)
		}
		return err
	}
	recv := func() (string, error) {
		wc, err := waitWC(ctx, c)
		if err == nil && (wc.Status != uverbs.WCSuccess || wc.ID != 1 || wc.ByteLen != 16) {
			err = fmt.Errorf("receive completion %v (wr %d, %d bytes)", wc.Status, wc.ID, wc.ByteLen)
		}
		return string(ep.buf.Bytes()[:16]), err
	}
	if first {
		// The peer's answer may complete before our send does (the CQ
		// is shared, and rxe's completer and responder run apart): take
		// the two completions in either order.
		copy(ep.buf.Bytes()[16:32], msg)
		if err := c.QP().PostSend([]uverbs.SendWR{{ID: 2, Op: uverbs.OpSend, Flags: uverbs.SendSignaled | uverbs.SendInline,
			SGEs: []uverbs.SGE{ep.mr.SGE(16, 16)}}}); err != nil {
			return "", err
		}
		sent, received := false, false
		for !sent || !received {
			wc, err := waitWC(ctx, c)
			switch {
			case err != nil:
				return "", err
			case wc.Status == uverbs.WCSuccess && wc.ID == 2 && !sent:
				sent = true
			case wc.Status == uverbs.WCSuccess && wc.ID == 1 && wc.ByteLen == 16 && !received:
				received = true
			default:
				return "", fmt.Errorf("completion %v (wr %d, %d bytes)", wc.Status, wc.ID, wc.ByteLen)
			}
		}
		return string(ep.buf.Bytes()[:16]), nil
	}
	got, err := recv()
	if err != nil {
		return got, err
	}
	return got, send()
}

func postRecv16(c *Conn, ep *endpoint) error {
	return c.QP().PostRecv([]uverbs.RecvWR{{ID: 1, SGEs: []uverbs.SGE{ep.mr.SGE(0, 16)}}})
}

// TestInteropRdmaServer: our client, librdmacm's rdma_server.
func TestInteropRdmaServer(t *testing.T) { eachLabPair(t, testInteropRdmaServer) }

func testInteropRdmaServer(t *testing.T) {
	srvAddr, _ := labAddrs(t)
	ctx := testCtx(t)
	port := freePort()
	wait := runTool(ctx, t, "rdma_server", "-p", strconv.Itoa(port))
	cfg := &Config{SendDepth: 1, RecvDepth: 1, MaxInline: 16}
	var c *Conn
	var err error
	// The server is ready once it listens; until then its CM rejects
	// (reason 8): retry for a while.
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err = Resolve(ctx, netip.AddrPortFrom(srvAddr, uint16(port)).String(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		ep := newEndpoint(t, c, 4096)
		if err = postRecv16(c, ep); err != nil {
			t.Fatal(err)
		}
		err = c.Connect(ctx, nil)
		if err == nil {
			got, xerr := exchange16(ctx, c, ep, true, "from go client!!")
			ep.close()
			if xerr != nil {
				t.Fatal(xerr)
			}
			// rdma_server sends its send_msg buffer, which it never fills:
			// 16 zero bytes.
			if got != strings.Repeat("\x00", 16) {
				t.Errorf("received %q from rdma_server, want its 16 zero bytes", got)
			}
			break
		}
		ep.close()
		if !errorsIsRefused(err) || time.Now().After(deadline) {
			t.Fatalf("connect to rdma_server: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, werr := wait()
	if werr != nil || !strings.Contains(out, "rdma_server: end 0") {
		t.Fatalf("rdma_server: %v\n%s", werr, out)
	}
}

// TestInteropRdmaClient: librdmacm's rdma_client, our server.
func TestInteropRdmaClient(t *testing.T) { eachLabPair(t, testInteropRdmaClient) }

func testInteropRdmaClient(t *testing.T) {
	srvAddr, _ := labAddrs(t)
	ctx := testCtx(t)
	port := freePort()
	l, err := Listen(ctx, netip.AddrPortFrom(srvAddr, uint16(port)).String(), &Config{SendDepth: 1, RecvDepth: 1, MaxInline: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	wait := runTool(ctx, t, "rdma_client", "-s", srvAddr.String(), "-p", strconv.Itoa(port))
	c, err := l.GetRequest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ep := newEndpoint(t, c, 4096)
	defer ep.close()
	if err := postRecv16(c, ep); err != nil {
		t.Fatal(err)
	}
	if err := c.Accept(ctx, nil); err != nil {
		t.Fatal(err)
	}
	got, err := exchange16(ctx, c, ep, false, "from go server!!")
	if err != nil {
		t.Fatal(err)
	}
	if got != strings.Repeat("\x00", 16) {
		t.Errorf("received %q from rdma_client, want its 16 zero bytes", got)
	}
	out, werr := wait()
	if werr != nil || !strings.Contains(out, "rdma_client: end 0") {
		t.Fatalf("rdma_client: %v\n%s", werr, out)
	}
	select {
	case <-c.Done():
	case <-ctx.Done():
		t.Fatal("no DISCONNECTED after rdma_client disconnected")
	}
}
