package mlx5

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// The mlx5 objects as uverbs holds them (CQState, QPState, SRQState) and
// their create commands with mlx5's driver data, issued through the
// provider.Device. What ties them to uverbs' objects (their locks, the
// registration of queues with CQs, the errors callers see) is in
// uverbs/provider.go.

func bytesOf[T any](p *T) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p)) }

// CQState is the mlx5 state of a CQ: the decoder over the ring and
// doorbell record this process allocated. Guarded by the CQ's lock.
type CQState struct {
	ctx *Context
	Q   *CQ
	Mem *Queue
	// SRQs is set once a QP with an SRQ completes here: polls then take
	// the context's SRQMu, since they return entries to the SRQ.
	SRQs bool
}

// CreateCQ creates a CQ with a ring of its own (verbs.c create_cq, cq.c
// mlx5_alloc_cq_buf): roundup_pow2(depth+1) zeroed entries marked invalid,
// CREATE_CQ with cqe = entries−1 and the ring's and doorbell record's
// addresses (docs/mlx5.md §5, §8). core is the core command; it returns
// the kernel's handle. On an error nothing is left created.
func createCQ(dev provider.Device, mc *Context, op string, core abi.UverbsCreateCQ, depth int) (*CQState, uint32, error) {
	entries, err := CQEntries(depth)
	if err != nil {
		return nil, 0, err
	}
	mem, err := NewQueue(entries*CQESize, "cq ring "+dev.Name())
	if err != nil {
		return nil, 0, err
	}
	InitCQRing(mem.Ring)
	core.CQE = uint32(entries - 1)
	cmd := struct {
		core abi.UverbsCreateCQ
		drv  abi.Mlx5CreateCQ
	}{core, CreateCQCmd(mem.RingAddr(), mem.DBRecAddr())}
	var resp struct {
		core abi.UverbsCreateCQResp
		drv  abi.Mlx5CreateCQResp
	}
	if err := dev.Write(op, abi.IB_USER_VERBS_CMD_CREATE_CQ, bytesOf(&cmd), bytesOf(&resp)); err != nil {
		mem.Unmap()
		return nil, 0, err
	}
	st, err := AttachCQ(mc, mem, entries, resp.drv.Cqn)
	if err != nil {
		req := abi.UverbsDestroyCQ{CQHandle: resp.core.CQHandle}
		var dresp abi.UverbsDestroyCQResp
		dev.Write("destroy_cq", abi.IB_USER_VERBS_CMD_DESTROY_CQ, bytesOf(&req), bytesOf(&dresp))
		mem.Unmap()
		return nil, 0, err
	}
	return st, resp.core.CQHandle, nil
}

// AttachCQ builds the decoder of a created CQ (number cqn) over its ring
// of entries entries.
func AttachCQ(mc *Context, mem *Queue, entries int, cqn uint32) (*CQState, error) {
	// ClearWC: the fields a completion does not fill are zero in a WC.
	q, err := NewCQ(mem.Ring, mem.DBRec[:8], mc.CQUAR, CQConfig{CQN: cqn, Entries: entries, CQEVersion: mc.CQEVersion, ClearWC: true})
	if err != nil {
		return nil, err
	}
	return &CQState{ctx: mc, Q: q, Mem: mem}, nil
}

// Depth is ibv_cq.cqe: the entries less the one libmlx5 keeps free.
func (m *CQState) Depth() int { return len(m.Mem.Ring)/CQESize - 1 }

// Poll decodes up to len(wcs) completions into wcs. The caller holds the
// CQ's lock.
func (m *CQState) Poll(wcs []rdma.WC) (int, error) {
	if m.SRQs {
		m.ctx.SRQMu.Lock()
		defer m.ctx.SRQMu.Unlock()
	}
	n, err := m.Q.Poll(WCs(wcs))
	if err != nil {
		return n, PollError(err)
	}
	return n, nil
}

// PollError is the error of a poll that met an entry it could not use.
func PollError(err error) error {
	return fmt.Errorf("a completion entry names no QP or SRQ of this CQ or has an opcode this package never asks for; it was consumed: %w", err)
}

// Pull moves every completion in the ring to pending, skipping entries
// that name no queue of the CQ (a QP closed before). The caller holds the
// CQ's lock.
func (m *CQState) Pull(pending *[]rdma.WC) {
	var w [1]rdma.WC
	for {
		n, err := m.Poll(w[:])
		if n == 1 {
			*pending = append(*pending, w[0])
			continue
		}
		if err == nil {
			return
		}
	}
}

// Arm arms the CQ: the arm word and the UAR doorbell, no system call
// (docs/mlx5.md §5); it never fails.
func (m *CQState) Arm(solicitedOnly bool) error {
	m.Q.Arm(solicitedOnly)
	return nil
}

// Event counts a completion event of the CQ for its next arm (cq.c
// mlx5_cq_event; provider.CQEvents).
func (m *CQState) Event() { m.Q.Event() }

// Attach makes the CQ complete qp's work requests, by its key (the QPN,
// or the user index with CQE version 1), and srq's receives, by its SRQN;
// with srq, qp takes its receives from srq. The caller holds the CQ's
// lock, and attaches the receive CQ first (with the SRQ), so that both
// CQs see the QP's SRQ.
func (m *CQState) Attach(qp provider.QP, srq provider.SRQ) {
	q := qp.(*QPState)
	if s, ok := srq.(*SRQState); ok {
		q.Reg.SRQ = s.Q
		m.Q.RegisterSRQ(s.SRQN, s.Q)
		m.SRQs = true
	}
	m.Q.RegisterQP(q.Key, &q.Reg)
	if q.Reg.SRQ != nil {
		m.SRQs = true
	}
}

// Detach forgets qp. The caller holds the CQ's lock.
func (m *CQState) Detach(qp provider.QP) { m.Q.Unregister(qp.(*QPState).Key) }

// Release unmaps the ring, after DESTROY_CQ.
func (m *CQState) Release() { m.Mem.Unmap() }

// QPState is the mlx5 state of a QP: one buffer with the receive queue at
// 0 and the send queue after it, the doorbell record, and the bfreg the
// kernel chose (docs/mlx5.md §1, §10). SQ is posted to under the QP's send
// lock, RQ under its receive lock, and their CQs' polls retire their
// requests under the CQ's lock; the two sides share only what SQ and RQ
// order.
type QPState struct {
	ctx            *Context
	Mem            *Queue
	RQRing, SQRing []byte // in Mem.Ring
	SQ             *SQ
	RQ             *RQ // nil with an SRQ
	BF             *BFReg
	Reg            QP
	Key            uint32 // what completions name the QP by: QPN or user index
	UIDX           uint32
}

// CreateQP sizes the queues as libmlx5 does (verbs.c mlx5_calc_sq_size,
// mlx5_calc_rq_size), allocates the buffer and doorbell record, and issues
// CREATE_QP with mlx5's driver data; core is the core command. It returns
// the kernel's handle and QPN. The QP is not registered with its CQs yet.
// On an error nothing is left created.
func createQP(dev provider.Device, mc *Context, op string, core abi.UverbsCreateQP, p provider.QPParams) (*QPState, uint32, uint32, error) {
	sqCfg, sqBytes, err := SQSize(&mc.Lim, p.Type, p.MaxSendWR, p.MaxSendSGE, p.MaxInline)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%v: %w", err, syscall.EINVAL)
	}
	var rqCfg RQConfig
	rqBytes := 0
	if p.SRQ == nil {
		if rqCfg, rqBytes, err = RQSize(&mc.Lim, p.MaxRecvWR, p.MaxRecvSGE); err != nil {
			return nil, 0, 0, fmt.Errorf("%v: %w", err, syscall.EINVAL)
		}
	}
	uidx, err := mc.AllocUIDX()
	if err != nil {
		return nil, 0, 0, err
	}
	// libmlx5 passes the send queue's inline size, not the caller's
	// (docs/mlx5.md §10).
	core.MaxInlineData = CoreMaxInline(sqCfg)
	mem, err := NewQueue(rqBytes+sqBytes, "qp buffer "+dev.Name())
	if err != nil {
		mc.FreeUIDX(uidx)
		return nil, 0, 0, err
	}
	fail := func(err error) (*QPState, uint32, uint32, error) {
		mem.Unmap()
		mc.FreeUIDX(uidx)
		return nil, 0, 0, err
	}
	cmd := struct {
		core abi.UverbsCreateQP
		drv  abi.Mlx5CreateQP
	}{core, CreateQPCmd(mem.RingAddr(), mem.DBRecAddr(), sqCfg, rqCfg, uidx)}
	var resp struct {
		core abi.UverbsCreateQPResp
		drv  abi.Mlx5CreateQPResp
	}
	if err := dev.Write(op, abi.IB_USER_VERBS_CMD_CREATE_QP, bytesOf(&cmd), bytesOf(&resp)); err != nil {
		return fail(err)
	}
	m, err := AttachQP(mc, mem, uidx, int(resp.drv.BfregIndex), resp.core.QPN, sqCfg, rqCfg, p.SignalAll, p.Atomics)
	if err != nil {
		req := abi.UverbsDestroyQP{QPHandle: resp.core.QPHandle}
		var dresp abi.UverbsDestroyQPResp
		dev.Write("destroy_qp", abi.IB_USER_VERBS_CMD_DESTROY_QP, bytesOf(&req), bytesOf(&dresp))
		return fail(err)
	}
	return m, resp.core.QPHandle, resp.core.QPN, nil
}

// AttachQP builds the queues of a created QP (number qpn, bfreg bfi) over
// its buffer.
func AttachQP(mc *Context, mem *Queue, uidx uint32, bfi int, qpn uint32, sqCfg SQConfig, rqCfg RQConfig, signalAll, atomics bool) (*QPState, error) {
	rqBytes := rqCfg.WQECount << rqCfg.WQEShift
	m := &QPState{ctx: mc, Mem: mem, UIDX: uidx, Key: qpn, RQRing: mem.Ring[:rqBytes], SQRing: mem.Ring[rqBytes:]}
	if mc.CQEVersion == 1 {
		m.Key = uidx
	}
	if bfi >= len(mc.BFRegs) {
		return nil, fmt.Errorf("the kernel gave the QP bfreg %d, but the context has %d", bfi, len(mc.BFRegs))
	}
	m.BF = &mc.BFRegs[bfi]
	sqCfg.QPN = qpn
	sqCfg.SignalAll = signalAll
	sqCfg.Atomics = atomics
	var err error
	if m.SQ, err = NewSQ(m.SQRing, mem.DBRec[:8], &m.BF.BF, sqCfg); err != nil {
		return nil, err
	}
	if rqBytes > 0 {
		if m.RQ, err = NewRQ(m.RQRing, mem.DBRec[:8], rqCfg); err != nil {
			return nil, err
		}
	}
	m.Reg = QP{SQ: m.SQ, RQ: m.RQ}
	return m, nil
}

// Caps are the capabilities the QP reports (ibv_qp_cap as libmlx5 fills
// it); libmlx5 may report an inline size of −4, given as 0 here
// (docs/mlx5.md §2).
func (m *QPState) Caps() provider.QPCaps {
	var rqCfg RQConfig
	if m.RQ != nil {
		rqCfg = m.RQ.Config()
	}
	sqCfg := m.SQ.Config()
	sendWR, recvWR, recvSGE, inline := QPCaps(sqCfg, rqCfg)
	return provider.QPCaps{MaxSendWR: sendWR, MaxRecvWR: recvWR, MaxSendSGE: sqCfg.MaxSGE, MaxRecvSGE: recvSGE, MaxInline: max(inline, 0)}
}

// PostSend encodes wrs and rings the doorbell (qp.c _mlx5_post_send,
// post_send_db); with plain, every request passed provider.PlainSend and
// only the room is checked (SQ.PostPlain). The caller holds the QP's send
// lock; the CQ's lock is not taken, as polls share only what SQ orders.
func (m *QPState) PostSend(wrs []provider.SendWR, plain bool) (int, error) {
	if plain {
		return m.SQ.PostPlain(SendWRs(wrs))
	}
	return m.SQ.Post(SendWRs(wrs))
}

// SendQueueSize is sq.max_post.
func (m *QPState) SendQueueSize() int { return m.SQ.Config().MaxPost }

// RecvQueueSize is rq.max_post, 0 without a receive queue.
func (m *QPState) RecvQueueSize() int {
	if m.RQ == nil {
		return 0
	}
	return m.RQ.Config().MaxPost
}

// PostRecv validates and posts receives on the QP's receive queue (qp.c
// mlx5_post_recv), which it must have; on an error it returns the index
// of the refused request. The caller holds the QP's receive lock; as for
// a send, the CQ's lock is not taken.
func (m *QPState) PostRecv(wrs []rdma.RecvWR) (int, error) {
	if i, err := checkRecvs(wrs, m.RQ.MaxSGE()); err != nil {
		return i, err
	}
	return m.RQ.Post(wrs)
}

// checkRecvs checks every receive as the other providers do
// (provider.CheckRecv), so that all refuse bad input with the same errors.
func checkRecvs(wrs []rdma.RecvWR, maxSGE int) (int, error) {
	for i := range wrs {
		// One SGE within the limit cannot fail (its length is one u32).
		if n := len(wrs[i].SGEs); n <= 1 && n <= maxSGE {
			continue
		}
		if err := provider.CheckRecv(wrs[i].SGEs, maxSGE); err != nil {
			return i, err
		}
	}
	return 0, nil
}

// Outstanding counts the requests the CQs have not completed yet. It
// needs no CQ lock: tail is the one counter a poll moves (SQ).
func (m *QPState) Outstanding() (send, recv int) {
	send = m.SQ.Outstanding()
	if m.RQ != nil {
		recv = m.RQ.Outstanding()
	}
	return send, recv
}

// UsesLKey reports whether an outstanding request may name lkey: any
// outstanding send (the send ring is not parsed back), or a posted receive
// whose scatter list names it. The caller holds both QP locks; no CQ lock
// is needed (Outstanding).
func (m *QPState) UsesLKey(lkey uint32) (used bool, send, recv int) {
	send, recv = m.Outstanding()
	if m.RQ != nil {
		used = m.RQ.PendingUsesLKey(lkey)
	}
	return used || send > 0, send, recv
}

// rebuild starts both queues over after a move to RESET, as libmlx5 does
// (verbs.c mlx5_modify_qp: mlx5_init_qp_indices, both doorbell-record
// words zeroed): new queues over the same memory, which the caller puts in
// place of SQ, RQ and Reg's under the CQs' locks. The caller holds both QP
// locks, and no request is outstanding.
func (m *QPState) rebuild() (*SQ, *RQ) {
	sq, err := NewSQ(m.SQRing, m.Mem.DBRec[:8], &m.BF.BF, m.SQ.Config())
	if err != nil {
		panic("mlx5: send queue rebuilt with its own configuration: " + err.Error())
	}
	var rq *RQ
	if m.RQ != nil {
		if rq, err = NewRQ(m.RQRing, m.Mem.DBRec[:8], m.RQ.Config()); err != nil {
			panic("mlx5: receive queue rebuilt with its own configuration: " + err.Error())
		}
	}
	clear(m.Mem.DBRec[:8]) // polls never touch a QP's doorbell record
	return sq, rq
}

// Reset starts both queues over after a move to RESET (rebuild), putting
// the new ones in place under the lock of the CQ that polls each, one at a
// time. The caller holds both QP locks.
func (m *QPState) Reset(sendCQ, recvCQ func(func())) {
	sq, rq := m.rebuild()
	sendCQ(func() { m.SQ, m.Reg.SQ = sq, sq })
	recvCQ(func() { m.RQ, m.Reg.RQ = rq, rq })
}

// Release frees the QP's user index and unmaps its buffer; after
// DESTROY_QP, once its CQs forgot it.
func (m *QPState) Release() {
	m.ctx.FreeUIDX(m.UIDX)
	m.Mem.Unmap()
}

// SRQState is the mlx5 state of an SRQ: its ring and doorbell record, and
// the free list the provider keeps in the ring. Posts hold the SRQ's lock
// and the context's SRQMu; polls that free entries hold SRQMu.
type SRQState struct {
	ctx  *Context
	Q    *SRQ
	Mem  *Queue
	SRQN uint32
}

// CreateSRQ sizes the SRQ as libmlx5 does (srq.c mlx5_alloc_srq_buf),
// prepares its free list and issues CREATE_SRQ with max_wr = entries − 1
// and mlx5's driver data (verbs.c mlx5_create_srq); core is the core
// command. It returns the kernel's handle and SRQN. A basic SRQ has no
// user index: completions name it by SRQN (CQE version 0) or name the QP,
// whose SRQ it is (version 1). On an error nothing is left created.
func createSRQ(dev provider.Device, mc *Context, op string, core abi.UverbsCreateSRQ, maxWR, maxSGE int) (*SRQState, uint32, uint32, error) {
	if err := CheckSRQAttr(&mc.Lim, maxWR, maxSGE); err != nil {
		return nil, 0, 0, err
	}
	cfg, ringBytes, err := SRQSize(&mc.Lim, maxWR, maxSGE)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%v: %w", err, syscall.EINVAL)
	}
	mem, err := NewQueue(ringBytes, "srq ring "+dev.Name())
	if err != nil {
		return nil, 0, 0, err
	}
	q, err := NewSRQ(mem.Ring, mem.DBRec[:4], cfg)
	if err != nil {
		mem.Unmap()
		return nil, 0, 0, err
	}
	core.MaxWR = uint32(SRQCoreMaxWR(cfg))
	core.MaxSGE = uint32(cfg.MaxSGE)
	cmd := struct {
		core abi.UverbsCreateSRQ
		drv  abi.Mlx5CreateSRQ
	}{core, CreateSRQCmd(mem.RingAddr(), mem.DBRecAddr())}
	var resp struct {
		core abi.UverbsCreateSRQResp
		drv  abi.Mlx5CreateSRQResp
	}
	if err := dev.Write(op, abi.IB_USER_VERBS_CMD_CREATE_SRQ, bytesOf(&cmd), bytesOf(&resp)); err != nil {
		mem.Unmap()
		return nil, 0, 0, err
	}
	return &SRQState{ctx: mc, Q: q, Mem: mem, SRQN: resp.core.SRQN}, resp.core.SRQHandle, resp.core.SRQN, nil
}

// PostRecv validates and posts receives (srq.c mlx5_post_srq_recv); on an
// error it returns the index of the refused request. The caller holds the
// SRQ's lock.
func (m *SRQState) PostRecv(wrs []rdma.RecvWR) (int, error) {
	if i, err := checkRecvs(wrs, m.Q.Config().MaxSGE); err != nil {
		return i, err
	}
	m.ctx.SRQMu.Lock()
	i, err := m.Q.Post(wrs)
	m.ctx.SRQMu.Unlock()
	return i, err
}

// MaxWR is the number of receives the ring holds.
func (m *SRQState) MaxWR() int { return m.Q.Config().Tail }

// MaxSGE is the scatter/gather entries per receive.
func (m *SRQState) MaxSGE() int { return m.Q.Config().MaxSGE }

// QueueSize is the receives a post may queue: the entries less one.
func (m *SRQState) QueueSize() int { return m.Q.Config().WQECount - 1 }

// Release unmaps the ring, after DESTROY_SRQ.
func (m *SRQState) Release() { m.Mem.Unmap() }

// Posted counts the posted receives and reports whether one names lkey.
// The caller holds the SRQ's lock.
func (m *SRQState) Posted(lkey uint32) (n int, usesLKey bool) {
	m.ctx.SRQMu.Lock() // polls return entries to the free list
	defer m.ctx.SRQMu.Unlock()
	return m.Q.Posted(lkey)
}

// AHNum is the AH number every mlx5 AH shows the shared send checks,
// which refuse a UD send whose AH number is 0 (provider.AH.Num).
const AHNum = ^uint32(0)

// CreateAH builds an AH's address vector as libmlx5 does (verbs.c
// mlx5_create_ah; docs/mlx5.md §9) for a port link link: on Ethernet with
// the destination MAC the kernel resolves in CREATE_AH (struct
// mlx5_ib_create_ah_resp). libmlx5 makes no kernel AH on InfiniBand; this
// package always does, so that every AH has a handle. core is the core
// command; it returns the address vector and the kernel's handle. On an
// error nothing is left created.
func createAH(dev provider.Device, op string, core abi.UverbsCreateAH, a *AHAttr, link PortLink, random uint32) (AddressVector, uint32, error) {
	// The checks first, as libmlx5 makes them before the command.
	if _, err := BuildAV(a, link, [6]byte{}, random); err != nil {
		return AddressVector{}, 0, err
	}
	var resp struct {
		core abi.UverbsCreateAHResp
		drv  abi.Mlx5CreateAHResp
	}
	if err := dev.Write(op, abi.IB_USER_VERBS_CMD_CREATE_AH, bytesOf(&core), bytesOf(&resp)); err != nil {
		return AddressVector{}, 0, err
	}
	h := resp.core.AHHandle
	destroy := func() {
		req := abi.UverbsDestroyAH{AHHandle: h}
		dev.Write("destroy_ah", abi.IB_USER_VERBS_CMD_DESTROY_AH, bytesOf(&req), nil)
	}
	if link.Ethernet && resp.drv.ResponseLength == 0 {
		destroy()
		return AddressVector{}, 0, fmt.Errorf("the kernel did not return the destination MAC address in CREATE_AH (older mlx5 kernels leave it to the library, which this package does not do): %w", rdma.ErrNotSupported)
	}
	av, err := BuildAV(a, link, resp.drv.DMAC, random)
	if err != nil {
		destroy()
		return AddressVector{}, 0, err
	}
	return av, h, nil
}

// Context is a provider.Context: its methods create the objects above.
var (
	_ provider.Context    = (*Context)(nil)
	_ provider.AHPortInfo = (*Context)(nil)
)

// AHPortInfo says that CreateAH reads the port's link in its
// provider.AHParams: the address vector depends on it (BuildAV).
func (*Context) AHPortInfo() {}

// Driver registers the provider, at the driver ABI libmlx5 accepts
// (rdma-core: providers/mlx5/mlx5-abi.h MLX5_UVERBS_MIN/MAX_ABI_VERSION).
var Driver = provider.Driver{ABI: abi.MLX5_IB_UVERBS_ABI_VERSION, Open: Open}

// Open issues GET_CONTEXT with mlx5's driver data (struct
// mlx5_ib_alloc_ucontext_req_v2, AllocUcontextReq) and maps the UAR pages
// (NewContext); it is the provider's provider.Open.
func Open(dev provider.Device, op string, core *abi.UverbsGetContextResp) (provider.Context, error) {
	pageSize := os.Getpagesize()
	var req struct {
		core abi.UverbsGetContext
		drv  abi.Mlx5AllocUcontextReqV2
	}
	req.drv = AllocUcontextReq(pageSize)
	var resp struct {
		core abi.UverbsGetContextResp
		drv  abi.Mlx5AllocUcontextResp
	}
	if err := dev.Write(op, abi.IB_USER_VERBS_CMD_GET_CONTEXT, bytesOf(&req), bytesOf(&resp)); err != nil {
		return nil, err
	}
	*core = resp.core
	mmap := func(off int64, n int, what string) (*sys.Mapping, error) { return dev.Mmap(op, off, n, what) }
	newLock := func() sync.Locker { return new(sync.Mutex) } // a shared BlueFlame register's lock (libmlx5: mlx5_bf.lock)
	mc, err := NewContext(&resp.drv, dev.Name(), pageSize, int(req.drv.NumLowLatencyBfregs), mmap, newLock)
	if err != nil {
		return nil, err
	}
	return mc, nil
}

// CreateCQ creates a CQ (createCQ).
func (mc *Context) CreateCQ(dev provider.Device, op string, core abi.UverbsCreateCQ, depth int) (provider.CQ, uint32, error) {
	m, h, err := createCQ(dev, mc, op, core, depth)
	if err != nil {
		return nil, 0, err
	}
	return m, h, nil
}

// CreateQP creates a QP (createQP).
func (mc *Context) CreateQP(dev provider.Device, op string, core abi.UverbsCreateQP, p provider.QPParams) (provider.QP, uint32, uint32, error) {
	m, h, qpn, err := createQP(dev, mc, op, core, p)
	if err != nil {
		return nil, 0, 0, err
	}
	return m, h, qpn, nil
}

// CreateSRQ creates an SRQ (createSRQ).
func (mc *Context) CreateSRQ(dev provider.Device, op string, core abi.UverbsCreateSRQ, maxWR, maxSGE int) (provider.SRQ, uint32, uint32, error) {
	m, h, srqn, err := createSRQ(dev, mc, op, core, maxWR, maxSGE)
	if err != nil {
		return nil, 0, 0, err
	}
	return m, h, srqn, nil
}

// CreateAH builds an AH's address vector (createAH); UD sends carry it,
// and show the shared checks the stand-in number AHNum.
func (mc *Context) CreateAH(dev provider.Device, op string, core abi.UverbsCreateAH, a provider.AHParams) (provider.AH, uint32, error) {
	attr := AHAttr{
		DLID: a.DLID, SL: a.SL, SrcPathBits: a.SrcPathBits, StaticRate: a.StaticRate, IsGlobal: a.IsGlobal,
		DGID: a.DGID, FlowLabel: a.FlowLabel, SGIDIndex: a.SGIDIndex, HopLimit: a.HopLimit, TrafficClass: a.TrafficClass,
	}
	link := PortLink{Ethernet: a.Ethernet, GRHRequired: a.GRHRequired, RoCEv2: a.RoCEv2}
	av, h, err := createAH(dev, op, core, &attr, link, rand.Uint32())
	if err != nil {
		return provider.AH{}, 0, err
	}
	ah := provider.AH{Num: AHNum}
	*(*AddressVector)(ah.Data[:]) = av
	return ah, h, nil
}

// Close unmaps the UAR pages.
func (mc *Context) Close() { mc.Unmap() }

// NewSRQState is the state of an SRQ over a ring set up already (q in
// mem), for tests that build one without a device.
func NewSRQState(mc *Context, q *SRQ, mem *Queue, srqn uint32) *SRQState {
	return &SRQState{ctx: mc, Q: q, Mem: mem, SRQN: srqn}
}
