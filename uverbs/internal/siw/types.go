package siw

import (
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// The work requests and completions are the provider vocabulary uverbs
// speaks (uverbs/internal/provider), so that a caller's requests are read
// where they lie and completions are decoded straight into the caller's
// slice. struct siw_sge has SGE's layout (checked at compile time below),
// so an SGE list is copied into a ring element as it is.
type (
	SGE       = provider.SGE
	SendWR    = provider.SendWR
	RecvWR    = provider.RecvWR
	AH        = provider.AH
	WC        = provider.WC
	WROpcode  = provider.WROpcode
	SendFlags = provider.SendFlags
	QPType    = provider.QPType
	WCStatus  = provider.WCStatus
	WCOpcode  = provider.WCOpcode
	WCFlags   = provider.WCFlags
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
	OpWrite          = provider.OpWrite          // IBV_WR_RDMA_WRITE
	OpWriteImm       = provider.OpWriteImm       // IBV_WR_RDMA_WRITE_WITH_IMM
	OpSend           = provider.OpSend           // IBV_WR_SEND
	OpSendImm        = provider.OpSendImm        // IBV_WR_SEND_WITH_IMM
	OpRead           = provider.OpRead           // IBV_WR_RDMA_READ
	OpAtomicCmpSwap  = provider.OpAtomicCmpSwap  // IBV_WR_ATOMIC_CMP_AND_SWP
	OpAtomicFetchAdd = provider.OpAtomicFetchAdd // IBV_WR_ATOMIC_FETCH_AND_ADD
	OpLocalInv       = provider.OpLocalInv       // IBV_WR_LOCAL_INV
	OpBindMW         = provider.OpBindMW         // IBV_WR_BIND_MW
	OpSendInv        = provider.OpSendInv        // IBV_WR_SEND_WITH_INV
	OpFlush          = provider.OpFlush          // IBV_WR_FLUSH (kernel 6.2+)
	OpAtomicWrite    = provider.OpAtomicWrite    // IBV_WR_ATOMIC_WRITE (kernel 6.2+)
)

// IB_SEND_* flags (enum ib_send_flags).
const (
	SendFence     = provider.SendFence
	SendSignaled  = provider.SendSignaled
	SendSolicited = provider.SendSolicited
	SendInline    = provider.SendInline
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
	WCSuccess                   = provider.WCSuccess
	WCLocalLengthError          = provider.WCLocalLengthError
	WCLocalQPOpError            = provider.WCLocalQPOpError
	WCLocalProtectionError      = provider.WCLocalProtectionError
	WCFlushError                = provider.WCFlushError
	WCBadResponseError          = provider.WCBadResponseError
	WCLocalAccessError          = provider.WCLocalAccessError
	WCRemoteInvalidRequestError = provider.WCRemoteInvalidRequestError
	WCRemoteAccessError         = provider.WCRemoteAccessError
	WCGeneralError              = provider.WCGeneralError

	WCOpSend      = provider.WCOpSend
	WCOpRDMAWrite = provider.WCOpRDMAWrite
	WCOpRDMARead  = provider.WCOpRDMARead
	WCOpCompSwap  = provider.WCOpCompSwap
	WCOpFetchAdd  = provider.WCOpFetchAdd
	WCOpLocalInv  = provider.WCOpLocalInv
	WCOpRecv      = provider.WCOpRecv
	// WCOpUnknown is the opcode of a completion whose siw opcode has no
	// completion opcode; it is no ib_wc_opcode value.
	WCOpUnknown WCOpcode = 0xff

	WCWithInvalidate = provider.WCWithInvalidate
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
