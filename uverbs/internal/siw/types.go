package siw

import (
	"unsafe"

	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// The work requests and completions are the vocabulary uverbs speaks (the
// root package rdma, and provider's SendWR), so that a caller's requests are read
// where they lie and completions are decoded straight into the caller's
// slice. struct siw_sge has SGE's layout (checked at compile time below),
// so an SGE list is copied into a ring element as it is.
type (
	SGE       = rdma.SGE
	SendWR    = provider.SendWR
	RecvWR    = rdma.RecvWR
	AH        = provider.AH
	WC        = rdma.WC
	WROpcode  = rdma.WROpcode
	SendFlags = rdma.SendFlags
	QPType    = provider.QPType
	WCStatus  = rdma.WCStatus
	WCOpcode  = rdma.WCOpcode
	WCFlags   = rdma.WCFlags
)

var (
	_ [unsafe.Sizeof(SGE{}) - unsafe.Sizeof(abi.SiwSGE{})]byte
	_ [unsafe.Sizeof(abi.SiwSGE{}) - unsafe.Sizeof(SGE{})]byte
	_ [unsafe.Offsetof(SGE{}.Length) - unsafe.Offsetof(abi.SiwSGE{}.Length)]byte
	_ [unsafe.Offsetof(abi.SiwSGE{}.Length) - unsafe.Offsetof(SGE{}.Length)]byte
	_ [unsafe.Offsetof(SGE{}.LKey) - unsafe.Offsetof(abi.SiwSGE{}.LKey)]byte
	_ [unsafe.Offsetof(abi.SiwSGE{}.LKey) - unsafe.Offsetof(SGE{}.LKey)]byte
)

// The opcodes (enum ib_wr_opcode, rdma-core: enum ibv_wr_opcode), as the
// caller gives them; the encoder maps them to enum siw_opcode (docs/siw.md
// §5).
const (
	OpWrite          = rdma.OpWrite           // IBV_WR_RDMA_WRITE
	OpWriteImm       = rdma.OpWriteImm        // IBV_WR_RDMA_WRITE_WITH_IMM
	OpSend           = rdma.OpSend            // IBV_WR_SEND
	OpSendImm        = rdma.OpSendImm         // IBV_WR_SEND_WITH_IMM
	OpRead           = rdma.OpRead            // IBV_WR_RDMA_READ
	OpAtomicCmpSwap  = rdma.OpAtomicCmpSwap   // IBV_WR_ATOMIC_CMP_AND_SWP
	OpAtomicFetchAdd = rdma.OpAtomicFetchAdd  // IBV_WR_ATOMIC_FETCH_AND_ADD
	OpLocalInv       = provider.OpLocalInv    // IBV_WR_LOCAL_INV
	OpBindMW         = provider.OpBindMW      // IBV_WR_BIND_MW
	OpSendInv        = provider.OpSendInv     // IBV_WR_SEND_WITH_INV
	OpFlush          = provider.OpFlush       // IBV_WR_FLUSH (kernel 6.2+)
	OpAtomicWrite    = provider.OpAtomicWrite // IBV_WR_ATOMIC_WRITE (kernel 6.2+)
)

// IB_SEND_* flags (enum ib_send_flags).
const (
	SendFence     = rdma.SendFence
	SendSignaled  = rdma.SendSignaled
	SendSolicited = rdma.SendSolicited
	SendInline    = rdma.SendInline
	SendIPCsum    = provider.SendIPCsum

	SendFlagsKnown = SendFence | SendSignaled | SendSolicited | SendInline | SendIPCsum

	// siwFlags are the flags siw has an SQE flag for (docs/siw.md §5):
	// not IP_CSUM, a checksum offload of Ethernet devices.
	siwFlags = SendFlagsKnown &^ SendIPCsum
)

// AVSize is the room of an AH's address; siw has no UD QPs, so an RC
// request has no AH.
const AVSize = provider.AVSize

// QP types (enum ib_qp_type).
const (
	QPTypeRC = provider.QPTypeRC
	QPTypeUC = provider.QPTypeUC
	QPTypeUD = provider.QPTypeUD
)

// The completion values siw completions carry (enum ib_wc_status,
// ib_wc_opcode, ib_wc_flags), mapped from siw's own (docs/siw.md §6). A
// WC's Imm, SrcQP, PKeyIndex, SLID, SL, DLIDPathBits and Port are always
// 0 on siw (no immediate data, RC only, the CQE has no port); VendorErr is
// siw's own status (enum siw_wc_status) when Status is not success.
const (
	WCSuccess                   = rdma.WCSuccess
	WCLocalLengthError          = rdma.WCLocalLengthError
	WCLocalQPOpError            = rdma.WCLocalQPOpError
	WCLocalProtectionError      = rdma.WCLocalProtectionError
	WCFlushError                = rdma.WCFlushError
	WCBadResponseError          = rdma.WCBadResponseError
	WCLocalAccessError          = rdma.WCLocalAccessError
	WCRemoteInvalidRequestError = rdma.WCRemoteInvalidRequestError
	WCRemoteAccessError         = rdma.WCRemoteAccessError
	WCGeneralError              = rdma.WCGeneralError

	WCOpSend      = rdma.WCOpSend
	WCOpRDMAWrite = rdma.WCOpRDMAWrite
	WCOpRDMARead  = rdma.WCOpRDMARead
	WCOpCompSwap  = rdma.WCOpCompSwap
	WCOpFetchAdd  = rdma.WCOpFetchAdd
	WCOpLocalInv  = rdma.WCOpLocalInv
	WCOpRecv      = rdma.WCOpRecv
	// WCOpUnknown is the opcode of a completion whose siw opcode has no
	// completion opcode; it is no ib_wc_opcode value.
	WCOpUnknown WCOpcode = 0xff

	WCWithInvalidate = rdma.WCWithInvalidate
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
