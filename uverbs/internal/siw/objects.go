package siw

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// The siw objects as uverbs drives them (provider.Context, CQ, QP, SRQ):
// the create commands with siw's driver responses, the rings mapped through
// the keys they return (docs/siw.md §2), the POST_SEND doorbell (§7), and
// the count of what is outstanding. uverbs/provider.go registers Open.
//
// The kernel frees a ring element when it starts a request, and a
// successful unsignaled send writes no completion (§3, §6), so the rings
// cannot say what is outstanding. Each QP and SRQ counts instead: posted
// minus completed receives, and for sends a record of each request's ID,
// whether it is signaled and whether it is an RDMA READ, retired by the
// completions the CQ polls. siw starts a QP's sends in posting order, but
// a READ completes only when its response has arrived (siw_qp_rx.c
// siw_proc_rresp), while a SEND or WRITE completes once transmitted
// (siw_qp_tx.c siw_qp_sq_process): a later SEND may complete before an
// earlier READ. READ responses arrive in order, and a flush completes the
// outstanding READs (the ORQ) before the rest (siw_qp.c siw_sq_flush). See
// retireSend.

func bytesOf[T any](p *T) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p)) }

func pageRound(n int) int {
	p := os.Getpagesize()
	return (n + p - 1) &^ (p - 1)
}

// Context is siw's provider.Context. siw needs nothing for the device's
// lifetime but its name.
type Context struct{ name string }

var (
	_ provider.Context        = (*Context)(nil)
	_ provider.RegMRData      = (*Context)(nil)
	_ provider.FlushOnDestroy = (*qpState)(nil)
)

// Driver registers the provider (SIW_ABI_VERSION, rdma/siw-abi.h). siw
// never moves a QP out of ERROR, a move to RESET included, and completes
// nothing posted while it is there: it flushes only when the QP changes
// state (kernel: siw_qp.c siw_qp_modify; docs/siw.md §8). QUERY_QP of
// 6.1 leaves qp_state 0, RESET, whatever the state (kernel 6.1:
// siw_verbs.c siw_query_qp; 6.12 fills it).
var Driver = provider.Driver{ABI: abi.SIW_ABI_VERSION, Open: Open, ErrorIsFinal: true, QueryMayOmitState: true}

// Open issues GET_CONTEXT with room for struct siw_uresp_alloc_ctx, without
// which siw fails the command with EINVAL (kernel: siw_verbs.c
// siw_alloc_ucontext; docs/siw.md §1); it is the provider's provider.Open.
func Open(dev provider.Device, op string, core *abi.UverbsGetContextResp) (provider.Context, error) {
	var req abi.UverbsGetContext
	var resp struct {
		core abi.UverbsGetContextResp
		drv  abi.SiwUrespAllocCtx
	}
	if err := dev.Write(op, abi.IB_USER_VERBS_CMD_GET_CONTEXT, bytesOf(&req), bytesOf(&resp)); err != nil {
		return nil, err
	}
	*core = resp.core
	return &Context{name: dev.Name()}, nil
}

// RegMRData gives REG_MR siw's driver data: struct siw_ureq_reg_mr in
// (stag_key 0, as libsiw sends) and room for struct siw_uresp_reg_mr out,
// without which siw fails the command with EINVAL (kernel: siw_verbs.c
// siw_reg_user_mr; rdma-core: providers/siw/siw.c siw_reg_mr).
func (*Context) RegMRData() (in, out int) {
	return int(unsafe.Sizeof(abi.SiwUreqRegMR{})), int(unsafe.Sizeof(abi.SiwUrespRegMR{}))
}

// Close releases nothing: siw maps nothing per context.
func (*Context) Close() {}

// mapKey maps n bytes (rounded up to pages) at the key a create response
// gave, refusing the key the kernel gives when it could not prepare the
// mapping (rdma-core: providers/siw/siw.c checks SIW_INVAL_UOBJ_KEY). The
// kernel leaves that key when it cannot allocate or insert the mapping's
// entry (kernel: siw_verbs.c siw_mmap_entry_insert), a shortage of kernel
// memory or of mapping offsets.
func mapKey(dev provider.Device, op string, key uint64, n int, what string) (*sys.Mapping, error) {
	if key == abi.SIW_INVAL_UOBJ_KEY {
		return nil, fmt.Errorf("siw (device %s) could not prepare the %s for mapping (its key is SIW_INVAL_UOBJ_KEY: the kernel was short of memory for it): close queues you no longer need, or create smaller ones, and try again: %w", dev.Name(), what, syscall.ENOMEM)
	}
	return dev.Mmap(op, int64(key), pageRound(n), what+" "+dev.Name())
}

// destroy issues a destroy command for an object made before a later step
// failed.
func destroy[T any](dev provider.Device, op string, cmd uint32, req *T) {
	dev.Write(op, cmd, bytesOf(req), nil)
}

// cqState is a siw CQ: its ring and the QPs and SRQs whose completions it
// counts. Guarded by the CQ's lock.
type cqState struct {
	q   *CQ
	m   *sys.Mapping
	qps map[uint32]*qpState // by QPN, which siw's CQEs carry (qp_id)
}

// CreateCQ issues CREATE_CQ for depth entries and maps the ring and its
// control word: num_cqe CQEs of 32 bytes, then struct siw_cq_ctrl (kernel:
// siw_verbs.c siw_create_cq; docs/siw.md §2).
func (c *Context) CreateCQ(dev provider.Device, op string, core abi.UverbsCreateCQ, depth int) (provider.CQ, uint32, error) {
	core.CQE = uint32(depth)
	var resp struct {
		core abi.UverbsCreateCQResp
		drv  abi.SiwUrespCreateCQ
	}
	if err := dev.Write(op, abi.IB_USER_VERBS_CMD_CREATE_CQ, bytesOf(&core), bytesOf(&resp)); err != nil {
		return nil, 0, err
	}
	fail := func(err error) (provider.CQ, uint32, error) {
		destroy(dev, "destroy_cq", abi.IB_USER_VERBS_CMD_DESTROY_CQ, &abi.UverbsDestroyCQ{CQHandle: resp.core.CQHandle})
		return nil, 0, err
	}
	n := resp.drv.NumCQE
	m, err := mapKey(dev, op, resp.drv.CQKey, int(n)*CQESize+CQCtrlSize, "siw cq ring")
	if err != nil {
		return fail(err)
	}
	q, err := NewCQ(m.Bytes(), n)
	if err != nil {
		m.Unmap()
		return fail(err)
	}
	return &cqState{q: q, m: m, qps: map[uint32]*qpState{}}, resp.core.CQHandle, nil
}

// Depth is num_cqe, what libsiw reports as ibv_cq.cqe.
func (s *cqState) Depth() int { return s.q.Size() }

// Poll decodes up to len(wcs) completions and retires the requests they
// complete.
func (s *cqState) Poll(wcs []rdma.WC) (int, error) {
	n := s.q.Poll(wcs)
	for i := range wcs[:n] {
		s.retire(&wcs[i])
	}
	return n, nil
}

// retire counts wc as its QP's or SRQ's. A flushed completion carries the
// opcode of its request, so the opcode tells a receive from a send
// (docs/siw.md §6).
func (s *cqState) retire(wc *rdma.WC) {
	q := s.qps[wc.QPN]
	if q == nil {
		return // the QP was closed
	}
	if wc.Opcode == WCOpRecv {
		if q.srq != nil {
			q.srq.done.Add(1)
		} else {
			q.recvDone.Add(1)
		}
		return
	}
	q.retireSend(wc)
}

// Pull moves every completion in the ring to pending.
func (s *cqState) Pull(pending *[]rdma.WC) {
	var w [1]rdma.WC
	for s.q.Poll(w[:]) == 1 {
		s.retire(&w[0])
		*pending = append(*pending, w[0])
	}
}

// Arm stores the CQ's control word: no command (CQ.Arm), no failure. siw
// counts no events (the kernel disarms the control word itself), so the
// CQ does not implement provider.CQEvents.
func (s *cqState) Arm(solicitedOnly bool) error {
	s.q.Arm(solicitedOnly)
	return nil
}

// Attach makes the CQ count qp's completions, and with srq its receives
// as srq's.
func (s *cqState) Attach(qp provider.QP, srq provider.SRQ) {
	q := qp.(*qpState)
	if r, ok := srq.(*srqState); ok {
		q.srq = r
	}
	s.qps[q.qpn] = q
}

// Detach forgets qp.
func (s *cqState) Detach(qp provider.QP) { delete(s.qps, qp.(*qpState).qpn) }

// Release unmaps the ring, after DESTROY_CQ.
func (s *cqState) Release() { s.m.Unmap() }

// qpState is a siw QP: its send ring and, without an SRQ, its receive
// ring, the doorbell, and the counts of outstanding requests.
type qpState struct {
	dev    provider.Device
	db     *provider.PostSend // a slot of dev.Doorbells(): the command does not move
	handle uint32
	qpn    uint32
	sq     *SQ
	sqMap  *sys.Mapping
	rq     *RQ // nil with an SRQ or no receive elements
	rqMap  *sys.Mapping
	srq    *srqState
	caps   provider.QPCaps

	// The sends posted (sent, written under the send lock) and retired
	// (by the CQ's polls), free-running; sends[i&sendMask] records send i
	// while it is outstanding.
	sent, retired atomic.Uint32
	sends         []sendRecord
	sendMask      uint32

	// The receives posted (under the receive lock) and completed (by the
	// CQ's polls).
	recvPosted, recvDone atomic.Uint32
}

type sendRecord struct {
	id       uint64
	signaled bool
	read     bool // an RDMA READ
	done     bool // completed, behind a READ that has not
}

// CreateQP checks the QP's parameters against siw's (RC only; at least one
// send element, at most 80 bytes inline and 6 SGEs: kernel siw_verbs.c
// siw_create_qp), issues CREATE_QP and maps the send ring and, without an
// SRQ, the receive ring (docs/siw.md §2).
func (c *Context) CreateQP(dev provider.Device, op string, core abi.UverbsCreateQP, p provider.QPParams) (provider.QP, uint32, uint32, error) {
	name := dev.Name()
	if err := CheckQPType(p.Type, name); err != nil {
		return nil, 0, 0, err
	}
	if p.MaxSendWR < 1 {
		return nil, 0, 0, fmt.Errorf("siw (device %s) needs a send queue of at least one work request: set Cap.MaxSendWR: %w", name, syscall.EINVAL)
	}
	if p.MaxInline > MaxInline {
		return nil, 0, 0, fmt.Errorf("siw (device %s) holds at most %d bytes of inline data, Cap.MaxInline is %d: %w", name, MaxInline, p.MaxInline, syscall.EINVAL)
	}
	if p.MaxSendSGE > MaxSGE || p.MaxRecvSGE > MaxSGE {
		return nil, 0, 0, fmt.Errorf("siw (device %s) takes at most %d scatter/gather entries per work request, Cap asks %d send and %d receive: %w", name, MaxSGE, p.MaxSendSGE, p.MaxRecvSGE, syscall.EINVAL)
	}
	var resp struct {
		core abi.UverbsCreateQPResp
		drv  abi.SiwUrespCreateQP
	}
	if err := dev.Write(op, abi.IB_USER_VERBS_CMD_CREATE_QP, bytesOf(&core), bytesOf(&resp)); err != nil {
		return nil, 0, 0, err
	}
	q := &qpState{dev: dev, handle: resp.core.QPHandle, qpn: resp.core.QPN}
	fail := func(err error) (provider.QP, uint32, uint32, error) {
		q.Release()
		destroy(dev, "destroy_qp", abi.IB_USER_VERBS_CMD_DESTROY_QP, &abi.UverbsDestroyQP{QPHandle: q.handle})
		return nil, 0, 0, err
	}
	var err error
	if q.db, err = dev.Doorbells().New(q.handle, "siw doorbells "+name); err != nil {
		return fail(err)
	}
	r := resp.drv
	inline := min(int(resp.core.MaxInlineData), MaxInline)
	sendSGE := min(int(resp.core.MaxSendSGE), MaxSGE)
	m, err := mapKey(dev, op, r.SQKey, int(r.NumSQE)*SQESize, "siw send ring")
	if err != nil {
		return fail(err)
	}
	q.sqMap = m
	if q.sq, err = NewSQ(m.Bytes(), r.NumSQE, SendLimits{MaxSGE: sendSGE, MaxInline: inline, SigAll: p.SignalAll, Device: name}); err != nil {
		return fail(err)
	}
	// Room for every element of the ring, and as many taken by the kernel
	// and not yet completed (the one in progress and the READs awaiting
	// their responses, at most the ring's size again: siw_verbs.c bounds
	// the ORD by the queue depth).
	size := uint32(1)
	for size < 2*r.NumSQE {
		size <<= 1
	}
	q.sends, q.sendMask = make([]sendRecord, size), size-1
	q.caps = provider.QPCaps{MaxSendWR: int(r.NumSQE), MaxSendSGE: sendSGE, MaxInline: inline}
	if p.SRQ == nil && r.NumRQE > 0 {
		recvSGE := min(int(resp.core.MaxRecvSGE), MaxSGE)
		if q.rqMap, err = mapKey(dev, op, r.RQKey, int(r.NumRQE)*RQESize, "siw receive ring"); err != nil {
			return fail(err)
		}
		if q.rq, err = NewRQ(q.rqMap.Bytes(), r.NumRQE, recvSGE, name); err != nil {
			return fail(err)
		}
		q.caps.MaxRecvWR, q.caps.MaxRecvSGE = int(r.NumRQE), recvSGE
	}
	return q, q.handle, q.qpn, nil
}

// Caps are num_sqe and num_rqe, and the SGE and inline limits CREATE_QP
// returned.
func (q *qpState) Caps() provider.QPCaps { return q.caps }

// SendQueueSize is the send ring's size.
func (q *qpState) SendQueueSize() int { return q.sq.Size() }

// RecvQueueSize is the receive ring's size, 0 without one.
func (q *qpState) RecvQueueSize() int {
	if q.rq == nil {
		return 0
	}
	return q.rq.Size()
}

// PostSend checks every request against siw's rules (CheckSend, also for
// plain lists: siw refuses opcodes the shared checks take), checks the
// room, writes the requests and rings the doorbell if the kernel's send
// side may have gone idle (libsiw siw_post_send; docs/siw.md §7). On an
// error before the writes nothing was posted; a refused doorbell is
// returned with len(wrs): every request is in the ring and counted.
func (q *qpState) PostSend(wrs []provider.SendWR, _ bool) (int, error) {
	sq := q.sq
	lim := &sq.lim
	for i := range wrs {
		if err := CheckSend(&wrs[i], lim); err != nil {
			return i, err
		}
	}
	sent := q.sent.Load()
	if out := sent - q.retired.Load(); int(out)+len(wrs) > len(q.sends) {
		// Unsignaled sends have no completion of their own and stay
		// counted until a later completion retires them.
		return max(len(q.sends)-int(out), 0), fmt.Errorf("siw (device %s): %d sends are outstanding and at most %d are tracked, since an unsignaled send is retired only by a later completion: signal a send at least every %d requests (the send queue's size) and poll the completion queue: %w",
			q.dev.Name(), out, len(q.sends), sq.Size(), ErrQueueFull)
	}
	if !sq.Room(len(wrs)) {
		i := 0
		for i < len(wrs) && sq.Room(i+1) {
			i++
		}
		return i, ErrQueueFull
	}
	start := sq.Next()
	for i := range wrs {
		// Recorded before the kernel can complete it.
		q.sends[sent&q.sendMask] = sendRecord{id: wrs[i].ID, signaled: lim.SigAll || wrs[i].Flags&SendSignaled != 0, read: wrs[i].Op == OpRead}
		sent++
		q.sent.Store(sent)
		sq.Write(&wrs[i])
	}
	if sq.DoorbellNeeded(start) {
		if err := q.doorbell(); err != nil {
			return len(wrs), err
		}
	}
	return 0, nil
}

// doorbell rings the QP's doorbell. It fails with ENOTCONN while the QP
// is not in RTS (docs/siw.md §7), and with EINVAL when the kernel refuses
// the request it takes from the ring (an RDMA READ without an ORD:
// siw_qp.c siw_activate_tx_from_sq). The kernel then leaves that element
// VALID and its sq_get where it was, so every later doorbell finds it
// again and the send side would stall with nothing completed: doorbell
// moves the QP to ERROR, which flushes the ring (siw_qp.c
// siw_qp_nextstate_from_rts, siw_sq_flush), and says so with
// ErrMovedToError.
func (q *qpState) doorbell() error {
	name := q.dev.Name()
	err := q.dev.Doorbell("post_send", unsafe.Pointer(q.db), provider.PostSendLen)
	if err == nil {
		return nil
	}
	if !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("the work requests were posted but siw (device %s) refused the doorbell, so they may not run until a later post rings it: %w", name, err)
	}
	if merr := q.toError(); merr != nil {
		return fmt.Errorf("the work requests were posted but siw (device %s) refused one when it took it from the send ring, and the send queue is stuck behind it; moving the QP to ERROR failed too (%v): destroy the QP: %w", name, merr, err)
	}
	return fmt.Errorf("the work requests were posted but siw (device %s) refused one when it took it from the send ring (an RDMA READ needs a non-zero InitiatorDepth on the connection): %w, so every posted request completes with a flush error; create a new QP and connect it again (%w)", name, ErrMovedToError, err)
}

// toError issues MODIFY_QP to ERROR (attr_mask IB_QP_STATE 1, qp_state
// IB_QPS_ERR 6: include/rdma/ib_verbs.h).
func (q *qpState) toError() error {
	cmd := abi.UverbsModifyQP{QPHandle: q.handle, AttrMask: 1, QPState: 6}
	return q.dev.Write("modify_qp", abi.IB_USER_VERBS_CMD_MODIFY_QP, bytesOf(&cmd), nil)
}

// retireSend retires the send wc completes: the first outstanding send
// with wc's ID and kind (READ or not), a signaled one if wc is a success
// (an unsignaled success writes no completion). A READ's completion, of
// any status, also retires every send before it: the kernel transmitted
// them before it sent the READ, and earlier READs got their responses or
// were flushed first. Any other completion also retires the sends before
// it that are not READs (transmitted in order) but no READ, which may
// still await its response. Sends are counted as retired up to the first
// one not done. Called under the CQ's lock.
func (q *qpState) retireSend(wc *rdma.WC) {
	sent, r := q.sent.Load(), q.retired.Load()
	read := wc.Opcode == WCOpRDMARead
	k := r
	for ; k != sent; k++ {
		s := &q.sends[k&q.sendMask]
		if !s.done && s.read == read && s.id == wc.ID && (s.signaled || wc.Status != WCSuccess) {
			break
		}
	}
	if k == sent {
		return
	}
	for i := r; i != k+1; i++ {
		if s := &q.sends[i&q.sendMask]; read || !s.read || i == k {
			s.done = true
		}
	}
	for r != sent && q.sends[r&q.sendMask].done {
		r++
	}
	q.retired.Store(r)
}

// PostRecv checks and writes wrs into the receive ring; no system call
// (docs/siw.md §7).
func (q *qpState) PostRecv(wrs []rdma.RecvWR) (int, error) {
	i, err := postRecvs(q.rq, wrs)
	q.recvPosted.Add(uint32(i))
	return i, err
}

// postRecvs checks every receive and the room, then writes them; it
// returns how many it wrote.
func postRecvs(rq *RQ, wrs []rdma.RecvWR) (int, error) {
	for i := range wrs {
		if err := rq.CheckRecv(&wrs[i]); err != nil {
			return i, err
		}
	}
	if !rq.Room(len(wrs)) {
		i := 0
		for i < len(wrs) && rq.Room(i+1) {
			i++
		}
		return i, ErrQueueFull
	}
	for i := range wrs {
		rq.Write(&wrs[i])
	}
	return len(wrs), nil
}

// Outstanding counts the sends and receives not completed yet. Sends
// after the last one a completion retired are counted until a later
// completion retires them: an unsignaled send that succeeded has no
// completion of its own.
func (q *qpState) Outstanding() (send, recv int) {
	send = int(q.sent.Load() - q.retired.Load())
	if q.rq != nil {
		recv = int(q.recvPosted.Load() - q.recvDone.Load())
	}
	return send, recv
}

// UsesLKey reports whether an outstanding request may name lkey: any
// outstanding send that the kernel has taken (its copy is no longer in the
// ring) or that names it, and any outstanding receive the kernel has taken
// or that names it.
func (q *qpState) UsesLKey(lkey uint32) (used bool, send, recv int) {
	send, recv = q.Outstanding()
	used = send > q.sq.Pending() || q.sq.PendingUsesLKey(lkey)
	if q.rq != nil {
		used = used || recv > q.rq.Pending() || q.rq.PendingUsesLKey(lkey)
	}
	return used, send, recv
}

// FlushRings completes with WCFlushError what the kernel left in the rings
// (provider.FlushOnDestroy), after DESTROY_QP. The kernel flushes a ring
// only in some state changes (siw_qp.c siw_qp_modify, siw_qp_llp_close;
// docs/siw.md §8): what was posted after its own move to ERROR, and the
// send ring left by a move from CLOSING, keep VALID. siw_destroy_qp
// (siw_verbs.c) moves the QP to ERROR, which flushes what a move from the
// QP's state flushes, and frees the QP before it returns (siw_qp_put, then
// wait_for_completion of qp_free), so nothing reads the rings any more and
// no completion of the QP comes later. Each element still VALID becomes
// the completion the kernel's flush would have written: its ID and opcode,
// status WR_FLUSH_ERR, no bytes (siw_qp.c siw_sq_flush, siw_rq_flush).
// The sends the kernel took are complete by then (the flush completes the
// one in progress and the READs awaiting their response: siw_sq_flush).
// Of those still counted, an unsignaled one had no completion of its own
// (a success) and is forgotten; a signaled one had a completion the kernel
// could not write, since siw_sqe_complete (siw_qp.c) drops it with
// -ENOMEM when the CQ is full, and stays counted, so that QP.Close reports
// it lost.
func (q *qpState) FlushRings(send, recv *[]rdma.WC) {
	sq := q.sq
	// The records of the sends the kernel took come before those of the
	// ones still in the ring (both in posting order); counted first, since
	// the flush below retires every send before the one it completes.
	sent, lost := q.sent.Load(), uint32(0)
	for i := q.retired.Load(); i != sent-uint32(sq.Pending()); i++ {
		if s := &q.sends[i&q.sendMask]; s.signaled && !s.done {
			lost++
		}
	}
	for i := sq.oldestPending(); i != sq.next; i++ {
		e := sq.elem(i)
		wc := flushedWC(get64(e, sqeID), wcOpcode[*(*uint8)(unsafe.Add(e, sqeOpcode))], q.qpn)
		sq.flagWord(i).Store(0)
		q.retireSend(&wc)
		*send = append(*send, wc)
	}
	// Only the count matters from here: the records are not read again
	// before Release.
	q.retired.Store(sent - lost)
	if rq := q.rq; rq != nil {
		for i := rq.oldestPending(); i != rq.next; i++ {
			*recv = append(*recv, flushedWC(get64(rq.elem(i), rqeID), WCOpRecv, q.qpn))
			rq.flagWord(i).Store(0)
			q.recvDone.Add(1)
		}
	}
}

// flushedWC is the completion siw writes for a flushed request (siw_qp.c
// siw_sqe_complete, siw_rqe_complete with SIW_WC_WR_FLUSH_ERR), decoded as
// decodeCQE does.
func flushedWC(id uint64, op WCOpcode, qpn uint32) rdma.WC {
	return rdma.WC{ID: id, Status: WCFlushError, Opcode: op, VendorErr: abi.SIW_WC_WR_FLUSH_ERR, QPN: qpn}
}

// Reset keeps the rings' counters: the kernel keeps its own across a
// reset (docs/siw.md §8), and nothing is outstanding.
func (q *qpState) Reset(sendCQ, recvCQ func(func())) {}

// Release unmaps the rings and frees the doorbell's slot, after DESTROY_QP
// and its CQs' Detach.
func (q *qpState) Release() {
	for _, m := range []*sys.Mapping{q.sqMap, q.rqMap} {
		if m != nil {
			m.Unmap()
		}
	}
	q.dev.Doorbells().Free(q.db)
	q.sqMap, q.rqMap, q.sq, q.rq, q.db = nil, nil, nil, nil, nil
}

// srqState is a siw SRQ: its ring and the count of posted receives.
type srqState struct {
	rq     *RQ
	m      *sys.Mapping
	maxWR  int
	posted atomic.Uint32 // under the SRQ's lock
	done   atomic.Uint32 // by the polls of the CQs of its QPs
}

// CreateSRQ issues CREATE_SRQ and maps the ring of num_rqe elements
// (kernel: siw_verbs.c siw_create_srq; docs/siw.md §2).
func (c *Context) CreateSRQ(dev provider.Device, op string, core abi.UverbsCreateSRQ, maxWR, maxSGE int) (provider.SRQ, uint32, uint32, error) {
	if maxSGE > MaxSGE {
		return nil, 0, 0, fmt.Errorf("siw (device %s) takes at most %d scatter/gather entries per receive, MaxSGE is %d: %w", dev.Name(), MaxSGE, maxSGE, syscall.EINVAL)
	}
	var resp struct {
		core abi.UverbsCreateSRQResp
		drv  abi.SiwUrespCreateSRQ
	}
	if err := dev.Write(op, abi.IB_USER_VERBS_CMD_CREATE_SRQ, bytesOf(&core), bytesOf(&resp)); err != nil {
		return nil, 0, 0, err
	}
	fail := func(err error) (provider.SRQ, uint32, uint32, error) {
		destroy(dev, "destroy_srq", abi.IB_USER_VERBS_CMD_DESTROY_SRQ, &abi.UverbsDestroySRQ{SRQHandle: resp.core.SRQHandle})
		return nil, 0, 0, err
	}
	n := resp.drv.NumRQE
	m, err := mapKey(dev, op, resp.drv.SRQKey, int(n)*RQESize, "siw srq ring")
	if err != nil {
		return fail(err)
	}
	rq, err := NewRQ(m.Bytes(), n, min(int(resp.core.MaxSGE), MaxSGE), dev.Name())
	if err != nil {
		m.Unmap()
		return fail(err)
	}
	return &srqState{rq: rq, m: m, maxWR: int(n)}, resp.core.SRQHandle, resp.core.SRQN, nil
}

// MaxWR is num_rqe.
func (s *srqState) MaxWR() int { return s.maxWR }

// MaxSGE is the SGEs per receive.
func (s *srqState) MaxSGE() int { return s.rq.MaxSGE() }

// QueueSize is the ring's size.
func (s *srqState) QueueSize() int { return s.rq.Size() }

// PostRecv checks and writes wrs into the ring.
func (s *srqState) PostRecv(wrs []rdma.RecvWR) (int, error) {
	i, err := postRecvs(s.rq, wrs)
	s.posted.Add(uint32(i))
	return i, err
}

// Posted counts the receives not completed yet, and reports whether one
// may name lkey: one the kernel has not taken that names it, or one it
// has taken (no longer in the ring) and not completed.
func (s *srqState) Posted(lkey uint32) (n int, usesLKey bool) {
	n = int(s.posted.Load() - s.done.Load())
	return n, n > s.rq.Pending() || s.rq.PendingUsesLKey(lkey)
}

// Release unmaps the ring, after DESTROY_SRQ.
func (s *srqState) Release() { s.m.Unmap() }

// CreateAH refuses: siw has no UD QPs, which are what AHs are for.
func (c *Context) CreateAH(dev provider.Device, op string, core abi.UverbsCreateAH, a provider.AHParams) (provider.AH, uint32, error) {
	return provider.AH{}, 0, fmt.Errorf("siw (device %s) is iWARP and has only RC QPs, so it has no address handles: %w", dev.Name(), rdma.ErrNotSupported)
}
