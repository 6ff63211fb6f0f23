package rxe

import (
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/internal/unix"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// The rxe objects as uverbs drives them (provider.Context, CQ, QP, SRQ):
// the create commands (rxe takes no driver data in and returns mmap
// information, docs/abi.md §3.2-3.3), the rings the kernel allocated,
// mapped at those offsets, and the prebuilt doorbells (POST_SEND in a slot
// of the device's provider.Doorbells, REQ_NOTIFY_CQ), all through the
// provider.Device. uverbs/provider.go registers Open, and writes rxe's
// common post and poll out behind a type assertion to CQState, QPState and
// SRQState, whose rings it reads directly: the soft-RoCE hot path makes no
// interface call.

func bytesOf[T any](p *T) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p)) }

// Context is rxe's provider.Context. rxe needs nothing for the device's
// lifetime: it has no driver data in GET_CONTEXT and maps nothing per
// context.
type Context struct{}

var (
	_ provider.Context       = (*Context)(nil)
	_ provider.ModifySRQData = (*Context)(nil)
	_ provider.CQ            = (*CQState)(nil)
	_ provider.CQResizer     = (*CQState)(nil)
	_ provider.QP            = (*QPState)(nil)
	_ provider.SRQ           = (*SRQState)(nil)
	_ provider.SRQResizer    = (*SRQState)(nil)
)

// Driver registers the provider: rxe's RXE_UVERBS_ABI_VERSION is 2
// (kernel: sw/rxe/rxe.h).
var Driver = provider.Driver{ABI: 2, Open: Open}

// Open issues GET_CONTEXT, which rxe takes without driver data (kernel:
// sw/rxe/rxe_verbs.c rxe_alloc_ucontext reads none); it is the provider's
// provider.Open.
func Open(dev provider.Device, op string, core *abi.UverbsGetContextResp) (provider.Context, error) {
	if err := provider.GetContext(dev, op, core); err != nil {
		return nil, err
	}
	return &Context{}, nil
}

// Close releases nothing: rxe maps nothing per context.
func (*Context) Close() {}

// ModifySRQData is the driver input every MODIFY_SRQ of rxe carries,
// struct rxe_modify_srq_cmd: rxe_modify_srq fails the command with EINVAL
// when it is shorter (kernel: sw/rxe/rxe_verbs.c). Setting the limit
// leaves its mmap_info_addr 0; a resize sets it (SRQState.Resize).
func (*Context) ModifySRQData() int { return int(unsafe.Sizeof(abi.RxeModifySRQCmd{})) }

// MapRing maps one queue described by mmap info from a create or resize
// response: MAP_SHARED, on the device's descriptor, once (kernel:
// sw/rxe/rxe_mmap.c rxe_mmap; docs/abi.md §3.3).
func MapRing(dev provider.Device, op string, mi abi.RxeMminfo, what string) (*sys.Mapping, error) {
	if mi.Size == 0 {
		return nil, fmt.Errorf("the kernel returned no mmap information for the %s", what)
	}
	return dev.Mmap(op, int64(mi.Offset), int(mi.Size), what+" "+dev.Name())
}

// MapCQ maps a CQ ring described by mmap info and checks its header
// (struct rxe_queue_buf with 128-byte slots, docs/abi.md §3.4).
func MapCQ(dev provider.Device, op string, mi abi.RxeMminfo) (*sys.Mapping, *CQ, error) {
	m, err := MapRing(dev, op, mi, "cq ring")
	if err != nil {
		return nil, nil, err
	}
	q, err := NewCQ(m.Bytes())
	if err != nil {
		m.Unmap()
		return nil, nil, err
	}
	return m, q, nil
}

// MapRQ maps a receive ring (a QP's, or an SRQ's) described by mmap info.
func MapRQ(dev provider.Device, op string, mi abi.RxeMminfo, maxSGE int, what string) (*sys.Mapping, *RQ, error) {
	m, err := MapRing(dev, op, mi, what)
	if err != nil {
		return nil, nil, err
	}
	q, err := NewRQ(m.Bytes(), maxSGE)
	if err != nil {
		m.Unmap()
		return nil, nil, err
	}
	return m, q, nil
}

// CQState is an rxe CQ: its ring, held by value so that uverbs' poll
// reaches the indexes through the asserted *CQState and no further
// pointer, its mapping, and the prebuilt REQ_NOTIFY_CQ command. Guarded by
// the CQ's lock.
type CQState struct {
	CQ
	m      *sys.Mapping
	dev    provider.Device
	notify notifyCmd
}

// notifyCmd is the write() command REQ_NOTIFY_CQ, built once at creation
// so that arming allocates nothing (it has no response pointer, so Go heap
// memory is fine). rxe has no user-mapped arm flag: the command is the arm
// (docs/abi.md §3.10).
type notifyCmd struct {
	hdr abi.UverbsCmdHdr
	req abi.UverbsReqNotifyCQ
}

// CreateCQ issues CREATE_CQ (core is the core command, whose cqe uverbs
// set to depth) and maps the ring. It returns the kernel's handle. On an
// error nothing is left created.
func (*Context) CreateCQ(dev provider.Device, op string, core abi.UverbsCreateCQ, depth int) (provider.CQ, uint32, error) {
	var resp struct {
		core abi.UverbsCreateCQResp
		drv  abi.RxeCreateCQResp
	}
	if err := dev.Write(op, abi.IB_USER_VERBS_CMD_CREATE_CQ, bytesOf(&core), bytesOf(&resp)); err != nil {
		return nil, 0, err
	}
	h := resp.core.CQHandle
	m, q, err := MapCQ(dev, op, resp.drv.MI)
	if err != nil {
		req := abi.UverbsDestroyCQ{CQHandle: h}
		var dresp abi.UverbsDestroyCQResp
		dev.Write("destroy_cq", abi.IB_USER_VERBS_CMD_DESTROY_CQ, bytesOf(&req), bytesOf(&dresp))
		return nil, 0, err
	}
	s := &CQState{CQ: *q, m: m, dev: dev}
	s.notify.hdr = abi.UverbsCmdHdr{
		Command: abi.IB_USER_VERBS_CMD_REQ_NOTIFY_CQ,
		InWords: uint16(unsafe.Sizeof(s.notify) / 4),
	}
	s.notify.req.CQHandle = h
	return s, h, nil
}

// NewCQState is the state of a CQ over a ring set up already (for tests
// that play the kernel's side).
func NewCQState(q *CQ) *CQState { return &CQState{CQ: *q} }

// Depth is the ring's index_mask, the entries it holds.
func (s *CQState) Depth() int { return s.Capacity() }

// Poll decodes up to len(wcs) completions into wcs. It never fails: an
// rxe completion is the core's struct ib_uverbs_wc.
func (s *CQState) Poll(wcs []rdma.WC) (int, error) {
	return s.CQ.Poll(WCs(wcs)), nil
}

// Pull moves every completion in the ring to pending.
func (s *CQState) Pull(pending *[]rdma.WC) {
	var w [1]rdma.WC
	for !s.Empty() {
		DecodeCQE(s.Peek(), &WCs(w[:])[0])
		s.Consume()
		*pending = append(*pending, w[0])
	}
}

// Arm issues REQ_NOTIFY_CQ, which never sleeps in the kernel (rxe: a spin
// lock around the CQ's notify flag; kernel: sw/rxe/rxe_verbs.c
// rxe_req_notify_cq).
func (s *CQState) Arm(solicitedOnly bool) error {
	s.notify.req.SolicitedOnly = 0
	if solicitedOnly {
		s.notify.req.SolicitedOnly = 1
	}
	return s.dev.Doorbell("req_notify_cq", unsafe.Pointer(&s.notify), unsafe.Sizeof(s.notify))
}

// Attach has nothing to record: rxe's completions carry everything a poll
// returns.
func (s *CQState) Attach(qp provider.QP, srq provider.SRQ) {}

// Detach has nothing to forget.
func (s *CQState) Detach(qp provider.QP) {}

// Release unmaps the ring, after DESTROY_CQ.
func (s *CQState) Release() {
	if s.m != nil {
		s.m.Unmap()
	}
	s.m = nil
}

// Resize issues RESIZE_CQ for at least n completions and maps the new
// ring in place of the old (ResizeCQ). When the kernel switched rings but
// the new one could not be mapped, the CQ has no ring left (lost).
func (s *CQState) Resize(dev provider.Device, op string, handle uint32, n int) (lost bool, err error) {
	m, q, switched, err := ResizeCQ(dev, op, handle, n)
	if !switched {
		return false, err
	}
	s.m.Unmap()
	if err != nil {
		s.m, s.CQ = nil, CQ{}
		return true, err
	}
	s.m, s.CQ = m, *q
	return false, nil
}

// ResizeCQ issues RESIZE_CQ for the CQ handle to hold at least n
// completions and maps the new ring. The kernel copied the unread entries
// into it and frees the old one once unmapped (kernel:
// sw/rxe/rxe_queue.c rxe_queue_resize). switched reports that the kernel
// moved to the new ring, even if it could not be mapped.
func ResizeCQ(dev provider.Device, op string, handle uint32, n int) (m *sys.Mapping, q *CQ, switched bool, err error) {
	req := abi.UverbsResizeCQ{CQHandle: handle, CQE: uint32(n)}
	var resp struct {
		core abi.UverbsResizeCQResp
		drv  abi.RxeResizeCQResp
	}
	if err := dev.Write(op, abi.IB_USER_VERBS_CMD_RESIZE_CQ, bytesOf(&req), bytesOf(&resp)); err != nil {
		return nil, nil, false, err
	}
	m, q, err = MapCQ(dev, op, resp.drv.MI)
	return m, q, true, err
}

// QPState is an rxe QP: its send and receive rings, held by value (as
// CQState's ring) so that uverbs' post reaches their indexes through the
// asserted *QPState and no further pointer, the mappings, and the prebuilt
// POST_SEND doorbell. SQ runs under the QP's send lock, RQ under its
// receive lock; RQ is there only with HasRQ (not with an SRQ).
type QPState struct {
	SQ    SQ
	RQ    RQ
	HasRQ bool
	DB    *provider.PostSend // a slot of the device's Doorbells
	dev   provider.Device
	caps  provider.QPCaps
	sqMap *sys.Mapping
	rqMap *sys.Mapping
}

// NewQPState is the state of a QP over rings set up already, whose
// doorbell dev rings (for tests that play the kernel's side: a nil rq is a
// QP with an SRQ).
func NewQPState(dev provider.Device, sq *SQ, rq *RQ) *QPState {
	s := &QPState{SQ: *sq, dev: dev}
	if rq != nil {
		s.RQ, s.HasRQ = *rq, true
	}
	return s
}

// CreateQP checks the capabilities against rxe's WQE layout (at most
// RXE_MAX_SGE scatter/gather entries and RXE_MAX_INLINE_DATA inline bytes,
// kernel: sw/rxe/rxe_param.h), issues CREATE_QP (core is the core command;
// rxe takes no driver input for it and refuses any) and maps the rings of
// rxe_create_qp_resp: rq_mi then sq_mi, no receive ring with an SRQ
// (docs/abi.md §3.2-3.3). On an error nothing is left created.
func (*Context) CreateQP(dev provider.Device, op string, core abi.UverbsCreateQP, p provider.QPParams) (provider.QP, uint32, uint32, error) {
	name := dev.Name()
	if p.MaxSendSGE > MaxSGE || p.MaxRecvSGE > MaxSGE {
		return nil, 0, 0, fmt.Errorf("rxe (device %s) takes at most %d scatter/gather entries per work request, Cap asks %d send and %d receive: %w", name, MaxSGE, p.MaxSendSGE, p.MaxRecvSGE, syscall.EINVAL)
	}
	if p.MaxInline > MaxInlineData {
		return nil, 0, 0, fmt.Errorf("rxe (device %s) holds at most %d bytes of inline data, Cap.MaxInline is %d: %w", name, MaxInlineData, p.MaxInline, syscall.EINVAL)
	}
	var resp struct {
		core abi.UverbsCreateQPResp
		drv  abi.RxeCreateQPResp
	}
	if err := dev.Write(op, abi.IB_USER_VERBS_CMD_CREATE_QP, bytesOf(&core), bytesOf(&resp)); err != nil {
		return nil, 0, 0, err
	}
	s, err := mapQP(dev, op, p.Type, core.IsSRQ != 0, &resp.core, &resp.drv)
	if err != nil {
		req := abi.UverbsDestroyQP{QPHandle: resp.core.QPHandle}
		var dresp abi.UverbsDestroyQPResp
		dev.Write("destroy_qp", abi.IB_USER_VERBS_CMD_DESTROY_QP, bytesOf(&req), bytesOf(&dresp))
		return nil, 0, 0, err
	}
	return s, resp.core.QPHandle, resp.core.QPN, nil
}

// mapQP maps the send ring and the receive ring (without an SRQ), takes a
// doorbell slot, and builds the ring views from their headers. The queue
// sizes come from the rings (their index_mask), since kernel 6.1 echoes
// the requested numbers.
func mapQP(dev provider.Device, op string, typ QPType, hasSRQ bool, core *abi.UverbsCreateQPResp, drv *abi.RxeCreateQPResp) (*QPState, error) {
	s := &QPState{dev: dev}
	fail := func(err error) (*QPState, error) {
		s.Release()
		return nil, err
	}
	var err error
	if !hasSRQ {
		var rq *RQ
		if s.rqMap, rq, err = MapRQ(dev, op, drv.RQMI, int(core.MaxRecvSGE), "rq ring"); err != nil {
			return fail(err)
		}
		s.RQ, s.HasRQ = *rq, true
	}
	if s.sqMap, err = MapRing(dev, op, drv.SQMI, "sq ring"); err != nil {
		return fail(err)
	}
	lim := SendLimits{QPType: typ, MaxSGE: int(core.MaxSendSGE), MaxInline: int(core.MaxInlineData)}
	sq, err := NewSQ(s.sqMap.Bytes(), lim)
	if err != nil {
		return fail(err)
	}
	s.SQ = *sq
	if s.DB, err = dev.Doorbells().New(core.QPHandle, "doorbells "+dev.Name()); err != nil {
		return fail(err)
	}
	s.caps = provider.QPCaps{MaxSendWR: sq.Capacity(), MaxSendSGE: lim.MaxSGE, MaxInline: lim.MaxInline}
	if s.HasRQ {
		s.caps.MaxRecvWR, s.caps.MaxRecvSGE = s.RQ.Capacity(), int(core.MaxRecvSGE)
	}
	return s, nil
}

// Caps are the rings' sizes and the SGE and inline limits CREATE_QP
// returned.
func (s *QPState) Caps() provider.QPCaps { return s.caps }

// SendQueueSize is the send ring's size.
func (s *QPState) SendQueueSize() int { return s.SQ.Capacity() }

// RecvQueueSize is the receive ring's size, 0 with an SRQ.
func (s *QPState) RecvQueueSize() int {
	if !s.HasRQ {
		return 0
	}
	return s.RQ.Capacity()
}

// PostSend writes wrs into the send ring (Write) and rings the doorbell.
// uverbs calls Write under the send queue's lock and rings the doorbell
// after releasing it, as rdma-core's rxe_post_send does.
func (s *QPState) PostSend(wrs []provider.SendWR, _ bool) (int, error) {
	n, err := s.Write(wrs)
	if err != nil {
		return n, err
	}
	if err := s.Doorbell(); err != nil {
		return len(wrs), err
	}
	return len(wrs), nil
}

// Write writes wrs into the send ring if it has room for all and publishes
// them with one producer_index store; the kernel runs them at the next
// doorbell. rxe checks nothing beyond provider.CheckSend, which the caller
// made.
func (s *QPState) Write(wrs []provider.SendWR) (int, error) {
	q := &s.SQ
	if free := q.Free(); free < len(wrs) {
		return free, ErrQueueFull
	}
	for i := range wrs {
		var ah uint32
		if a := wrs[i].AH; a != nil {
			ah = a.Num
		}
		EncodeSend(q.Slot(), &wrs[i], ah)
		q.Stage()
	}
	q.Commit()
	return len(wrs), nil
}

// Doorbell writes the prebuilt POST_SEND command (provider.PostSend): the
// kernel runs the QP's requester on what the ring holds (docs/abi.md §3.7).
func (s *QPState) Doorbell() error {
	if err := s.dev.Doorbell("post_send", unsafe.Pointer(s.DB), provider.PostSendLen); err != nil {
		return fmt.Errorf("the work requests were posted but the kernel refused the doorbell, so they may not run until the next one: %w", err)
	}
	return nil
}

// PostRecv checks wrs and writes them into the receive ring (PostRecvs);
// uverbs calls it only on a QP with a receive ring (RecvQueueSize).
func (s *QPState) PostRecv(wrs []rdma.RecvWR) (int, error) { return PostRecvs(&s.RQ, wrs) }

// PostRecvs checks every receive of wrs against q's SGE limit and the room
// for all of them, then writes them and publishes them with one
// producer_index store; receives need no doorbell. On an error nothing
// was written, and the index of the refused request is returned (of the
// first that did not fit, for a full ring).
func PostRecvs(q *RQ, wrs []rdma.RecvWR) (int, error) {
	maxSGE := q.MaxSGE()
	for i := range wrs {
		// One SGE within the limit cannot fail (its length is one u32):
		// only longer lists need the full check.
		if n := len(wrs[i].SGEs); n <= 1 && n <= maxSGE {
			continue
		}
		if err := CheckRecv(wrs[i].SGEs, maxSGE); err != nil {
			return i, err
		}
	}
	if free := q.Free(); free < len(wrs) {
		return free, ErrQueueFull
	}
	var w RecvWQE
	for i := range wrs {
		if sges := wrs[i].SGEs; len(sges) == 1 {
			EncodeRecvOne(q.Slot(), wrs[i].ID, sges[0])
		} else {
			w = RecvWQE{ID: wrs[i].ID, SGEs: sges}
			EncodeRecv(q.Slot(), &w)
		}
		q.Stage()
	}
	q.Commit()
	return len(wrs), nil
}

// Outstanding counts the entries of the rings the kernel has not consumed
// yet; it loads the kernel's consumer indexes and writes nothing, so it
// may run beside the CQs' polls once posting has stopped.
func (s *QPState) Outstanding() (send, recv int) {
	send = s.SQ.PendingNow()
	if s.HasRQ {
		recv = s.RQ.PendingNow()
	}
	return send, recv
}

// UsesLKey reports whether an entry the kernel has not consumed names
// lkey in its SGE list.
func (s *QPState) UsesLKey(lkey uint32) (used bool, send, recv int) {
	send = s.SQ.PendingNow()
	used = s.SQ.PendingUsesLKey(lkey)
	if s.HasRQ {
		recv = s.RQ.PendingNow()
		used = used || s.RQ.PendingUsesLKey(lkey)
	}
	return used, send, recv
}

// Reset has nothing to do: the kernel starts the rings over itself
// (kernel: sw/rxe/rxe_qp.c rxe_qp_reset).
func (s *QPState) Reset(sendCQ, recvCQ func(func())) {}

// Release unmaps the rings and frees the doorbell's slot, after
// DESTROY_QP (as rdma-core does: the kernel keeps the queue memory until
// the last mapping goes).
func (s *QPState) Release() {
	for _, m := range []*sys.Mapping{s.sqMap, s.rqMap} {
		if m != nil {
			m.Unmap()
		}
	}
	if s.DB != nil {
		s.dev.Doorbells().Free(s.DB)
	}
	s.sqMap, s.rqMap, s.DB = nil, nil, nil
	s.RQ, s.HasRQ = RQ{}, false
}

// SRQState is an rxe SRQ: its ring and mapping. Guarded by the SRQ's
// lock.
type SRQState struct {
	RQ *RQ
	m  *sys.Mapping
}

// NewSRQState is the state of an SRQ over a ring set up already (for
// tests that play the kernel's side).
func NewSRQState(rq *RQ) *SRQState { return &SRQState{RQ: rq} }

// CreateSRQ issues CREATE_SRQ (core is the core command) and maps the
// ring. It returns the kernel's handle and SRQN. On an error nothing is
// left created.
func (*Context) CreateSRQ(dev provider.Device, op string, core abi.UverbsCreateSRQ, maxWR, maxSGE int) (provider.SRQ, uint32, uint32, error) {
	var resp struct {
		core abi.UverbsCreateSRQResp
		drv  abi.RxeCreateSRQResp
	}
	if err := dev.Write(op, abi.IB_USER_VERBS_CMD_CREATE_SRQ, bytesOf(&core), bytesOf(&resp)); err != nil {
		return nil, 0, 0, err
	}
	m, q, err := MapRQ(dev, op, resp.drv.MI, int(resp.core.MaxSGE), "srq ring")
	if err != nil {
		req := abi.UverbsDestroySRQ{SRQHandle: resp.core.SRQHandle}
		var dresp abi.UverbsDestroySRQResp
		dev.Write("destroy_srq", abi.IB_USER_VERBS_CMD_DESTROY_SRQ, bytesOf(&req), bytesOf(&dresp))
		return nil, 0, 0, err
	}
	return &SRQState{RQ: q, m: m}, resp.core.SRQHandle, resp.core.SRQN, nil
}

// MaxWR is the number of receives the ring holds.
func (s *SRQState) MaxWR() int { return s.RQ.Capacity() }

// MaxSGE is the scatter/gather entries per receive.
func (s *SRQState) MaxSGE() int { return s.RQ.MaxSGE() }

// QueueSize is the ring's size.
func (s *SRQState) QueueSize() int { return s.RQ.Capacity() }

// PostRecv checks wrs and writes them into the ring (PostRecvs).
func (s *SRQState) PostRecv(wrs []rdma.RecvWR) (int, error) { return PostRecvs(s.RQ, wrs) }

// Posted counts the receives the kernel has not consumed, and reports
// whether one names lkey.
func (s *SRQState) Posted(lkey uint32) (n int, usesLKey bool) {
	return s.RQ.PendingNow(), s.RQ.PendingUsesLKey(lkey)
}

// Release unmaps the ring, after DESTROY_SRQ.
func (s *SRQState) Release() {
	if s.m != nil {
		s.m.Unmap()
	}
	s.m, s.RQ = nil, nil
}

// srqAttrMaxWR is IB_SRQ_MAX_WR of enum ib_srq_attr_mask (kernel:
// include/rdma/ib_verbs.h; not in the UAPI headers).
const srqAttrMaxWR = 1

// Resize issues MODIFY_SRQ with IB_SRQ_MAX_WR: the kernel copies the
// posted receives into a new ring and writes its mmap information through
// the user pointer of struct rxe_modify_srq_cmd (kernel: sw/rxe/rxe_srq.c
// rxe_srq_from_attr; docs/abi.md §3.11), which must be memory that does
// not move: pinned heap memory. The new ring replaces the mapping; when it
// cannot be mapped the SRQ has no ring left (lost).
func (s *SRQState) Resize(dev provider.Device, op string, handle uint32, maxWR int) (lost bool, err error) {
	mi := new(abi.RxeMminfo)
	var cmd struct {
		core abi.UverbsModifySRQ
		drv  abi.RxeModifySRQCmd
	}
	cmd.core = abi.UverbsModifySRQ{SRQHandle: handle, AttrMask: srqAttrMaxWR, MaxWR: uint32(maxWR)}
	var pin runtime.Pinner
	pin.Pin(mi)
	cmd.drv.MmapInfoAddr = uint64(uintptr(unsafe.Pointer(mi)))
	err = dev.Write(op, abi.IB_USER_VERBS_CMD_MODIFY_SRQ, bytesOf(&cmd), nil)
	pin.Unpin()
	if err != nil {
		return false, err
	}
	m, q, err := MapRQ(dev, op, *mi, s.RQ.MaxSGE(), "srq ring")
	s.m.Unmap()
	if err != nil {
		s.m, s.RQ = nil, nil
		return true, err
	}
	s.m, s.RQ = m, q
	return false, nil
}

// CreateAH issues CREATE_AH (core is the core command) and returns the AH
// number rxe returns after the core response when there is room for it
// (struct rxe_create_ah_resp; kernel: sw/rxe/rxe_verbs.c rxe_create_ah),
// which UD WQEs carry, and the kernel's handle. A kernel whose rxe returns
// no AH number (5.10) reads the address vector from each UD WQE instead:
// then the AH holds a struct rxe_av built as rdma-core's rxe_create_av
// builds it, and its number is the stand-in LegacyAHNum (EncodeSend).
// rxe reads nothing of a. On an error nothing is left created.
func (*Context) CreateAH(dev provider.Device, op string, core abi.UverbsCreateAH, a provider.AHParams) (provider.AH, uint32, error) {
	var resp struct {
		core abi.UverbsCreateAHResp
		drv  abi.RxeCreateAHResp
	}
	if err := dev.Write(op, abi.IB_USER_VERBS_CMD_CREATE_AH, bytesOf(&core), bytesOf(&resp)); err != nil {
		return provider.AH{}, 0, err
	}
	if resp.drv.AHNum != 0 {
		return provider.AH{Num: resp.drv.AHNum}, resp.core.AHHandle, nil
	}
	av, err := legacyAV(dev.Name(), &core.Attr)
	if err != nil {
		req := abi.UverbsDestroyAH{AHHandle: resp.core.AHHandle}
		dev.Write("destroy_ah", abi.IB_USER_VERBS_CMD_DESTROY_AH, bytesOf(&req), nil)
		return provider.AH{}, 0, fmt.Errorf("the kernel (%s) returned no AH number, so UD sends carry the address vector, which needs the source GID: %w", kernelRelease(), err)
	}
	ah := provider.AH{Num: LegacyAHNum}
	*(*abi.RxeAV)(unsafe.Pointer(&ah.Data)) = av
	return ah, resp.core.AHHandle, nil
}

// LegacyAHNum is the number of an AH that holds its address vector
// (CreateAH): rxe's AH numbers are pool indices from 1 (kernel:
// sw/rxe/rxe_param.h RXE_MIN_AH_INDEX), never this one.
const LegacyAHNum = ^uint32(0)

// The address vector fits an AH's room for it.
var _ [provider.AVSize - unsafe.Sizeof(abi.RxeAV{})]byte

// legacyAV builds the struct rxe_av of an AH for a kernel whose UD WQEs
// carry it (5.10: sw/rxe/rxe_av.c rxe_get_av reads wqe->av; rxe_net.c
// routes by its addresses and network type), as rdma-core's rxe_create_av
// does: the port, the global route, the source GID's and destination
// GID's IP addresses, IPv4 for an IPv4-mapped destination GID, else IPv6.
// The source GID comes from sysfs (ports/N/gids/I), as libibverbs reads it
// without the ioctl. The destination MAC is left zero: the kernel's IP
// route resolves it.
func legacyAV(dev string, a *abi.UverbsAHAttr) (abi.RxeAV, error) {
	path := fmt.Sprintf("/sys/class/infiniband/%s/ports/%d/gids/%d", dev, a.PortNum, a.GRH.SGIDIndex)
	b, err := os.ReadFile(path)
	if err != nil {
		return abi.RxeAV{}, err
	}
	sgid, err := netip.ParseAddr(strings.TrimSpace(string(b)))
	if err != nil || !sgid.Is6() {
		return abi.RxeAV{}, fmt.Errorf("%s: %q is not a GID", path, strings.TrimSpace(string(b)))
	}
	return addressVector(sgid.As16(), a), nil
}

// addressVector is legacyAV's struct rxe_av for the source GID sgid.
func addressVector(sgid [16]byte, a *abi.UverbsAHAttr) abi.RxeAV {
	av := abi.RxeAV{PortNum: a.PortNum, NetworkType: abi.RXE_NETWORK_TYPE_IPV6}
	av.GRH.DGID = a.GRH.DGID
	av.GRH.FlowLabel = a.GRH.FlowLabel
	av.GRH.SGIDIndex = a.GRH.SGIDIndex
	av.GRH.HopLimit = a.GRH.HopLimit
	av.GRH.TrafficClass = a.GRH.TrafficClass
	dgid := netip.AddrFrom16(a.GRH.DGID)
	if dgid.Is4In6() {
		av.NetworkType = abi.RXE_NETWORK_TYPE_IPV4
	}
	putSockaddr(&av.SGIDAddr, sgid)
	putSockaddr(&av.DGIDAddr, a.GRH.DGID)
	return av
}

// putSockaddr writes gid as the IP address in a union of struct
// sockaddr_in and sockaddr_in6 (the kernel's rdma_gid2ip): an IPv4-mapped
// GID as AF_INET with the address at offset 4, any other as AF_INET6 with
// it at offset 8.
func putSockaddr(sa *[28]byte, gid [16]byte) {
	*sa = [28]byte{}
	if netip.AddrFrom16(gid).Is4In6() {
		native.PutUint16(sa[0:], syscall.AF_INET)
		copy(sa[4:8], gid[12:])
		return
	}
	native.PutUint16(sa[0:], syscall.AF_INET6)
	copy(sa[8:24], gid[:])
}

// kernelRelease returns uname -r, for errors that depend on the kernel.
func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "(uname failed)"
	}
	return unix.ByteSliceToString(u.Release[:])
}
