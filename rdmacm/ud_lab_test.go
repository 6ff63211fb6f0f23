package rdmacm

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/rdma/uverbs"
)

// UD through the CM, and interop with librdmacm's udaddy: the client
// resolves, posts receives, connects (a SIDR exchange) and learns the
// server's QPN, QKey and address; it sends SEND_WITH_IMM datagrams whose
// immediate data is its own QPN; the server answers the sender of the
// first datagram (its address from the receive's header area, its QPN from
// the immediate data) with as many datagrams. udaddy's facts (rdma-core
// librdmacm/examples/udaddy.c): port 7174, 10 messages of 100 bytes,
// receives of 100 + 40 bytes.

const (
	udaddyPort  = 7174
	udaddyCount = 10
	udaddySize  = 100
	grhSize     = 40
)

type udSide struct {
	c   *Conn
	ep  *endpoint
	buf []byte
}

func newUDSide(t *testing.T, c *Conn) *udSide {
	ep := newEndpoint(t, c, 64*1024)
	return &udSide{c: c, ep: ep, buf: ep.buf.Bytes()}
}

// postRecvs posts n receives of 140 bytes, one slot each.
func (u *udSide) postRecvs(n int) error {
	for i := range n {
		off := 4096 + i*256
		if err := u.c.QP().PostRecv([]uverbs.RecvWR{{ID: uint64(off), SGEs: []uverbs.SGE{u.ep.mr.SGE(off, udaddySize+grhSize)}}}); err != nil {
			return err
		}
	}
	return nil
}

// sendAll sends n datagrams with imm = own QPN and waits for their
// completions.
func (u *udSide) sendAll(ctx context.Context, ah *uverbs.AH, qpn, qkey uint32, n int, text string) error {
	copy(u.buf[:udaddySize], text)
	for i := range n {
		if err := u.c.QP().PostSend([]uverbs.SendWR{{ID: uint64(i), Op: uverbs.OpSendImm, Flags: uverbs.SendSignaled,
			Imm: u.c.QP().QPN(), SGEs: []uverbs.SGE{u.ep.mr.SGE(0, udaddySize)},
			AH: ah, RemoteQPN: qpn, RemoteQKey: qkey}}); err != nil {
			return err
		}
		wc, err := waitWC(ctx, u.c)
		if err != nil {
			return err
		}
		if wc.Status != uverbs.WCSuccess || wc.Opcode != uverbs.WCOpSend {
			return fmt.Errorf("send completion %v %v", wc.Opcode, wc.Status)
		}
	}
	return nil
}

// recvAll waits for n receives and returns the first's completion.
func (u *udSide) recvAll(ctx context.Context, n int) (uverbs.WC, error) {
	var first uverbs.WC
	for i := range n {
		wc, err := waitWC(ctx, u.c)
		if err != nil {
			return first, err
		}
		if wc.Status != uverbs.WCSuccess || wc.Opcode != uverbs.WCOpRecv || wc.ByteLen != udaddySize+grhSize || wc.Flags&uverbs.WCWithImm == 0 || wc.Imm != wc.SrcQP {
			return first, fmt.Errorf("receive %d: %v %v, %d bytes, flags %v, imm %#x from QP %#x", i, wc.Opcode, wc.Status, wc.ByteLen, wc.Flags, wc.Imm, wc.SrcQP)
		}
		if i == 0 {
			first = wc
		}
	}
	return first, nil
}

// serveUD is the server half on an accepted UD request.
func serveUD(ctx context.Context, t *testing.T, c *Conn, n int) error {
	u := newUDSide(t, c)
	defer u.ep.close()
	if err := u.postRecvs(n); err != nil {
		return err
	}
	if err := c.Accept(ctx, nil); err != nil {
		return err
	}
	wc, err := u.recvAll(ctx, n)
	if err != nil {
		return err
	}
	off := int(wc.ID)
	ah, err := c.PD().CreateAHFromWC(c.Port(), &wc, u.buf[off:off+grhSize])
	if err != nil {
		return err
	}
	defer ah.Close()
	return u.sendAll(ctx, ah, wc.Imm, udpQKey, n, "reply from the go server")
}

// dialUD is the client half.
func dialUD(ctx context.Context, t *testing.T, addr string, n int) error {
	c, err := Resolve(ctx, addr, &Config{QPType: uverbs.UD, SendDepth: n, RecvDepth: n})
	if err != nil {
		return err
	}
	u := newUDSide(t, c)
	defer u.ep.close()
	if err := u.postRecvs(n); err != nil {
		return err
	}
	if err := c.Connect(ctx, nil); err != nil {
		return err
	}
	ah, qpn, qkey := c.UDPeer()
	if ah == nil || qpn == 0 || qkey != udpQKey {
		return fmt.Errorf("UD peer: AH %v, QPN %#x, QKey %#x", ah, qpn, qkey)
	}
	if err := u.sendAll(ctx, ah, qpn, qkey, n, "datagram from the go client"); err != nil {
		return err
	}
	_, err = u.recvAll(ctx, n)
	return err
}

func TestUDGoToGo(t *testing.T) {
	ctx := testCtx(t)
	l := listenLab(ctx, t, &Config{QPType: uverbs.UD, SendDepth: udaddyCount, RecvDepth: udaddyCount})
	served := make(chan error, 1)
	go func() {
		c, err := l.GetRequest(ctx)
		if err != nil {
			served <- err
			return
		}
		served <- serveUD(ctx, t, c, udaddyCount)
	}()
	if err := dialUD(ctx, t, l.Addr().String(), udaddyCount); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// TestInteropUdaddyServer: our client, udaddy's server.
func TestInteropUdaddyServer(t *testing.T) {
	ctx := testCtx(t)
	srv, _ := labAddrs(t)
	wait := runTool(ctx, t, "udaddy")
	addr := netip.AddrPortFrom(srv, udaddyPort).String()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := dialUD(ctx, t, addr, udaddyCount)
		if err == nil {
			break
		}
		if !errorsIsRefused(err) || time.Now().After(deadline) {
			t.Fatalf("UD exchange with udaddy: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, err := wait()
	if err != nil || !strings.Contains(out, "data transfers complete") || !strings.Contains(out, "return status 0") {
		t.Fatalf("udaddy server: %v\n%s", err, out)
	}
}

// TestInteropUdaddyClient: udaddy's client, our server.
func TestInteropUdaddyClient(t *testing.T) {
	ctx := testCtx(t)
	srv, _ := labAddrs(t)
	l, err := Listen(ctx, netip.AddrPortFrom(srv, udaddyPort).String(), &Config{QPType: uverbs.UD, SendDepth: udaddyCount, RecvDepth: udaddyCount})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	wait := runTool(ctx, t, "udaddy", "-s", srv.String())
	c, err := l.GetRequest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := serveUD(ctx, t, c, udaddyCount); err != nil {
		t.Fatal(err)
	}
	out, err := wait()
	if err != nil || !strings.Contains(out, "data transfers complete") || !strings.Contains(out, "return status 0") {
		t.Fatalf("udaddy client: %v\n%s", err, out)
	}
}
