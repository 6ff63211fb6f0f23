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

// IB_SEND_* flags (enum ib_send_flags).
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

// AVSize is the room of an AH's address; siw has no UD QPs, so an RC
// request has no AH.
const AVSize = provider.AVSize

// QP types (enum ib_qp_type).
const (
	QPTypeRC QPType = 2
	QPTypeUC QPType = 3
	QPTypeUD QPType = 4
)

// The completion values siw completions carry (enum ib_wc_status,
// ib_wc_opcode, ib_wc_flags), mapped from siw's own (docs/siw.md §6). A
// WC's Imm, SrcQP, PKeyIndex, SLID, SL, DLIDPathBits and Port are always
// 0 on siw (no immediate data, RC only, the CQE has no port); VendorErr is
// siw's own status (enum siw_wc_status) when Status is not success.
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
