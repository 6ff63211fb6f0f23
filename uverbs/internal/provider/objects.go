package provider

import (
	"unsafe"

	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/internal/abi"
)

// Every provider (rxe, mlx5, siw) opens a Context when the Device is
// opened, and the Context creates its CQs, QPs, SRQs and AHs, each chosen
// once, at create time. uverbs holds one lock per queue and calls each
// method under the lock its comment names; a provider takes no uverbs lock
// of its own. A verb that not every provider implements is a small
// optional interface (CQResizer, SRQResizer, CQEvents, FlushOnDestroy), a
// command common to all devices that takes driver data on some is one too
// (RegMRData, ModifySRQData), and so is a need for what only some
// providers read (AHPortInfo): uverbs asks for it with a type assertion.

// Driver is a provider as uverbs registers it: one value per driver
// package (rxe.Driver, mlx5.Driver, siw.Driver), one line each in uverbs'
// providers table.
type Driver struct {
	// ABI is the driver ABI version (a uverbs device's abi_version) whose
	// command and ring layouts the provider follows; uverbs refuses a
	// device of the driver with another.
	ABI int
	// Open opens the provider's context on a device.
	Open Open
	// ErrorIsFinal: the driver's QPs never leave the error state, and work
	// posted to a QP in it never completes, so uverbs refuses both rather
	// than break the promise that posted work comes back as a completion
	// (siw).
	ErrorIsFinal bool
	// QueryMayOmitState: QUERY_QP may answer RESET for a QP in another
	// state, and uverbs then keeps the state it recorded (siw).
	QueryMayOmitState bool
}

// Open issues GET_CONTEXT with the provider's driver data and sets up what
// the provider needs for the device's lifetime (mapped registers, limits).
// It copies the core response into *core as soon as the command succeeds,
// and only then: on an error, the caller owns the descriptor *core names
// if it was set (the async event file), and closes it.
type Open func(dev Device, op string, core *abi.UverbsGetContextResp) (Context, error)

// GetContext issues GET_CONTEXT without driver data, as rxe takes it and
// as a device without a data path here is opened, and copies the core
// response into *core. Through write(), unlike the ioctl method, the
// command also creates the context's default async event file and returns
// its descriptor (kernel: core/uverbs_cmd.c ib_uverbs_get_context;
// docs/abi.md §2.6).
func GetContext(dev Device, op string, core *abi.UverbsGetContextResp) error {
	var req abi.UverbsGetContext
	var resp abi.UverbsGetContextResp
	if err := dev.Write(op, abi.IB_USER_VERBS_CMD_GET_CONTEXT, unsafe.Slice((*byte)(unsafe.Pointer(&req)), unsafe.Sizeof(req)), unsafe.Slice((*byte)(unsafe.Pointer(&resp)), unsafe.Sizeof(resp))); err != nil {
		return err
	}
	*core = resp
	return nil
}

// Context is a provider's side of an open device.
type Context interface {
	// CreateCQ issues CREATE_CQ (core is the core command) for a CQ of at
	// least depth entries; it returns the kernel's handle.
	CreateCQ(dev Device, op string, core abi.UverbsCreateCQ, depth int) (CQ, uint32, error)
	// CreateQP issues CREATE_QP; it returns the kernel's handle and QPN.
	// The QP is not attached to its CQs yet (CQ.Attach).
	CreateQP(dev Device, op string, core abi.UverbsCreateQP, p QPParams) (QP, uint32, uint32, error)
	// CreateSRQ issues CREATE_SRQ; it returns the kernel's handle and SRQN.
	CreateSRQ(dev Device, op string, core abi.UverbsCreateSRQ, maxWR, maxSGE int) (SRQ, uint32, uint32, error)
	// CreateAH issues CREATE_AH; it returns what UD sends read of the AH
	// and the kernel's handle. A provider without UD refuses with an
	// error matching ErrNotSupported.
	CreateAH(dev Device, op string, core abi.UverbsCreateAH, a AHParams) (AH, uint32, error)
	// Close releases the context, after every object and the device's
	// descriptor are closed.
	Close()
}

// QPParams are what a QP is created with; SRQ is nil without one.
type QPParams struct {
	Type                             QPType
	MaxSendWR, MaxSendSGE, MaxInline int
	MaxRecvWR, MaxRecvSGE            int
	SRQ                              SRQ
	SignalAll                        bool
	Atomics                          bool // the device supports atomics
}

// QPCaps are the capabilities a QP reports (ibv_qp_cap).
type QPCaps struct {
	MaxSendWR, MaxRecvWR, MaxSendSGE, MaxRecvSGE, MaxInline int
}

// AHParams are an address handle's attributes (ibv_ah_attr) and, for a
// Context that implements AHPortInfo, what the port says of its link
// (Ethernet, GRHRequired, RoCEv2; false for the others).
type AHParams struct {
	DLID         uint16
	SL           uint8
	SrcPathBits  uint8
	StaticRate   uint8
	IsGlobal     bool
	DGID         [16]byte
	FlowLabel    uint32
	SGIDIndex    uint8
	HopLimit     uint8
	TrafficClass uint8
	Ethernet     bool // the port's link layer is Ethernet (RoCE)
	GRHRequired  bool // the port needs a GRH in every AH
	RoCEv2       bool // the source GID is a RoCE v2 one
}

// CQ is a provider's completion queue. Every method but Release runs under
// the CQ's lock.
type CQ interface {
	// Depth is the number of completions the CQ holds (ibv_cq.cqe).
	Depth() int
	// Poll moves up to len(wcs) completions into wcs; an error says that
	// an entry could not be used (it was consumed).
	Poll(wcs []rdma.WC) (int, error)
	// Pull moves every completion in the ring to pending, skipping those
	// it cannot use.
	Pull(pending *[]rdma.WC)
	// Arm arms the CQ; solicitedOnly as ibv_req_notify_cq. mlx5 and siw
	// arm in user space and never fail; rxe issues REQ_NOTIFY_CQ.
	Arm(solicitedOnly bool) error
	// Attach makes the CQ complete qp's work requests, and with srq (the
	// QP's SRQ, given to its receive CQ, which is attached first) srq's
	// receives.
	Attach(qp QP, srq SRQ)
	// Detach forgets qp.
	Detach(qp QP)
	// Release frees the ring, after DESTROY_CQ.
	Release()
}

// CQEvents is implemented by a CQ whose provider counts the completion
// events read (mlx5: the arm sequence, docs/mlx5.md §5). uverbs calls
// Event, under the CQ's lock, for each event of the CQ that was read; a
// CQ without it is not locked for its events.
type CQEvents interface {
	Event()
}

// CQResizer is implemented by a CQ that can be resized (rxe: RESIZE_CQ
// and the new ring mapped). Resize runs under the CQ's lock; handle is the
// CQ's. On an error, lost reports that the kernel switched rings but the
// new one could not be used, so the CQ has no ring left: uverbs then
// treats it as unusable and does not call Release.
type CQResizer interface {
	Resize(dev Device, op string, handle uint32, n int) (lost bool, err error)
}

// QP is a provider's queue pair. PostSend and SendQueueSize run under the
// QP's send lock, PostRecv and RecvQueueSize under its receive lock, Caps
// once at creation, Reset, UsesLKey and Release under both. Outstanding
// runs under both, or without them once posting has stopped (QP.Close
// drains), while the CQs may be polled: what it reads of the completions
// must be safe beside Poll.
type QP interface {
	Caps() QPCaps
	// PostSend posts wrs, checked already by provider.CheckSend (with
	// plain, every one of them passes provider.PlainSend), and rings the
	// doorbell; on an error nothing was posted and the index of the
	// refused request is returned, except that an error with len(wrs)
	// means every request was posted and the doorbell failed after.
	PostSend(wrs []SendWR, plain bool) (int, error)
	// SendQueueSize and RecvQueueSize are the requests each queue holds
	// at most (0: the QP has no receive queue of its own).
	SendQueueSize() int
	RecvQueueSize() int
	// PostRecv checks and posts wrs (provider.CheckRecv); on an error
	// nothing was posted and the index of the refused request is
	// returned.
	PostRecv(wrs []rdma.RecvWR) (int, error)
	// Outstanding counts the requests the CQs have not completed.
	Outstanding() (send, recv int)
	// UsesLKey reports whether an outstanding request may name lkey.
	UsesLKey(lkey uint32) (used bool, send, recv int)
	// Reset starts the queues over after a move to RESET (nothing is
	// outstanding); sendCQ and recvCQ run their function under the lock
	// of the QP's send and receive CQ.
	Reset(sendCQ, recvCQ func(func()))
	// Release frees the QP's memory, after DESTROY_QP and its CQs'
	// Detach.
	Release()
}

// FlushOnDestroy is implemented by a QP whose kernel flushes its rings
// only in some state changes, so that work can stay in them that the
// kernel never completes (siw: work posted after the kernel's own move to
// ERROR, e.g. when the peer closed, or left by a change that skips the
// send ring; docs/siw.md §8). The kernel flushes what it flushes at all
// inside DESTROY_QP, and reads the rings no more once the command returns.
// So QP.Close does not wait for such a QP: it destroys it, pulls the CQs,
// and then calls FlushRings.
type FlushOnDestroy interface {
	// FlushRings runs after DESTROY_QP and the CQs' pull, under the QP's
	// locks; no completion of the QP is left in the CQs or can come. It
	// appends a WCFlushError completion, with the request's ID and
	// opcode, for every request still in the send ring to send and in the
	// receive ring to recv, in ring order, and counts them completed. It
	// also stops counting the sends the kernel took and completed without
	// a completion (unsignaled successes). What stays counted
	// (QP.Outstanding) had a completion the kernel could not write (the CQ
	// was full): lost.
	FlushRings(send, recv *[]rdma.WC)
}

// SRQ is a provider's shared receive queue. Every method but Release runs
// under the SRQ's lock.
type SRQ interface {
	MaxWR() int
	MaxSGE() int
	// QueueSize is the receives it holds at most.
	QueueSize() int
	// PostRecv is QP.PostRecv for the SRQ.
	PostRecv(wrs []rdma.RecvWR) (int, error)
	// Posted counts the posted receives and reports whether one names
	// lkey.
	Posted(lkey uint32) (n int, usesLKey bool)
	// Release frees the ring, after DESTROY_SRQ.
	Release()
}

// SRQResizer is implemented by an SRQ whose receive queue can be resized
// (rxe: MODIFY_SRQ with IB_SRQ_MAX_WR and the new ring mapped), as
// CQResizer: under the SRQ's lock, and lost means the SRQ has no ring
// left.
type SRQResizer interface {
	Resize(dev Device, op string, handle uint32, maxWR int) (lost bool, err error)
}

// AHPortInfo is implemented by a Context whose CreateAH reads what the
// port says of its link in AHParams (mlx5, which builds the address vector
// itself as libmlx5's mlx5_create_ah does from ibv_query_port and the
// source GID's type). For it, uverbs issues QUERY_PORT, and on Ethernet
// for an AH with a global route reads the source GID's entry, before
// CreateAH; the other providers let the kernel judge the attributes in
// CREATE_AH and are spared both.
type AHPortInfo interface {
	AHPortInfo()
}

// RegMRData is implemented by a Context whose driver takes driver data in
// REG_MR (siw: 8 bytes each way, or the kernel fails the command): uverbs
// appends in zero bytes to the core command and out bytes to its
// response. The driver's response is not read.
type RegMRData interface {
	RegMRData() (in, out int)
}

// ModifySRQData is implemented by a Context whose driver takes driver data
// in MODIFY_SRQ (rxe: struct rxe_modify_srq_cmd, or the kernel fails the
// command with EINVAL): uverbs appends in zero bytes to the core command
// when it sets an SRQ's limit.
type ModifySRQData interface {
	ModifySRQData() (in int)
}
