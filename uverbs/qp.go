package uverbs

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// QPType is the transport of a QP (enum ib_uverbs_qp_type).
type QPType uint8

const (
	RC QPType = 0x2 // IB_UVERBS_QPT_RC; reliable connected
	UC QPType = 0x3 // IB_UVERBS_QPT_UC; unreliable connected
	UD QPType = 0x4 // IB_UVERBS_QPT_UD; unreliable datagram
)

// String returns t's name.
func (t QPType) String() string {
	switch t {
	case RC:
		return "RC"
	case UC:
		return "UC"
	case UD:
		return "UD"
	}
	return "QPType(" + strconv.Itoa(int(t)) + ")"
}

// QPCap are the capabilities of a QP's queues (rdma-core: struct
// ibv_qp_cap).
type QPCap struct {
	MaxSendWR  int // work requests the send queue holds
	MaxRecvWR  int // work requests the receive queue holds (0 with an SRQ)
	MaxSendSGE int // scatter/gather entries per send work request
	MaxRecvSGE int // scatter/gather entries per receive work request
	MaxInline  int // bytes a send work request can carry inline
}

// QPInit describes a QP to create.
type QPInit struct {
	Type   QPType
	SendCQ *CQ
	RecvCQ *CQ  // may be SendCQ
	SRQ    *SRQ // if set, receives come from the SRQ and the QP has no receive queue
	Cap    QPCap
	// SignalAll makes every send work request produce a completion, as if
	// each had SendSignaled.
	SignalAll bool
	// SingleGoroutine declares that one goroutine at a time uses the QP,
	// and its send and receive queues then take no lock: PostSend and
	// PostRecv cost a few nanoseconds less (BENCHMARKS.md, "Ring locks").
	// The caller promises that no two of the QP's calls overlap (PostSend,
	// PostRecv, the state changes, Query, Close) nor overlap Device.Close.
	// Calls made in turn from several goroutines, each after the last has
	// returned as seen through the caller's own synchronisation, keep the
	// promise. The QP's CQs and SRQ keep their own locks (or their own
	// SingleGoroutine). With it, MR.Close does not look for the QP's
	// outstanding work requests that name the MR (ibv_dereg_mr never
	// does), and Buffer.Close does not wait for an inline post that is
	// copying out of the Buffer: close them only once no work request
	// needs them. Overlapping calls corrupt the rings; race builds (go
	// test -race) panic on those they catch, naming this option, and
	// the race detector reports calls from two goroutines that the
	// caller's synchronisation does not order, even calls that never
	// overlap.
	// rdmacm.ID.CreateQP refuses it: the CM moves its QP to the error
	// state from a goroutine of its own when the peer disconnects.
	//
	// rdma-core: a QP created in a parent domain with a thread domain
	// (ibv_alloc_td, ibv_alloc_parent_domain), whose send and receive
	// locks libmlx5 then leaves out; the same as MLX5_SINGLE_THREADED=1
	// for one QP.
	SingleGoroutine bool
}

// QP is a queue pair. PostSend, PostRecv and the CQ's Poll write and read
// the rings the kernel shares with the process directly; only PostSend makes
// a system call (the doorbell), and none of them allocates.
//
// Its methods may be called from several goroutines: the send queue and the
// receive queue each have a lock, unless it was created with
// QPInit.SingleGoroutine. Close drains the QP (see Close) and is
// idempotent and safe on a nil *QP; every other method of a closed QP
// returns an error matching ErrClosed and never touches the unmapped rings.
//
// rdma-core: struct ibv_qp.
type QP struct {
	ctx    *Device
	pd     *PD
	h      uint64
	typ    QPType
	sendCQ *CQ
	recvCQ *CQ
	srq    *SRQ
	handle uint32
	qpn    uint32
	cap    QPCap
	state  atomic.Uint32 // QPState as last set or queried
	port   uint8

	closeMu sync.Mutex // serialises Close

	sendMu ringLock
	// doorbells counts the rxe doorbells PostSend is ringing after
	// releasing sendMu; raised under sendMu, so Close, once it has marked
	// the QP closed, waits for none left before it frees the doorbell.
	doorbells atomic.Int32
	sendKeys  lkeyCache // lkeys the send queue's posts recorded (mrusers.go)
	lim       provider.SendLimits
	// The Buffer the last inline source was found in, and the list it
	// was found on (plainSends; under sendMu): a source inside it, while
	// that list is still the one published, needs no search.
	inlineList             *[]bufEntry
	inlineStart, inlineEnd uint64
	// inlineBufs are the Buffers the QP's posts recorded themselves as
	// users of (buffer.go), under sendMu; Close takes it out of them.
	inlineBufs []*bufUsers

	recvMu   ringLock
	recvKeys lkeyCache // lkeys the receive queue's posts recorded

	// drv is the provider's QP (provider.go), its send queue used under
	// sendMu and its receive queue under recvMu; nil once closed.
	drv provider.QP

	closed bool // set with both locks held

	mrs map[*MR]struct{} // MRs whose users include the QP, under pd.usersMu
}

// CreateQP creates a QP in the RESET state (write() command CREATE_QP) and
// maps its rings: the response's rq_mi then sq_mi (rxe_create_qp_resp), and
// no receive ring with an SRQ (docs/abi.md §3.2-3.3).
//
// The capabilities actually granted (QP.Cap) are at least those asked for:
// the queue sizes come from the rings (their index_mask), since kernel 6.1
// echoes the requested numbers.
//
// rdma-core: ibv_create_qp.
func (pd *PD) CreateQP(init QPInit) (*QP, error) {
	const op = "create_qp"
	if err := checkQPInit(pd, &init); err != nil {
		return nil, &OpError{Op: op, Err: err}
	}
	c := pd.ctx
	if err := c.checkQPCap(&init.Cap, init.SRQ != nil); err != nil {
		return nil, &OpError{Op: op, Err: err}
	}
	r, err := c.objects(op)
	if err != nil {
		return nil, err
	}
	// Hold a child slot in every parent so none closes under the create.
	var held []*children
	release := func() {
		for _, h := range held {
			h.unhold()
		}
	}
	parents := []struct {
		kids *children
		name string
	}{{&pd.kids, "PD"}, {&init.SendCQ.kids, "send CQ"}}
	if init.RecvCQ != init.SendCQ {
		parents = append(parents, struct {
			kids *children
			name string
		}{&init.RecvCQ.kids, "receive CQ"})
	}
	if init.SRQ != nil {
		parents = append(parents, struct {
			kids *children
			name string
		}{&init.SRQ.kids, "SRQ"})
	}
	for _, p := range parents {
		if err := p.kids.hold(op, p.name); err != nil {
			release()
			return nil, err
		}
		held = append(held, p.kids)
	}

	qp := &QP{ctx: c, pd: pd, h: newHandle(), typ: init.Type, sendCQ: init.SendCQ, recvCQ: init.RecvCQ, srq: init.SRQ}
	if init.SingleGoroutine {
		qp.sendMu.elide("a QP's send queue")
		qp.recvMu.elide("a QP's receive queue")
	}
	req := abi.UverbsCreateQP{
		UserHandle:    qp.h,
		PDHandle:      pd.handle,
		SendCQHandle:  init.SendCQ.handle,
		RecvCQHandle:  init.RecvCQ.handle,
		MaxSendWR:     uint32(init.Cap.MaxSendWR),
		MaxRecvWR:     uint32(init.Cap.MaxRecvWR),
		MaxSendSGE:    uint32(init.Cap.MaxSendSGE),
		MaxRecvSGE:    uint32(init.Cap.MaxRecvSGE),
		MaxInlineData: uint32(init.Cap.MaxInline),
		QPType:        uint8(init.Type),
	}
	if init.SignalAll {
		req.SQSigAll = 1
	}
	if init.SRQ != nil {
		req.SRQHandle = init.SRQ.handle
		req.IsSRQ = 1
		req.MaxRecvWR, req.MaxRecvSGE = 0, 0
	}
	if err := qp.create(op, &req, &init); err != nil {
		release()
		return nil, err
	}
	for _, p := range parents {
		p.kids.adopt(qp, kindQP)
	}
	if err := r.add(op, qp.h, kindQP, qp); err != nil {
		qp.close(true)
		return nil, err
	}
	return qp, nil
}

func checkQPInit(pd *PD, init *QPInit) error {
	if pd == nil {
		return errNilParent("PD")
	}
	switch init.Type {
	case RC, UC, UD:
	default:
		return fmt.Errorf("QP type %v: this library creates RC, UC and UD QPs (what a device supports of them, its provider checks)", init.Type)
	}
	if init.SendCQ == nil || init.RecvCQ == nil {
		return fmt.Errorf("a QP needs a send CQ and a receive CQ (they may be the same)")
	}
	if init.SendCQ.ctx != pd.ctx || init.RecvCQ.ctx != pd.ctx {
		return fmt.Errorf("the CQs belong to another Device than the PD")
	}
	if init.SRQ != nil && init.SRQ.pd != pd {
		return fmt.Errorf("the SRQ belongs to another PD")
	}
	c := init.Cap
	if c.MaxSendWR < 1 {
		return fmt.Errorf("Cap.MaxSendWR %d: the send queue needs at least one entry", c.MaxSendWR)
	}
	if init.SRQ == nil && c.MaxRecvWR < 1 {
		return fmt.Errorf("Cap.MaxRecvWR %d: the receive queue needs at least one entry (or give an SRQ)", c.MaxRecvWR)
	}
	if c.MaxSendSGE < 0 || c.MaxRecvSGE < 0 || c.MaxInline < 0 || c.MaxRecvWR < 0 {
		return fmt.Errorf("negative capability in %+v", c)
	}
	return nil
}

// QPN returns the QP number, which the peer needs (RTRAttr.DestQPN).
//
// rdma-core: the qp_num of struct ibv_qp.
func (qp *QP) QPN() uint32 { return qp.qpn }

// Type returns the QP's transport.
//
// rdma-core: the qp_type of struct ibv_qp.
func (qp *QP) Type() QPType { return qp.typ }

// Cap returns the capabilities granted: the send and receive queue sizes
// are the rings' real capacity.
func (qp *QP) Cap() QPCap { return qp.cap }

// State returns the state the QP was last moved to (Modify and helpers) or
// found in (Query). The kernel may move a QP to QPStateError by itself
// after a failed work request; Query tells.
//
// rdma-core: the state of struct ibv_qp.
func (qp *QP) State() QPState { return QPState(qp.state.Load()) }

// PD returns the QP's protection domain.
//
// rdma-core: the pd of struct ibv_qp.
func (qp *QP) PD() *PD { return qp.pd }

// SendCQ returns the CQ of the send queue.
//
// rdma-core: the send_cq of struct ibv_qp.
func (qp *QP) SendCQ() *CQ { return qp.sendCQ }

// RecvCQ returns the CQ of the receive queue.
//
// rdma-core: the recv_cq of struct ibv_qp.
func (qp *QP) RecvCQ() *CQ { return qp.recvCQ }

// SRQ returns the QP's shared receive queue, or nil.
//
// rdma-core: the srq of struct ibv_qp.
func (qp *QP) SRQ() *SRQ { return qp.srq }

// outstanding returns the number of work requests in the send and receive
// rings that the kernel has not retired yet.
func (qp *QP) outstanding() (send, recv int) {
	qp.sendMu.Lock()
	defer qp.sendMu.Unlock()
	qp.recvMu.Lock()
	defer qp.recvMu.Unlock()
	return qp.pendingNow()
}

// usesLKey reports whether a work request of the QP that the kernel has
// not retired names lkey in its SGE list, and how many requests are
// outstanding. It only reads the rings, so it is safe while Close drains.
func (qp *QP) usesLKey(lkey uint32) (used bool, send, recv int) {
	if qp.sendMu.elided {
		return false, 0, 0 // not looked at: another goroutine may be posting (QPInit.SingleGoroutine)
	}
	qp.sendMu.Lock()
	defer qp.sendMu.Unlock()
	qp.recvMu.Lock()
	defer qp.recvMu.Unlock()
	return qp.usesLKeyLocked(lkey)
}

// releaseLKey is usesLKey for MR.Close: under the same locks it also
// removes lkey from both rings' caches (mrusers.go). A SingleGoroutine QP
// is neither looked at nor touched: its caches belong to the goroutine
// that posts, and a stale lkey in them only leaves it unrecorded as a user
// of a later MR, which never looks at it either.
func (qp *QP) releaseLKey(lkey uint32) (used bool, send, recv int) {
	if qp.sendMu.elided {
		return false, 0, 0
	}
	qp.sendMu.Lock()
	defer qp.sendMu.Unlock()
	qp.recvMu.Lock()
	defer qp.recvMu.Unlock()
	qp.sendKeys.forget(lkey)
	qp.recvKeys.forget(lkey)
	return qp.usesLKeyLocked(lkey)
}

// drainTimeout bounds how long Close waits for the kernel to flush;
// CloseContext takes its bound from the caller instead.
var drainTimeout = 10 * time.Second

// Close destroys the QP without losing a work request:
//
//  1. it stops new posts (they return ErrClosed);
//  2. it moves the QP to the error state, so the kernel completes
//     everything still queued with WCFlushError;
//  3. it waits until the kernel has retired every entry of the send and
//     receive rings, moving the completions that appear on the QP's CQs to
//     those CQs' pending lists (CQ.Poll returns them first, so nothing of
//     this QP or of another QP sharing the CQ is lost);
//  4. it destroys the QP (DESTROY_QP), which stops the kernel's tasks, and
//     pulls the completions they posted last;
//  5. it unmaps the rings.
//
// On siw, whose kernel flushes the rings only in some state changes and
// never what was posted after its own move to ERROR (when the peer closed,
// say), steps 2 and 3 are left to DESTROY_QP, which flushes what the
// kernel flushes at all before it returns; then every request still in
// the rings is completed with WCFlushError, its ID and opcode, in ring
// order, on the same pending lists (the siw notes in docs, §8 "Reset,
// error, flush and destroy" and §9).
//
// Receives posted to an SRQ belong to the SRQ and stay there. The error
// says so if the kernel did not retire everything within the drain timeout
// (10 s; docs/kernel-behaviour.md §3); the QP is destroyed anyway.
// CloseContext bounds the drain by a context instead. On siw it says how
// many requests will not complete if DESTROY_QP failed (the rings are
// released all the same).
//
// rdma-core: ibv_destroy_qp (which does not drain; the kernel's ib_drain_qp
// does).
func (qp *QP) Close() error {
	if qp == nil {
		return nil
	}
	return qp.closeWithin(context.Background(), drainTimeout)
}

// CloseContext is Close with the drain (step 3) bounded by ctx instead of
// Close's 10 s: if ctx ends before the kernel has retired every work
// request, the QP is destroyed anyway and the error, which matches
// ctx.Err(), says how many will not complete. Under a context that never
// ends it waits as long as the kernel takes to flush. A nil ctx is Close's
// bound. It changes nothing else: the QP is closed when it returns, also
// with an error, and on siw, which has no step 3, ctx is not used.
//
// rdma-core: ibv_destroy_qp, after the wait that ib_drain_qp makes in the
// kernel.
func (qp *QP) CloseContext(ctx context.Context) error {
	if qp == nil {
		return nil
	}
	if ctx == nil {
		return qp.closeWithin(context.Background(), drainTimeout)
	}
	return qp.closeWithin(ctx, 0)
}

// close is Close for Device.Close (verbsObject): a QP never refuses.
func (qp *QP) close(bool) error { return qp.closeWithin(context.Background(), drainTimeout) }

// waitDoorbells returns once no PostSend is ringing rxe's doorbell after
// releasing sendMu. Close calls it once the QP is marked closed, so that a
// post that wrote its requests before rings the doorbell before the drain
// and before DESTROY_QP frees the doorbell's slot; no post starts one
// after. The doorbell is one write(2): a yield loop suffices.
func (qp *QP) waitDoorbells() {
	for qp.doorbells.Load() != 0 {
		runtime.Gosched()
	}
}

// closeWithin is Close, with the drain bounded by ctx and, if limit > 0,
// by limit.
func (qp *QP) closeWithin(ctx context.Context, limit time.Duration) error {
	qp.closeMu.Lock()
	defer qp.closeMu.Unlock()
	qp.sendMu.Lock()
	qp.recvMu.Lock()
	if qp.closed {
		qp.recvMu.Unlock()
		qp.sendMu.Unlock()
		return nil
	}
	// From here every post, Modify and Query returns ErrClosed at once and
	// no one but Close writes the rings' private indices, so the drain runs
	// without the locks (it only loads the kernel's indices).
	qp.closed = true
	qp.recvMu.Unlock()
	qp.sendMu.Unlock()
	qp.waitDoorbells()
	errDrain := qp.drain(ctx, limit)

	qp.sendMu.Lock()
	qp.recvMu.Lock()
	errDestroy := qp.destroy()
	// The kernel's tasks are stopped: collect what they posted last.
	qp.sendCQ.pull()
	if qp.recvCQ != qp.sendCQ {
		qp.recvCQ.pull()
	}
	if errDestroy == nil {
		errDrain = errors.Join(errDrain, qp.flushRings())
	} else if s, r := qp.pendingNow(); qp.flushesOnDestroy() && s+r > 0 {
		// DESTROY_QP failed, so the kernel may still hold the QP and take
		// or complete what is in its rings: flushRings cannot complete it
		// here. Draining first instead would only wait out drainTimeout
		// for work siw never flushes (provider.FlushOnDestroy). So the
		// error says what is lost, also when the Device was closed under
		// Close, whose ErrClosed ignoreClosedContext drops.
		errDrain = errors.Join(errDrain, fmt.Errorf("destroy_qp failed, so %d send and %d receive work requests left in the rings will not complete: %w", s, r, errDestroy))
		errDestroy = nil
	}
	qp.unmap()
	qp.recvMu.Unlock()
	qp.sendMu.Unlock()

	// The rings are gone: no MR or Buffer needs to wait for this QP.
	qp.pd.dropUser(lkeyUser{qp: qp})
	qp.dropInlineBufs()
	qp.pd.kids.drop(qp)
	qp.sendCQ.kids.drop(qp)
	qp.recvCQ.kids.drop(qp)
	if qp.srq != nil {
		qp.srq.kids.drop(qp)
	}
	qp.ctx.forget(qp.h)
	return errors.Join(errDrain, ignoreClosedContext(errDestroy))
}

// drain moves the QP to ERR and waits until the kernel has flushed both
// rings (kernel: sw/rxe/rxe_qp.c rxe_qp_error schedules the requester,
// completer and responder, which complete every queued WQE with
// IB_WC_WR_FLUSH_ERR). The QP is marked closed, so nothing posts meanwhile
// and the rings stay mapped until Close takes the locks again. It gives up
// when ctx ends, or after limit if limit > 0.
func (qp *QP) drain(ctx context.Context, limit time.Duration) error {
	if qp.flushesOnDestroy() {
		return nil // DESTROY_QP flushes, then flushRings (see close)
	}
	s, r := qp.pendingNow()
	if s+r == 0 {
		return nil
	}
	// Also when the QP is in the error state already: rxe flushes a ring
	// only when something runs the QP's tasks, and work posted after the
	// kernel's own move to ERR wakes nothing (posting is not a system call
	// here). ERR to ERR is a legal change, and rxe answers it by flushing
	// again (kernel: rxe_qp_from_attr calls rxe_qp_error;
	// docs/kernel-behaviour.md §3).
	wasError := QPState(qp.state.Load()) == QPStateError
	if err := qp.modifyLocked(&QPAttr{State: QPStateError}, QPAttrState); err != nil && !wasError {
		return &OpError{Op: "destroy_qp", Err: fmt.Errorf("drain: could not move the QP to the error state, %d send and %d receive work requests may not complete: %w", s, r, err)}
	}
	deadline := time.Now().Add(limit)
	pause := 50 * time.Microsecond
	timer := time.NewTimer(pause)
	defer timer.Stop()
	for {
		okS := qp.sendCQ.pull()
		okR := qp.recvCQ == qp.sendCQ || qp.recvCQ.pull()
		s, r = qp.pendingNow()
		if s+r == 0 {
			return nil
		}
		if !okS || !okR {
			return &OpError{Op: "destroy_qp", Err: fmt.Errorf("drain: a CQ of the QP has no ring left to complete %d send and %d receive work requests on; they will not complete", s, r)}
		}
		if limit > 0 && time.Now().After(deadline) {
			return &OpError{Op: "destroy_qp", Err: fmt.Errorf("drain: the kernel did not flush %d send and %d receive work requests within %v; they will not complete", s, r, limit)}
		}
		select {
		case <-ctx.Done():
			return &OpError{Op: "destroy_qp", Err: fmt.Errorf("drain: the kernel had not flushed %d send and %d receive work requests when the context ended; they will not complete: %w", s, r, ctx.Err())}
		case <-timer.C:
		}
		pause = min(2*pause, 10*time.Millisecond)
		timer.Reset(pause)
	}
}

func (qp *QP) destroy() error {
	req := abi.UverbsDestroyQP{QPHandle: qp.handle}
	var resp abi.UverbsDestroyQPResp
	return qp.ctx.write("destroy_qp", abi.IB_USER_VERBS_CMD_DESTROY_QP, bytesOf(&req), bytesOf(&resp))
}
