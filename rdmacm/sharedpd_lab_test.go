package rdmacm

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/uverbs"
)

// TestSharedPD: a server registers one buffer once on the device of its
// address (DeviceForAddr) and serves two clients from it through
// Config.PD; each client WRITEs into its own half.
func TestSharedPD(t *testing.T) { eachLabPair(t, testSharedPD) }

func testSharedPD(t *testing.T) {
	ctx := testCtx(t)
	srv, _ := labAddrs(t)
	dev, port, err := DeviceForAddr(srv)
	if err != nil {
		t.Fatal(err)
	}
	if dev.Name != labDeviceOf(t, srv) || port != 1 {
		t.Fatalf("DeviceForAddr(%v) = %s port %d, want %s port 1", srv, dev.Name, port, labDeviceOf(t, srv))
	}
	_, pd := openPD(t, dev.Name)
	buf, err := uverbs.AllocBuffer(8192)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	mr, err := pd.RegMR(buf.Bytes(), uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()

	// The MR's address and rkey go to each client in the accept's private
	// data: 8 bytes of address, 4 of rkey, 4 of offset. Both sides log
	// through t.Logf, so that a failure shows the CM's steps.
	l := listenLab(ctx, t, &Config{PD: pd, Logf: prefixedLogf(t, "server: ")})
	var wg sync.WaitGroup
	var conns []*Conn
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := Dial(ctx, l.Addr().String(), &Config{Logf: prefixedLogf(t, fmt.Sprintf("client %d: ", i))})
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			p := c.PeerPrivateData()
			addr := uint64(0)
			for j := 7; j >= 0; j-- {
				addr = addr<<8 | uint64(p[j])
			}
			rkey := uint32(p[8]) | uint32(p[9])<<8 | uint32(p[10])<<16 | uint32(p[11])<<24
			off := uint64(p[12]) | uint64(p[13])<<8
			cbuf, _ := uverbs.AllocBuffer(4096)
			defer cbuf.Close()
			cmr, err := c.PD().RegMR(cbuf.Bytes(), uverbs.AccessLocalWrite)
			if err != nil {
				t.Error(err)
				return
			}
			defer cmr.Close()
			n := copy(cbuf.Bytes(), strings.Repeat(string(rune('a'+i)), 100))
			if err := c.QP().PostSend([]uverbs.SendWR{{ID: 1, Op: uverbs.OpWrite, Flags: uverbs.SendSignaled,
				SGEs: []uverbs.SGE{cmr.SGE(0, n)}, RemoteAddr: addr + off, RKey: rkey}}); err != nil {
				t.Error(err)
				return
			}
			if wc, err := waitWC(ctx, c); err != nil || wc.Status != uverbs.WCSuccess {
				t.Errorf("client %d write: %v %v", i, wc.Status, err)
			}
		}()
		c, err := l.GetRequest(ctx)
		if err != nil {
			wg.Wait()
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
		if c.PD() != pd {
			t.Errorf("connection %d has its own PD, want the shared one", i)
		}
		pdata := make([]byte, 16)
		a, rk, off := mr.Addr(), mr.RKey(), 4096*i
		for j := range 8 {
			pdata[j] = byte(a >> (8 * j))
		}
		pdata[8], pdata[9], pdata[10], pdata[11] = byte(rk), byte(rk>>8), byte(rk>>16), byte(rk>>24)
		pdata[12], pdata[13] = byte(off), byte(off>>8)
		// The client writes and disconnects at once: on siw its close can
		// reach this side before Accept reads the QP's state back, and the
		// accept still succeeds (establishedIWARPLocked).
		if err := c.Accept(ctx, pdata); err != nil {
			wg.Wait()
			t.Fatal(err)
		}
		wg.Wait()
	}
	for i, c := range conns {
		// The client disconnected after its WRITE completed. siw completes
		// a WRITE once it is sent (siw_qp_tx.c siw_qp_sq_process), so the
		// data is known to have landed here only when the disconnect that
		// follows it on the same TCP stream has arrived.
		select {
		case <-c.Done():
		case <-ctx.Done():
			t.Fatalf("connection %d: no DISCONNECTED after the client closed: %v", i, ctx.Err())
		}
		got := string(buf.Bytes()[4096*i : 4096*i+100])
		if got != strings.Repeat(string(rune('a'+i)), 100) {
			t.Errorf("half %d of the shared buffer: %q", i, got[:10])
		}
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}
	// The shared PD survives its connections.
	mr2, err := pd.RegMR(buf.Bytes()[:4096], uverbs.AccessLocalWrite)
	if err != nil {
		t.Fatalf("the shared PD after its connections closed: %v", err)
	}
	mr2.Close()
}

// TestPDOnWrongDevice: a PD of another device is refused with a clear error.
func TestPDOnWrongDevice(t *testing.T) { eachLabPair(t, testPDOnWrongDevice) }

func testPDOnWrongDevice(t *testing.T) {
	ctx := testCtx(t)
	l := listenLab(ctx, t, nil)
	vdev, pd := openPD(t, loDevice(t))
	_, err := Dial(ctx, l.Addr().String(), &Config{PD: pd})
	if !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), "the PD is on device "+vdev.Name()) {
		t.Fatalf("dial with a PD of %s: %v", vdev.Name(), err)
	}
}

// openPD opens the device called name and allocates a PD there; both are
// closed when the test ends.
func openPD(t *testing.T, name string) (*uverbs.Device, *uverbs.PD) {
	t.Helper()
	vdev, err := uverbs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vdev.Close() })
	pd, err := vdev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pd.Close() })
	return vdev, pd
}

// prefixedLogf is a Config.Logf that logs through t.Logf with prefix.
func prefixedLogf(t *testing.T, prefix string) func(string, ...any) {
	return func(format string, args ...any) { t.Logf(prefix+format, args...) }
}
