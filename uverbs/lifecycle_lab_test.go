package uverbs

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/internal/sys"
)

// uverbsFDs counts this process's descriptors open on a uverbs device.
func uverbsFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, "/dev/infiniband/uverbs") {
			n++
		}
	}
	return n
}

func stillOpen() int {
	n := 0
	for _, l := range sys.Leaks() {
		if strings.Contains(l, " still open") {
			n++
		}
	}
	return n
}

// A Device dropped with a PD, a CQ and a QP, without Close, is collected:
// no package-level table keeps it reachable (the lists of open handles and
// of QPs that may copy inline data hold weak pointers), so the GC safety
// net closes its descriptor and unmaps the rings.
func TestContextDroppedWithoutCloseIsCollected(t *testing.T) {
	eachLabDeviceName(t, testContextDroppedWithoutCloseIsCollected)
}

func testContextDroppedWithoutCloseIsCollected(t *testing.T, name string) {
	runtime.GC()
	fds, open := uverbsFDs(t), stillOpen()
	func() {
		c, err := Open(name)
		if err != nil {
			t.Fatal(err)
		}
		pd, err := c.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		cq, err := c.CreateCQ(CQInit{Depth: 16})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pd.CreateQP(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: defaultCap}); err != nil {
			t.Fatal(err)
		}
		if uverbsFDs(t) != fds+1 {
			t.Fatalf("%d uverbs descriptors with the Device open, want %d", uverbsFDs(t), fds+1)
		}
		if lookupHandle(cq.h) != cq {
			t.Fatal("the CQ's handle does not resolve while it is open")
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for uverbsFDs(t) != fds || stillOpen() != open {
		if time.Now().After(deadline) {
			t.Fatalf("the dropped Device was not collected within 10s: %d uverbs descriptors (want %d), still open:\n%s",
				uverbsFDs(t), fds, strings.Join(sys.Leaks(), "\n"))
		}
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
	// The descriptor, the async event file and the CQ ring were released by
	// the collector; the tracer reports them, as it should. Drop those
	// expected records so that the run's leak check stays clean.
	if n := sys.ForgetCollected(); n < 5 {
		t.Fatalf("%d records of collected resources, want at least 5 (uverbs fd, async event fd, CQ ring, the QP's two rings)", n)
	}
}

// MR.Close refuses only while a posted work request names its lkey:
// receives posted on another MR do not hold it.
func TestMRCloseOnlyRefusedByItsOwnWork(t *testing.T) {
	e := newVerbsEnv(t)
	_, mrA := e.memory(8192)
	_, mrB := e.memory(8192)
	_, mrC := e.memory(4096)
	cq := e.cq(64, nil)
	a, b := e.rcPair(cq, defaultCap)
	srq, err := e.pd.CreateSRQ(SRQInit{MaxWR: 8, MaxSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, "SRQ", srq.Close)
	if err := b.PostRecv([]RecvWR{{ID: 1, SGEs: []SGE{mrA.SGE(0, 256)}}, {ID: 2, SGEs: []SGE{mrA.SGE(256, 256)}}}); err != nil {
		t.Fatal(err)
	}
	if err := srq.PostRecv([]RecvWR{{ID: 3, SGEs: []SGE{mrC.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	err = mrA.Close()
	if !errors.Is(err, ErrBusy) || !errors.Is(err, unix.EBUSY) || !strings.Contains(err.Error(), "2 receive work requests outstanding") {
		t.Fatalf("closing the MR of posted receives: %v, want ErrBusy naming the QP's receives", err)
	}
	err = mrC.Close()
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "SRQ") {
		t.Fatalf("closing the MR of an SRQ receive: %v, want ErrBusy naming the SRQ", err)
	}
	if mrA.Bytes() == nil || mrC.Bytes() == nil {
		t.Fatal("a refused Close released the MR")
	}
	// Nothing posted names B: it closes while A's receives are outstanding.
	if err := mrB.Close(); err != nil {
		t.Fatalf("closing an MR no work request uses: %v", err)
	}
	if s, r := b.outstanding(); s != 0 || r != 2 {
		t.Fatalf("outstanding %d send %d receive, want the 2 receives", s, r)
	}
	// A send from A completes into one of the receives; the other still
	// holds A.
	if err := a.PostSend([]SendWR{{ID: 4, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mrA.SGE(4096, 100)}}}); err != nil {
		t.Fatal(err)
	}
	got := byID(t, pollN(t, cq, 2))
	wc := got[4]
	expectWC(t, wc, true, WCOpSend, a.QPN(), 100)
	if err := mrA.Close(); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "1 receive work requests outstanding") {
		t.Fatalf("closing A with one receive left: %v", err)
	}
	// Once the QP holding the last receive is closed (drained), A closes.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := mrA.Close(); err != nil {
		t.Fatalf("closing A after its QP was drained: %v", err)
	}
}

// Queue sizes beyond the device's limits are refused before the command,
// with the limit named and EINVAL as the kernel would answer.
func TestQueueSizesBeyondDeviceLimits(t *testing.T) {
	eachLabDevice(t, testQueueSizesBeyondDeviceLimits)
}

func testQueueSizesBeyondDeviceLimits(t *testing.T, e *verbsEnv) {
	attr, err := e.ctx.Query()
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error, says ...string) {
		t.Helper()
		if !errors.Is(err, unix.EINVAL) {
			t.Errorf("%s: %v, want an error matching EINVAL", what, err)
			return
		}
		for _, s := range says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q does not say %q", what, err, s)
			}
		}
	}
	_, err = e.ctx.CreateCQ(CQInit{Depth: attr.MaxCQE + 1})
	check("CQ depth", err, "exceeds the device's max_cqe", "ask for fewer entries")
	cq := e.cq(16, nil)
	check("CQ resize", cq.Resize(attr.MaxCQE+1), "max_cqe")
	if cq.Depth() < 16 {
		t.Fatal("a refused resize changed the CQ")
	}
	cp := defaultCap
	cp.MaxSendWR = attr.MaxQPWR + 1
	_, err = e.pd.CreateQP(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: cp})
	check("send queue", err, "Cap.MaxSendWR", "max_qp_wr")
	cp = defaultCap
	cp.MaxRecvWR = attr.MaxQPWR + 1
	_, err = e.pd.CreateQP(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: cp})
	check("receive queue", err, "Cap.MaxRecvWR", "max_qp_wr")
	_, err = e.pd.CreateSRQ(SRQInit{MaxWR: attr.MaxSRQWR + 1, MaxSGE: 1})
	check("SRQ", err, "max_srq_wr")
	_, err = e.pd.CreateSRQ(SRQInit{MaxWR: 4, MaxSGE: attr.MaxSRQSGE + 1})
	check("SRQ SGEs", err, "max_srq_sge")
	// Sizes at the limit still reach the kernel (which rounds and may still
	// refuse for memory): only the pre-check is tested here.
	if err := e.ctx.checkCQDepth(attr.MaxCQE); err != nil {
		t.Errorf("depth at max_cqe refused: %v", err)
	}
}

// CompChannel.FD says -1 once closed, never a number that may be reused.
func TestCompChannelFDAfterClose(t *testing.T) { eachLabDevice(t, testCompChannelFDAfterClose) }

func testCompChannelFDAfterClose(t *testing.T, e *verbsEnv) {
	ch, err := e.ctx.NewCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	fd := ch.FD()
	if fd < 0 {
		t.Fatalf("FD %d of an open channel", fd)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
		t.Fatalf("FD %d is not open: %v", fd, err)
	}
	if err := ch.Close(); err != nil {
		t.Fatal(err)
	}
	if got := ch.FD(); got != -1 {
		t.Fatalf("FD after Close = %d, want -1", got)
	}
}

// While Close drains a QP, posting on it fails at once with ErrClosed
// instead of waiting for the drain.
func TestQPPostDuringCloseReturnsClosed(t *testing.T) {
	e := newVerbsEnv(t)
	_, mr := e.memory(4096)
	cq := e.cq(64, nil)
	a, _ := e.rcPair(cq, defaultCap)
	if err := a.PostRecv([]RecvWR{{ID: 1, SGEs: []SGE{mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Close() }()
	// Whatever phase Close is in, a post returns ErrClosed or succeeds
	// before Close started, and never waits for the drain to end.
	for {
		start := time.Now()
		err := a.PostRecv([]RecvWR{{ID: 2, SGEs: []SGE{mr.SGE(64, 64)}}})
		if d := time.Since(start); d > time.Second {
			t.Fatalf("PostRecv during Close took %v", d)
		}
		if errors.Is(err, ErrClosed) {
			break
		}
		if err != nil && !errors.Is(err, ErrQueueFull) {
			t.Fatalf("PostRecv during Close: %v", err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
