package uverbs

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/mmio"
	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/internal/unix"
	"github.com/goverbs/rdma/uverbs/internal/mlx5"
	"github.com/goverbs/rdma/uverbs/internal/provider"
	"github.com/goverbs/rdma/uverbs/internal/rxe"
	"github.com/goverbs/rdma/uverbs/internal/siw"
)

// The provider seam. The data path (posting work requests, polling
// completions) is driver specific: each driver shares its queues with user
// space in its own format. Three are implemented: soft-RoCE
// (uverbs/internal/rxe), whose rings the kernel allocates and the process
// maps, mlx5 (uverbs/internal/mlx5), whose rings the process allocates
// and whose doorbells are device registers (docs/mlx5.md §1), and
// soft-iWARP (uverbs/internal/siw), whose rings the kernel allocates and
// whose elements carry their owner in a flag (docs/siw.md §3, §9). Control
// commands (PD, MR, QP state changes) are driver-agnostic.
//
// What callers pass and get back is the vocabulary of the root package
// rdma, which the providers speak too: SGE, RecvWR, WC and their values
// are its types. SendWR has provider.SendWR's layout with a *AH in place
// of a *provider.AH (an AH starts with one), so this file converts a send
// list for the providers without a copy (sendWR, sendWRs;
// docs/architecture.md §3). The driver packages import rdma and provider
// and nothing of each other or of uverbs.
//
// This file is the dispatch: every path that differs by provider is here
// (GET_CONTEXT, create, post, poll, arm, resize, reset, the lkey scans of
// mrusers.go, release), and the rest of the package is the same for every
// device. Every driver with a data path is listed in providers (rxe, mlx5,
// siw): its provider.Context, made in GET_CONTEXT, creates its CQs, QPs,
// SRQs and AHs, and each object holds its provider's object (CQ.drv,
// QP.drv, SRQ.drv: provider.CQ, QP, SRQ), chosen once when it is created,
// and calls it under the locks the interfaces name. A device of another
// driver gets controlOnly, which refuses CQs, QPs and SRQs with
// ErrNotSupported. Verbs not every provider has are optional interfaces
// the object is asked for (provider.CQResizer, SRQResizer, CQEvents,
// FlushOnDestroy, AHPortInfo, RegMRData, ModifySRQData).
//
// The common post and poll of rxe (the device the library runs on most)
// and of mlx5 are written out here, behind a type assertion to the
// provider's concrete type, rxe's tested first: they read the rings
// through it, with no interface call (docs/perf-history.md, "rxe post and
// poll: what each change bought"). Everything else calls the interfaces.

// deviceProvider is what GET_CONTEXT gave the provider of a Device.
type deviceProvider struct {
	// drv is the provider's context: the driver's in providers, else
	// controlOnly. Every open Device has one.
	drv provider.Context
	// kind is the driver's entry in providers (zero for controlOnly).
	kind provider.Driver
}

// SendWR has provider.SendWR's layout, with a *AH where the provider's
// request has a *provider.AH: an AH starts with its provider.AH (AH.drv),
// so the providers read the caller's requests where they lie; a copy cost
// a post about 2.5 ns (docs/perf-history.md, "rxe post and poll: what
// each change bought" item 31). Checked here at compile time: a negative
// array length does not compile.
var (
	_ [unsafe.Sizeof(SendWR{}) - unsafe.Sizeof(provider.SendWR{})]byte
	_ [unsafe.Sizeof(provider.SendWR{}) - unsafe.Sizeof(SendWR{})]byte
	_ [unsafe.Offsetof(SendWR{}.Op) - unsafe.Offsetof(provider.SendWR{}.Op)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.Op) - unsafe.Offsetof(SendWR{}.Op)]byte
	_ [unsafe.Offsetof(SendWR{}.Flags) - unsafe.Offsetof(provider.SendWR{}.Flags)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.Flags) - unsafe.Offsetof(SendWR{}.Flags)]byte
	_ [unsafe.Offsetof(SendWR{}.SGEs) - unsafe.Offsetof(provider.SendWR{}.SGEs)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.SGEs) - unsafe.Offsetof(SendWR{}.SGEs)]byte
	_ [unsafe.Offsetof(SendWR{}.Imm) - unsafe.Offsetof(provider.SendWR{}.Imm)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.Imm) - unsafe.Offsetof(SendWR{}.Imm)]byte
	_ [unsafe.Offsetof(SendWR{}.InvalidateRKey) - unsafe.Offsetof(provider.SendWR{}.InvalidateRKey)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.InvalidateRKey) - unsafe.Offsetof(SendWR{}.InvalidateRKey)]byte
	_ [unsafe.Offsetof(SendWR{}.RemoteAddr) - unsafe.Offsetof(provider.SendWR{}.RemoteAddr)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.RemoteAddr) - unsafe.Offsetof(SendWR{}.RemoteAddr)]byte
	_ [unsafe.Offsetof(SendWR{}.RKey) - unsafe.Offsetof(provider.SendWR{}.RKey)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.RKey) - unsafe.Offsetof(SendWR{}.RKey)]byte
	_ [unsafe.Offsetof(SendWR{}.CompareAdd) - unsafe.Offsetof(provider.SendWR{}.CompareAdd)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.CompareAdd) - unsafe.Offsetof(SendWR{}.CompareAdd)]byte
	_ [unsafe.Offsetof(SendWR{}.Swap) - unsafe.Offsetof(provider.SendWR{}.Swap)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.Swap) - unsafe.Offsetof(SendWR{}.Swap)]byte
	_ [unsafe.Offsetof(SendWR{}.AH) - unsafe.Offsetof(provider.SendWR{}.AH)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.AH) - unsafe.Offsetof(SendWR{}.AH)]byte
	_ [unsafe.Offsetof(AH{}.drv)]byte // 0: an array of no bytes
	_ [unsafe.Offsetof(SendWR{}.RemoteQPN) - unsafe.Offsetof(provider.SendWR{}.RemoteQPN)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.RemoteQPN) - unsafe.Offsetof(SendWR{}.RemoteQPN)]byte
	_ [unsafe.Offsetof(SendWR{}.RemoteQKey) - unsafe.Offsetof(provider.SendWR{}.RemoteQKey)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.RemoteQKey) - unsafe.Offsetof(SendWR{}.RemoteQKey)]byte
)

// sendWR is wr as the providers read it.
func sendWR(wr *SendWR) *provider.SendWR { return (*provider.SendWR)(unsafe.Pointer(wr)) }

// sendWRs is a send list as the providers read it.
func sendWRs(wrs []SendWR) []provider.SendWR {
	return unsafe.Slice((*provider.SendWR)(unsafe.Pointer(unsafe.SliceData(wrs))), len(wrs))
}

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
	if r, ok := cq.drv.(*rxe.CQState); ok && len(cq.pending) == 0 {
		if !r.Refresh() {
			cq.mu.Unlock()
			return 0, nil
		}
		n := r.Take(rxe.WCs(wcs))
		mmio.StoreRelease32(r.IndexStore())
		cq.mu.Unlock()
		return n, nil
	}
	// The same on mlx5, with no SRQ to complete (its lock is the slow
	// path's). The decoder reads the entry within the ring and the
	// request IDs at masked indexes. An empty CQ skips the consumer-index
	// store, which would write the value the last poll wrote.
	if m, ok := cq.drv.(*mlx5.CQState); ok && len(cq.pending) == 0 && !m.SRQs {
		if m.Q.Empty() {
			cq.mu.Unlock()
			return 0, nil
		}
		n, err := m.Q.Poll(mlx5.WCs(wcs))
		cq.mu.Unlock()
		if err != nil {
			return n, &OpError{Op: "poll_cq", Err: mlx5.PollError(err)}
		}
		return n, nil
	}
	return cq.pollSlow(wcs)
}

// pollSlow is Poll for the other cases: completions pulled aside by
// QP.Close, an mlx5 CQ with SRQ completions, the other providers, a closed
// CQ. It is called with cq.mu held and releases it.
func (cq *CQ) pollSlow(wcs []WC) (int, error) {
	defer cq.mu.Unlock()
	if cq.drv == nil {
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
		m, err := cq.drv.Poll(wcs[n:])
		if err != nil {
			return n + m, &OpError{Op: "poll_cq", Err: err}
		}
		n += m
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
	if cq.drv == nil {
		return false
	}
	cq.drv.Pull(&cq.pending)
	return true
}

// ReqNotify arms the CQ: the next completion (with solicitedOnly, the next
// solicited receive or any failed one) sends one notification to the CQ's
// completion channel. rxe arms with the write() command REQ_NOTIFY_CQ (it
// has no user-mapped arm flag, docs/abi.md §3.10), mlx5 and siw in user
// space (provider.CQ.Arm). It allocates nothing.
//
// rdma-core: ibv_req_notify_cq.
func (cq *CQ) ReqNotify(solicitedOnly bool) error {
	const op = "req_notify_cq"
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.drv == nil {
		return cq.unusable(op)
	}
	if cq.ch == nil {
		return &OpError{Op: op, Err: fmt.Errorf("the CQ has no completion channel to notify: create it with CQInit.Channel")}
	}
	// Set before the kernel can raise the event, so that reading it always
	// clears the flag.
	cq.armed.Store(true)
	err := cq.drv.Arm(solicitedOnly)
	if err != nil {
		cq.armed.Store(false)
	}
	return err
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
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.drv == nil {
		return cq.unusable(op)
	}
	r, ok := cq.drv.(provider.CQResizer)
	if !ok {
		c := cq.ctx
		return &OpError{Op: op, Err: fmt.Errorf("resizing a CQ of %s (driver %v) is not implemented: create a larger CQ: %w", c.dev.Name, c.dev.DriverID, ErrNotSupported)}
	}
	lost, err := r.Resize(cmdDevice{cq.ctx}, op, cq.handle, n)
	if lost {
		// The kernel has switched rings; without the new one the CQ is
		// unusable.
		cq.drv = nil
		cq.broken = true
		return &OpError{Op: op, Err: fmt.Errorf("the CQ was resized but its new ring could not be mapped, so it is no longer usable: close it: %w", providerError(op, err))}
	}
	if err != nil {
		return providerError(op, err)
	}
	cq.depth.Store(int32(cq.drv.Depth()))
	return nil
}

// pendingNow returns the number of work requests of the send and receive
// queues that the CQs have not completed yet. The caller holds both ring
// locks, or is Close, which calls it without them once posting is
// stopped. A closed QP has nothing outstanding.
func (qp *QP) pendingNow() (send, recv int) {
	if qp.drv == nil {
		return 0, 0
	}
	return qp.drv.Outstanding()
}

// usesLKeyLocked is usesLKey; the caller holds both ring locks. A closed
// QP has no rings left and uses nothing.
func (qp *QP) usesLKeyLocked(lkey uint32) (used bool, send, recv int) {
	if qp.drv == nil {
		return false, 0, 0
	}
	return qp.drv.UsesLKey(lkey)
}

// unmap releases the provider's QP: detached from its CQs, its rings
// unmapped and its doorbell's slot freed (the page of slots goes with its
// last slot), after DESTROY_QP, as rdma-core unmaps after it: the kernel
// keeps the queue memory until the last mapping goes.
func (qp *QP) unmap() {
	if qp.drv != nil {
		qp.providerRelease()
		qp.drv = nil
	}
}

// gone reports whether the SRQ is closed (or lost its ring). The caller
// holds mu.
func (srq *SRQ) gone() bool { return srq.drv == nil }

// MaxWR returns the number of receive work requests the ring holds.
func (srq *SRQ) MaxWR() int {
	srq.mu.Lock()
	defer srq.mu.Unlock()
	if srq.drv == nil {
		return 0
	}
	return srq.drv.MaxWR()
}

// MaxSGE returns the scatter/gather entries per work request.
func (srq *SRQ) MaxSGE() int {
	srq.mu.Lock()
	defer srq.mu.Unlock()
	if srq.drv == nil {
		return 0
	}
	return srq.drv.MaxSGE()
}

// PostRecv posts receive work requests, all of them or none (see
// QP.PostRecv). It allocates nothing.
//
// rdma-core: ibv_post_srq_recv.
func (srq *SRQ) PostRecv(wrs []RecvWR) error {
	const op = "post_srq_recv"
	srq.mu.Lock()
	defer srq.mu.Unlock()
	if srq.gone() {
		return closedErr(op)
	}
	if len(wrs) == 0 {
		return nil
	}
	// One receive of one SGE on rxe, which no check can refuse, written
	// out as QP.PostRecv's; a list, or a full ring, takes the provider's
	// PostRecv, which reports it.
	if r, ok := srq.drv.(*rxe.SRQState); ok {
		if q := r.RQ; len(wrs) == 1 && len(wrs[0].SGEs) == 1 && q.MaxSGE() >= 1 && !q.Full() && srq.keys.has(wrs[0].SGEs[0].LKey) {
			rxe.EncodeRecvOne(q.Slot(), wrs[0].ID, wrs[0].SGEs[0])
			q.Publish()
			return nil
		}
	}
	srq.trackRecvs(wrs)
	return srq.providerPostRecv(op, wrs)
}

// outstanding returns the number of posted receives not consumed yet.
func (srq *SRQ) outstanding() int {
	srq.mu.Lock()
	defer srq.mu.Unlock()
	if srq.drv == nil {
		return 0
	}
	n, _ := srq.drv.Posted(0)
	return n
}

func (srq *SRQ) usesLKeyLocked(lkey uint32) (used bool, n int) {
	if srq.drv == nil {
		return false, 0
	}
	n, used = srq.drv.Posted(lkey)
	return used, n
}

// Resize changes the number of work requests the SRQ holds (MODIFY_SRQ with
// IB_SRQ_MAX_WR). The kernel copies the posted receives into a new ring,
// which replaces the mapping (docs/abi.md §3.11). rxe implements it
// (provider.SRQResizer); on the other devices it fails with
// ErrNotSupported.
//
// rdma-core: ibv_modify_srq with IBV_SRQ_MAX_WR.
func (srq *SRQ) Resize(maxWR int) error {
	const op = "modify_srq"
	if maxWR < 1 {
		return &OpError{Op: op, Err: fmt.Errorf("max_wr %d: an SRQ holds at least one work request", maxWR)}
	}
	if err := srq.ctx.checkSRQSize(maxWR, 0); err != nil {
		return &OpError{Op: op, Err: err}
	}
	srq.mu.Lock()
	defer srq.mu.Unlock()
	if srq.gone() {
		return closedErr(op)
	}
	r, ok := srq.drv.(provider.SRQResizer)
	if !ok {
		c := srq.ctx
		return &OpError{Op: op, Err: fmt.Errorf("resizing an SRQ of %s (driver %v) is not implemented: create a larger SRQ: %w", c.dev.Name, c.dev.DriverID, ErrNotSupported)}
	}
	lost, err := r.Resize(cmdDevice{srq.ctx}, op, srq.handle, maxWR)
	if lost {
		srq.drv = nil
		return &OpError{Op: op, Err: fmt.Errorf("the SRQ was resized but its new ring could not be mapped; it is no longer usable: close it: %w", providerError(op, err))}
	}
	if err != nil {
		return providerError(op, err)
	}
	return nil
}

// srqModifyData is the driver input MODIFY_SRQ takes on the device, in
// zero bytes appended to the core command (rxe: provider.ModifySRQData),
// none on mlx5 and siw.
func (c *Device) srqModifyData() int {
	if d, ok := c.drv.(provider.ModifySRQData); ok {
		return d.ModifySRQData()
	}
	return 0
}

// PostSend posts the send work requests of wrs, all of them or none: each
// is validated as rdma-core's rxe provider does (opcode for the QP type,
// SGE count, inline length summed in 64 bits, atomic alignment and length,
// UD address), and the queue must have room for all, before the first is
// written to the send ring. Then it rings the doorbell once (write()
// command POST_SEND with wr_count 0, the only system call of the data
// path). It allocates nothing. wrs and their SGE lists must not change
// while the call runs: it reads them once to check and again to write.
//
// A refused request gives a *PostError. A QP that is not yet in RTS gives
// ErrQPState. A send posted on a QP in the error state completes with
// WCFlushError, except on siw, which completes nothing posted in that
// state: there the post is refused with ErrQPState (docs/siw.md §8).
//
// rdma-core: ibv_post_send.
func (qp *QP) PostSend(wrs []SendWR) error {
	const op = "post_send"
	qp.sendMu.Lock()
	// No defer, which would cost every post its set-up: stageSend checks
	// the list before it writes and cannot panic on it unless the caller
	// changes wrs while the call runs (as PostRecv). rxe first: stageSend
	// writes the list into the ring, and the doorbell (a system call) is
	// rung after the unlock, as rdma-core's rxe_post_send rings it
	// (providers/rxe/rxe.c: post_send_db after the sq lock is released),
	// when this call moved the producer index. The ring orders the
	// requests of concurrent posts; a doorbell only makes the kernel run
	// what the ring holds (docs/abi.md §3.7), so which poster rings first
	// does not matter. The common list of another provider (stageSend's
	// fast path there) is written here, where the provider rings the
	// doorbell: a call less per post; plainSends has checked it, so the
	// provider checks only the room (on mlx5, called directly:
	// mlx5.SQ.PostPlain; its doorbell is a device register, not a system
	// call).
	var err error
	if r, ok := qp.drv.(*rxe.QPState); ok {
		before := r.SQ.Next()
		err = qp.stageSend(op, wrs)
		owed := r.SQ.Next() != before
		if owed {
			qp.doorbells.Add(1) // Close waits for it before it frees the doorbell
		}
		qp.sendMu.Unlock()
		if owed {
			if derr := r.Doorbell(); derr != nil {
				err = qp.sendError(op, wrs, len(wrs), derr)
			}
			qp.doorbells.Add(-1)
		}
		return err
	} else if d := qp.drv; d != nil && !qp.closed && len(wrs) > 0 && QPState(qp.state.Load()) == QPStateRTS && qp.plainSends(wrs) == len(wrs) {
		var i int
		var perr error
		if m, ok := d.(*mlx5.QPState); ok {
			i, perr = m.SQ.PostPlain(mlx5.SendWRs(sendWRs(wrs)))
		} else {
			i, perr = d.PostSend(sendWRs(wrs), true)
		}
		if perr != nil {
			err = qp.sendError(op, wrs, i, perr)
		}
	} else {
		err = qp.stageSend(op, wrs)
	}
	qp.sendMu.Unlock()
	return err
}

// stageSend is PostSend without rxe's doorbell: it checks the QP,
// validates every request, writes them into the send ring and publishes
// the producer index. The caller holds sendMu. The common list (an open
// QP in RTS, requests plainSends passes) of an rxe QP with room for it is
// written here, writeSends' work written out: a call less per post
// (docs/perf-history.md, "rxe post and poll: what each change bought"
// item 32). Every other list goes through writeSends. On rxe the caller
// rings the doorbell (rxe.QPState.Doorbell) after releasing sendMu; every
// other provider rings its own.
func (qp *QP) stageSend(op string, wrs []SendWR) error {
	if qp.closed || len(wrs) == 0 || QPState(qp.state.Load()) < QPStateRTS || qp.plainSends(wrs) < len(wrs) {
		return qp.stageSendSlow(op, wrs)
	}
	r, ok := qp.drv.(*rxe.QPState)
	if !ok || r.SQ.Free() < len(wrs) { // a full ring: the provider reports it
		return qp.writeSends(op, wrs)
	}
	sq := &r.SQ
	for i := range wrs {
		rxe.EncodeSend(sq.Slot(), sendWR(&wrs[i]), wrs[i].ahNum())
		sq.Stage()
	}
	sq.Commit() // one producer_index store for the batch
	return nil
}

// writeSends writes checked requests through the provider, which encodes
// them and, except on rxe, rings the doorbell (mlx5: qp.c
// _mlx5_post_send, post_send_db; siw: its POST_SEND, under the lock as
// rdma-core's siw_post_send rings it); rxe's is PostSend's, after the
// unlock. The CQ's lock is not taken, as polls share only what the
// provider orders.
func (qp *QP) writeSends(op string, wrs []SendWR) error {
	if qp.postRefusedInError() {
		return qp.errPostInError(op, wrs[0].ID)
	}
	if r, ok := qp.drv.(*rxe.QPState); ok {
		if i, err := r.Write(sendWRs(wrs)); err != nil {
			return qp.sendError(op, wrs, i, err)
		}
		return nil
	}
	if i, err := qp.drv.PostSend(sendWRs(wrs), false); err != nil {
		return qp.sendError(op, wrs, i, err)
	}
	return nil
}

// PostRecv posts the receive work requests of wrs, all of them or none
// (SGE count and total length are checked, and the queue must have room for
// all, before anything is written). Receives need no system call: the
// kernel takes them from the ring when messages arrive. It allocates
// nothing. As with PostSend, wrs must not change while the call runs. A
// QP with an SRQ has no receive queue: post to the SRQ.
//
// rdma-core: ibv_post_recv.
func (qp *QP) PostRecv(wrs []RecvWR) error {
	const op = "post_recv"
	qp.recvMu.Lock()
	// The common case first: an open QP with a receive queue of its own,
	// out of RESET (rdma-core refuses receives in RESET; the kernel
	// wipes the ring when a QP is reset, kernel: sw/rxe/rxe_qp.c
	// rxe_qp_reset). No defer, which would cost every post its set-up:
	// the queues check the list before they write and cannot panic on it
	// unless the caller changes wrs while the call runs. One receive of at
	// most one SGE within the limit (on rxe: of one SGE), which no check
	// can refuse (one SGE's length is one u32), goes straight to the queue
	// on rxe, then on mlx5: the providers' PostRecv's first step written
	// out here, a call less per receive (docs/perf-history.md, "mlx5 post
	// and poll: the rounds", fifth round). An rxe list is posted by the
	// concrete rxe.QPState.PostRecv, a direct call.
	if !qp.closed && len(wrs) > 0 && QPState(qp.state.Load()) != QPStateReset {
		if r, ok := qp.drv.(*rxe.QPState); ok && r.HasRQ {
			q := &r.RQ
			var err error
			// The lkey recorded by an earlier post (mrusers.go), else
			// trackRecvs records it.
			if len(wrs) == 1 && len(wrs[0].SGEs) == 1 && q.MaxSGE() >= 1 && !q.Full() && qp.recvKeys.has(wrs[0].SGEs[0].LKey) {
				rxe.EncodeRecvOne(q.Slot(), wrs[0].ID, wrs[0].SGEs[0])
				q.Publish()
			} else { // a full ring too: PostRecvs reports it
				qp.trackRecvs(wrs)
				if i, perr := r.PostRecv(wrs); perr != nil {
					err = providerPostError(op, i, wrs[i].ID, len(wrs), q.Capacity(), perr)
				}
			}
			qp.recvMu.Unlock()
			return err
		}
		if m, ok := qp.drv.(*mlx5.QPState); ok && m.RQ != nil {
			var err error
			if len(wrs) == 1 && len(wrs[0].SGEs) <= 1 && len(wrs[0].SGEs) <= m.RQ.MaxSGE() &&
				(len(wrs[0].SGEs) == 0 || qp.recvKeys.has(wrs[0].SGEs[0].LKey)) {
				if i, perr := m.RQ.Post(wrs); perr != nil {
					err = providerPostError(op, i, wrs[i].ID, len(wrs), m.RQ.Config().MaxPost, perr)
				}
			} else {
				qp.trackRecvs(wrs)
				err = qp.providerPostRecv(op, wrs)
			}
			qp.recvMu.Unlock()
			return err
		}
	}
	return qp.postRecvSlow(op, wrs)
}

// postRecvSlow is PostRecv for every other case: a closed QP, one with an
// SRQ or no receive queue, an empty list, RESET. It is called with recvMu
// held and releases it.
func (qp *QP) postRecvSlow(op string, wrs []RecvWR) error {
	defer qp.recvMu.Unlock()
	if qp.closed {
		return closedErr(op)
	}
	if qp.srq != nil {
		return &OpError{Op: op, Err: fmt.Errorf("QP %#x receives from an SRQ: post receives with SRQ.PostRecv: %w", qp.qpn, unix.EINVAL)}
	}
	if len(wrs) == 0 {
		return nil
	}
	if st := QPState(qp.state.Load()); st == QPStateReset {
		return &PostError{Op: op, ID: wrs[0].ID, Err: fmt.Errorf("%w (QP %#x is in RESET)", ErrQPState, qp.qpn)}
	}
	if qp.postRefusedInError() {
		return qp.errPostInError(op, wrs[0].ID)
	}
	qp.trackRecvs(wrs)
	return qp.providerPostRecv(op, wrs)
}

// create issues CREATE_CQ through the provider (rxe maps the ring the
// kernel made, mlx5 allocates its own). On an error nothing is left
// created.
func (cq *CQ) create(op string, req *abi.UverbsCreateCQ, depth int) error {
	c := cq.ctx
	d, h, err := c.drv.CreateCQ(cmdDevice{c}, op, *req, depth)
	if err != nil {
		return providerError(op, err)
	}
	cq.handle, cq.drv = h, d
	_, cq.countsEvents = d.(provider.CQEvents)
	cq.depth.Store(int32(d.Depth()))
	return nil
}

// release frees the CQ's ring, after DESTROY_CQ; the caller holds mu.
func (cq *CQ) release() {
	if cq.drv != nil {
		cq.drv.Release()
	}
	cq.drv = nil
}

// providerEvent tells the provider that a completion event of the CQ was
// read: mlx5 counts it in the CQ's arm sequence (provider.CQEvents); the
// other providers have nothing to do, and their CQ is not locked for it.
func (cq *CQ) providerEvent() {
	if cq.countsEvents {
		cq.mu.Lock()
		if e, ok := cq.drv.(provider.CQEvents); ok {
			e.Event()
		}
		cq.mu.Unlock()
	}
}

// providerReset starts the queues over after a move to RESET: mlx5 keeps
// its own indices (provider.QP.Reset); the kernels of rxe and siw keep
// theirs. The caller holds both QP locks.
func (qp *QP) providerReset() {
	if qp.drv != nil {
		qp.drv.Reset(qp.sendCQ.locked, qp.recvCQ.locked)
	}
}

// openContext issues GET_CONTEXT with the driver data of the device's
// provider (mlx5 maps its UAR pages after it), or without any on a device
// whose driver has no data path here (controlOnly).
func (c *Device) openContext() error {
	c.kind = providers[c.dev.DriverID]
	open := c.kind.Open
	if open == nil {
		open = openControlOnly(c)
	}
	return c.getContext(open)
}

// closeProvider releases what the provider's context holds (mlx5: the UAR
// pages), after the descriptor is closed.
func (c *Device) closeProvider() {
	if c.drv != nil {
		c.drv.Close()
	}
}

// release unmaps the SRQ's ring, after DESTROY_SRQ; the caller holds mu.
func (srq *SRQ) release() {
	if srq.drv != nil {
		srq.drv.Release()
	}
	srq.drv = nil
}

// The providers, by driver, each registered once: its driver ABI version
// (a device of another is refused: checkDriverABI), its Open, whose
// context, made in GET_CONTEXT, creates its objects, which this package
// holds as provider.CQ, QP and SRQ values (CQ.drv, QP.drv, SRQ.drv) and
// calls under the locks their methods name, and what the driver cannot
// promise (provider.Driver). Adding one is a package implementing those
// interfaces and a line here (CONTRIBUTING.md, "Adding a provider").
var providers = map[DriverID]provider.Driver{
	DriverRXE:  rxe.Driver,
	DriverMLX5: mlx5.Driver,
	DriverSIW:  siw.Driver,
}

// controlOnly is the context of a device whose driver has no provider
// here: GET_CONTEXT without driver data, and the commands every driver
// takes without any (PD, MR, AH). It refuses CQs, QPs and SRQs, whose
// queues each driver lays out in its own format.
type controlOnly struct {
	name   string
	driver DriverID
}

// openControlOnly is the provider.Open of the device c without a provider.
func openControlOnly(c *Device) provider.Open {
	return func(dev provider.Device, op string, core *abi.UverbsGetContextResp) (provider.Context, error) {
		if err := provider.GetContext(dev, op, core); err != nil {
			return nil, err
		}
		return &controlOnly{name: c.dev.Name, driver: c.dev.DriverID}, nil
	}
}

func (c *controlOnly) noDataPath() error {
	return fmt.Errorf("device %s uses driver %v, but only the rxe (soft-RoCE), mlx5 and siw (soft-iWARP) data paths are implemented: %w", c.name, c.driver, ErrNotSupported)
}

func (c *controlOnly) CreateCQ(provider.Device, string, abi.UverbsCreateCQ, int) (provider.CQ, uint32, error) {
	return nil, 0, c.noDataPath()
}

func (c *controlOnly) CreateQP(provider.Device, string, abi.UverbsCreateQP, provider.QPParams) (provider.QP, uint32, uint32, error) {
	return nil, 0, 0, c.noDataPath()
}

func (c *controlOnly) CreateSRQ(provider.Device, string, abi.UverbsCreateSRQ, int, int) (provider.SRQ, uint32, uint32, error) {
	return nil, 0, 0, c.noDataPath()
}

// CreateAH issues the core command alone: the AH has only a handle.
func (c *controlOnly) CreateAH(dev provider.Device, op string, core abi.UverbsCreateAH, _ provider.AHParams) (provider.AH, uint32, error) {
	var resp abi.UverbsCreateAHResp
	if err := dev.Write(op, abi.IB_USER_VERBS_CMD_CREATE_AH, bytesOf(&core), bytesOf(&resp)); err != nil {
		return provider.AH{}, 0, err
	}
	return provider.AH{}, resp.AHHandle, nil
}

func (c *controlOnly) Close() {}

// cmdDevice is a Device as a provider issues its commands and maps its
// queues through it.
type cmdDevice struct{ c *Device }

func (d cmdDevice) Write(op string, cmd uint32, in, out []byte) error {
	if err := d.c.write(op, cmd, in, out); err != nil {
		return cmdError{err}
	}
	return nil
}

func (d cmdDevice) Mmap(op string, off int64, n int, what string) (*sys.Mapping, error) {
	c := d.c
	if err := c.lockCmd(op); err != nil {
		return nil, cmdError{err}
	}
	defer c.mu.RUnlock()
	return sys.MmapShared(c.fd, off, n, what)
}

func (d cmdDevice) Name() string { return d.c.dev.Name }

func (d cmdDevice) Doorbells() *provider.Doorbells { return &d.c.doorbells }

// Doorbell writes a prebuilt command under the Device's command lock, as
// ringDoorbell does rxe's; it allocates nothing but an error.
func (d cmdDevice) Doorbell(op string, cmd unsafe.Pointer, n uintptr) error {
	c := d.c
	if err := c.lockCmd(op); err != nil {
		return err
	}
	err := sys.WriteDoorbell(c.fd, op, cmd, n)
	c.mu.RUnlock()
	return err
}

// cmdError is an error of a command a provider issued: it reaches the
// caller as it is (an *OpError naming the command), while the provider's
// own errors are wrapped in one naming the verb (providerError).
type cmdError struct{ err error }

func (e cmdError) Error() string { return e.err.Error() }
func (e cmdError) Unwrap() error { return e.err }

// A provider's create that found the Device's doorbells closed
// (provider.ErrDoorbellsClosed: the Device is closing) fails as every verb
// on a closed Device does, matching ErrClosed.
func providerError(op string, err error) error {
	var ce cmdError
	if errors.As(err, &ce) {
		return ce.err
	}
	if errors.Is(err, provider.ErrDoorbellsClosed) {
		return closedErr(op)
	}
	return &OpError{Op: op, Err: err}
}

// getContext runs GET_CONTEXT with the provider's driver data (open) and
// takes the async event file and the number of completion vectors.
func (c *Device) getContext(open provider.Open) error {
	const op = "get_context"
	// AsyncFD stays ^0 unless the command succeeded (provider.Open).
	core := abi.UverbsGetContextResp{AsyncFD: ^uint32(0)}
	drv, err := open(cmdDevice{c}, op, &core)
	if err != nil {
		if core.AsyncFD != ^uint32(0) {
			unix.Close(int(core.AsyncFD)) // the command ran: its descriptor is ours
		}
		return providerError(op, err)
	}
	ev, err := sys.NewEventFile(int(core.AsyncFD), "uverbs async events "+c.dev.Name)
	if err != nil {
		drv.Close()
		return &OpError{Op: op, Err: err}
	}
	c.async = ev
	c.numCompVectors = int(core.NumCompVectors)
	c.drv = drv
	return nil
}

// locked runs f under the CQ's lock.
func (cq *CQ) locked(f func()) {
	cq.mu.Lock()
	f()
	cq.mu.Unlock()
}

// attach makes the CQ complete qp's work requests (and srq's receives).
func (cq *CQ) attach(qp provider.QP, srq provider.SRQ) {
	cq.mu.Lock()
	if cq.drv != nil {
		cq.drv.Attach(qp, srq)
	}
	cq.mu.Unlock()
}

func (cq *CQ) detach(qp provider.QP) {
	cq.mu.Lock()
	if cq.drv != nil {
		cq.drv.Detach(qp)
	}
	cq.mu.Unlock()
}

// create issues CREATE_QP through the provider (rxe maps the rings the
// kernel made, mlx5 allocates its own) and attaches the QP to its CQs. On
// an error nothing is left created.
func (qp *QP) create(op string, req *abi.UverbsCreateQP, init *QPInit) error {
	c := qp.ctx
	p := provider.QPParams{
		Type:      provider.QPType(init.Type),
		MaxSendWR: init.Cap.MaxSendWR, MaxSendSGE: init.Cap.MaxSendSGE, MaxInline: init.Cap.MaxInline,
		MaxRecvWR: init.Cap.MaxRecvWR, MaxRecvSGE: init.Cap.MaxRecvSGE,
		SignalAll: init.SignalAll,
	}
	if init.SRQ != nil {
		init.SRQ.mu.Lock()
		p.SRQ = init.SRQ.drv
		init.SRQ.mu.Unlock()
	}
	if a := c.deviceLimits(); a != nil {
		p.Atomics = a.AtomicCap != AtomicNone
	}
	d, h, qpn, err := c.drv.CreateQP(cmdDevice{c}, op, *req, p)
	if err != nil {
		return providerError(op, err)
	}
	qp.handle, qp.qpn = h, qpn
	qp.attachProvider(d, init)
	return nil
}

// attachProvider takes a provider QP: its capabilities, and its queues
// attached to the CQs (the SRQ's to the receive CQ).
func (qp *QP) attachProvider(d provider.QP, init *QPInit) {
	caps := d.Caps()
	qp.lim = provider.SendLimits{QPType: provider.QPType(qp.typ), MaxSGE: caps.MaxSendSGE, MaxInline: caps.MaxInline}
	qp.cap = QPCap(caps)
	var srq provider.SRQ
	if init.SRQ != nil {
		init.SRQ.mu.Lock()
		srq = init.SRQ.drv
		init.SRQ.mu.Unlock()
	}
	init.RecvCQ.attach(d, srq) // first: the SRQ's (provider.CQ.Attach)
	if init.SendCQ != init.RecvCQ {
		init.SendCQ.attach(d, nil)
	}
	qp.drv = d
}

// sendError is the error of a provider's PostSend that refused request i
// of wrs, or (i == len(wrs)) posted them all and had its doorbell refused:
// not a PostError, since everything was posted; when siw moved the QP to
// ERROR over it, the record of the state follows.
func (qp *QP) sendError(op string, wrs []SendWR, i int, err error) error {
	if i == len(wrs) { // all posted, the doorbell refused
		if errors.Is(err, siw.ErrMovedToError) {
			qp.state.Store(uint32(QPStateError))
		}
		return fmt.Errorf("%s: %w", op, err)
	}
	return providerPostError(op, i, wrs[i].ID, len(wrs), qp.drv.SendQueueSize(), err)
}

// providerPostError is the error of a post the provider refused at
// request i (ID id) of n. A full queue (a provider may check room request
// by request) says how much room there was, unless the provider's error
// says more (siw: too many unsignaled sends); a refusal is the provider's
// error, which matches ErrInvalidWR and the error of the same check on any
// device (errors.Is).
func providerPostError(op string, i int, id uint64, n, maxPost int, err error) error {
	if errors.Is(err, rdma.ErrQueueFull) && errors.Unwrap(err) == nil { // the plain sentinel: the ring is full
		err = fmt.Errorf("%w: %d work requests, room for %d of %d", ErrQueueFull, n, i, maxPost)
	}
	return &PostError{Op: op, Index: i, ID: id, Err: err}
}

// providerPostRecv posts receives on the QP's receive queue through the
// provider. The caller holds QP.recvMu; as for a send (writeSends), the
// CQ's lock is not taken.
func (qp *QP) providerPostRecv(op string, wrs []RecvWR) error {
	d := qp.drv
	size := d.RecvQueueSize()
	if size == 0 { // created with MaxRecvWR 0
		return &PostError{Op: op, ID: wrs[0].ID, Err: fmt.Errorf("%w: the QP was created without a receive queue (MaxRecvWR 0)", ErrQueueFull)}
	}
	if i, err := d.PostRecv(wrs); err != nil {
		return providerPostError(op, i, wrs[i].ID, len(wrs), size, err)
	}
	return nil
}

// flushesOnDestroy reports whether the QP's provider completes what is
// left in its rings after DESTROY_QP (provider.FlushOnDestroy: siw), so
// that Close does not wait for the kernel.
func (qp *QP) flushesOnDestroy() bool {
	_, ok := qp.drv.(provider.FlushOnDestroy)
	return ok
}

// flushRings, after DESTROY_QP and the CQs' pull, has such a provider
// complete what is left in the rings with WCFlushError and puts the
// completions on the CQs' pending lists; it says so if requests still
// remain outstanding (their completions were lost: the CQ was full).
func (qp *QP) flushRings() error {
	f, ok := qp.drv.(provider.FlushOnDestroy)
	if !ok {
		return nil
	}
	var send, recv []WC
	f.FlushRings(&send, &recv)
	qp.sendCQ.addPending(send)
	qp.recvCQ.addPending(recv)
	if s, r := qp.pendingNow(); s+r > 0 {
		return &OpError{Op: "destroy_qp", Err: fmt.Errorf("%d send and %d receive work requests were taken by the kernel and their completions lost (a full CQ drops them: make the CQ as deep as the work that can be outstanding)", s, r)}
	}
	return nil
}

// addPending appends wcs to the completions Poll returns first.
func (cq *CQ) addPending(wcs []WC) {
	if len(wcs) == 0 {
		return
	}
	cq.mu.Lock()
	cq.pending = append(cq.pending, wcs...)
	cq.mu.Unlock()
}

// providerRelease detaches a provider QP from its CQs and frees it; after
// DESTROY_QP.
func (qp *QP) providerRelease() {
	qp.sendCQ.detach(qp.drv)
	if qp.recvCQ != qp.sendCQ {
		qp.recvCQ.detach(qp.drv)
	}
	qp.drv.Release()
}

// create issues CREATE_SRQ through the provider. On an error nothing is
// left created.
func (srq *SRQ) create(op string, req *abi.UverbsCreateSRQ, init SRQInit) error {
	c := srq.ctx
	d, h, srqn, err := c.drv.CreateSRQ(cmdDevice{c}, op, *req, init.MaxWR, init.MaxSGE)
	if err != nil {
		return providerError(op, err)
	}
	srq.handle, srq.srqn, srq.drv = h, srqn, d
	return nil
}

// providerPostRecv posts receives through the provider. The caller holds
// SRQ.mu.
func (srq *SRQ) providerPostRecv(op string, wrs []RecvWR) error {
	d := srq.drv
	if i, err := d.PostRecv(wrs); err != nil {
		return providerPostError(op, i, wrs[i].ID, len(wrs), d.QueueSize(), err)
	}
	return nil
}

// create issues CREATE_AH through the provider and fills what the
// provider's UD sends read (AH.drv: rxe's AH number, mlx5's address
// vector). A provider that builds the AH from the port's link
// (provider.AHPortInfo: mlx5) is told it: the link layer and GRH
// requirement, and on Ethernet for a global AH the source GID's type, as
// libmlx5's mlx5_create_ah reads them; the others are spared the queries
// and the kernel judges the attributes. On an error nothing is left
// created.
func (ah *AH) create(op string, c *Device, req *abi.UverbsCreateAH) error {
	a := &ah.attr
	p := provider.AHParams{
		DLID: a.DLID, SL: a.SL, SrcPathBits: a.SrcPathBits, StaticRate: a.StaticRate, IsGlobal: a.global(),
		DGID: a.DGID, FlowLabel: a.FlowLabel, SGIDIndex: uint8(a.SGIDIndex), HopLimit: a.HopLimit, TrafficClass: a.TrafficClass,
	}
	if _, ok := c.drv.(provider.AHPortInfo); ok {
		if err := c.ahPortInfo(a, &p); err != nil {
			return &OpError{Op: op, Err: err}
		}
	}
	d, h, err := c.drv.CreateAH(cmdDevice{c}, op, *req, p)
	if err != nil {
		return providerError(op, err)
	}
	ah.handle, ah.drv = h, d
	return nil
}

// ahPortInfo fills p's port link for a provider.AHPortInfo provider: what
// QUERY_PORT says of the AH's port, and on Ethernet for a global AH the
// type of the source GID. Its errors say what was being queried.
func (c *Device) ahPortInfo(a *AHAttr, p *provider.AHParams) error {
	pa, err := c.QueryPort(a.Port)
	if err != nil {
		return fmt.Errorf("querying port %d for the address vector: %w", a.Port, err)
	}
	p.Ethernet, p.GRHRequired = pa.LinkLayer == LinkLayerEthernet, pa.GRHRequired()
	if p.Ethernet && a.global() {
		g, err := c.QueryGID(a.Port, a.SGIDIndex)
		if err != nil {
			return fmt.Errorf("querying the type of source GID %d of port %d for the address vector: %w", a.SGIDIndex, a.Port, err)
		}
		p.RoCEv2 = g.Type == GIDTypeRoCEv2
	}
	return nil
}

// regMRData is the driver data REG_MR takes on the device: zeroed input
// appended to the core command and room for the driver's response (siw:
// provider.RegMRData), none on rxe and mlx5.
func (c *Device) regMRData() (in, out int) {
	if d, ok := c.drv.(provider.RegMRData); ok {
		return d.RegMRData()
	}
	return 0, 0
}

// postRefusedInError reports whether posting to the QP must be refused:
// it is in the error state on a driver whose error state is final
// (provider.Driver.ErrorIsFinal: siw neither flushes work posted then nor,
// after some moves to it, what its send ring holds; docs/siw.md §8), so
// such work would never complete, against the promise that posted work
// always comes back as a completion. It is called on the slow paths only:
// the fast ones take a QP in RTS.
func (qp *QP) postRefusedInError() bool { return qp.inFinalError() }

// inFinalError reports whether the QP is in the error state on a driver
// that never moves a QP out of it (provider.Driver.ErrorIsFinal).
func (qp *QP) inFinalError() bool {
	return qp.ctx.kind.ErrorIsFinal && QPState(qp.state.Load()) == QPStateError
}

// errPostInError is the error of a post refused by postRefusedInError.
func (qp *QP) errPostInError(op string, id uint64) error {
	return &PostError{Op: op, ID: id, Err: fmt.Errorf("%w: QP %#x of %s is in the error state, and %s completes nothing posted then (it flushes only when the QP changes state): poll the completions and close the QP", ErrQPState, qp.qpn, qp.ctx.dev.Name, qp.ctx.dev.DriverID)}
}

// errLeaveFinalError is the error of a move out of a final error state
// (inFinalError), which the kernel would ignore.
func (qp *QP) errLeaveFinalError(op string, to QPState) error {
	return &OpError{Op: op, Err: fmt.Errorf("QP %#x of %s is in the error state and %s keeps it there: it ignores every move out of ERROR (kernel: siw_qp.c siw_qp_modify), so %v would be recorded on a dead QP; create a new QP: %w",
		qp.qpn, qp.ctx.dev.Name, qp.ctx.dev.DriverID, to, ErrQPState)}
}

// queriedState is the state QUERY_QP reported, as the QP's record takes
// it. A driver whose QUERY_QP may omit the state
// (provider.Driver.QueryMayOmitState: siw in kernel 6.1 leaves qp_state 0,
// RESET; siw_verbs.c siw_query_qp, 6.12 fills it) has a RESET from the
// kernel keep the record, which is RESET itself when the QP is (the kernel
// moves a siw QP to RTS, ERROR or CLOSING, never to RESET, by itself).
func (qp *QP) queriedState(s QPState) QPState {
	if s == QPStateReset && qp.ctx.kind.QueryMayOmitState {
		return QPState(qp.state.Load())
	}
	return s
}
