package uverbs

import "github.com/goverbs/rdma"

// The completion vocabulary is package rdma's, which the drivers' data
// paths speak too, named here: `go doc github.com/goverbs/rdma WC` shows
// the fields and methods.

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
type WC = rdma.WC

// WCStatus is the status of a work completion (enum ib_wc_status; rdma-core:
// enum ibv_wc_status). A failed status is data, not a Go error; its Err
// method turns it into one (a WCError). String gives rdma-core's
// ibv_wc_status_str text, Name the C name.
type WCStatus = rdma.WCStatus

// WCError is a failed completion status as an error (WCStatus.Err).
type WCError = rdma.WCError

// ErrFlushed is matched by the error of a completion flushed because its QP
// was in the error state (IBV_WC_WR_FLUSH_ERR): the work request was not
// executed. Everything posted on a QP that goes to the error state (a failed
// work request, a peer gone, QP.ToError, QP.Close) completes this way.
var ErrFlushed = rdma.ErrFlushed

// WCOpcode is the kind of work a completion reports (enum ib_uverbs_wc_opcode;
// rdma-core: enum ibv_wc_opcode). Receive completions have bit 7 set
// (IsRecv).
type WCOpcode = rdma.WCOpcode

// WCFlags are the flags of a work completion (enum ib_wc_flags); String
// lists them: "GRH|WITH_IMM".
type WCFlags = rdma.WCFlags

// Work completion statuses (rdma-core: enum ibv_wc_status).
const (
	WCSuccess                     = rdma.WCSuccess
	WCLocalLengthError            = rdma.WCLocalLengthError
	WCLocalQPOpError              = rdma.WCLocalQPOpError
	WCLocalEECOpError             = rdma.WCLocalEECOpError
	WCLocalProtectionError        = rdma.WCLocalProtectionError
	WCFlushError                  = rdma.WCFlushError
	WCMWBindError                 = rdma.WCMWBindError
	WCBadResponseError            = rdma.WCBadResponseError
	WCLocalAccessError            = rdma.WCLocalAccessError
	WCRemoteInvalidRequestError   = rdma.WCRemoteInvalidRequestError
	WCRemoteAccessError           = rdma.WCRemoteAccessError
	WCRemoteOpError               = rdma.WCRemoteOpError
	WCRetryExceededError          = rdma.WCRetryExceededError
	WCRNRRetryExceededError       = rdma.WCRNRRetryExceededError
	WCLocalRDDViolationError      = rdma.WCLocalRDDViolationError
	WCRemoteInvalidRDRequestError = rdma.WCRemoteInvalidRDRequestError
	WCRemoteAbortError            = rdma.WCRemoteAbortError
	WCInvalidEECNError            = rdma.WCInvalidEECNError
	WCInvalidEECStateError        = rdma.WCInvalidEECStateError
	WCFatalError                  = rdma.WCFatalError
	WCResponseTimeoutError        = rdma.WCResponseTimeoutError
	WCGeneralError                = rdma.WCGeneralError
	WCTMError                     = rdma.WCTMError
	WCTMRendezvousIncomplete      = rdma.WCTMRendezvousIncomplete
)

// Work completion opcodes (rdma-core: enum ibv_wc_opcode).
const (
	WCOpSend            = rdma.WCOpSend
	WCOpRDMAWrite       = rdma.WCOpRDMAWrite
	WCOpRDMARead        = rdma.WCOpRDMARead
	WCOpCompSwap        = rdma.WCOpCompSwap
	WCOpFetchAdd        = rdma.WCOpFetchAdd
	WCOpBindMW          = rdma.WCOpBindMW
	WCOpLocalInv        = rdma.WCOpLocalInv
	WCOpTSO             = rdma.WCOpTSO
	WCOpFlush           = rdma.WCOpFlush
	WCOpAtomicWrite     = rdma.WCOpAtomicWrite
	WCOpRecv            = rdma.WCOpRecv
	WCOpRecvRDMAWithImm = rdma.WCOpRecvRDMAWithImm
)

// Work completion flags (rdma-core: enum ibv_wc_flags).
const (
	WCGRH                = rdma.WCGRH
	WCWithImm            = rdma.WCWithImm
	WCWithInvalidate     = rdma.WCWithInvalidate
	WCIPCsumOK           = rdma.WCIPCsumOK
	WCWithSMAC           = rdma.WCWithSMAC
	WCWithVLAN           = rdma.WCWithVLAN
	WCWithNetworkHdrType = rdma.WCWithNetworkHdrType
)
