package rxe

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/goverbs/rdma/internal/mmio"
)

// native is the byte order of the kernel's u16/u32/u64 fields. Only amd64
// and arm64 are built (internal/mmio refuses other GOARCHes); both are
// little-endian.
var native = binary.LittleEndian

// SendOpcode is a send work-request opcode (enum ib_wr_opcode /
// IB_UVERBS_WR_*, the values rxe reads from rxe_send_wr.opcode).
type SendOpcode uint32

const (
	OpRDMAWrite         SendOpcode = 0
	OpRDMAWriteWithImm  SendOpcode = 1
	OpSend              SendOpcode = 2
	OpSendWithImm       SendOpcode = 3
	OpRDMARead          SendOpcode = 4
	OpAtomicCmpAndSwp   SendOpcode = 5
	OpAtomicFetchAndAdd SendOpcode = 6
	OpLocalInv          SendOpcode = 7
	OpBindMW            SendOpcode = 8
	OpSendWithInv       SendOpcode = 9
	OpFlush             SendOpcode = 14 // kernel 6.2+
	OpAtomicWrite       SendOpcode = 15 // kernel 6.2+
)

// SendFlags are IB_SEND_* flags (rxe_send_wr.send_flags).
type SendFlags uint32

const (
	SendFence     SendFlags = 1
	SendSignaled  SendFlags = 2
	SendSolicited SendFlags = 4
	SendInline    SendFlags = 8
	SendIPCsum    SendFlags = 16

	sendFlagsKnown = SendFence | SendSignaled | SendSolicited | SendInline | SendIPCsum
)

// QPType is a QP transport type, with the kernel's values (enum ib_qp_type,
// ib_uverbs_create_qp.qp_type).
type QPType uint8

const (
	QPTypeRC QPType = 2
	QPTypeUC QPType = 3
	QPTypeUD QPType = 4
)

func (t QPType) String() string {
	switch t {
	case QPTypeRC:
		return "RC"
	case QPTypeUC:
		return "UC"
	case QPTypeUD:
		return "UD"
	}
	return fmt.Sprintf("QPType(%d)", uint8(t))
}

// SGE is a scatter/gather entry: Length bytes at virtual address Addr inside
// the memory region whose local key is LKey (struct ibv_sge / rxe_sge).
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// UDAddr addresses a UD send: destination QPN and Q_Key, and the AH number
// CREATE_AH returned in struct rxe_create_ah_resp.
type UDAddr struct {
	RemoteQPN  uint32
	RemoteQKey uint32
	AHNum      uint32
}

// SendWQE is a send work request in Go form, the input of EncodeSend. It
// has the layout of uverbs.SendWR, which checks so at compile time, so that
// a post encodes the caller's requests where they lie, without a copy.
type SendWQE struct {
	ID     uint64 // returned in the completion's wr_id; never a Go pointer
	Opcode SendOpcode
	Flags  SendFlags

	// SGEs are the local buffers. With SendInline their bytes are copied
	// into the WQE by EncodeSend, from the addresses in Addr: they must lie
	// in memory the caller keeps mapped (registered memory), and may be
	// reused as soon as EncodeSend returns.
	SGEs []SGE

	// Ex is the union ex of ibv_send_wr: for *_WITH_IMM the immediate
	// value, in host order (it goes on the wire and into the peer's
	// completion in network order, as the __be32 imm_data of ibv_send_wr
	// does once the caller applies htonl); for LOCAL_INV and SEND_WITH_INV
	// the rkey to invalidate.
	Ex uint32

	RemoteAddr uint64 // RDMA and atomic target address
	RKey       uint32 // RDMA and atomic target key
	CompareAdd uint64 // ATOMIC_CMP_AND_SWP compare value, ATOMIC_FETCH_AND_ADD addend
	Swap       uint64 // ATOMIC_CMP_AND_SWP swap value

	// AH is the caller's address handle, which this package does not read:
	// a UD send's AH number is an argument of EncodeSend and ValidateSend.
	AH unsafe.Pointer
	// The UD destination; leave zero on RC/UC.
	RemoteQPN  uint32
	RemoteQKey uint32
}

// UDAddr is the UD address of wr with the AH number ahNum.
func (wr *SendWQE) UDAddr(ahNum uint32) UDAddr {
	return UDAddr{RemoteQPN: wr.RemoteQPN, RemoteQKey: wr.RemoteQKey, AHNum: ahNum}
}

// SendLimits are the send-queue capabilities the kernel returned from
// CREATE_QP, which validation enforces as librxe does.
type SendLimits struct {
	QPType    QPType
	MaxSGE    int // cap.max_send_sge
	MaxInline int // cap.max_inline_data
}

// opcodeSupported reports whether rxe accepts op on QP type t
// (providers/rxe/rxe.c RXE_SUP_RC/UC/UD_QP_SEND_OPS_FLAGS).
func opcodeSupported(t QPType, op SendOpcode) bool {
	switch t {
	case QPTypeRC:
		return op <= OpSendWithInv || op == OpFlush || op == OpAtomicWrite
	case QPTypeUC:
		return op <= OpSendWithImm || op == OpBindMW || op == OpSendWithInv
	case QPTypeUD:
		return op == OpSend || op == OpSendWithImm
	}
	return false
}

func isAtomic(op SendOpcode) bool {
	return op == OpAtomicCmpAndSwp || op == OpAtomicFetchAndAdd
}

// ValidateSend checks wr against the QP's limits the way librxe does before
// it touches the ring (providers/rxe/rxe.c validate_send_wr), plus checks
// that turn silent kernel-side failures into clear errors. On success
// EncodeSend cannot fail for a slot of an SQ built with the same limits.
// ahNum is the number of wr's AH (0 without one).
func ValidateSend(wr *SendWQE, ahNum uint32, lim *SendLimits) error {
	return CheckSend(wr.Opcode, wr.Flags, wr.SGEs, wr.RemoteAddr, wr.UDAddr(ahNum), lim)
}

// PlainSend reports whether CheckSend accepts a request without looking
// further: a WRITE, WRITE_WITH_IMM, SEND, SEND_WITH_IMM or READ on an RC
// QP with no UD address, or a SEND or SEND_WITH_IMM on a UD QP with an AH;
// no flag but fence, signaled and solicited; at most one SGE (one length
// cannot overflow) within max_send_sge. For an inline request, ask it with
// SendInline left out of flags, and PlainInline too. Both are small
// enough to be inlined, so the common request skips the call; every other
// request (UC ones too) goes to CheckSend.
func PlainSend(op SendOpcode, flags SendFlags, nsge int, ud UDAddr, lim *SendLimits) bool {
	if flags&^(SendFence|SendSignaled|SendSolicited) != 0 || nsge > 1 || nsge > lim.MaxSGE || op > OpRDMARead {
		return false
	}
	if lim.QPType == QPTypeUD {
		return (op == OpSend || op == OpSendWithImm) && ud.AHNum != 0
	}
	return lim.QPType == QPTypeRC && ud == UDAddr{}
}

// PlainInline reports whether CheckSend's inline checks pass for a
// request PlainSend passed with SendInline left out of its flags: not a
// READ, and the one SGE's bytes, if any, within max_inline_data.
func PlainInline(op SendOpcode, sges []SGE, lim *SendLimits) bool {
	return op != OpRDMARead && (len(sges) == 0 || int64(sges[0].Length) <= int64(lim.MaxInline))
}

// CheckSend is ValidateSend on the fields it reads, so that a caller whose
// work requests are in another form validates them without building a
// SendWQE first.
func CheckSend(op SendOpcode, flags SendFlags, sges []SGE, remoteAddr uint64, ud UDAddr, lim *SendLimits) error {
	if !opcodeSupported(lim.QPType, op) {
		return fmt.Errorf("%w: opcode %d on a %v QP", ErrOpcodeNotSupported, op, lim.QPType)
	}
	switch op {
	case OpBindMW, OpFlush, OpAtomicWrite:
		return fmt.Errorf("%w: opcode %d", ErrOpcodeNotImplemented, op)
	}
	if flags&^sendFlagsKnown != 0 {
		return fmt.Errorf("%w: %#x", ErrBadSendFlags, uint32(flags&^sendFlagsKnown))
	}
	if len(sges) > lim.MaxSGE {
		return fmt.Errorf("%w: %d SGEs, max_send_sge is %d", ErrTooManySGEs, len(sges), lim.MaxSGE)
	}
	// Sum in 64 bits so that many large SGEs cannot wrap around (rdma-core
	// 665294c5a / 1e8ed0aff).
	var length uint64
	for i := range sges {
		length += uint64(sges[i].Length)
	}
	if length > math.MaxUint32 {
		return fmt.Errorf("%w: %d bytes", ErrLengthOverflow, length)
	}
	if isAtomic(op) {
		if remoteAddr&7 != 0 {
			return fmt.Errorf("%w: remote address %#x", ErrAtomicAlignment, remoteAddr)
		}
		if length < 8 {
			return fmt.Errorf("%w: local SGEs total %d bytes", ErrAtomicLength, length)
		}
	}
	if flags&SendInline != 0 {
		switch op {
		case OpRDMAWrite, OpRDMAWriteWithImm, OpSend, OpSendWithImm, OpSendWithInv:
		default:
			return fmt.Errorf("%w: opcode %d", ErrInlineNotAllowed, op)
		}
		if length > uint64(lim.MaxInline) {
			return fmt.Errorf("%w: %d bytes, max_inline_data is %d", ErrInlineTooLong, length, lim.MaxInline)
		}
	}
	if lim.QPType == QPTypeUD {
		if ud.AHNum == 0 {
			return fmt.Errorf("%w: UD send to QPN %#x without an AH", ErrUDAddress, ud.RemoteQPN)
		}
	} else if ud != (UDAddr{}) {
		return fmt.Errorf("%w: UD address %+v on a %v QP", ErrUDAddress, ud, lim.QPType)
	}
	return nil
}

// sendSlotSize is the slot size an SQ with these limits needs
// (rxe_qp.c rxe_init_sq: sizeof(rxe_send_wqe) + max(sge*16, inline)).
func sendSlotSize(maxSGE, maxInline int) int {
	return SendWQEHeaderSize + max(maxSGE*SGESize, maxInline)
}

// EncodeSend writes wr, with ahNum the number of its AH (0 without one),
// into slot as a struct rxe_send_wqe, the way librxe
// fills a WQE (providers/rxe/rxe.c init_send_wqe / convert_send_wr): the
// header is zeroed, then wr fields, iova, dma.length = dma.resid = total,
// dma.num_sge, and the SGE list or, with SendInline, the concatenated bytes
// the SGEs point at. Only the header (up to SendWQEHeaderSize) is cleared, as
// librxe clears only the work request it converts: the kernel reads
// dma.num_sge SGEs or dma.length inline bytes and nothing after them
// (docs/abi.md §3.4). wr must have passed ValidateSend, and slot must be a
// slot of an SQ whose limits were validated; otherwise EncodeSend may panic
// on a slice bound (it never writes outside slot).
func EncodeSend(slot []byte, wr *SendWQE, ahNum uint32) {
	// The header through an array view: its fields need no bounds checks.
	h := (*[SendWQEHeaderSize]byte)(slot)
	*h = [SendWQEHeaderSize]byte{}
	native.PutUint64(h[sendWRID:], wr.ID)
	native.PutUint32(h[sendOpcode:], uint32(wr.Opcode))
	native.PutUint32(h[sendFlags:], uint32(wr.Flags))

	switch wr.Opcode {
	case OpRDMAWriteWithImm, OpSendWithImm:
		// __be32 imm_data: network order in the WQE and on the wire.
		binary.BigEndian.PutUint32(h[sendEx:], wr.Ex)
	case OpLocalInv, OpSendWithInv:
		native.PutUint32(h[sendEx:], wr.Ex)
	}

	var iova uint64
	switch wr.Opcode {
	case OpRDMAWrite, OpRDMAWriteWithImm, OpRDMARead:
		native.PutUint64(h[sendRDMAAddr:], wr.RemoteAddr)
		native.PutUint32(h[sendRDMARKey:], wr.RKey)
		iova = wr.RemoteAddr
	case OpAtomicCmpAndSwp, OpAtomicFetchAndAdd:
		native.PutUint64(h[sendAtomicAddr:], wr.RemoteAddr)
		native.PutUint64(h[sendAtomicCompareAdd:], wr.CompareAdd)
		native.PutUint64(h[sendAtomicSwap:], wr.Swap)
		native.PutUint32(h[sendAtomicRKey:], wr.RKey)
		iova = wr.RemoteAddr
	case OpSend, OpSendWithImm:
		native.PutUint32(h[sendUDRemoteQPN:], wr.RemoteQPN)
		native.PutUint32(h[sendUDRemoteQKey:], wr.RemoteQKey)
		native.PutUint32(h[sendUDAHNum:], ahNum)
	}
	native.PutUint64(h[sendIOVA:], iova)

	var length uint32
	payload := slot[SendWQEHeaderSize:]
	if wr.Flags&SendInline != 0 {
		// The kernel reads inline bytes through dma.sge_offset and ignores
		// num_sge (rxe_req.c); librxe still records num_sge.
		if sges := wr.SGEs; len(sges) == 1 { // the common inline request, without the loop
			n := int(sges[0].Length)
			copy(payload[:n], mmio.Bytes(sges[0].Addr, n))
			length = uint32(n)
		} else {
			off := 0
			for i := range sges {
				n := int(sges[i].Length)
				copy(payload[off:off+n], mmio.Bytes(sges[i].Addr, n))
				off += n
			}
			length = uint32(off)
		}
	} else {
		// The list is read into a local first: the stores into slot
		// could alias *wr for all the compiler knows.
		sges := wr.SGEs
		for i := range sges {
			putSGE((*[SGESize]byte)(payload[i*SGESize:]), sges[i])
			length += sges[i].Length
		}
	}
	native.PutUint32(h[sendDMA+dmaLength:], length)
	native.PutUint32(h[sendDMA+dmaResid:], length)
	native.PutUint32(h[sendDMA+dmaNumSGE:], uint32(len(wr.SGEs)))
	// cur_sge, sge_offset, state and status stay 0 from the clear.
}

// SQ is the user side of an rxe send queue: a Producer plus the limits
// every work request is validated against. It does not ring the doorbell:
// after posting, the caller writes POST_SEND with wr_count 0 (rdma-core:
// providers/rxe/rxe.c post_send_db), once per batch.
//
// An SQ is not safe for concurrent use: hold the QP's send lock.
type SQ struct {
	Producer
	lim SendLimits
}

// NewSQ validates a mapped send queue (sq_mi of CREATE_QP) against the
// limits CREATE_QP returned.
func NewSQ(buf []byte, lim SendLimits) (*SQ, error) {
	switch lim.QPType {
	case QPTypeRC, QPTypeUC, QPTypeUD:
	default:
		return nil, fmt.Errorf("rxe: send queue for QP type %v; rxe user QPs are RC, UC or UD", lim.QPType)
	}
	if lim.MaxSGE < 0 || lim.MaxSGE > MaxSGE || lim.MaxInline < 0 || lim.MaxInline > MaxInlineData {
		return nil, fmt.Errorf("rxe: send queue limits max_send_sge %d, max_inline_data %d are outside the rxe maxima %d and %d", lim.MaxSGE, lim.MaxInline, MaxSGE, MaxInlineData)
	}
	p, err := NewProducer(buf, sendSlotSize(lim.MaxSGE, lim.MaxInline))
	if err != nil {
		return nil, err
	}
	return &SQ{Producer: *p, lim: lim}, nil
}

// Limits returns the limits the SQ validates against.
func (q *SQ) Limits() SendLimits { return q.lim }

// Post validates wr, whose AH has the number ahNum (0 without one), writes it into the next free slot and publishes it
// (rdma-core post_one_send). It returns ErrQueueFull when the ring is full
// and a validation error (errors.Is(err, ErrInvalidWR)) otherwise; in both
// cases nothing was written. It allocates nothing on success.
func (q *SQ) Post(wr *SendWQE, ahNum uint32) error {
	if q.Full() {
		return ErrQueueFull
	}
	if err := ValidateSend(wr, ahNum, &q.lim); err != nil {
		return err
	}
	EncodeSend(q.Slot(), wr, ahNum)
	q.Publish()
	return nil
}
