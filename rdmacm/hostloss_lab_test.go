package rdmacm

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/goverbs/rdma/test/lab/peer"
	"github.com/goverbs/rdma/uverbs"
)

// Host loss, in the two-guest lab (make lab GUESTS=2 runs the tests named
// TestTwoGuest*): a server in the peer guest, a client here writing to it
// with many RDMA WRITEs in flight; the peer guest is powered off mid-transfer.
// The client's QP must report IBV_WC_RETRY_EXC_ERR within the time its ACK
// timeout and retry count give, every posted work request must come back,
// and closing must neither hang nor leak (docs/robustness.md §1 item 12).

const (
	hostLossPort  = 7500
	hostLossChunk = 64 << 10
	hostLossDepth = 16
)

func TestTwoGuestHostLoss(t *testing.T) {
	if addr := os.Getenv("GOVERBS_RDMACM_HOSTLOSS_SERVER"); addr != "" {
		hostLossServer(t, addr)
		return
	}
	peer.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srvAddr := netip.AddrPortFrom(netip.MustParseAddr(peer.Addr()), hostLossPort)

	// The server: this test binary, in the peer guest.
	pr, pw := io.Pipe()
	srv := peer.Command(ctx, os.Args[0], "-test.run=^TestTwoGuestHostLoss$", "-test.v")
	srv.Env = append(os.Environ(), "GOVERBS_RDMACM_HOSTLOSS_SERVER="+srvAddr.String())
	srv.Stdout, srv.Stderr = pw, os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(pr)
	for lines.Scan() && lines.Text() != "ready" {
	}
	go io.Copy(io.Discard, pr)

	// ACK timeout 4.096 µs × 2^14 ≈ 67 ms, 3 retries: the QP gives up after
	// about a quarter of a second of silence (rxe rounds its timers up).
	cfg := &Config{SendDepth: hostLossDepth, CQDepth: 2 * hostLossDepth, ACKTimeout: 14,
		ConnParam: &ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: 3, RNRRetryCount: 3}}
	c, err := Dial(ctx, srvAddr.String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pd := c.PeerPrivateData()
	raddr, rkey := binary.BigEndian.Uint64(pd[0:8]), binary.BigEndian.Uint32(pd[8:12])
	buf, err := uverbs.AllocBuffer(hostLossChunk)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	mr, err := c.PD().RegMR(buf.Bytes(), uverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()

	posted, done, ok := 0, 0, 0
	var failed time.Time
	var firstErr uverbs.WCStatus
	var poweredOff time.Time
	post := func() error {
		err := c.QP().PostSend([]uverbs.SendWR{{ID: uint64(posted), Op: uverbs.OpWrite, Flags: uverbs.SendSignaled,
			SGEs: []uverbs.SGE{mr.SGE(0, hostLossChunk)}, RemoteAddr: raddr, RKey: rkey}})
		if err == nil {
			posted++
		}
		return err
	}
	for posted < hostLossDepth {
		if err := post(); err != nil {
			t.Fatal(err)
		}
	}
	for done < posted {
		wc, err := waitWC(ctx, c)
		if err != nil {
			t.Fatalf("after %d of %d completions: %v", done, posted, err)
		}
		done++
		switch {
		case wc.Status == uverbs.WCSuccess:
			ok++
		case failed.IsZero():
			failed, firstErr = time.Now(), wc.Status
		case wc.Status != uverbs.WCFlushError:
			t.Errorf("completion %d after the first error: %v, want %v", wc.ID, wc.Status, uverbs.WCFlushError)
		}
		if ok == 20 && poweredOff.IsZero() {
			if err := peer.PowerOff(ctx); err != nil {
				t.Fatal(err)
			}
			poweredOff = time.Now()
		}
		// Keep the queue full until the first error.
		if failed.IsZero() {
			if err := post(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if poweredOff.IsZero() {
		t.Fatal("the transfer ended before the peer was powered off")
	}
	if firstErr != uverbs.WCRetryExceededError {
		t.Fatalf("first failed completion %v, want %v", firstErr, uverbs.WCRetryExceededError)
	}
	t.Logf("%d writes done, %d posted; %v %v after the power-off", ok, posted, firstErr, failed.Sub(poweredOff).Round(time.Millisecond))
	if d := failed.Sub(poweredOff); d > 30*time.Second {
		t.Errorf("the QP reported the lost peer after %v", d)
	}
	if err := srv.Wait(); !errors.Is(err, peer.ErrGone) {
		t.Errorf("the server in the powered-off guest: %v, want ErrGone", err)
	}
	// Closing does not wait for the dead peer.
	err = within(t, 20*time.Second, "closing a connection to a lost host", c.Close)
	if err != nil {
		t.Fatal(err)
	}

	// A new connection to the lost host fails within its time limit.
	err = within(t, 30*time.Second, "dialing a lost host", func() error {
		_, err := Dial(ctx, srvAddr.String(), &Config{ConnectTimeout: 3 * time.Second, ResolveTimeout: time.Second})
		return err
	})
	if !errors.Is(err, ErrTimeout) && !errors.Is(err, ErrAddrResolve) && !errors.Is(err, ErrUnreachable) {
		t.Fatalf("dial to the lost host: %v, want a timeout or an unreachable address", err)
	}
	t.Logf("dial to the lost host: %v", err)
}

// hostLossServer runs in the peer guest: it accepts connections, gives each
// a 64 KiB buffer to write into (address and rkey in the accept's private
// data, big endian), says "ready" and waits to be powered off.
func hostLossServer(t *testing.T, addr string) {
	ctx := context.Background()
	l, err := Listen(ctx, addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fmt.Println("ready")
	for {
		c, err := l.GetRequest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		buf, err := uverbs.AllocBuffer(hostLossChunk)
		if err != nil {
			t.Fatal(err)
		}
		mr, err := c.PD().RegMR(buf.Bytes(), uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite)
		if err != nil {
			t.Fatal(err)
		}
		pd := make([]byte, 12)
		binary.BigEndian.PutUint64(pd, mr.Addr())
		binary.BigEndian.PutUint32(pd[8:], mr.RKey())
		if err := c.Accept(ctx, pd); err != nil {
			t.Fatal(err)
		}
		fmt.Println("accepted " + strconv.Itoa(int(c.QP().QPN())))
	}
}
