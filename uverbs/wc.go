package uverbs

import "github.com/goverbs/rdma/uverbs/internal/provider"

// The completion vocabulary is the providers' (uverbs/internal/provider),
// named here.

// WC is a work completion (rdma-core: struct ibv_wc, read from the kernel's
// struct ib_uverbs_wc or decoded from the driver's CQE). When Status is not
// WCSuccess only ID, Status, QPN and VendorErr are meaningful
// (ibv_poll_cq(3)): in particular Opcode is not set on flushed completions.
// Its fields: ID, Status, Opcode, VendorErr, ByteLen (bytes received or
// transferred), Imm (the immediate data of a SEND/WRITE WITH IMM in host
// order, valid when Flags has WCWithImm), InvalidatedRKey (valid when Flags
// has WCWithInvalidate), QPN (the local QP the work request was posted on),
// SrcQP (UD receives: the sender's QPN), Flags, PKeyIndex, SLID, SL,
// DLIDPathBits, Port.
type WC = provider.WC

// WCStatus is the status of a work completion (enum ib_wc_status; rdma-core:
// enum ibv_wc_status). A failed status is data, not a Go error; its Err
// method turns it into one (a WCError). String gives rdma-core's
// ibv_wc_status_str text, Name the C name.
type WCStatus = provider.WCStatus

// WCError is a failed completion status as an error (WCStatus.Err).
type WCError = provider.WCError

// ErrFlushed is matched by the error of a completion flushed because its QP
// was in the error state (IBV_WC_WR_FLUSH_ERR): the work request was not
// executed. Everything posted on a QP that goes to the error state (a failed
// work request, a peer gone, QP.ToError, QP.Close) completes this way.
var ErrFlushed = provider.ErrFlushed

// WCOpcode is the kind of work a completion reports (enum ib_uverbs_wc_opcode;
// rdma-core: enum ibv_wc_opcode). Receive completions have bit 7 set
// (IsRecv).
type WCOpcode = provider.WCOpcode

// WCFlags are the flags of a work completion (enum ib_wc_flags); String
// lists them: "GRH|WITH_IMM".
type WCFlags = provider.WCFlags

// Work completion statuses (rdma-core: enum ibv_wc_status).
const (
	WCSuccess                     = provider.WCSuccess
	WCLocalLengthError            = provider.WCLocalLengthError
	WCLocalQPOpError              = provider.WCLocalQPOpError
	WCLocalEECOpError             = provider.WCLocalEECOpError
	WCLocalProtectionError        = provider.WCLocalProtectionError
	WCFlushError                  = provider.WCFlushError
	WCMWBindError                 = provider.WCMWBindError
	WCBadResponseError            = provider.WCBadResponseError
	WCLocalAccessError            = provider.WCLocalAccessError
	WCRemoteInvalidRequestError   = provider.WCRemoteInvalidRequestError
	WCRemoteAccessError           = provider.WCRemoteAccessError
	WCRemoteOpError               = provider.WCRemoteOpError
	WCRetryExceededError          = provider.WCRetryExceededError
	WCRNRRetryExceededError       = provider.WCRNRRetryExceededError
	WCLocalRDDViolationError      = provider.WCLocalRDDViolationError
	WCRemoteInvalidRDRequestError = provider.WCRemoteInvalidRDRequestError
	WCRemoteAbortError            = provider.WCRemoteAbortError
	WCInvalidEECNError            = provider.WCInvalidEECNError
	WCInvalidEECStateError        = provider.WCInvalidEECStateError
	WCFatalError                  = provider.WCFatalError
	WCResponseTimeoutError        = provider.WCResponseTimeoutError
	WCGeneralError                = provider.WCGeneralError
	WCTMError                     = provider.WCTMError
	WCTMRendezvousIncomplete      = provider.WCTMRendezvousIncomplete
)

// Work completion opcodes (rdma-core: enum ibv_wc_opcode).
const (
	WCOpSend            = provider.WCOpSend
	WCOpRDMAWrite       = provider.WCOpRDMAWrite
	WCOpRDMARead        = provider.WCOpRDMARead
	WCOpCompSwap        = provider.WCOpCompSwap
	WCOpFetchAdd        = provider.WCOpFetchAdd
	WCOpBindMW          = provider.WCOpBindMW
	WCOpLocalInv        = provider.WCOpLocalInv
	WCOpTSO             = provider.WCOpTSO
	WCOpFlush           = provider.WCOpFlush
	WCOpAtomicWrite     = provider.WCOpAtomicWrite
	WCOpRecv            = provider.WCOpRecv
	WCOpRecvRDMAWithImm = provider.WCOpRecvRDMAWithImm
)

// Work completion flags (rdma-core: enum ibv_wc_flags).
const (
	WCGRH                = provider.WCGRH
	WCWithImm            = provider.WCWithImm
	WCWithInvalidate     = provider.WCWithInvalidate
	WCIPCsumOK           = provider.WCIPCsumOK
	WCWithSMAC           = provider.WCWithSMAC
	WCWithVLAN           = provider.WCWithVLAN
	WCWithNetworkHdrType = provider.WCWithNetworkHdrType
)
