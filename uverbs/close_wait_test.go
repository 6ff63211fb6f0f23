package uverbs

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// stubCQ is a provider CQ that never has a completion.
type stubCQ struct{ released atomic.Bool }

func (q *stubCQ) Depth() int                       { return 4 }
func (q *stubCQ) Poll([]rdma.WC) (int, error)      { return 0, nil }
func (q *stubCQ) Pull(*[]rdma.WC)                  {}
func (q *stubCQ) Arm(bool) error                   { return nil }
func (q *stubCQ) Attach(provider.QP, provider.SRQ) {}
func (q *stubCQ) Detach(provider.QP)               {}
func (q *stubCQ) Release()                         { q.released.Store(true) }

// stuckQP is a provider QP (one that does not flush on destroy) whose
// rings keep send and recv requests outstanding until flushAfter looks at
// them, if flushAfter > 0.
type stuckQP struct {
	send, recv int
	flushAfter int
	looks      int
	released   bool
}

func (q *stuckQP) Caps() provider.QPCaps                         { return provider.QPCaps{} }
func (q *stuckQP) PostSend([]provider.SendWR, bool) (int, error) { return 0, nil }
func (q *stuckQP) SendQueueSize() int                            { return 4 }
func (q *stuckQP) RecvQueueSize() int                            { return 4 }
func (q *stuckQP) PostRecv([]rdma.RecvWR) (int, error)           { return 0, nil }
func (q *stuckQP) UsesLKey(uint32) (bool, int, int)              { return false, q.send, q.recv }
func (q *stuckQP) Reset(func(func()), func(func()))              {}
func (q *stuckQP) Release()                                      { q.released = true }
func (q *stuckQP) Outstanding() (int, int) {
	q.looks++
	if q.flushAfter > 0 && q.looks >= q.flushAfter {
		q.send, q.recv = 0, 0
	}
	return q.send, q.recv
}

// stuckQPOn returns a QP of a fake Device whose commands succeed, with d
// as its rings, in RTS.
func stuckQPOn(t *testing.T, d *stuckQP) *QP {
	t.Helper()
	c, swap := fakeCmdContext(t)
	swap() // MODIFY_QP and DESTROY_QP succeed
	pd := &PD{ctx: c, h: newHandle()}
	cq := &CQ{ctx: c, h: newHandle(), drv: &stubCQ{}}
	qp := &QP{ctx: c, pd: pd, sendCQ: cq, recvCQ: cq, h: newHandle(), drv: d}
	qp.state.Store(uint32(QPStateRTS))
	return qp
}

// CloseContext gives up the drain when its context ends, with an error
// that matches the context's and counts what will not complete, and the
// QP is closed all the same; Close keeps its own bound; a drain that ends
// returns nil under a context that never ends.
func TestQPCloseContext(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	short, cancelShort := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancelShort()
	for _, tc := range []struct {
		ctx  context.Context
		want error
	}{{cancelled, context.Canceled}, {short, context.DeadlineExceeded}} {
		d := &stuckQP{send: 2, recv: 1}
		qp := stuckQPOn(t, d)
		err := qp.CloseContext(tc.ctx)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "2 send and 1 receive work requests") {
			t.Errorf("CloseContext under an ended context: %v; want %v, counting 2 sends and 1 receive", err, tc.want)
		}
		if !d.released {
			t.Error("CloseContext that gave up the drain left the rings mapped")
		}
		if err := qp.PostSend([]SendWR{{Op: OpSend}}); !errors.Is(err, ErrClosed) {
			t.Errorf("PostSend after CloseContext: %v, want ErrClosed", err)
		}
		if err := qp.Close(); err != nil {
			t.Errorf("Close after CloseContext: %v", err)
		}
	}

	old := drainTimeout
	drainTimeout = time.Millisecond
	defer func() { drainTimeout = old }()
	d := &stuckQP{send: 1}
	err := stuckQPOn(t, d).Close()
	if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "within 1ms") {
		t.Errorf("Close past its drain timeout: %v; want the timeout named, not a context's error", err)
	}
	if !d.released {
		t.Error("Close past its drain timeout left the rings mapped")
	}

	d = &stuckQP{send: 1, recv: 1, flushAfter: 5}
	if err := stuckQPOn(t, d).CloseContext(context.Background()); err != nil || !d.released {
		t.Errorf("CloseContext of a QP the kernel flushes: %v, released %v; want nil, released", err, d.released)
	}
	var nilQP *QP
	if err := nilQP.CloseContext(context.Background()); err != nil {
		t.Errorf("CloseContext of a nil *QP: %v", err)
	}
}

// pipeChannel returns a completion channel of the fake Device c whose file
// is a pipe's read end (nothing is ever written to it), and the CQs made
// with it.
func pipeChannel(t *testing.T, c *Device, ncq int) (*CompChannel, []*CQ) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(p[1]) })
	ev, err := sys.NewEventFile(p[0], "fake completion channel")
	if err != nil {
		t.Fatal(err)
	}
	ch := &CompChannel{ctx: c, h: newHandle(), ev: ev, reader: make(chan struct{}, 1), note: make(chan struct{})}
	ch.buf = bytesOf(&ch.desc)
	t.Cleanup(func() { ch.close(true) })
	var cqs []*CQ
	for range ncq {
		cq := &CQ{ctx: c, h: newHandle(), ch: ch, drv: &stubCQ{}}
		ch.kids.adopt(cq, kindCQ)
		cqs = append(cqs, cq)
	}
	return ch, cqs
}

// CQ.Close ends the PollWait calls of the CQ with ErrClosed, the one that
// reads the channel (parked in the netpoller) and the one that waits for
// its turn alike, while the PollWait of another CQ of the channel waits
// on until its own CQ closes.
func TestCQCloseWakesPollWait(t *testing.T) {
	c, swap := fakeCmdContext(t)
	swap() // DESTROY_CQ succeeds
	_, cqs := pipeChannel(t, c, 2)
	cq, other := cqs[0], cqs[1]

	done := make(chan error, 3)
	wait := func(cq *CQ) {
		_, err := cq.PollWait(context.Background(), make([]WC, 1))
		done <- err
	}
	go wait(cq)
	awaitPollWait(t, "[IO wait", 1)
	go wait(cq)
	awaitPollWait(t, "[select", 1)
	otherDone := make(chan error, 1)
	go func() {
		_, err := other.PollWait(context.Background(), make([]WC, 1))
		otherDone <- err
	}()
	awaitPollWait(t, "[select", 2)

	if err := cq.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		select {
		case err := <-done:
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("PollWait %d after its CQ closed: %v, want ErrClosed", i, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("closing the CQ did not end its PollWait calls (%d of 2 returned)", i)
		}
	}
	select {
	case err := <-otherDone:
		t.Fatalf("the PollWait of another CQ returned %v when the CQ closed", err)
	default:
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-otherDone:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("PollWait after its CQ closed: %v, want ErrClosed", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("closing the other CQ did not end its PollWait")
	}
	if _, err := cq.PollWait(context.Background(), make([]WC, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("PollWait on a closed CQ: %v, want ErrClosed", err)
	}
}

// countIn counts the goroutines in fn whose state contains head.
func countIn(fn, head string) int {
	buf := make([]byte, 1<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		first, _, _ := strings.Cut(g, "\n")
		if strings.Contains(g, fn) && strings.Contains(first, head) {
			n++
		}
	}
	return n
}
