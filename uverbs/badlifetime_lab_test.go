package uverbs

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/internal/testutil"
)

// Object lifetime misuse (docs/robustness.md §1 items 17-19): closing twice,
// using closed objects, closing parents before their children. The library
// must answer each with a clear error or a no-op, never crash, never touch an
// unmapped ring and never send the kernel a stale handle.

// Double destroy is a no-op, and it never reaches the kernel with the stale
// handle: the kernel hands out the lowest free object id again (kernel:
// core/rdma_core.c alloc_uobj -> xa_alloc), so the object created right after
// a close gets the closed one's handle, and a second DESTROY of the old
// handle would destroy the new object. Likewise descriptors and mappings are
// reused by number and address.
func TestBadDoubleDestroy(t *testing.T) { eachLabDevice(t, testBadDoubleDestroy) }

func testBadDoubleDestroy(t *testing.T, e *verbsEnv) {
	twice := func(what string, close func() error) {
		t.Helper()
		if err := close(); err != nil {
			t.Fatalf("%s: second Close: %v", what, err)
		}
		if err := close(); err != nil {
			t.Fatalf("%s: third Close: %v", what, err)
		}
	}
	sameHandle := func(what string, old, new uint32) {
		t.Helper()
		if old != new {
			t.Fatalf("%s: the kernel gave the new object handle %d, not the closed one's %d; the test needs the reuse", what, new, old)
		}
	}

	// PD.
	pd1, err := e.ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	if err := pd1.Close(); err != nil {
		t.Fatal(err)
	}
	pd2, err := e.ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, "PD", pd2.Close)
	sameHandle("PD", pd1.handle, pd2.handle)
	twice("PD", pd1.Close)
	buf, err := AllocBuffer(4096)
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, "buffer", buf.Close)
	mrOn2, err := pd2.RegMR(buf.Bytes(), AccessLocalWrite)
	if err != nil {
		t.Fatalf("the PD created after a double Close no longer works: %v", err)
	}

	// MR.
	if err := mrOn2.Close(); err != nil {
		t.Fatal(err)
	}
	mr2, err := pd2.RegMR(buf.Bytes(), AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	sameHandle("MR", mrOn2.handle, mr2.handle)
	twice("MR", mrOn2.Close)
	if err := mr2.Close(); err != nil {
		t.Fatalf("the MR registered after a double Close was destroyed under it: %v", err)
	}

	// CQ.
	cq1, err := e.ctx.CreateCQ(CQInit{Depth: 8})
	if err != nil {
		t.Fatal(err)
	}
	if err := cq1.Close(); err != nil {
		t.Fatal(err)
	}
	cq2 := e.cq(8, nil)
	sameHandle("CQ", cq1.handle, cq2.handle)
	twice("CQ", cq1.Close)
	if e.iwarp {
		// siw has no RESIZE_CQ: a poll shows the CQ works.
		if _, err := cq2.Poll(make([]WC, 1)); err != nil {
			t.Fatalf("the CQ created after a double Close no longer works: %v", err)
		}
	} else if err := cq2.Resize(32); err != nil {
		t.Fatalf("the CQ created after a double Close no longer works: %v", err)
	}

	// QP.
	qp1, err := e.pd.CreateQP(QPInit{Type: RC, SendCQ: cq2, RecvCQ: cq2, Cap: defaultCap})
	if err != nil {
		t.Fatal(err)
	}
	if err := qp1.Close(); err != nil {
		t.Fatal(err)
	}
	qp2 := e.qp(QPInit{Type: RC, SendCQ: cq2, RecvCQ: cq2, Cap: defaultCap})
	sameHandle("QP", qp1.handle, qp2.handle)
	twice("QP", qp1.Close)
	if err := qp2.ToInit(InitAttr{Port: 1}); err != nil {
		t.Fatalf("the QP created after a double Close no longer works: %v", err)
	}

	// SRQ.
	srq1, err := e.pd.CreateSRQ(SRQInit{MaxWR: 4, MaxSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := srq1.Close(); err != nil {
		t.Fatal(err)
	}
	srq2, err := e.pd.CreateSRQ(SRQInit{MaxWR: 4, MaxSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, "SRQ", srq2.Close)
	sameHandle("SRQ", srq1.handle, srq2.handle)
	twice("SRQ", srq1.Close)
	if _, err := srq2.Query(); err != nil {
		t.Fatalf("the SRQ created after a double Close no longer works: %v", err)
	}

	// AH: none on iWARP.
	if e.iwarp {
		if _, err := e.pd.CreateAHForIP(1, net.ParseIP("127.0.0.1")); !errors.Is(err, ErrNotSupported) {
			t.Fatalf("CreateAHForIP on an iWARP device: %v, want ErrNotSupported", err)
		}
	} else {
		testDoubleDestroyAH(t, e, sameHandle, twice)
	}

	// Completion channel: a descriptor, reused by number.
	ch1, err := e.ctx.NewCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	fd1 := ch1.FD()
	if err := ch1.Close(); err != nil {
		t.Fatal(err)
	}
	ch2, err := e.ctx.NewCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, "completion channel", ch2.Close)
	if ch2.FD() != fd1 {
		t.Fatalf("the new channel has descriptor %d, not the closed one's %d; the test needs the reuse", ch2.FD(), fd1)
	}
	twice("completion channel", ch1.Close)
	if cq := e.cq(4, ch2); cq.ReqNotify(false) != nil {
		t.Fatal("the channel created after a double Close no longer works")
	}

	// Buffer: a mapping, reused by address.
	b1, err := AllocBuffer(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	addr1 := b1.Addr()
	if err := b1.Close(); err != nil {
		t.Fatal(err)
	}
	b2, err := AllocBuffer(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, "buffer", b2.Close)
	if b2.Addr() != addr1 {
		t.Fatalf("the new buffer is at %#x, not the closed one's %#x; the test needs the reuse", b2.Addr(), addr1)
	}
	twice("buffer", b1.Close)
	m := b2.Bytes()
	for i := range m { // faults if the second Close unmapped b2's pages
		m[i] = byte(i)
	}

	// Device: descriptors reused by number.
	name := testutil.LoopbackDevice(t)
	c1, err := Open(name)
	if err != nil {
		t.Fatal(err)
	}
	raw1 := c1.fd.Raw()
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	c2, err := Open(name)
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, "Device", c2.Close)
	if c2.fd.Raw() != raw1 {
		t.Fatalf("the new Device has descriptor %d, not the closed one's %d; the test needs the reuse", c2.fd.Raw(), raw1)
	}
	twice("Device", c1.Close)
	if _, err := c2.Query(); err != nil {
		t.Fatalf("the Device opened after a double Close no longer works: %v", err)
	}
	var nilCtx *Device
	var nilPD *PD
	var nilCQ *CQ
	var nilQP *QP
	var nilSRQ *SRQ
	var nilMR *MR
	var nilAH *AH
	var nilCh *CompChannel
	var nilBuf *Buffer
	for what, f := range map[string]func() error{"Device": nilCtx.Close, "PD": nilPD.Close, "CQ": nilCQ.Close, "QP": nilQP.Close,
		"SRQ": nilSRQ.Close, "MR": nilMR.Close, "AH": nilAH.Close, "completion channel": nilCh.Close, "buffer": nilBuf.Close} {
		if err := f(); err != nil {
			t.Errorf("Close of a nil %s: %v", what, err)
		}
	}
}

// Use after close, object by object: every method of a closed object returns
// an error matching ErrClosed (or, for an address handle, the UD address
// error that says it is closed), and none touches the object's unmapped ring
// (that would crash the test binary). Creating a child under a closed parent
// fails the same way.
func TestBadUseAfterClose(t *testing.T) {
	testutil.RequireRDMA(t)
	c, err := Open(testutil.LoopbackDevice(t))
	if err != nil {
		t.Fatal(err)
	}
	var bufs []*Buffer
	defer func() {
		c.Close()
		for _, b := range bufs {
			b.Close()
		}
	}()
	lo := net.ParseIP("127.0.0.1")
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	ch, err := c.NewCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(CQInit{Depth: 16, Channel: ch})
	if err != nil {
		t.Fatal(err)
	}
	srq, err := pd.CreateSRQ(SRQInit{MaxWR: 4, MaxSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	buf, err := AllocBuffer(4096)
	if err != nil {
		t.Fatal(err)
	}
	bufs = append(bufs, buf)
	mr, err := pd.RegMR(buf.Bytes(), allAccess)
	if err != nil {
		t.Fatal(err)
	}
	ah, err := pd.CreateAHForIP(1, lo)
	if err != nil {
		t.Fatal(err)
	}
	ud, err := pd.CreateQP(QPInit{Type: UD, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ud.ToInit(InitAttr{Port: 1, QKey: 1}); err != nil {
		t.Fatal(err)
	}
	if err := ud.ToRTR(RTRAttr{}); err != nil {
		t.Fatal(err)
	}
	if err := ud.ToRTS(RTSAttr{}); err != nil {
		t.Fatal(err)
	}
	qp, err := pd.CreateQP(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	sqp, err := pd.CreateQP(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, SRQ: srq, Cap: QPCap{MaxSendWR: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if err := qp.ToInit(InitAttr{Port: 1}); err != nil {
		t.Fatal(err)
	}
	if err := qp.PostRecv([]RecvWR{{ID: 1, SGEs: []SGE{mr.SGE(0, 8)}}}); err != nil {
		t.Fatal(err)
	}

	closed := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want an error matching ErrClosed", what, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wcs := make([]WC, 4)

	// AH: posting with it is refused before anything is written.
	if err := ah.Close(); err != nil {
		t.Fatal(err)
	}
	err = ud.PostSend([]SendWR{{ID: 9, Op: OpSend, SGEs: []SGE{mr.SGE(0, 8)}, AH: ah, RemoteQPN: ud.QPN(), RemoteQKey: 1}})
	if !errors.Is(err, ErrUDAddress) || !strings.Contains(err.Error(), "the AH is closed") {
		t.Errorf("UD send with a closed AH: %v", err)
	}
	if s, _ := ud.outstanding(); s != 0 {
		t.Errorf("%d sends written with a closed AH", s)
	}
	if ah.Attr().DGID != GIDFromIP(lo) {
		t.Errorf("Attr of a closed AH: %+v", ah.Attr())
	}

	// QPs: the RC one had a receive posted, which Close flushes to the CQ.
	for _, q := range []*QP{qp, sqp, ud} {
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
		closed("QP.PostSend", q.PostSend([]SendWR{{ID: 1, Op: OpSend}}))
		closed("QP.PostRecv", q.PostRecv([]RecvWR{{ID: 1}}))
		closed("QP.Modify", q.Modify(&QPAttr{State: QPStateError}, QPAttrState))
		closed("QP.ToInit", q.ToInit(InitAttr{}))
		closed("QP.ToRTR", q.ToRTR(RTRAttr{AH: AHAttr{DGID: GIDFromIP(lo)}}))
		closed("QP.ToRTS", q.ToRTS(RTSAttr{}))
		closed("QP.ToError", q.ToError())
		_, err := q.Query(QPAttrAll)
		closed("QP.Query", err)
		if q.QPN() == 0 || q.PD() != pd {
			t.Errorf("a closed QP forgot its identity: QPN %#x", q.QPN())
		}
	}
	if n, err := cq.Poll(wcs); err != nil || n != 1 || wcs[0].ID != 1 || wcs[0].Status != WCFlushError {
		t.Errorf("the closed QP's receive: %d completions %+v, %v; want it flushed", n, wcs[:n], err)
	}

	// SRQ, and a QP created on it.
	if err := srq.Close(); err != nil {
		t.Fatal(err)
	}
	closed("SRQ.PostRecv", srq.PostRecv([]RecvWR{{ID: 1}}))
	closed("SRQ.SetLimit", srq.SetLimit(1))
	closed("SRQ.Resize", srq.Resize(8))
	_, err = srq.Query()
	closed("SRQ.Query", err)
	if srq.MaxWR() != 0 || srq.MaxSGE() != 0 {
		t.Errorf("closed SRQ: MaxWR %d MaxSGE %d", srq.MaxWR(), srq.MaxSGE())
	}
	_, err = pd.CreateQP(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, SRQ: srq, Cap: QPCap{MaxSendWR: 1}})
	closed("PD.CreateQP with a closed SRQ", err)

	// MR and the Buffer under it.
	if err := mr.Close(); err != nil {
		t.Fatal(err)
	}
	if mr.Bytes() != nil {
		t.Error("a closed MR still returns its memory")
	}
	if err := buf.Close(); err != nil {
		t.Fatal(err)
	}
	if buf.Bytes() != nil || buf.Len() != 0 || buf.Addr() != 0 {
		t.Errorf("closed buffer: %d bytes at %#x", buf.Len(), buf.Addr())
	}
	if _, err := pd.RegMR(buf.Bytes(), AccessLocalWrite); err == nil || !strings.Contains(err.Error(), "empty memory region") {
		t.Errorf("RegMR of a closed buffer: %v", err)
	}

	// CQ, and a QP created on it.
	if err := cq.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = cq.Poll(wcs)
	closed("CQ.Poll", err)
	closed("CQ.ReqNotify", cq.ReqNotify(false))
	closed("CQ.Resize", cq.Resize(32))
	_, err = pd.CreateQP(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 1, MaxRecvWR: 1}})
	closed("PD.CreateQP with a closed CQ", err)

	// Completion channel, and a CQ created on it.
	if err := ch.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = ch.Wait(ctx)
	closed("CompChannel.Wait", err)
	_, err = c.CreateCQ(CQInit{Depth: 4, Channel: ch})
	closed("Device.CreateCQ with a closed channel", err)

	// PD.
	if err := pd.Close(); err != nil {
		t.Fatal(err)
	}
	b2, err := AllocBuffer(4096)
	if err != nil {
		t.Fatal(err)
	}
	bufs = append(bufs, b2)
	_, err = pd.RegMR(b2.Bytes(), AccessLocalWrite)
	closed("PD.RegMR", err)
	cq2, err := c.CreateCQ(CQInit{Depth: 4})
	if err != nil {
		t.Fatal(err)
	}
	_, err = pd.CreateQP(QPInit{Type: RC, SendCQ: cq2, RecvCQ: cq2, Cap: QPCap{MaxSendWR: 1, MaxRecvWR: 1}})
	closed("PD.CreateQP", err)
	_, err = pd.CreateSRQ(SRQInit{MaxWR: 1, MaxSGE: 1})
	closed("PD.CreateSRQ", err)
	_, err = pd.CreateAHForIP(1, lo)
	closed("PD.CreateAHForIP", err)

	// Device: every command, and the objects it still had (cq2), which it
	// closed.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = cq2.Poll(wcs)
	closed("CQ.Poll after Device.Close", err)
	_, err = c.AllocPD()
	closed("Device.AllocPD", err)
	_, err = c.CreateCQ(CQInit{Depth: 1})
	closed("Device.CreateCQ", err)
	_, err = c.NewCompChannel()
	closed("Device.NewCompChannel", err)
	_, err = c.Query()
	closed("Device.Query", err)
	_, err = c.QueryPort(1)
	closed("Device.QueryPort", err)
	_, err = c.QueryGID(1, 0)
	closed("Device.QueryGID", err)
	_, err = c.GIDs(1)
	closed("Device.GIDs", err)
	_, err = c.GIDIndexForIP(1, lo)
	closed("Device.GIDIndexForIP", err)
	_, err = c.NextEvent(ctx)
	closed("Device.NextEvent", err)
	_, _, err = c.TryNextEvent()
	closed("Device.TryNextEvent", err)
	for _, f := range []func() error{cq2.Close, pd.Close, c.Close} {
		if err := f(); err != nil {
			t.Errorf("Close after Device.Close: %v", err)
		}
	}
}

// Closing a parent before its children is refused with an error matching
// ErrBusy and EBUSY (the kernel's answer to the same mistake, kernel:
// core/rdma_core.c uverbs_destroy_uobject) that names the children and says
// to close them first; the refusal changes nothing, every object keeps
// working, and closing in the right order then succeeds.
func TestBadDestroyOrder(t *testing.T) {
	e := newVerbsEnv(t)
	ch, err := e.ctx.NewCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := e.ctx.CreateCQ(CQInit{Depth: 64, Channel: ch})
	if err != nil {
		t.Fatal(err)
	}
	srq, err := e.pd.CreateSRQ(SRQInit{MaxWR: 8, MaxSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	buf, err := AllocBuffer(8192)
	if err != nil {
		t.Fatal(err)
	}
	// On a failure, close everything (the Device closes its objects in
	// order) before the buffer, so that nothing leaks.
	t.Cleanup(func() {
		e.ctx.Close()
		buf.Close()
	})
	mr, err := e.pd.RegMR(buf.Bytes(), allAccess)
	if err != nil {
		t.Fatal(err)
	}
	ah, err := e.pd.CreateAHForIP(1, net.ParseIP("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := e.pd.CreateQP(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: defaultCap})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.pd.CreateQP(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, SRQ: srq, Cap: QPCap{MaxSendWR: 8, MaxSendSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	e.link(a, b, defaultLink)
	ud, err := e.pd.CreateQP(QPInit{Type: UD, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ud.ToInit(InitAttr{Port: 1, QKey: 7}); err != nil {
		t.Fatal(err)
	}
	if err := ud.ToRTR(RTRAttr{}); err != nil {
		t.Fatal(err)
	}
	if err := ud.ToRTS(RTSAttr{}); err != nil {
		t.Fatal(err)
	}
	// Work in flight: a receive on a (for the MR), and one on the SRQ.
	mem := buf.Bytes()
	fillPattern(mem[:1024], 8)
	if err := a.PostRecv([]RecvWR{{ID: 100, SGEs: []SGE{mr.SGE(2048, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if err := srq.PostRecv([]RecvWR{{ID: 200, SGEs: []SGE{mr.SGE(3072, 64)}}}); err != nil {
		t.Fatal(err)
	}

	busy := func(what string, err error, says ...string) {
		t.Helper()
		var oe *OpError
		if !errors.Is(err, ErrBusy) || !errors.Is(err, unix.EBUSY) || !errors.As(err, &oe) {
			t.Errorf("%s: %v, want an OpError matching ErrBusy and EBUSY", what, err)
			return
		}
		for _, s := range says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q does not say %q", what, err, s)
			}
		}
	}
	busy("PD.Close", e.pd.Close(), "dealloc_pd", "the PD is still used by 3 QPs, 1 AH, 1 SRQ, 1 MR", "close them first")
	busy("CQ.Close", cq.Close(), "destroy_cq", "the CQ is still used by 3 QPs", "close them first")
	busy("CompChannel.Close", ch.Close(), "destroy_comp_channel", "still used by 1 CQ", "close them first")
	busy("SRQ.Close", srq.Close(), "destroy_srq", "the SRQ is still used by 1 QP", "close them first")
	busy("Buffer.Close", buf.Close(), "close buffer", "the buffer is still registered by 1 MR", "close them before unmapping")
	busy("MR.Close", mr.Close(), "dereg_mr", "has 0 send and 1 receive work requests outstanding", "SRQ", "1 receive work requests posted", "close those QPs/SRQs")

	// Everything still works: a SEND through the CQ (armed on the channel)
	// into the SRQ, one into a's receive, and a UD send through the AH.
	if err := cq.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
	if err := ud.PostRecv([]RecvWR{{ID: 300, SGEs: []SGE{mr.SGE(4096, 40), mr.SGE(4096+40, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if err := b.PostSend([]SendWR{{ID: 2, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(0, 32)}}}); err != nil {
		t.Fatal(err)
	}
	if err := a.PostSend([]SendWR{{ID: 1, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(100, 48)}}}); err != nil {
		t.Fatal(err)
	}
	if err := ud.PostSend([]SendWR{{ID: 3, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(200, 16)}, AH: ah, RemoteQPN: ud.QPN(), RemoteQKey: 7}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if got, err := ch.Wait(ctx); err != nil || got != cq {
		t.Fatalf("the channel after its refused Close: Wait = %v, %v", got, err)
	}
	expectCompletions(t, map[uint64]want{
		1:   {qp: a, op: WCOpSend, byteLen: 48},
		2:   {qp: b, op: WCOpSend, byteLen: 32},
		3:   {qp: ud, op: WCOpSend, byteLen: 16},
		100: {qp: a, op: WCOpRecv, byteLen: 32},
		200: {qp: b, op: WCOpRecv, byteLen: 48},
		300: {qp: ud, op: WCOpRecv, byteLen: 40 + 16},
	}, cq)
	if !bytes.Equal(mem[2048:2048+32], mem[:32]) || !bytes.Equal(mem[3072:3072+48], mem[100:148]) || !bytes.Equal(mem[4096+40:4096+56], mem[200:216]) {
		t.Error("data differs after the refused closes")
	}
	// The PD still registers memory.
	mr2, err := e.pd.RegMR(mem[:100], AccessLocalWrite)
	if err != nil {
		t.Fatalf("RegMR after the PD's refused Close: %v", err)
	}

	// The right order: QPs, AH, SRQ, MRs, buffer, CQ, channel, PD.
	for _, step := range []struct {
		what string
		f    func() error
	}{
		{"QP", a.Close}, {"QP", b.Close}, {"QP", ud.Close}, {"AH", ah.Close}, {"SRQ", srq.Close},
		{"MR", mr.Close}, {"MR", mr2.Close}, {"buffer", buf.Close}, {"CQ", cq.Close},
		{"completion channel", ch.Close}, {"PD", e.pd.Close},
	} {
		if err := step.f(); err != nil {
			t.Fatalf("closing the %s in order: %v", step.what, err)
		}
	}
}

func testDoubleDestroyAH(t *testing.T, e *verbsEnv, sameHandle func(string, uint32, uint32), twice func(string, func() error)) {
	t.Helper()
	ah1, err := e.pd.CreateAHForIP(1, net.ParseIP("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ah1.Close(); err != nil {
		t.Fatal(err)
	}
	ah2, err := e.pd.CreateAHForIP(1, net.ParseIP("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	sameHandle("AH", ah1.handle, ah2.handle)
	twice("AH", ah1.Close)
	if err := ah2.Close(); err != nil {
		t.Fatalf("the AH created after a double Close was destroyed under it: %v", err)
	}
}
