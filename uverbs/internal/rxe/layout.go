package rxe

import (
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
)

// Byte offsets into the rxe rings and entries, derived from the generated
// UAPI types of internal/abi: struct rxe_queue_buf (rxe_queue.h, mirrored in
// rdma_user_rxe.h), rxe_send_wqe, rxe_recv_wqe, rxe_dma_info, rxe_sge
// (include/uapi/rdma/rdma_user_rxe.h) and ib_uverbs_wc
// (include/uapi/rdma/ib_user_verbs.h). layout_test.go checks each one
// against the documented value.

// struct rxe_queue_buf: the header, then the slots.
const (
	ringLog2ElemSize = int(unsafe.Offsetof(abi.RxeQueueBuf{}.Log2ElemSize))  // 0, written by the kernel
	ringIndexMask    = int(unsafe.Offsetof(abi.RxeQueueBuf{}.IndexMask))     // 4, slots - 1
	ringProducer     = int(unsafe.Offsetof(abi.RxeQueueBuf{}.ProducerIndex)) // 128, own cache line
	ringConsumer     = int(unsafe.Offsetof(abi.RxeQueueBuf{}.ConsumerIndex)) // 256, own cache line
	ringData         = int(abi.RxeQueueBufOffData)                           // 384: slot i at data + (i << log2_elem_size)

	// RingHeaderSize is sizeof(struct rxe_queue_buf).
	RingHeaderSize = ringData
)

// struct rxe_sge (the same layout as struct ibv_sge).
const (
	sgeAddr   = int(unsafe.Offsetof(abi.RxeSGE{}.Addr))   // 0, u64
	sgeLength = int(unsafe.Offsetof(abi.RxeSGE{}.Length)) // 8, u32
	sgeLKey   = int(unsafe.Offsetof(abi.RxeSGE{}.LKey))   // 12, u32

	// SGESize is sizeof(struct rxe_sge).
	SGESize = int(unsafe.Sizeof(abi.RxeSGE{})) // 16
)

// struct rxe_dma_info, relative to its start; the sge[] / inline_data[]
// flexible union follows the fixed part.
const (
	dmaLength    = int(unsafe.Offsetof(abi.RxeDMAInfo{}.Length))    // total bytes
	dmaResid     = int(unsafe.Offsetof(abi.RxeDMAInfo{}.Resid))     // bytes left (= length when posted)
	dmaCurSGE    = int(unsafe.Offsetof(abi.RxeDMAInfo{}.CurSGE))    // 0 when posted
	dmaNumSGE    = int(unsafe.Offsetof(abi.RxeDMAInfo{}.NumSGE))    // number of SGEs
	dmaSGEOffset = int(unsafe.Offsetof(abi.RxeDMAInfo{}.SGEOffset)) // 0 when posted; the inline read cursor
	dmaPayload   = int(abi.RxeDMAInfoOffSGE)                        // 24: sge[] or inline_data[]
)

// struct rxe_send_wqe: struct rxe_send_wr, kernel bookkeeping, struct
// rxe_dma_info, payload. rxe_send_wr has reserved at 8 where
// ib_uverbs_send_wr has num_sge.
const (
	sendWRID   = int(unsafe.Offsetof(abi.RxeSendWQE{}.WR) + unsafe.Offsetof(abi.RxeSendWR{}.WRID))      // 0
	sendOpcode = int(unsafe.Offsetof(abi.RxeSendWQE{}.WR) + unsafe.Offsetof(abi.RxeSendWR{}.Opcode))    // 12
	sendFlags  = int(unsafe.Offsetof(abi.RxeSendWQE{}.WR) + unsafe.Offsetof(abi.RxeSendWR{}.SendFlags)) // 16
	sendEx     = int(abi.RxeSendWROffExImmData)                                                         // 20: __be32 imm_data | u32 invalidate_rkey

	sendRDMAAddr = int(abi.RxeSendWROffWRRDMARemoteAddr) // 24
	sendRDMARKey = int(abi.RxeSendWROffWRRDMARKey)       // 32

	sendAtomicAddr       = int(abi.RxeSendWROffWRAtomicRemoteAddr) // 24
	sendAtomicCompareAdd = int(abi.RxeSendWROffWRAtomicCompareAdd) // 32
	sendAtomicSwap       = int(abi.RxeSendWROffWRAtomicSwap)       // 40
	sendAtomicRKey       = int(abi.RxeSendWROffWRAtomicRKey)       // 48

	sendUDRemoteQPN  = int(abi.RxeSendWROffWRUDRemoteQPN)  // 24
	sendUDRemoteQKey = int(abi.RxeSendWROffWRUDRemoteQKey) // 28
	sendUDAHNum      = int(abi.RxeSendWROffWRUDAHNum)      // 36
	sendUDAV         = int(abi.RxeSendWROffWRUDAV)         // 56: struct rxe_av, where 5.10 has rxe_send_wqe.av
	avSize           = int(unsafe.Sizeof(abi.RxeAV{}))     // 88

	sendStatus = int(unsafe.Offsetof(abi.RxeSendWQE{}.Status)) // 144, kernel-owned
	sendState  = int(unsafe.Offsetof(abi.RxeSendWQE{}.State))  // 148, 0 when posted
	sendIOVA   = int(unsafe.Offsetof(abi.RxeSendWQE{}.IOVA))   // 152: remote address for RDMA and atomics, else 0
	sendDMA    = int(unsafe.Offsetof(abi.RxeSendWQE{}.DMA))    // 184

	// SendWQEHeaderSize is the offset of the SGE list or inline data in a
	// send WQE (offsetof(struct rxe_send_wqe, dma.sge)).
	SendWQEHeaderSize = int(abi.RxeSendWQEOffDMASGE) // 208
)

// struct rxe_recv_wqe.
const (
	recvWRID = int(unsafe.Offsetof(abi.RxeRecvWQE{}.WRID)) // 0
	recvDMA  = int(unsafe.Offsetof(abi.RxeRecvWQE{}.DMA))  // 16

	// RecvWQEHeaderSize is the offset of the SGE list in a receive WQE
	// (offsetof(struct rxe_recv_wqe, dma.sge)).
	RecvWQEHeaderSize = int(abi.RxeRecvWQEOffDMASGE) // 40
)

// struct ib_uverbs_wc at the start of each CQ slot.
const (
	wcWRID         = int(unsafe.Offsetof(abi.UverbsWC{}.WRID))
	wcStatus       = int(unsafe.Offsetof(abi.UverbsWC{}.Status))
	wcOpcode       = int(unsafe.Offsetof(abi.UverbsWC{}.Opcode))
	wcVendorErr    = int(unsafe.Offsetof(abi.UverbsWC{}.VendorErr))
	wcByteLen      = int(unsafe.Offsetof(abi.UverbsWC{}.ByteLen))
	wcEx           = int(abi.UverbsWCOffExImmData) // __be32 imm_data | u32 invalidate_rkey
	wcQPNum        = int(unsafe.Offsetof(abi.UverbsWC{}.QPNum))
	wcSrcQP        = int(unsafe.Offsetof(abi.UverbsWC{}.SrcQP))
	wcFlags        = int(unsafe.Offsetof(abi.UverbsWC{}.WCFlags))
	wcPKeyIndex    = int(unsafe.Offsetof(abi.UverbsWC{}.PKeyIndex))
	wcSLID         = int(unsafe.Offsetof(abi.UverbsWC{}.SLID))
	wcSL           = int(unsafe.Offsetof(abi.UverbsWC{}.SL))
	wcDLIDPathBits = int(unsafe.Offsetof(abi.UverbsWC{}.DLIDPathBits))
	wcPortNum      = int(unsafe.Offsetof(abi.UverbsWC{}.PortNum))

	// WCSize is sizeof(struct ib_uverbs_wc); librxe refuses a CQ whose
	// slots are smaller (providers/rxe/rxe.c rxe_create_cq).
	WCSize = int(unsafe.Sizeof(abi.UverbsWC{})) // 48
)

// Provider limits (drivers/infiniband/sw/rxe/rxe_param.h).
const (
	MaxSGE        = 32  // RXE_MAX_SGE
	MaxInlineData = 512 // RXE_MAX_INLINE_DATA
)
