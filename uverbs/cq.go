package uverbs

import (
	"context"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/uverbs/internal/mlx5"
	"github.com/goverbs/rdma/uverbs/internal/rxe"
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
	// they catch, naming this option.
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

	mu      ringLock
	ring    *sys.Mapping
	q       *rxe.CQ // rxe; nil once closed
	mx      *mlx5CQ // mlx5 (mlx5cq.go); nil on rxe and once closed
	pending []WC    // completions pulled out of the ring by QP.Close; Poll returns them first
	broken  bool    // a resize lost the ring
	notify  notifyCmd
}

// notifyCmd is the REQ_NOTIFY_CQ write() command, built once at creation so
// that arming a CQ allocates nothing (the command has no response pointer,
// so Go heap memory is fine).
type notifyCmd struct {
	hdr abi.UverbsCmdHdr
	req abi.UverbsReqNotifyCQ
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
	if err := c.requireDataPath(op); err != nil {
		return nil, err
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
		cq.mu.single = "a CQ"
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
	if c.mlx != nil {
		if err := cq.createMLX5(op, &req, init.Depth); err != nil {
			return fail(err)
		}
	} else {
		var resp struct {
			core abi.UverbsCreateCQResp
			drv  abi.RxeCreateCQResp
		}
		if err := c.write(op, abi.IB_USER_VERBS_CMD_CREATE_CQ, bytesOf(&req), bytesOf(&resp)); err != nil {
			return fail(err)
		}
		cq.handle = resp.core.CQHandle
		m, q, err := c.mapCQ(op, resp.drv.MI)
		if err != nil {
			cq.destroy()
			return fail(err)
		}
		cq.ring, cq.q = m, q
		cq.depth.Store(int32(q.Capacity()))
	}
	cq.notify.hdr = abi.UverbsCmdHdr{
		Command: abi.IB_USER_VERBS_CMD_REQ_NOTIFY_CQ,
		InWords: uint16(unsafe.Sizeof(cq.notify) / 4),
	}
	cq.notify.req.CQHandle = cq.handle
	if init.Channel != nil {
		init.Channel.kids.adopt(cq, kindCQ)
	}
	if err := r.add(op, cq.h, kindCQ, cq); err != nil {
		cq.close(true)
		return nil, err
	}
	return cq, nil
}

// mapCQ maps a CQ ring described by the driver's mmap info and checks its
// header (rxe: struct rxe_queue_buf with 128-byte slots, docs/abi.md §3.4).
func (c *Device) mapCQ(op string, mi abi.RxeMminfo) (*sys.Mapping, *rxe.CQ, error) {
	m, err := c.mmapRing(op, mi, "cq ring")
	if err != nil {
		return nil, nil, err
	}
	q, err := rxe.NewCQ(m.Bytes())
	if err != nil {
		m.Unmap()
		return nil, nil, &OpError{Op: op, Err: err}
	}
	return m, q, nil
}

// Depth returns the number of completions the CQ holds (the ring's
// index_mask; at least the depth asked for).
func (cq *CQ) Depth() int { return int(cq.depth.Load()) }

// Channel returns the completion channel given at creation, or nil.
func (cq *CQ) Channel() *CompChannel { return cq.ch }

// Poll moves up to len(wcs) completions into wcs and returns how many. It
// never waits and never allocates. Completions a QP.Close pulled out of the
// ring while draining come first, then the ring's, in order.
//
// rdma-core: ibv_poll_cq.
func (cq *CQ) Poll(wcs []WC) (int, error) {
	cq.mu.Lock()
	// The common case first, an rxe CQ with nothing pulled aside: one
	// load of producer_index, one decode straight into the caller's
	// slice, and one consumer_index store for the whole batch, made in the
	// same call as the unlock; no call at all when the ring is empty
	// (Refresh is inlined). No defer, which would cost every poll its
	// set-up: nothing in between can panic (the decoder writes within
	// len(wcs), read once).
	if q := cq.q; q != nil && len(cq.pending) == 0 {
		if !q.Refresh() {
			cq.mu.Unlock()
			return 0, nil
		}
		n := q.Take(rxe.WCs(wcs))
		cq.mu.storeUnlock(q.IndexStore())
		return n, nil
	}
	// The same on mlx5, with no SRQ to complete (its lock is the slow
	// path's). The decoder reads the entry within the ring and the
	// request IDs at masked indexes. An empty CQ skips the consumer-index
	// store, which would write the value the last poll wrote.
	if m := cq.mx; m != nil && len(cq.pending) == 0 && !m.srqs {
		if m.q.Empty() {
			cq.mu.Unlock()
			return 0, nil
		}
		n, err := m.q.Poll(mlx5.WCs(wcs))
		cq.mu.Unlock()
		if err != nil {
			return n, mlx5PollError(err)
		}
		return n, nil
	}
	return cq.pollSlow(wcs)
}

// pollSlow is Poll for the other cases: completions pulled aside by
// QP.Close, an mlx5 CQ with SRQ completions, a closed CQ. It is called
// with cq.mu held and releases it.
func (cq *CQ) pollSlow(wcs []WC) (int, error) {
	defer cq.mu.Unlock()
	if cq.q == nil && cq.mx == nil {
		return 0, cq.unusable("poll_cq")
	}
	n := 0
	if len(cq.pending) > 0 {
		n = copy(wcs, cq.pending)
		cq.pending = cq.pending[n:]
		if len(cq.pending) == 0 {
			cq.pending = nil
		}
	}
	if n < len(wcs) {
		if cq.mx != nil {
			m, err := cq.mx.poll(cq.ctx.mlx, wcs[n:])
			return n + m, err
		}
		n += cq.q.Poll(rxe.WCs(wcs[n:]))
	}
	return n, nil
}

// pull moves every completion in the ring to the pending list, for
// QP.Close, which must see the completions of the QP it drains without
// losing those of other QPs sharing the CQ. It returns false if the CQ is
// closed.
func (cq *CQ) pull() bool {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.mx != nil {
		cq.mx.pull(cq.ctx.mlx, &cq.pending)
		return true
	}
	if cq.q == nil {
		return false
	}
	var w [1]WC
	for !cq.q.Empty() {
		rxe.DecodeCQE(cq.q.Peek(), &rxe.WCs(w[:])[0])
		cq.q.Consume()
		cq.pending = append(cq.pending, w[0])
	}
	return true
}

// ReqNotify arms the CQ: the next completion (with solicitedOnly, the next
// solicited receive or any failed one) sends one notification to the CQ's
// completion channel (write() command REQ_NOTIFY_CQ; rxe has no
// user-mapped arm flag, docs/abi.md §3.10). It allocates nothing.
//
// rdma-core: ibv_req_notify_cq.
func (cq *CQ) ReqNotify(solicitedOnly bool) error {
	const op = "req_notify_cq"
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.q == nil && cq.mx == nil {
		return cq.unusable(op)
	}
	if cq.ch == nil {
		return &OpError{Op: op, Err: fmt.Errorf("the CQ has no completion channel to notify: create it with CQInit.Channel")}
	}
	cq.notify.req.SolicitedOnly = 0
	if solicitedOnly {
		cq.notify.req.SolicitedOnly = 1
	}
	if cq.mx != nil {
		// The arm word and the UAR doorbell, no system call
		// (docs/mlx5.md §5).
		cq.armed.Store(true)
		cq.mx.q.Arm(solicitedOnly)
		return nil
	}
	c := cq.ctx
	if err := c.lockCmd(op); err != nil {
		return err
	}
	// Set before the kernel can raise the event, so that reading it always
	// clears the flag.
	cq.armed.Store(true)
	// REQ_NOTIFY_CQ never sleeps (rxe: a spin lock around the arm flag).
	err := sys.WriteDoorbell(c.fd, op, unsafe.Pointer(&cq.notify), unsafe.Sizeof(cq.notify))
	c.mu.RUnlock()
	if err != nil {
		cq.armed.Store(false)
	}
	return err
}

// PollWait returns the next completions: it polls the CQ into wcs and,
// while it is empty, arms it (ReqNotify, once per event), polls again (a
// completion that came in between raises no event) and waits on the CQ's
// completion channel. It returns n >= 1, or ctx.Err() when ctx ends first
// (after one more poll finds nothing), or an error matching ErrClosed when
// the CQ is closed or its channel is closed while it waits (closing the CQ
// alone does not wake it). The CQ needs a completion channel
// (CQInit.Channel).
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
		if err := cq.ch.waitFor(ctx, cq, seq); err != nil {
			return 0, err
		}
	}
}

// waiting reports whether a wait that took seq goes on: the CQ is armed
// and no notification of it was read since.
func (cq *CQ) waiting(seq uint64) bool {
	return cq.armed.Load() && cq.events.Load() == seq
}

// Resize changes the CQ to hold at least n completions (write() command
// RESIZE_CQ). The kernel moves the completions not yet polled to the new
// ring; it refuses (EINVAL) a size smaller than their number.
//
// rdma-core: ibv_resize_cq.
func (cq *CQ) Resize(n int) error {
	const op = "resize_cq"
	if n <= 0 {
		return &OpError{Op: op, Err: fmt.Errorf("depth %d: a CQ holds at least one completion", n)}
	}
	if err := cq.ctx.checkCQDepth(n); err != nil {
		return &OpError{Op: op, Err: err}
	}
	if cq.ctx.mlx != nil {
		return &OpError{Op: op, Err: fmt.Errorf("resizing an mlx5 CQ is not implemented: create a larger CQ: %w", ErrNotSupported)}
	}
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.q == nil {
		return cq.unusable(op)
	}
	req := abi.UverbsResizeCQ{CQHandle: cq.handle, CQE: uint32(n)}
	var resp struct {
		core abi.UverbsResizeCQResp
		drv  abi.RxeResizeCQResp
	}
	if err := cq.ctx.write(op, abi.IB_USER_VERBS_CMD_RESIZE_CQ, bytesOf(&req), bytesOf(&resp)); err != nil {
		return err
	}
	// The kernel copied the unread entries into a new ring and frees the
	// old one once unmapped (kernel: sw/rxe/rxe_queue.c rxe_queue_resize).
	old := cq.ring
	m, q, err := cq.ctx.mapCQ(op, resp.drv.MI)
	old.Unmap()
	if err != nil {
		// The kernel has switched rings; without the new one the CQ is
		// unusable.
		cq.ring, cq.q = nil, nil
		cq.broken = true
		return &OpError{Op: op, Err: fmt.Errorf("the CQ was resized but its new ring could not be mapped, so it is no longer usable: close it: %w", err)}
	}
	cq.ring, cq.q = m, q
	cq.depth.Store(int32(q.Capacity()))
	return nil
}

// Close destroys the CQ (DESTROY_CQ) and unmaps its ring. It refuses with an
// error matching ErrBusy while QPs use the CQ. Completions not yet polled
// are lost.
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
	if cq.ring != nil {
		cq.ring.Unmap()
	}
	if cq.mx != nil {
		cq.mx.mem.Unmap()
	}
	cq.ring, cq.q, cq.mx, cq.pending = nil, nil, nil, nil
	cq.mu.Unlock()
	if cq.ch != nil {
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
