package uverbs

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/sys"
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
// What callers pass and get back is the providers' shared vocabulary,
// uverbs/internal/provider: SGE, RecvWR, WC and their values are aliases of
// its types, and SendWR has provider.SendWR's layout with a *AH in place of
// a *provider.AH (an AH starts with one), so this file converts a send list
// for the providers without a copy (sendWR, sendWRs; docs/architecture.md
// §3). The driver packages import provider and nothing of each other or of
// uverbs.
//
// This file is the dispatch: every path that differs by provider is here
// (GET_CONTEXT, create, post, poll, arm, resize, reset, the lkey scans of
// mrusers.go, release), and the rest of the package is the same for every
// device. A driver listed in providers (mlx5, siw) has a provider.Context, made
// in GET_CONTEXT, which creates its CQs, QPs, SRQs and AHs; each object
// holds its provider's object (CQ.drv, QP.drv, SRQ.drv: provider.CQ, QP,
// SRQ), chosen once when it is created, and calls it under the locks the
// interfaces name. rxe's path is written out here instead: its rings are
// embedded in the objects (the types below), and post and poll test them
// first, so rxe pays a predictable branch and nothing else. The common post
// and poll of mlx5 are written out too, behind a type assertion to the
// concrete type (a call less per post). Other drivers are refused with
// ErrNotSupported when such an object is created (requireDataPath).

// The provider's state in a Device, and rxe's in each object, embedded so
// that its fields read as the object's own; another provider's object is
// beside it (drv).

// deviceProvider is what GET_CONTEXT gave the provider of a Device.
type deviceProvider struct {
	// drv is the provider's context on a device of a driver in providers
	// (mlx5), nil on rxe.
	drv provider.Context
}

// cqRing is an rxe CQ's ring, mapped from the kernel's.
type cqRing struct {
	ring *sys.Mapping
	q    *rxe.CQ
}

// qpSendRing is an rxe QP's send ring and its doorbell, the prebuilt
// POST_SEND command.
type qpSendRing struct {
	sq    *rxe.SQ
	sqMap *sys.Mapping
	db    *provider.PostSend // in dbMap
	dbMap *sys.Mapping       // off-heap page holding the doorbell command and its response
}

// qpRecvRing is an rxe QP's receive ring.
type qpRecvRing struct {
	rq    *rxe.RQ
	rqMap *sys.Mapping
}

// srqRing is an rxe SRQ's ring.
type srqRing struct {
	ring *sys.Mapping
	rq   *rxe.RQ
}

// requireDataPath fails with ErrNotSupported unless the device's driver has
// a data path here (rxe, or a driver of the providers table with its
// context open: mlx5, siw).
func (c *Device) requireDataPath(op string) error {
	if c == nil {
		return closedErr(op)
	}
	if c.dev.DriverID != DriverRXE && c.drv == nil {
		return &OpError{Op: op, Err: fmt.Errorf("device %s uses driver %v, but only the rxe (soft-RoCE), mlx5 and siw (soft-iWARP) data paths are implemented: %w", c.dev.Name, c.dev.DriverID, ErrNotSupported)}
	}
	return nil
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
// QP.Close, an mlx5 CQ with SRQ completions, a closed CQ. It is called
// with cq.mu held and releases it.
func (cq *CQ) pollSlow(wcs []WC) (int, error) {
	defer cq.mu.Unlock()
	if cq.q == nil && cq.drv == nil {
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
		if cq.drv != nil {
			m, err := cq.drv.Poll(wcs[n:])
			if err != nil {
				return n + m, &OpError{Op: "poll_cq", Err: err}
			}
			return n + m, nil
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
	if cq.drv != nil {
		cq.drv.Pull(&cq.pending)
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
	if cq.q == nil && cq.drv == nil {
		return cq.unusable(op)
	}
	if cq.ch == nil {
		return &OpError{Op: op, Err: fmt.Errorf("the CQ has no completion channel to notify: create it with CQInit.Channel")}
	}
	cq.notify.req.SolicitedOnly = 0
	if solicitedOnly {
		cq.notify.req.SolicitedOnly = 1
	}
	if cq.drv != nil {
		// The provider arms in user space (mlx5: the arm word and the
		// UAR doorbell, docs/mlx5.md §5).
		cq.armed.Store(true)
		cq.drv.Arm(solicitedOnly)
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
	if cq.q == nil && cq.drv == nil {
		return cq.unusable(op)
	}
	if c := cq.ctx; c.drv != nil {
		return &OpError{Op: op, Err: fmt.Errorf("resizing a CQ of %s (driver %v) is not implemented: create a larger CQ: %w", c.dev.Name, c.dev.DriverID, ErrNotSupported)}
	}
	m, q, switched, err := rxe.ResizeCQ(cmdDevice{cq.ctx}, op, cq.handle, n)
	if !switched {
		return providerError(op, err)
	}
	old := cq.ring
	old.Unmap()
	if err != nil {
		// The kernel has switched rings; without the new one the CQ is
		// unusable.
		cq.ring, cq.q = nil, nil
		cq.broken = true
		return &OpError{Op: op, Err: fmt.Errorf("the CQ was resized but its new ring could not be mapped, so it is no longer usable: close it: %w", providerError(op, err))}
	}
	cq.ring, cq.q = m, q
	cq.depth.Store(int32(q.Capacity()))
	return nil
}

// ringDoorbell writes the prebuilt POST_SEND command (provider.PostSend). The
// caller holds sendMu; the Device's command lock keeps the descriptor open
// for the call.
func (qp *QP) ringDoorbell(op string) error {
	c := qp.ctx
	if err := c.lockCmd(op); err != nil {
		return err
	}
	err := sys.WriteDoorbell(c.fd, op, unsafe.Pointer(qp.db), provider.PostSendLen)
	c.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("the work requests were posted but the kernel refused the doorbell, so they may not run until the next one: %w", err)
	}
	return nil
}

// outstandingLocked returns the number of work requests in the send and
// receive rings that the kernel has not retired yet. The caller holds both
// ring locks.
func (qp *QP) outstandingLocked() (send, recv int) {
	if qp.drv != nil {
		return qp.drv.Outstanding()
	}
	if qp.sq != nil {
		send = qp.sq.Pending()
	}
	if qp.rq != nil {
		recv = qp.rq.Pending()
	}
	return send, recv
}

// usesLKeyLocked is usesLKey; the caller holds both ring locks. A closed
// QP has no rings left and uses nothing.
func (qp *QP) usesLKeyLocked(lkey uint32) (used bool, send, recv int) {
	if qp.drv != nil {
		return qp.drv.UsesLKey(lkey)
	}
	if qp.sq != nil {
		send = qp.sq.PendingNow()
		used = qp.sq.PendingUsesLKey(lkey)
	}
	if qp.rq != nil {
		recv = qp.rq.PendingNow()
		used = used || qp.rq.PendingUsesLKey(lkey)
	}
	return used, send, recv
}

// pendingNow loads the kernel's consumer indices; Close calls it without
// the ring locks once posting is stopped.
func (qp *QP) pendingNow() (send, recv int) {
	if qp.drv != nil {
		return qp.drv.Outstanding()
	}
	if qp.sq != nil {
		send = qp.sq.PendingNow()
	}
	if qp.rq != nil {
		recv = qp.rq.PendingNow()
	}
	return send, recv
}

// unmap releases the rings and the doorbell page (after DESTROY_QP, as
// rdma-core does: the kernel keeps the queue memory until the last mapping
// goes).
func (qp *QP) unmap() {
	if qp.drv != nil {
		qp.providerRelease()
		qp.drv = nil
	}
	qp.sq, qp.rq, qp.db = nil, nil, nil
	for _, m := range []*sys.Mapping{qp.sqMap, qp.rqMap, qp.dbMap} {
		if m != nil {
			m.Unmap()
		}
	}
	qp.sqMap, qp.rqMap, qp.dbMap = nil, nil, nil
}

// gone reports whether the SRQ is closed (or lost its ring). The caller
// holds mu.
func (srq *SRQ) gone() bool { return srq.rq == nil && srq.drv == nil }

// MaxWR returns the number of receive work requests the ring holds.
func (srq *SRQ) MaxWR() int {
	srq.mu.Lock()
	defer srq.mu.Unlock()
	if srq.drv != nil {
		return srq.drv.MaxWR()
	}
	if srq.rq == nil {
		return 0
	}
	return srq.rq.Capacity()
}

// MaxSGE returns the scatter/gather entries per work request.
func (srq *SRQ) MaxSGE() int {
	srq.mu.Lock()
	defer srq.mu.Unlock()
	if srq.drv != nil {
		return srq.drv.MaxSGE()
	}
	if srq.rq == nil {
		return 0
	}
	return srq.rq.MaxSGE()
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
	srq.trackRecvs(wrs)
	if srq.drv != nil {
		return srq.providerPostRecv(op, wrs)
	}
	return postRecv(op, srq.rq, wrs)
}

// outstanding returns the number of posted receives not consumed yet.
func (srq *SRQ) outstanding() int {
	srq.mu.Lock()
	defer srq.mu.Unlock()
	if srq.drv != nil {
		n, _ := srq.drv.Posted(0)
		return n
	}
	if srq.rq == nil {
		return 0
	}
	return srq.rq.PendingNow()
}

func (srq *SRQ) usesLKeyLocked(lkey uint32) (used bool, n int) {
	if srq.drv != nil {
		n, used = srq.drv.Posted(lkey)
		return used, n
	}
	if srq.rq == nil {
		return false, 0
	}
	return srq.rq.PendingUsesLKey(lkey), srq.rq.PendingNow()
}

// Resize changes the number of work requests the SRQ holds (MODIFY_SRQ with
// IB_SRQ_MAX_WR). The kernel copies the posted receives into a new ring,
// which replaces the mapping (docs/abi.md §3.11).
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
	if c := srq.ctx; c.drv != nil {
		return &OpError{Op: op, Err: fmt.Errorf("resizing an SRQ of %s (driver %v) is not implemented: create a larger SRQ: %w", c.dev.Name, c.dev.DriverID, ErrNotSupported)}
	}
	// rxe writes the new ring's mmap info through a user pointer passed as
	// driver input (struct rxe_modify_srq_cmd.mmap_info_addr; kernel:
	// sw/rxe/rxe_srq.c rxe_srq_from_attr), so it must be memory that does
	// not move: pinned heap memory.
	mi := new(abi.RxeMminfo)
	var pin runtime.Pinner
	pin.Pin(mi)
	err := srq.modify(op, srqAttrMaxWR, maxWR, 0, uint64(uintptr(unsafe.Pointer(mi))))
	pin.Unpin()
	if err != nil {
		return err
	}
	maxSGE := srq.rq.MaxSGE()
	old := srq.ring
	srq.ring, srq.rq = nil, nil
	m, q, err := rxe.MapRQ(cmdDevice{srq.ctx}, op, *mi, maxSGE, "srq ring")
	old.Unmap()
	if err != nil {
		return &OpError{Op: op, Err: fmt.Errorf("the SRQ was resized but its new ring could not be mapped; it is no longer usable: close it: %w", providerError(op, err))}
	}
	srq.ring, srq.rq = m, q
	return nil
}

// modify issues MODIFY_SRQ with rxe's driver input. The caller holds mu.
func (srq *SRQ) modify(op string, mask uint32, maxWR, limit int, miAddr uint64) error {
	var cmd struct {
		core abi.UverbsModifySRQ
		drv  abi.RxeModifySRQCmd
	}
	cmd.core = abi.UverbsModifySRQ{SRQHandle: srq.handle, AttrMask: mask, MaxWR: uint32(maxWR), SRQLimit: uint32(limit)}
	cmd.drv.MmapInfoAddr = miAddr
	if srq.ctx.drv != nil {
		// Only rxe takes driver input (mlx5 none for the limit).
		return srq.ctx.write(op, abi.IB_USER_VERBS_CMD_MODIFY_SRQ, bytesOf(&cmd.core), nil)
	}
	return srq.ctx.write(op, abi.IB_USER_VERBS_CMD_MODIFY_SRQ, bytesOf(&cmd), nil)
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
	// changes wrs while the call runs (as PostRecv). The common list of a
	// provider QP (stageSend's fast path there) is written here, where the
	// provider rings the doorbell: a call less per post; plainSends has
	// checked it, so the provider checks only the room (on mlx5, called
	// directly: mlx5.SQ.PostPlain).
	var err error
	if d := qp.drv; d != nil && !qp.closed && len(wrs) > 0 && QPState(qp.state.Load()) == QPStateRTS && qp.plainSends(wrs) == len(wrs) {
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
		if err == nil && len(wrs) > 0 && qp.drv == nil { // a provider QP: stageSend rang the doorbell
			err = qp.ringDoorbell(op)
		}
	}
	qp.sendMu.Unlock()
	return err
}

// stageSend is PostSend without the doorbell: it checks the QP, validates
// every request, writes them into the send ring and publishes the producer
// index. On a provider QP (mlx5) it also rings the doorbell, which is a
// register write there. The caller holds sendMu. The common list (an open QP in RTS,
// requests plainSends passes) goes straight to the provider, with one
// call before it; everything else takes stageSendSlow. On rxe the common
// list is written here, writeSends' rxe half written out: a call less per
// post (docs/perf-history.md, "rxe post and poll: what each change
// bought" item 32).
func (qp *QP) stageSend(op string, wrs []SendWR) error {
	if qp.closed || len(wrs) == 0 || QPState(qp.state.Load()) < QPStateRTS || qp.plainSends(wrs) < len(wrs) {
		return qp.stageSendSlow(op, wrs)
	}
	sq := qp.sq
	if qp.drv != nil || sq.Free() < len(wrs) { // a full ring: writeSends reports it
		return qp.writeSends(op, wrs)
	}
	for i := range wrs {
		rxe.EncodeSend(sq.Slot(), sendWR(&wrs[i]), wrs[i].ahNum())
		sq.Stage()
	}
	sq.Commit() // one producer_index store for the batch
	return nil
}

// writeSends writes checked requests: a provider QP encodes them and rings
// the doorbell (mlx5: qp.c _mlx5_post_send, post_send_db), the CQ's lock
// not taken, as polls share only what the provider orders; on rxe it writes them
// into the send ring, if it has room for all, and publishes them with one
// producer_index store.
func (qp *QP) writeSends(op string, wrs []SendWR) error {
	if d := qp.drv; d != nil {
		if qp.postRefusedInError() {
			return qp.errPostInError(op, wrs[0].ID)
		}
		if i, err := d.PostSend(sendWRs(wrs), false); err != nil {
			return qp.sendError(op, wrs, i, err)
		}
		return nil
	}
	if free := qp.sq.Free(); free < len(wrs) {
		return &PostError{Op: op, Index: free, ID: wrs[free].ID, Err: fmt.Errorf("%w: %d work requests, room for %d of %d", ErrQueueFull, len(wrs), free, qp.sq.Capacity())}
	}
	for i := range wrs {
		rxe.EncodeSend(qp.sq.Slot(), sendWR(&wrs[i]), wrs[i].ahNum())
		qp.sq.Stage()
	}
	qp.sq.Commit() // one producer_index store for the batch
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
	// on either provider:
	// postRecv's and mlx5.QPState.PostRecv's first step written out here, a
	// call less per receive (docs/perf-history.md, "mlx5 post and poll:
	// the rounds", fifth round).
	if !qp.closed && len(wrs) > 0 && QPState(qp.state.Load()) != QPStateReset {
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
		if q := qp.rq; q != nil {
			var err error
			// The lkey recorded by an earlier post (mrusers.go), else
			// trackRecvs records it.
			if len(wrs) == 1 && len(wrs[0].SGEs) == 1 && q.MaxSGE() >= 1 && !q.Full() && qp.recvKeys.has(wrs[0].SGEs[0].LKey) {
				rxe.EncodeRecvOne(q.Slot(), wrs[0].ID, wrs[0].SGEs[0])
				q.Publish()
			} else { // a full ring too: postRecvList reports it
				qp.trackRecvs(wrs)
				err = postRecvList(op, q, wrs)
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
	if qp.drv != nil {
		return qp.providerPostRecv(op, wrs)
	}
	return postRecv(op, qp.rq, wrs)
}

// postRecv validates and posts wrs on a receive queue or SRQ; the caller
// holds the queue's lock.
func postRecv(op string, q *rxe.RQ, wrs []RecvWR) error {
	// One receive of one SGE, the common case, without the loops below: it
	// cannot fail the checks (one SGE's length is one u32), and a full ring
	// takes the path below, which reports it.
	if len(wrs) == 1 && len(wrs[0].SGEs) == 1 && q.MaxSGE() >= 1 && !q.Full() {
		rxe.EncodeRecvOne(q.Slot(), wrs[0].ID, wrs[0].SGEs[0])
		q.Publish()
		return nil
	}
	return postRecvList(op, q, wrs)
}

// postRecvList is postRecv for any list.
func postRecvList(op string, q *rxe.RQ, wrs []RecvWR) error {
	maxSGE := q.MaxSGE()
	for i := range wrs {
		// One SGE within the limit cannot fail (its length is one u32):
		// only longer lists need the full check.
		if n := len(wrs[i].SGEs); n <= 1 && n <= maxSGE {
			continue
		}
		if err := provider.CheckRecv(wrs[i].SGEs, maxSGE); err != nil {
			return &PostError{Op: op, Index: i, ID: wrs[i].ID, Err: err}
		}
	}
	if free := q.Free(); free < len(wrs) {
		return recvQueueFull(op, q, wrs, free)
	}
	var w rxe.RecvWQE
	for i := range wrs {
		if sges := wrs[i].SGEs; len(sges) == 1 {
			rxe.EncodeRecvOne(q.Slot(), wrs[i].ID, sges[0])
		} else {
			w = rxe.RecvWQE{ID: wrs[i].ID, SGEs: sges}
			rxe.EncodeRecv(q.Slot(), &w)
		}
		q.Stage()
	}
	q.Commit()
	return nil
}

// recvQueueFull is postRecv's error for a ring with room for free of wrs,
// built apart so that the formatting does not weigh on every post.
func recvQueueFull(op string, q *rxe.RQ, wrs []RecvWR, free int) error {
	return &PostError{Op: op, Index: free, ID: wrs[free].ID, Err: fmt.Errorf("%w: %d work requests, room for %d of %d", ErrQueueFull, len(wrs), free, q.Capacity())}
}

// create issues CREATE_CQ with the provider's driver data and sets up
// the ring: rxe maps the ring the kernel made, another provider does what
// it does through its Context (mlx5 allocates its own). On an error
// nothing is left created.
func (cq *CQ) create(op string, req *abi.UverbsCreateCQ, depth int) error {
	c := cq.ctx
	if c.drv != nil {
		return cq.createProvider(op, req, depth)
	}
	m, q, h, err := rxe.CreateCQ(cmdDevice{c}, op, *req)
	if err != nil {
		return providerError(op, err)
	}
	cq.handle, cq.ring, cq.q = h, m, q
	cq.depth.Store(int32(q.Capacity()))
	return nil
}

// release unmaps the CQ's ring, after DESTROY_CQ; the caller holds mu.
func (cq *CQ) release() {
	if cq.ring != nil {
		cq.ring.Unmap()
	}
	if cq.drv != nil {
		cq.drv.Release()
	}
	cq.ring, cq.q, cq.drv = nil, nil, nil
}

// providerEvent tells the provider that a completion event of the CQ was
// read: mlx5 counts it in the CQ's arm sequence (provider.CQ.Event); rxe has
// nothing to do.
func (cq *CQ) providerEvent() {
	if cq.ctx.drv != nil {
		cq.mu.Lock()
		if cq.drv != nil {
			cq.drv.Event()
		}
		cq.mu.Unlock()
	}
}

// providerReset starts the queues over after a move to RESET: mlx5 keeps
// its own indices (provider.QP.Reset); rxe's kernel resets the rings itself. The
// caller holds both QP locks.
func (qp *QP) providerReset() {
	if qp.drv != nil {
		qp.drv.Reset(qp.sendCQ.locked, qp.recvCQ.locked)
	}
}

// openContext issues GET_CONTEXT with the driver data of the device's
// provider: mlx5 maps its UAR pages after it (getProviderContext); rxe has
// none.
func (c *Device) openContext() error {
	if open := providers[c.dev.DriverID]; open != nil {
		return c.getProviderContext(open)
	}
	return c.getContext()
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
	if srq.ring != nil {
		srq.ring.Unmap()
	}
	if srq.drv != nil {
		srq.drv.Release()
	}
	srq.ring, srq.rq, srq.drv = nil, nil, nil
}

// create issues CREATE_QP with the provider's driver data and sets up the
// queues: rxe maps the rings the kernel made, another provider does what
// it does through its Context (createProvider). On an error nothing is
// left created.
func (qp *QP) create(op string, req *abi.UverbsCreateQP, init *QPInit) error {
	c := qp.ctx
	if c.drv != nil {
		return qp.createProvider(op, req, init)
	}
	r, core, err := rxe.CreateQP(cmdDevice{c}, op, *req, provider.QPType(qp.typ), qp.srq != nil)
	if err != nil {
		return providerError(op, err)
	}
	qp.handle, qp.qpn = core.QPHandle, core.QPN
	qp.sq, qp.sqMap, qp.db, qp.dbMap, qp.rq, qp.rqMap = r.SQ, r.SQMap, r.DB, r.DBMap, r.RQ, r.RQMap
	qp.lim = r.Lim
	// The queue sizes come from the rings (their index_mask), since
	// kernel 6.1 echoes the requested numbers.
	qp.cap = QPCap{
		MaxSendWR:  qp.sq.Capacity(),
		MaxSendSGE: int(core.MaxSendSGE),
		MaxRecvSGE: int(core.MaxRecvSGE),
		MaxInline:  int(core.MaxInlineData),
	}
	if qp.rq != nil {
		qp.cap.MaxRecvWR = qp.rq.Capacity()
	} else {
		qp.cap.MaxRecvSGE = 0
	}
	return nil
}

// checkProviderCap checks a QP's capabilities against the provider's
// maxima: rxe's here (its WQE layout), mlx5's in its sizing (mlx5.SQSize).
func checkProviderCap(ctx *Device, c QPCap) error {
	if ctx.dev.DriverID != DriverRXE {
		return nil
	}
	if c.MaxSendSGE > rxe.MaxSGE || c.MaxRecvSGE > rxe.MaxSGE {
		return fmt.Errorf("Cap %+v: rxe allows at most %d scatter/gather entries per work request", c, rxe.MaxSGE)
	}
	if c.MaxInline > rxe.MaxInlineData {
		return fmt.Errorf("Cap.MaxInline %d: rxe allows at most %d bytes of inline data", c.MaxInline, rxe.MaxInlineData)
	}
	return nil
}

// create issues CREATE_SRQ with the provider's driver data and sets up
// the ring: rxe maps the ring the kernel made, another provider does what
// it does through its Context. On an error nothing is left created.
func (srq *SRQ) create(op string, req *abi.UverbsCreateSRQ, init SRQInit) error {
	c := srq.ctx
	if c.drv != nil {
		return srq.createProvider(op, req, init)
	}
	m, q, h, srqn, err := rxe.CreateSRQ(cmdDevice{c}, op, *req)
	if err != nil {
		return providerError(op, err)
	}
	srq.handle, srq.srqn, srq.ring, srq.rq = h, srqn, m, q
	return nil
}

// create issues CREATE_AH and fills what the provider's UD sends read
// (AH.drv): rxe's AH number from its response, or what another provider's
// Context gives (mlx5: its address vector). On an error nothing is left
// created.
func (ah *AH) create(op string, c *Device, req *abi.UverbsCreateAH) error {
	if c.drv != nil {
		return ah.createProvider(op, c, req)
	}
	if c.dev.DriverID == DriverRXE {
		num, h, err := rxe.CreateAH(cmdDevice{c}, op, *req)
		if err != nil {
			return providerError(op, err)
		}
		ah.handle, ah.drv.Num = h, num
		return nil
	}
	// A driver without a data path here: the AH only has a handle.
	var resp abi.UverbsCreateAHResp
	if err := c.write(op, abi.IB_USER_VERBS_CMD_CREATE_AH, bytesOf(req), bytesOf(&resp)); err != nil {
		return err
	}
	ah.handle = resp.AHHandle
	return nil
}

// driverABIs are the driver ABI versions (a uverbs device's abi_version)
// whose command and ring layouts the providers follow: rxe's
// RXE_UVERBS_ABI_VERSION (kernel: sw/rxe/rxe.h), the one libmlx5 accepts
// (rdma-core: providers/mlx5/mlx5-abi.h MLX5_UVERBS_MIN/MAX_ABI_VERSION),
// siw's SIW_ABI_VERSION (rdma/siw-abi.h).
var driverABIs = map[DriverID]int{
	DriverRXE:  2,
	DriverMLX5: abi.MLX5_IB_UVERBS_ABI_VERSION,
	DriverSIW:  abi.SIW_ABI_VERSION,
}

// The providers driven through provider.Context (mlx5, siw; rxe's path is
// written out above): their context, made in GET_CONTEXT, creates their
// objects, which this package holds as provider.CQ, QP and SRQ values
// (CQ.drv, QP.drv, SRQ.drv) and calls under the locks their methods name.
// Adding one is a package implementing those interfaces and a line here
// (CONTRIBUTING.md, "Adding a provider").
var providers = map[DriverID]provider.Open{
	DriverMLX5: mlx5.Open,
	DriverSIW:  siw.Open,
}

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

func providerError(op string, err error) error {
	var ce cmdError
	if errors.As(err, &ce) {
		return ce.err
	}
	return &OpError{Op: op, Err: err}
}

// getProviderContext runs GET_CONTEXT with the provider's driver data
// (open) and takes the async event file and vector count as getContext
// does.
func (c *Device) getProviderContext(open provider.Open) error {
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

// createProvider creates the CQ through the provider.
func (cq *CQ) createProvider(op string, req *abi.UverbsCreateCQ, depth int) error {
	c := cq.ctx
	d, h, err := c.drv.CreateCQ(cmdDevice{c}, op, *req, depth)
	if err != nil {
		return providerError(op, err)
	}
	cq.handle, cq.drv = h, d
	cq.depth.Store(int32(d.Depth()))
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

// createProvider creates the QP through the provider and attaches it to
// its CQs.
func (qp *QP) createProvider(op string, req *abi.UverbsCreateQP, init *QPInit) error {
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
	if i == len(wrs) { // all posted, the doorbell refused (siw)
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
	if errors.Is(err, provider.ErrQueueFull) && errors.Unwrap(err) == nil { // the plain sentinel: the ring is full
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

// createProvider creates the SRQ through the provider.
func (srq *SRQ) createProvider(op string, req *abi.UverbsCreateSRQ, init SRQInit) error {
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

// createProvider creates the AH through the provider, with what the port
// says of its link: its link layer and GRH requirement, on Ethernet the
// source GID's type (libmlx5's mlx5_create_ah reads the same).
func (ah *AH) createProvider(op string, c *Device, req *abi.UverbsCreateAH) error {
	port := ah.attr.Port
	pa, err := c.QueryPort(port)
	if err != nil {
		return err
	}
	a := &ah.attr
	p := provider.AHParams{
		DLID: a.DLID, SL: a.SL, SrcPathBits: a.SrcPathBits, StaticRate: a.StaticRate, IsGlobal: a.global(),
		DGID: a.DGID, FlowLabel: a.FlowLabel, SGIDIndex: a.SGIDIndex, HopLimit: a.HopLimit, TrafficClass: a.TrafficClass,
		Ethernet: pa.LinkLayer == LinkLayerEthernet, GRHRequired: pa.GRHRequired(),
	}
	if p.Ethernet && a.global() {
		g, err := c.QueryGID(port, int(a.SGIDIndex))
		if err != nil {
			return err
		}
		p.RoCEv2 = g.Type == GIDTypeRoCEv2
	}
	d, h, err := c.drv.CreateAH(cmdDevice{c}, op, *req, p)
	if err != nil {
		return providerError(op, err)
	}
	ah.handle, ah.drv = h, d
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

// postRefusedInError reports whether posting to a QP of the device in the
// error state must be refused: siw neither flushes work posted in the
// error state nor, after some moves to it, what its send ring holds
// (docs/siw.md §8), so such work would never complete, against the
// promise that posted work always comes back as a completion. It is
// called on the slow paths only: the fast ones take a QP in RTS.
func (qp *QP) postRefusedInError() bool { return qp.siwInError() }

// siwInError reports whether the QP is a siw QP in the error state, which
// siw never leaves: siw_qp_modify (kernel: siw_qp.c) changes nothing from
// ERROR, a move to RESET included.
func (qp *QP) siwInError() bool {
	return qp.ctx.dev.DriverID == DriverSIW && QPState(qp.state.Load()) == QPStateError
}

// errPostInError is the error of a post refused by postRefusedInError.
func (qp *QP) errPostInError(op string, id uint64) error {
	return &PostError{Op: op, ID: id, Err: fmt.Errorf("%w: QP %#x of %s is in the error state, and siw completes nothing posted then (it flushes only when the QP changes state): poll the completions and close the QP", ErrQPState, qp.qpn, qp.ctx.dev.Name)}
}

// queriedState is the state QUERY_QP reported, as the QP's record takes
// it. siw in kernel 6.1 does not report the state: siw_query_qp leaves
// qp_state 0, RESET (kernel 6.1: siw_verbs.c; 6.12 fills it). So on siw a
// RESET from the kernel keeps the record, which is RESET itself when the
// QP is (the kernel moves a siw QP to RTS, ERROR or CLOSING, never to
// RESET, by itself).
func (qp *QP) queriedState(s QPState) QPState {
	if s == QPStateReset && qp.ctx.dev.DriverID == DriverSIW {
		return QPState(qp.state.Load())
	}
	return s
}
