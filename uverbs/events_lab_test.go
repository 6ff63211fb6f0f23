package uverbs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/goverbs/rdma/internal/nldev"
	"github.com/goverbs/rdma/internal/testutil"
)

// testRXE creates a veth pair with an rxe device on one end, for tests that
// change the link state. Cleanups delete the device and the veth pair; the
// caller must close its Device first (a registered cleanup runs after the
// ones registered later).
func testRXE(t *testing.T) (rxe, netdev string) {
	t.Helper()
	testutil.RequireRDMA(t)
	testutil.RequireRoot(t)
	rxe, netdev, peer := "gvtrxe0", "gvtev0", "gvtev1"
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: netdev}, PeerName: peer}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatalf("ip link add %s type veth peer name %s: %v", netdev, peer, err)
	}
	t.Cleanup(func() {
		if err := netlink.LinkDel(veth); err != nil {
			t.Errorf("ip link del %s: %v", netdev, err)
		}
	})
	for _, n := range []string{netdev, peer} {
		l, err := netlink.LinkByName(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := netlink.LinkSetUp(l); err != nil {
			t.Fatalf("ip link set %s up: %v", n, err)
		}
	}
	if err := nldev.LinkAdd(rxe, netdev); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := nldev.LinkDel(rxe); err != nil {
			t.Errorf("rdma link del %s: %v", rxe, err)
		}
	})
	return rxe, netdev
}

func setLink(t *testing.T, name string, up bool) {
	t.Helper()
	l, err := netlink.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	if up {
		err = netlink.LinkSetUp(l)
	} else {
		err = netlink.LinkSetDown(l)
	}
	if err != nil {
		t.Fatalf("ip link set %s up=%v: %v", name, up, err)
	}
}

// waitEvent reads events until one of type want arrives (GID changes and
// others that a link flap also causes are skipped).
func waitEvent(t *testing.T, c *Device, want EventType) AsyncEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for {
		ev, err := c.NextEvent(ctx)
		if err != nil {
			t.Fatalf("waiting for %q: %v", want, err)
		}
		t.Logf("event: %v", ev)
		if ev.Type == want {
			return ev
		}
	}
}

func waitPortState(t *testing.T, c *Device, want PortState) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		a, err := c.QueryPort(1)
		if err != nil {
			t.Fatal(err)
		}
		if a.State == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("port state %v, want %v", a.State, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Setting the netdev under an rxe device down and up delivers PORT_ERR and
// PORT_ACTIVE on the async event file (kernel: sw/rxe/rxe_net.c rxe_notify,
// rxe_port_down/rxe_port_up).
func TestAsyncPortEvents(t *testing.T) {
	rxe, netdev := testRXE(t)
	c, err := Open(rxe)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	waitPortState(t, c, PortActive)
	// Drain what device creation queued.
	for {
		_, ok, err := c.TryNextEvent()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
	}

	setLink(t, netdev, false)
	ev := waitEvent(t, c, EventPortErr)
	if ev.Port != 1 || ev.Element != 1 || ev.String() != "port error (port 1)" {
		t.Errorf("event = %+v (%v)", ev, ev)
	}
	waitPortState(t, c, PortDown)

	setLink(t, netdev, true)
	ev = waitEvent(t, c, EventPortActive)
	if ev.Port != 1 {
		t.Errorf("event = %+v", ev)
	}
	waitPortState(t, c, PortActive)
}

// A wait ends with the context's error when it is cancelled or times out,
// and with ErrClosed when the Device is closed under it.
func TestNextEventCancellation(t *testing.T) { eachLabDeviceName(t, testNextEventCancellation) }

func testNextEventCancellation(t *testing.T, name string) {
	c, err := Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := c.NextEvent(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the timed-out wait took %v", d)
	}

	ctx2, cancel2 := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := c.NextEvent(ctx2)
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond)
	cancel2()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancel did not end the wait")
	}

	go func() {
		_, err := c.NextEvent(t.Context())
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("err = %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the wait")
	}
}
