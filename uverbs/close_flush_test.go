package uverbs

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// flushQP is a provider QP that flushes on destroy (provider.FlushOnDestroy)
// with send and recv requests outstanding; FlushRings completes them all.
type flushQP struct {
	send, recv int
	flushed    bool
	released   bool
}

func (q *flushQP) Caps() provider.QPCaps                         { return provider.QPCaps{} }
func (q *flushQP) PostSend([]provider.SendWR, bool) (int, error) { return 0, nil }
func (q *flushQP) SendQueueSize() int                            { return 4 }
func (q *flushQP) RecvQueueSize() int                            { return 4 }
func (q *flushQP) PostRecv([]rdma.RecvWR) (int, error)           { return 0, nil }
func (q *flushQP) Outstanding() (int, int)                       { return q.send, q.recv }
func (q *flushQP) UsesLKey(uint32) (bool, int, int)              { return false, q.send, q.recv }
func (q *flushQP) Reset(func(func()), func(func()))              {}
func (q *flushQP) Release()                                      { q.released = true }
func (q *flushQP) FlushRings(send, recv *[]rdma.WC) {
	q.flushed = true
	for range q.send {
		*send = append(*send, rdma.WC{Status: WCFlushError})
	}
	q.send, q.recv = 0, 0
}

func closeFlushQP(c *Device, d *flushQP) error {
	pd := &PD{ctx: c, h: newHandle()}
	cq := &CQ{ctx: c}
	qp := &QP{ctx: c, pd: pd, sendCQ: cq, recvCQ: cq, h: newHandle(), drv: d}
	return qp.Close()
}

// A QP that flushes on destroy is not drained; when DESTROY_QP fails its
// rings cannot be completed, and Close says how much work will not
// complete, also when the failure is the Device's own close (ErrClosed,
// which Close otherwise ignores). The rings are released either way.
func TestCloseFlushOnDestroyFailed(t *testing.T) {
	c, _ := fakeCmdContext(t) // DESTROY_QP fails with ENOSPC
	d := &flushQP{send: 2, recv: 1}
	err := closeFlushQP(c, d)
	if err == nil || !errors.Is(err, unix.ENOSPC) || !strings.Contains(err.Error(), "2 send and 1 receive work requests") || !strings.Contains(err.Error(), "will not complete") {
		t.Errorf("Close with DESTROY_QP refused: %v; want ENOSPC saying 2 sends and 1 receive will not complete", err)
	}
	if d.flushed || !d.released {
		t.Errorf("flushed %v, released %v; want the rings released and not flushed", d.flushed, d.released)
	}

	c.mu.Lock()
	c.closed = true // Close races Device.Close
	c.mu.Unlock()
	d = &flushQP{send: 1}
	err = closeFlushQP(c, d)
	if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "1 send and 0 receive work requests") {
		t.Errorf("Close after the Device closed: %v; want ErrClosed saying 1 send will not complete", err)
	}
	if d = (&flushQP{}); closeFlushQP(c, d) != nil {
		t.Error("Close after the Device closed with nothing outstanding reports an error")
	}
}

// With DESTROY_QP done, FlushRings completes what is left and Close
// reports nothing.
func TestCloseFlushOnDestroy(t *testing.T) {
	c, swap := fakeCmdContext(t)
	swap() // DESTROY_QP succeeds
	d := &flushQP{send: 2, recv: 0}
	if err := closeFlushQP(c, d); err != nil || !d.flushed || !d.released {
		t.Errorf("Close: %v, flushed %v, released %v; want nil, the rings flushed and released", err, d.flushed, d.released)
	}
}
