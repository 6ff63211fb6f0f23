package siw

import (
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
)

// SGE is a scatter/gather entry: Length bytes at virtual address Addr inside
// the memory region whose local key is LKey (struct ibv_sge). struct
// siw_sge has the same layout (checked at compile time below), so an SGE
// list is copied into a ring element as it is.
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

var (
	_ [unsafe.Sizeof(SGE{}) - unsafe.Sizeof(abi.SiwSGE{})]byte
	_ [unsafe.Sizeof(abi.SiwSGE{}) - unsafe.Sizeof(SGE{})]byte
	_ [unsafe.Offsetof(SGE{}.Length) - unsafe.Offsetof(abi.SiwSGE{}.Length)]byte
	_ [unsafe.Offsetof(abi.SiwSGE{}.Length) - unsafe.Offsetof(SGE{}.Length)]byte
	_ [unsafe.Offsetof(SGE{}.LKey) - unsafe.Offsetof(abi.SiwSGE{}.LKey)]byte
	_ [unsafe.Offsetof(abi.SiwSGE{}.LKey) - unsafe.Offsetof(SGE{}.LKey)]byte
)

// SendOpcode is a send work-request opcode with the values of enum
// ib_wr_opcode (rdma-core: enum ibv_wr_opcode), as the caller gives it;
// the encoder maps it to enum siw_opcode (docs/siw.md §5).
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
)

// SendFlags are IB_SEND_* flags (enum ib_send_flags).
type SendFlags uint32

const (
	SendFence     SendFlags = 1
	SendSignaled  SendFlags = 2
	SendSolicited SendFlags = 4
	SendInline    SendFlags = 8

	sendFlagsKnown = SendFence | SendSignaled | SendSolicited | SendInline
)

// SendWR is a send work request with the fields, names and layout of
// uverbs.SendWR, so that a caller's request can be read in place.
type SendWR struct {
	ID    uint64 // returned in the completion; never a Go pointer
	Op    SendOpcode
	Flags SendFlags
	// SGEs are the local buffers. With SendInline their bytes are copied
	// into the ring element at post time, from the addresses in Addr: they
	// must lie in memory the caller keeps mapped.
	SGEs []SGE
	// Imm is the union ex of ibv_send_wr: on siw only SEND_WITH_INV reads
	// it, as the rkey to invalidate at the peer.
	Imm uint32

	RemoteAddr uint64 // RDMA WRITE and READ target address
	RKey       uint32 // RDMA WRITE and READ target key
	CompareAdd uint64 // atomics, which siw refuses
	Swap       uint64

	// The UD destination, which an RC QP must leave empty.
	AH         unsafe.Pointer
	RemoteQPN  uint32
	RemoteQKey uint32
}

// RecvWR is a receive work request with the fields of uverbs.RecvWR.
type RecvWR struct {
	ID   uint64
	SGEs []SGE
}

// QPType is a QP transport type with the kernel's values (enum ib_qp_type).
type QPType uint8

const (
	QPTypeRC QPType = 2
	QPTypeUC QPType = 3
	QPTypeUD QPType = 4
)

// WC is a work completion with the fields, names and layout of uverbs.WC.
// Status, Opcode and Flags carry the values of enum ib_wc_status,
// ib_wc_opcode and ib_wc_flags, mapped from siw's own (docs/siw.md §6).
type WC struct {
	ID        uint64
	Status    uint32
	Opcode    uint32
	VendorErr uint32 // siw's own status (enum siw_wc_status) when Status is not success
	ByteLen   uint32
	Imm       uint32 // always 0: iWARP has no immediate data
	// InvalidatedRKey is valid when Flags has WCWithInvalidate.
	InvalidatedRKey uint32
	QPN             uint32
	SrcQP           uint32 // always 0 (RC only)
	Flags           uint32
	PKeyIndex       uint16 // always 0
	SLID            uint16 // always 0
	SL              uint8  // always 0
	DLIDPathBits    uint8  // always 0
	Port            uint8  // always 0: the CQE does not carry it
}

// Values of enum ib_wc_status, enum ib_wc_opcode and enum ib_wc_flags that
// siw completions carry.
const (
	WCSuccess                   = 0
	WCLocalLengthError          = 1
	WCLocalQPOpError            = 2
	WCLocalProtectionError      = 4
	WCFlushError                = 5
	WCBadResponseError          = 7
	WCLocalAccessError          = 8
	WCRemoteInvalidRequestError = 9
	WCRemoteAccessError         = 10
	WCGeneralError              = 21

	WCOpSend      = 0
	WCOpRDMAWrite = 1
	WCOpRDMARead  = 2
	WCOpCompSwap  = 3
	WCOpFetchAdd  = 4
	WCOpLocalInv  = 6
	WCOpRecv      = 128
	// WCOpUnknown is the opcode of a completion whose siw opcode this
	// package does not know; it is no ib_wc_opcode value.
	WCOpUnknown = 0xff

	WCWithInvalidate = 4
)

// Sizes of the ring elements (include/uapi/rdma/siw-abi.h).
const (
	SQESize     = int(unsafe.Sizeof(abi.SiwSQE{}))    // 120
	RQESize     = int(unsafe.Sizeof(abi.SiwRQE{}))    // 112
	CQESize     = int(unsafe.Sizeof(abi.SiwCQE{}))    // 32
	CQCtrlSize  = int(unsafe.Sizeof(abi.SiwCQCtrl{})) // 8
	MaxSGE      = abi.SIW_MAX_SGE                     // 6
	MaxInline   = abi.SIW_MAX_INLINE                  // 80
	sgeSize     = int(unsafe.Sizeof(abi.SiwSGE{}))
	flagWordOff = int(unsafe.Offsetof(abi.SiwSQE{}.Flags)) // 8, in all three elements
)
