package uverbs

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// CQInit describes a completion queue to create.
type CQInit struct {
	// Depth is the minimum number of completions the CQ must hold. Size it
	// for every work request that can be outstanding on the QPs that use
	// it: a CQ that overflows raises EventCQErr, and its QPs go to the
	// error state (docs/abi.md §6.6). The kernel rounds it up;
	// CQ.Depth tells the real size.
	Depth int
	// Channel, if not nil, receives a notification when the CQ is armed
	// with ReqNotify and gets a completion.
	Channel *CompChannel
	// Vector is the completion vector (0 .. Device.NumCompVectors()-1).
	Vector int
	// SingleGoroutine declares that one goroutine at a time uses the CQ,
	// and the CQ then takes no lock: Poll, ReqNotify and PollWait cost a
	// few nanoseconds less (BENCHMARKS.md, "Ring locks"). The caller
	// promises that no two of these overlap: the CQ's own calls (Poll,
	// ReqNotify, PollWait, Resize, Close), creating or closing a QP that
	// uses the CQ or moving one to RESET (these touch the CQ's state), and
	// Device.Close while the CQ is open. Reading the CQ's events counts
	// too (CompChannel.Wait, or PollWait of any CQ sharing the channel):
	// on mlx5 the reader counts the event in the CQ's arm sequence
	// (mlx5_cq_event). Calls made in turn from several goroutines, each
	// after the last has returned as seen through the caller's own
	// synchronisation (a mutex, a channel), keep the promise. Overlapping
	// calls corrupt the ring; race builds (go test -race) panic on those
	// they catch, naming this option, and the race detector reports
	// calls from two goroutines that the caller's synchronisation does
	// not order, even calls that never overlap.
	//
	// rdma-core: a CQ created in a parent domain with a thread domain
	// (ibv_alloc_td, ibv_alloc_parent_domain, ibv_create_cq_ex), whose
	// lock libmlx5 then leaves out; the same as MLX5_SINGLE_THREADED=1 for
	// one CQ.
	SingleGoroutine bool
}

// CQ is a completion queue. Poll reads completions straight from the ring
// the kernel shares with the process, without a system call and without
// allocating.
//
// Its methods may be called from several goroutines (one lock per CQ),
// unless it was created with CQInit.SingleGoroutine.
// Close refuses (ErrBusy) while QPs use the CQ. Close is idempotent and safe
// on a nil *CQ; every other method of a closed CQ returns an error matching
// ErrClosed and never touches the unmapped ring.
//
// rdma-core: struct ibv_cq.
type CQ struct {
	ctx  *Device
	h    uint64 // user handle: names the CQ in completion and async events
	ch   *CompChannel
	kids children // QPs that use the CQ

	handle uint32
	depth  atomic.Int32
	// armed is set by ReqNotify and cleared when the channel's event for
	// the CQ is read, by whichever Wait reads it; events counts those
	// reads. PollWait relies on both.
	armed  atomic.Bool
	events atomic.Uint64
	// closed is set by Close once the ring is gone, and ends the waits of
	// PollWait; waiters counts the PollWait calls in a wait, which Close
	// then wakes.
	closed  atomic.Bool
	waiters atomic.Int32

	mu      ringLock
	drv     provider.CQ // the provider's CQ (provider.go); nil once closed
	pending []WC        // completions pulled out of the ring by QP.Close; Poll returns them first
	broken  bool        // a resize lost the ring
	// countsEvents: drv counts the completion events read
	// (provider.CQEvents); set at creation.
	countsEvents bool
}

// CreateCQ creates a completion queue (write() command CREATE_CQ) and maps
// its ring.
//
// rdma-core: ibv_create_cq.
func (c *Device) CreateCQ(init CQInit) (*CQ, error) {
	const op = "create_cq"
	if init.Depth <= 0 {
		return nil, &OpError{Op: op, Err: fmt.Errorf("depth %d: a CQ holds at least one completion", init.Depth)}
	}
	if c == nil {
		return nil, closedErr(op)
	}
	if err := c.checkCQDepth(init.Depth); err != nil {
		return nil, &OpError{Op: op, Err: err}
	}
	if init.Vector < 0 || (c.numCompVectors > 0 && init.Vector >= c.numCompVectors) {
		return nil, &OpError{Op: op, Err: fmt.Errorf("completion vector %d: the device has vectors 0 to %d", init.Vector, c.numCompVectors-1)}
	}
	r, err := c.objects(op)
	if err != nil {
		return nil, err
	}
	chFD := int32(-1)
	if init.Channel != nil {
		if init.Channel.ctx != c {
			return nil, &OpError{Op: op, Err: fmt.Errorf("the completion channel belongs to another Device")}
		}
		if err := init.Channel.kids.hold(op, "completion channel"); err != nil {
			return nil, err
		}
		chFD = int32(init.Channel.ev.Raw())
	}
	cq := &CQ{ctx: c, h: newHandle(), ch: init.Channel}
	if init.SingleGoroutine {
		cq.mu.elide("a CQ")
	}
	fail := func(err error) (*CQ, error) {
		if init.Channel != nil {
			init.Channel.kids.unhold()
		}
		return nil, err
	}
	req := abi.UverbsCreateCQ{
		UserHandle:  cq.h,
		CQE:         uint32(init.Depth),
		CompVector:  uint32(init.Vector),
		CompChannel: chFD,
	}
	if err := cq.create(op, &req, init.Depth); err != nil {
		return fail(err)
	}
	if init.Channel != nil {
		init.Channel.kids.adopt(cq, kindCQ)
	}
	if err := r.add(op, cq.h, kindCQ, cq); err != nil {
		cq.close(true)
		return nil, err
	}
	return cq, nil
}

// Depth returns the number of completions the CQ holds (the ring's
// index_mask; at least the depth asked for).
//
// rdma-core: the cqe of struct ibv_cq.
func (cq *CQ) Depth() int { return int(cq.depth.Load()) }

// Channel returns the completion channel given at creation, or nil.
//
// rdma-core: the channel of struct ibv_cq.
func (cq *CQ) Channel() *CompChannel { return cq.ch }

// PollWait returns the next completions: it polls the CQ into wcs and,
// while it is empty, arms it (ReqNotify, once per event), polls again (a
// completion that came in between raises no event) and waits on the CQ's
// completion channel. It returns n >= 1, or ctx.Err() when ctx ends first
// (after one more poll finds nothing), or an error matching ErrClosed when
// the CQ or its channel is closed, also while it waits: Close wakes it. The
// CQ needs a completion channel (CQInit.Channel).
//
// Several goroutines may call PollWait on one CQ, and CQs sharing a
// channel may be waited on at once: an event that one call reads for
// another CQ is seen by that CQ's waiter, and a call whose CQ's event
// another call read after its poll polls again rather than waiting. A
// CompChannel.Wait of your own on the same channel is not: PollWait may
// read the event it waits for. Use one or the other per channel. The wait
// parks the goroutine in Go's netpoller, as CompChannel.Wait does, and
// PollWait allocates nothing when CompChannel.Wait would not.
//
// rdma-core has no single call for this: it is the loop around
// ibv_poll_cq, ibv_req_notify_cq and ibv_get_cq_event that its examples
// write.
func (cq *CQ) PollWait(ctx context.Context, wcs []WC) (int, error) {
	const op = "poll and wait"
	if len(wcs) == 0 {
		return 0, &OpError{Op: op, Err: fmt.Errorf("no room for a completion: pass a []WC of length 1 or more")}
	}
	if cq.ch == nil {
		return 0, &OpError{Op: op, Err: fmt.Errorf("the CQ has no completion channel to wait on: create it with CQInit.Channel, or use Poll")}
	}
	for {
		seq := cq.events.Load()
		n, err := cq.Poll(wcs)
		if n > 0 || err != nil {
			return n, err
		}
		if !cq.armed.Load() {
			if err := cq.ReqNotify(false); err != nil {
				return 0, err
			}
			continue
		}
		cq.waiters.Add(1)
		err = cq.ch.waitFor(ctx, cq, seq)
		cq.waiters.Add(-1)
		if err != nil {
			return 0, err
		}
	}
}

// waiting reports whether a wait that took seq goes on: the CQ is open and
// armed, and no notification of it was read since.
func (cq *CQ) waiting(seq uint64) bool {
	return !cq.closed.Load() && cq.armed.Load() && cq.events.Load() == seq
}

// Close destroys the CQ (DESTROY_CQ) and unmaps its ring. It refuses with an
// error matching ErrBusy while QPs use the CQ. Completions not yet polled
// are lost. A PollWait in progress returns an error matching ErrClosed
// (not on a CQ created with CQInit.SingleGoroutine, whose promise rules out
// a Close during a PollWait): the kernel drops the queued events of a
// destroyed CQ and raises no more (kernel: core/uverbs_main.c
// ib_uverbs_release_ucq), so nothing else would wake it.
//
// rdma-core: ibv_destroy_cq.
func (cq *CQ) Close() error {
	if cq == nil {
		return nil
	}
	return cq.close(false)
}

func (cq *CQ) close(force bool) error {
	already, err := cq.kids.beginClose("destroy_cq", "CQ", force)
	if already || err != nil {
		return err
	}
	cq.mu.Lock()
	err = cq.destroy()
	cq.release()
	cq.pending = nil
	cq.closed.Store(true)
	cq.mu.Unlock()
	if cq.ch != nil {
		// A PollWait that counted itself before closed was set is woken
		// here; one that counted itself after sees closed set before it
		// waits (waitFor).
		if cq.waiters.Load() > 0 {
			cq.ch.wake()
		}
		cq.ch.last.CompareAndSwap(cq, nil)
		cq.ch.kids.drop(cq)
	}
	cq.ctx.forget(cq.h)
	return ignoreClosedContext(err)
}

// unusable is the error of a call on a CQ without a ring. Call with cq.mu
// held.
func (cq *CQ) unusable(op string) error {
	if cq.broken {
		return &OpError{Op: op, Err: fmt.Errorf("the CQ lost its ring in a failed resize: close it")}
	}
	return closedErr(op)
}

func (cq *CQ) destroy() error {
	req := abi.UverbsDestroyCQ{CQHandle: cq.handle}
	var resp abi.UverbsDestroyCQResp
	return cq.ctx.write("destroy_cq", abi.IB_USER_VERBS_CMD_DESTROY_CQ, bytesOf(&req), bytesOf(&resp))
}
