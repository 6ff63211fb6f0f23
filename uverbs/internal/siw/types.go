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

// WROpcode is a send work-request opcode with the values of enum
// ib_wr_opcode (rdma-core: enum ibv_wr_opcode), as the caller gives it;
// the encoder maps it to enum siw_opcode (docs/siw.md §5). The names and
// values are those of the provider vocabulary uverbs speaks.
type WROpcode uint32

const (
	OpWrite          WROpcode = 0  // IBV_WR_RDMA_WRITE
	OpWriteImm       WROpcode = 1  // IBV_WR_RDMA_WRITE_WITH_IMM
	OpSend           WROpcode = 2  // IBV_WR_SEND
	OpSendImm        WROpcode = 3  // IBV_WR_SEND_WITH_IMM
	OpRead           WROpcode = 4  // IBV_WR_RDMA_READ
	OpAtomicCmpSwap  WROpcode = 5  // IBV_WR_ATOMIC_CMP_AND_SWP
	OpAtomicFetchAdd WROpcode = 6  // IBV_WR_ATOMIC_FETCH_AND_ADD
	OpLocalInv       WROpcode = 7  // IBV_WR_LOCAL_INV
	OpBindMW         WROpcode = 8  // IBV_WR_BIND_MW
	OpSendInv        WROpcode = 9  // IBV_WR_SEND_WITH_INV
	OpFlush          WROpcode = 14 // IBV_WR_FLUSH (kernel 6.2+)
	OpAtomicWrite    WROpcode = 15 // IBV_WR_ATOMIC_WRITE (kernel 6.2+)
)

// SendFlags are IB_SEND_* flags (enum ib_send_flags).
type SendFlags uint32

const (
	SendFence     SendFlags = 1
	SendSignaled  SendFlags = 2
	SendSolicited SendFlags = 4
	SendInline    SendFlags = 8
	SendIPCsum    SendFlags = 16

	SendFlagsKnown = SendFence | SendSignaled | SendSolicited | SendInline | SendIPCsum

	// siwFlags are the flags siw has an SQE flag for (docs/siw.md §5):
	// not IP_CSUM, a checksum offload of Ethernet devices.
	siwFlags = SendFlagsKnown &^ SendIPCsum
)

// AVSize and AH mirror the provider vocabulary's address handle, which
// SendWR points at; siw has no UD QPs, so an RC request has none.
const AVSize = 48

type AH struct {
	Data [AVSize]byte
	Num  uint32
}

// SendWR is a send work request with the fields, names and layout of
// uverbs.SendWR, so that a caller's request can be read in place.
type SendWR struct {
	ID    uint64 // returned in the completion; never a Go pointer
	Op    WROpcode
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
	AH         *AH
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
	Status    WCStatus
	Opcode    WCOpcode
	VendorErr uint32 // siw's own status (enum siw_wc_status) when Status is not success
	ByteLen   uint32
	Imm       uint32 // always 0: iWARP has no immediate data
	// InvalidatedRKey is valid when Flags has WCWithInvalidate.
	InvalidatedRKey uint32
	QPN             uint32
	SrcQP           uint32 // always 0 (RC only)
	Flags           WCFlags
	PKeyIndex       uint16 // always 0
	SLID            uint16 // always 0
	SL              uint8  // always 0
	DLIDPathBits    uint8  // always 0
	Port            uint8  // always 0: the CQE does not carry it
}

// WCStatus, WCOpcode and WCFlags have the values of enum ib_wc_status,
// ib_wc_opcode and ib_wc_flags; the constants are those siw completions
// carry, with the names of the provider vocabulary.
type (
	WCStatus uint32
	WCOpcode uint32
	WCFlags  uint32
)

const (
	WCSuccess                   WCStatus = 0
	WCLocalLengthError          WCStatus = 1
	WCLocalQPOpError            WCStatus = 2
	WCLocalProtectionError      WCStatus = 4
	WCFlushError                WCStatus = 5
	WCBadResponseError          WCStatus = 7
	WCLocalAccessError          WCStatus = 8
	WCRemoteInvalidRequestError WCStatus = 9
	WCRemoteAccessError         WCStatus = 10
	WCGeneralError              WCStatus = 21

	WCOpSend      WCOpcode = 0
	WCOpRDMAWrite WCOpcode = 1
	WCOpRDMARead  WCOpcode = 2
	WCOpCompSwap  WCOpcode = 3
	WCOpFetchAdd  WCOpcode = 4
	WCOpLocalInv  WCOpcode = 6
	WCOpRecv      WCOpcode = 128
	// WCOpUnknown is the opcode of a completion whose siw opcode has no
	// completion opcode; it is no ib_wc_opcode value.
	WCOpUnknown WCOpcode = 0xff

	WCWithInvalidate WCFlags = 4
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
