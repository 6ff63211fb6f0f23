package uverbs

import (
	"fmt"

	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/internal/unix"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// SGE is a scatter/gather entry: Length bytes at address Addr inside the
// memory region whose local key is LKey (rdma-core: struct ibv_sge).
// MR.SGE builds one.
type SGE = rdma.SGE

// WROpcode is the operation of a send work request (enum ib_wr_opcode;
// rdma-core: enum ibv_wr_opcode). String gives rdma-core's
// ibv_wr_opcode_str text ("rdma-write").
type WROpcode = rdma.WROpcode

const (
	OpWrite          = rdma.OpWrite          // IBV_WR_RDMA_WRITE
	OpWriteImm       = rdma.OpWriteImm       // IBV_WR_RDMA_WRITE_WITH_IMM: also consumes a receive at the peer
	OpSend           = rdma.OpSend           // IBV_WR_SEND
	OpSendImm        = rdma.OpSendImm        // IBV_WR_SEND_WITH_IMM
	OpRead           = rdma.OpRead           // IBV_WR_RDMA_READ
	OpAtomicCmpSwap  = rdma.OpAtomicCmpSwap  // IBV_WR_ATOMIC_CMP_AND_SWP
	OpAtomicFetchAdd = rdma.OpAtomicFetchAdd // IBV_WR_ATOMIC_FETCH_AND_ADD
	// OpSendInv is a SEND that also asks the peer to invalidate the key
	// in SendWR.InvalidateRKey when the message arrives (RC and UC). What
	// the peer does with the key depends on its driver and on what the key
	// names (docs/kernel-behaviour.md §7): it is meant for a peer in the
	// kernel, whose fast-registration MRs rxe and siw invalidate, such as
	// the kernel's NVMe host. Between two processes it does not do what
	// it says: on rxe the peer's receive fails (WCRemoteInvalidRequestError)
	// and the connection ends, since a process's MR cannot be invalidated
	// that way; siw invalidates the peer's MR, and neither reports it in
	// the peer's completion (WCWithInvalidate is never set for a process
	// on rxe or siw; mlx5's completions carry it).
	OpSendInv = rdma.OpSendInv // IBV_WR_SEND_WITH_INV
)

// SendFlags modify a send work request (enum ib_send_flags; rdma-core: enum
// ibv_send_flags).
type SendFlags = rdma.SendFlags

const (
	// SendFence waits for earlier RDMA READ and atomic requests to complete
	// before this one starts.
	SendFence = rdma.SendFence
	// SendSignaled makes the request produce a completion when it
	// succeeds (failures always do). Every send queue slot is released only
	// when the kernel retires the request, signaled or not.
	SendSignaled = rdma.SendSignaled
	// SendSolicited sets the solicited-event bit: a peer CQ armed with
	// ReqNotify(true) is notified.
	SendSolicited = rdma.SendSolicited
	// SendInline copies the bytes the SGEs point at into the work request
	// at post time (up to QP.Cap().MaxInline in total); the memory may be
	// reused as soon as PostSend returns. The copy reads it through the SGE
	// addresses, so each SGE must lie inside an open Buffer or an open MR
	// of the QP's PD (its LKey is ignored); other addresses are refused
	// with ErrInvalidWR rather than risk a fault. Valid for SEND and RDMA
	// WRITE.
	SendInline = rdma.SendInline
)

// SendWR is a send work request (rdma-core: struct ibv_send_wr).
type SendWR struct {
	ID    uint64 // returned in the completion; any value
	Op    WROpcode
	Flags SendFlags
	// SGEs are the local buffers: the data to send or write, where to put
	// what an RDMA READ reads, or the 8 bytes that receive an atomic's
	// original value. Not more than QP.Cap().MaxSendSGE.
	SGEs []SGE
	// Imm is the immediate data of OpSendImm and OpWriteImm, in host order
	// (it travels in network order and the peer's WC.Imm gives it back in
	// host order); other opcodes ignore it.
	Imm uint32
	// InvalidateRKey is the peer's key that OpSendInv asks it to
	// invalidate, in host order (ibv_send_wr's ex.invalidate_rkey, which
	// shares a union with imm_data there); other opcodes ignore it.
	InvalidateRKey uint32

	RemoteAddr uint64 // RDMA and atomic target address (atomics: 8-byte aligned)
	RKey       uint32 // RDMA and atomic target key
	CompareAdd uint64 // OpAtomicCmpSwap: compare value; OpAtomicFetchAdd: addend
	Swap       uint64 // OpAtomicCmpSwap: value stored if the compare matched

	// UD only: the destination.
	AH         *AH
	RemoteQPN  uint32
	RemoteQKey uint32
}

// RecvWR is a receive work request (rdma-core: struct ibv_recv_wr): ID
// and SGEs. On a UD QP the first 40 bytes of what it receives are a GRH
// area (for IPv4: 20 zero bytes, then the IPv4 header), so the buffers need
// 40 bytes more than the largest message.
type RecvWR = rdma.RecvWR

// Errors of PostSend and PostRecv, all refused before anything is written
// to the ring. Test with errors.Is; they also match unix.EINVAL (or
// unix.ENOMEM for ErrQueueFull), the errnos rdma-core's rxe provider
// returns for the same checks (rdma-core: validate_send_wr in providers/rxe). A
// refusal only a driver's encoder makes (mlx5) matches the error of the
// same check here and that library's errno for it (EOPNOTSUPP for atomics
// the device lacks).
var (
	// ErrQueueFull: the queue has no room for all the work requests of the
	// call. Poll the CQ: send slots are freed when the kernel retires work
	// requests, receive slots when messages arrive.
	ErrQueueFull = rdma.ErrQueueFull
	// ErrInvalidWR is matched by every validation error below.
	ErrInvalidWR          = rdma.ErrInvalidWR
	ErrTooManySGEs        = rdma.ErrTooManySGEs
	ErrInlineTooLong      = rdma.ErrInlineTooLong
	ErrInlineNotAllowed   = rdma.ErrInlineNotAllowed
	ErrAtomicAlignment    = rdma.ErrAtomicAlignment
	ErrAtomicLength       = rdma.ErrAtomicLength
	ErrOpcodeNotSupported = rdma.ErrOpcodeNotSupported
	ErrBadSendFlags       = rdma.ErrBadSendFlags
	ErrLengthOverflow     = rdma.ErrLengthOverflow
	ErrUDAddress          = rdma.ErrUDAddress
	// ErrQPState: the QP's state does not allow posting: receives need
	// INIT or later, sends RTS or later (the kernel refuses the doorbell
	// before RTS, docs/abi.md §3.7).
	ErrQPState error = &qpStateError{}
)

type qpStateError struct{}

func (*qpStateError) Error() string {
	return "the QP's state does not allow posting: post receives from INIT on and sends from RTS on"
}
func (*qpStateError) Is(target error) bool { return target == ErrInvalidWR || target == unix.EINVAL }

// PostError is the error of PostSend, PostRecv and SRQ.PostRecv when a work
// request is refused: Index is its position in the call's list. Nothing of
// the call was posted.
type PostError struct {
	Op    string // "post_send", "post_recv", "post_srq_recv"
	Index int
	ID    uint64
	Err   error
}

// Error returns the error's text.
func (e *PostError) Error() string {
	return fmt.Sprintf("%s: work request %d (ID %#x): %v; nothing was posted", e.Op, e.Index, e.ID, e.Err)
}

// Unwrap returns the error's cause, for errors.Is and errors.As.
func (e *PostError) Unwrap() error { return e.Err }

// ahNum is the number of wr's AH, 0 without one.
func (wr *SendWR) ahNum() uint32 {
	if wr.AH != nil {
		return wr.AH.drv.Num
	}
	return 0
}

// udAddr is the UD destination the checks see (zero without one).
func (wr *SendWR) udAddr() provider.UDAddr {
	return provider.UDAddr{RemoteQPN: wr.RemoteQPN, RemoteQKey: wr.RemoteQKey, AHNum: wr.ahNum()}
}

// plainSends returns the index of the first request of wrs that
// checkSend might refuse, or that needs the PD's MRs looked up (len(wrs)
// if none): each before it has an AH, if any, open and of the QP's PD,
// passes provider.PlainSend and provider.PlainInline, and takes its inline bytes, if
// any, from an open Buffer. One loop without calls, where a call per
// request would cost a list its registers.
func (qp *QP) plainSends(wrs []SendWR) int {
	var list *[]bufEntry
	for i := range wrs {
		wr := &wrs[i]
		ud := provider.UDAddr{RemoteQPN: wr.RemoteQPN, RemoteQKey: wr.RemoteQKey}
		if ah := wr.AH; ah != nil {
			if ah.closed.Load() || ah.pd != qp.pd {
				return i
			}
			ud.AHNum = ah.drv.Num
		}
		if !provider.PlainSend(wr.Op, wr.Flags&^SendInline, len(wr.SGEs), ud, &qp.lim) {
			return i
		}
		if wr.Flags&SendInline == 0 {
			// Each lkey recorded by an earlier post (mrusers.go); a new
			// one is recorded by stageSendSlow (trackSends).
			for j := range wr.SGEs {
				if !qp.sendKeys.has(wr.SGEs[j].LKey) {
					return i
				}
			}
			continue
		}
		// At most one SGE (PlainSend); its bytes are read by the copy.
		if !provider.PlainInline(wr.Op, wr.SGEs, &qp.lim) {
			return i
		}
		if len(wr.SGEs) == 1 && wr.SGEs[0].Length != 0 {
			if list == nil {
				if list = bufferView.Load(); list == nil {
					return i
				}
			}
			// The Buffer of the last inline source first: a list
			// published since may have dropped it, so only on the
			// same list.
			addr, end := wr.SGEs[0].Addr, wr.SGEs[0].Addr+uint64(wr.SGEs[0].Length)
			if list != qp.inlineList || addr < qp.inlineStart || end > qp.inlineEnd || end < addr {
				j := bufferWith(*list, addr, uint64(wr.SGEs[0].Length))
				if j < 0 || !qp.useBuffer((*list)[j].users) {
					return i
				}
				qp.inlineList, qp.inlineStart, qp.inlineEnd = list, (*list)[j].start, (*list)[j].end
			}
		}
	}
	return len(wrs)
}

// stageSendSlow is stageSend for every other list: a closed QP, an empty
// list, a QP not in RTS, or a request plainSends did not pass.
func (qp *QP) stageSendSlow(op string, wrs []SendWR) error {
	if qp.closed {
		return closedErr(op)
	}
	if len(wrs) == 0 {
		return nil
	}
	if st := QPState(qp.state.Load()); st < QPStateRTS {
		return &PostError{Op: op, ID: wrs[0].ID, Err: fmt.Errorf("%w (QP %#x is in %v)", ErrQPState, qp.qpn, st)}
	}
	qp.trackSends(wrs)
	if hasInline(wrs) {
		return qp.stageSendInline(op, wrs)
	}
	return qp.stageSendChecked(op, wrs, nil, false)
}

// stageSendInline checks inline sources against the open Buffers (the
// list published last, read once) and, only when some inline source is not
// inside a Buffer, against the PD's MRs, whose list it holds until the
// inline bytes are copied so that MR.Close waits. For a Buffer, the QP
// records itself among its users (useBuffer), and Buffer.Close waits for
// its users' send locks (bufUsers.wait), so the memory checked stays
// mapped.
func (qp *QP) stageSendInline(op string, wrs []SendWR) error {
	var list []bufEntry
	if p := bufferView.Load(); p != nil {
		list = *p
	}
	if qp.inlineInBuffers(list, wrs) {
		return qp.stageSendChecked(op, wrs, nil, false)
	}
	qp.pd.mrMu.RLock()
	defer qp.pd.mrMu.RUnlock()
	return qp.stageSendChecked(op, wrs, list, true)
}

// stageSendChecked is stageSend once the QP is known to be open and in RTS.
// With checkMRs each inline SGE is checked against the open Buffers of list
// and the PD's MRs (the caller holds the MR list); without, the caller
// found every inline SGE inside an open Buffer.
func (qp *QP) stageSendChecked(op string, wrs []SendWR, list []bufEntry, checkMRs bool) error {
	for i := range wrs {
		if err := qp.checkSend(op, i, &wrs[i], list, checkMRs); err != nil {
			return err
		}
	}
	return qp.writeSends(op, wrs)
}

// checkSend checks request i of a post, with the errors a caller sees: its
// AH, the checks of provider.CheckSend, and with checkMRs its inline sources
// against the open Buffers of list and the PD's MRs. Requests are checked
// on their own fields: each is converted once, where it is written.
func (qp *QP) checkSend(op string, i int, wr *SendWR, list []bufEntry, checkMRs bool) error {
	if wr.AH != nil {
		if err := qp.checkAH(wr.AH); err != nil {
			return &PostError{Op: op, Index: i, ID: wr.ID, Err: err}
		}
	}
	if err := provider.CheckSend(wr.Op, wr.Flags, wr.SGEs, wr.RemoteAddr, wr.udAddr(), &qp.lim); err != nil {
		return &PostError{Op: op, Index: i, ID: wr.ID, Err: err}
	}
	if checkMRs && wr.Flags&SendInline != 0 {
		if j := qp.badInlineSGE(list, wr.SGEs); j >= 0 {
			return &PostError{Op: op, Index: i, ID: wr.ID, Err: fmt.Errorf("%w: inline SGE %d (%d bytes at %#x) is not inside an open Buffer or a registered MR of the QP's PD: inline data must come from a Buffer or a registered MR",
				ErrInvalidWR, j, wr.SGEs[j].Length, wr.SGEs[j].Addr)}
		}
	}
	return nil
}

func hasInline(wrs []SendWR) bool {
	for i := range wrs {
		if wrs[i].Flags&SendInline != 0 {
			return true
		}
	}
	return false
}

// inlineInBuffers reports whether every inline SGE of wrs lies inside a
// Buffer of list that the QP could record itself as a user of.
func (qp *QP) inlineInBuffers(list []bufEntry, wrs []SendWR) bool {
	for i := range wrs {
		if wrs[i].Flags&SendInline == 0 {
			continue
		}
		for _, g := range wrs[i].SGEs {
			if g.Length != 0 && !qp.inlineSource(list, g.Addr, uint64(g.Length)) {
				return false
			}
		}
	}
	return true
}

// inlineSource reports whether [addr, addr+n) lies inside a Buffer of list
// that is not closing, and records the QP among the Buffer's users, so
// that Buffer.Close waits for the caller's send lock before it unmaps
// (buffer.go). The caller holds sendMu.
func (qp *QP) inlineSource(list []bufEntry, addr, n uint64) bool {
	j := bufferWith(list, addr, n)
	return j >= 0 && qp.useBuffer(list[j].users)
}

// badInlineSGE returns the index of the first inline SGE whose bytes are
// not inside an open Buffer or an open MR of the QP's PD, or -1. The inline
// copy reads those addresses in this process, so anything else could fault
// (the lkey is not used for inline data). list is the Buffer list the
// caller read; it holds pd.mrMu (read).
func (qp *QP) badInlineSGE(list []bufEntry, sges []SGE) int {
	for j := range sges {
		a, n := sges[j].Addr, uint64(sges[j].Length)
		if n == 0 {
			continue
		}
		if a == 0 || !(qp.inlineSource(list, a, n) || qp.pd.inMRLocked(a, n)) {
			return j
		}
	}
	return -1
}

func (qp *QP) checkAH(ah *AH) error {
	if ah.closed.Load() {
		return fmt.Errorf("%w: the AH is closed", ErrUDAddress)
	}
	if ah.pd != qp.pd {
		return fmt.Errorf("%w: the AH belongs to another PD than the QP", ErrUDAddress)
	}
	return nil
}
