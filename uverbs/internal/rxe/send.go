package rxe

import (
	"encoding/binary"
	"fmt"

	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/internal/mmio"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// native is the byte order of the kernel's u16/u32/u64 fields. Only amd64
// and arm64 are built (internal/mmio refuses other GOARCHes); both are
// little-endian.
var native = binary.LittleEndian

// The vocabulary is the providers' (uverbs/internal/provider): a send
// work request, its opcodes and flags, with the values rxe reads from
// struct rxe_send_wr (enum ib_wr_opcode, IB_SEND_*).
type (
	SendOpcode = rdma.WROpcode
	SendFlags  = rdma.SendFlags
	QPType     = provider.QPType
	SGE        = rdma.SGE
	UDAddr     = provider.UDAddr
	SendLimits = provider.SendLimits
	// SendWQE is a send work request, the input of EncodeSend: the
	// caller's request, read where it lies, without a copy. With
	// SendInline the bytes its SGEs point at are copied into the WQE by
	// EncodeSend, from the addresses in Addr: they must lie in memory the
	// caller keeps mapped, and may be reused as soon as EncodeSend
	// returns. Imm is the union ex of ibv_send_wr: for *_WITH_IMM the
	// immediate value in host order (it goes on the wire and into the
	// peer's completion in network order); for LOCAL_INV and
	// SEND_WITH_INV the rkey to invalidate.
	SendWQE = provider.SendWR
)

const (
	OpRDMAWrite         = rdma.OpWrite
	OpRDMAWriteWithImm  = rdma.OpWriteImm
	OpSend              = rdma.OpSend
	OpSendWithImm       = rdma.OpSendImm
	OpRDMARead          = rdma.OpRead
	OpAtomicCmpAndSwp   = rdma.OpAtomicCmpSwap
	OpAtomicFetchAndAdd = rdma.OpAtomicFetchAdd
	OpLocalInv          = provider.OpLocalInv
	OpBindMW            = provider.OpBindMW
	OpSendWithInv       = provider.OpSendInv
	OpFlush             = provider.OpFlush
	OpAtomicWrite       = provider.OpAtomicWrite

	SendFence     = rdma.SendFence
	SendSignaled  = rdma.SendSignaled
	SendSolicited = rdma.SendSolicited
	SendInline    = rdma.SendInline
	SendIPCsum    = provider.SendIPCsum

	QPTypeRC = provider.QPTypeRC
	QPTypeUC = provider.QPTypeUC
	QPTypeUD = provider.QPTypeUD
)

// ValidateSend checks wr against the QP's limits before anything touches
// the ring (provider.CheckSend; rdma-core providers/rxe/rxe.c
// validate_send_wr). On success EncodeSend cannot fail for a slot of an SQ
// built with the same limits. ahNum is the number of wr's AH (0 without
// one).
func ValidateSend(wr *SendWQE, ahNum uint32, lim *SendLimits) error {
	ud := UDAddr{RemoteQPN: wr.RemoteQPN, RemoteQKey: wr.RemoteQKey, AHNum: ahNum}
	return provider.CheckSend(wr.Op, wr.Flags, wr.SGEs, wr.RemoteAddr, ud, lim)
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
	native.PutUint32(h[sendOpcode:], uint32(wr.Op))
	native.PutUint32(h[sendFlags:], uint32(wr.Flags))

	switch wr.Op {
	case OpRDMAWriteWithImm, OpSendWithImm:
		// __be32 imm_data: network order in the WQE and on the wire.
		binary.BigEndian.PutUint32(h[sendEx:], wr.Imm)
	case OpLocalInv, OpSendWithInv:
		// ex.invalidate_rkey, host order (the kernel's rxe_req.c
		// init_req_packet puts it in the IETH big-endian).
		native.PutUint32(h[sendEx:], wr.InvalidateRKey)
	}

	var iova uint64
	switch wr.Op {
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
		if ahNum == LegacyAHNum {
			// A kernel without AH numbers reads the address vector
			// here (CreateAH); ah_num stays 0, as librxe leaves it.
			*(*[avSize]byte)(h[sendUDAV:]) = *(*[avSize]byte)(wr.AH.Data[:])
		} else {
			native.PutUint32(h[sendUDAHNum:], ahNum)
		}
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
