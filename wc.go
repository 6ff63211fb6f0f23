package rdma

import (
	"errors"
	"strconv"
	"strings"
)

// WC is a work completion (rdma-core: struct ibv_wc, read from the kernel's
// struct ib_uverbs_wc). When Status is not WCSuccess only ID, Status, QPN
// and VendorErr are meaningful (ibv_poll_cq(3)): in particular Opcode is not
// set on flushed completions.
type WC struct {
	ID        uint64 // the work request's ID
	Status    WCStatus
	Opcode    WCOpcode
	VendorErr uint32
	ByteLen   uint32 // bytes received (receives), bytes transferred (sends)
	// Imm is the immediate data of a SEND/WRITE WITH IMM, in host order;
	// valid when Flags has WCWithImm.
	Imm uint32
	// InvalidatedRKey is valid when Flags has WCWithInvalidate.
	InvalidatedRKey uint32
	QPN             uint32 // the local QP the work request was posted on
	SrcQP           uint32 // UD receives: the sender's QPN
	Flags           WCFlags
	PKeyIndex       uint16
	SLID            uint16
	SL              uint8
	DLIDPathBits    uint8
	Port            uint8
}

// WCStatus is the status of a work completion (enum ib_wc_status; rdma-core:
// enum ibv_wc_status). A failed status is data, not a Go error; Err turns it
// into one.
type WCStatus uint32

const (
	WCSuccess                     WCStatus = 0  // IBV_WC_SUCCESS
	WCLocalLengthError            WCStatus = 1  // IBV_WC_LOC_LEN_ERR
	WCLocalQPOpError              WCStatus = 2  // IBV_WC_LOC_QP_OP_ERR
	WCLocalEECOpError             WCStatus = 3  // IBV_WC_LOC_EEC_OP_ERR
	WCLocalProtectionError        WCStatus = 4  // IBV_WC_LOC_PROT_ERR
	WCFlushError                  WCStatus = 5  // IBV_WC_WR_FLUSH_ERR: the QP was in the error state
	WCMWBindError                 WCStatus = 6  // IBV_WC_MW_BIND_ERR
	WCBadResponseError            WCStatus = 7  // IBV_WC_BAD_RESP_ERR
	WCLocalAccessError            WCStatus = 8  // IBV_WC_LOC_ACCESS_ERR
	WCRemoteInvalidRequestError   WCStatus = 9  // IBV_WC_REM_INV_REQ_ERR
	WCRemoteAccessError           WCStatus = 10 // IBV_WC_REM_ACCESS_ERR
	WCRemoteOpError               WCStatus = 11 // IBV_WC_REM_OP_ERR
	WCRetryExceededError          WCStatus = 12 // IBV_WC_RETRY_EXC_ERR
	WCRNRRetryExceededError       WCStatus = 13 // IBV_WC_RNR_RETRY_EXC_ERR
	WCLocalRDDViolationError      WCStatus = 14 // IBV_WC_LOC_RDD_VIOL_ERR
	WCRemoteInvalidRDRequestError WCStatus = 15 // IBV_WC_REM_INV_RD_REQ_ERR
	WCRemoteAbortError            WCStatus = 16 // IBV_WC_REM_ABORT_ERR
	WCInvalidEECNError            WCStatus = 17 // IBV_WC_INV_EECN_ERR
	WCInvalidEECStateError        WCStatus = 18 // IBV_WC_INV_EEC_STATE_ERR
	WCFatalError                  WCStatus = 19 // IBV_WC_FATAL_ERR
	WCResponseTimeoutError        WCStatus = 20 // IBV_WC_RESP_TIMEOUT_ERR
	WCGeneralError                WCStatus = 21 // IBV_WC_GENERAL_ERR
	WCTMError                     WCStatus = 22 // IBV_WC_TM_ERR
	WCTMRendezvousIncomplete      WCStatus = 23 // IBV_WC_TM_RNDV_INCOMPLETE
)

// wcStatusText are rdma-core's ibv_wc_status_str texts
// (libibverbs/enum_strs.c), and the C names.
var wcStatusText = [...]struct{ str, name string }{
	WCSuccess:                     {"success", "IBV_WC_SUCCESS"},
	WCLocalLengthError:            {"local length error", "IBV_WC_LOC_LEN_ERR"},
	WCLocalQPOpError:              {"local QP operation error", "IBV_WC_LOC_QP_OP_ERR"},
	WCLocalEECOpError:             {"local EE context operation error", "IBV_WC_LOC_EEC_OP_ERR"},
	WCLocalProtectionError:        {"local protection error", "IBV_WC_LOC_PROT_ERR"},
	WCFlushError:                  {"Work Request Flushed Error", "IBV_WC_WR_FLUSH_ERR"},
	WCMWBindError:                 {"memory management operation error", "IBV_WC_MW_BIND_ERR"},
	WCBadResponseError:            {"bad response error", "IBV_WC_BAD_RESP_ERR"},
	WCLocalAccessError:            {"local access error", "IBV_WC_LOC_ACCESS_ERR"},
	WCRemoteInvalidRequestError:   {"remote invalid request error", "IBV_WC_REM_INV_REQ_ERR"},
	WCRemoteAccessError:           {"remote access error", "IBV_WC_REM_ACCESS_ERR"},
	WCRemoteOpError:               {"remote operation error", "IBV_WC_REM_OP_ERR"},
	WCRetryExceededError:          {"transport retry counter exceeded", "IBV_WC_RETRY_EXC_ERR"},
	WCRNRRetryExceededError:       {"RNR retry counter exceeded", "IBV_WC_RNR_RETRY_EXC_ERR"},
	WCLocalRDDViolationError:      {"local RDD violation error", "IBV_WC_LOC_RDD_VIOL_ERR"},
	WCRemoteInvalidRDRequestError: {"remote invalid RD request", "IBV_WC_REM_INV_RD_REQ_ERR"},
	WCRemoteAbortError:            {"aborted error", "IBV_WC_REM_ABORT_ERR"},
	WCInvalidEECNError:            {"invalid EE context number", "IBV_WC_INV_EECN_ERR"},
	WCInvalidEECStateError:        {"invalid EE context state", "IBV_WC_INV_EEC_STATE_ERR"},
	WCFatalError:                  {"fatal error", "IBV_WC_FATAL_ERR"},
	WCResponseTimeoutError:        {"response timeout error", "IBV_WC_RESP_TIMEOUT_ERR"},
	WCGeneralError:                {"general error", "IBV_WC_GENERAL_ERR"},
	WCTMError:                     {"TM error", "IBV_WC_TM_ERR"},
	WCTMRendezvousIncomplete:      {"TM software rendezvous", "IBV_WC_TM_RNDV_INCOMPLETE"},
}

// String returns rdma-core's ibv_wc_status_str text ("remote access error"),
// "unknown" for a value it does not know.
func (s WCStatus) String() string {
	if int(s) < len(wcStatusText) {
		return wcStatusText[s].str
	}
	return "unknown"
}

// Name returns the C name ("IBV_WC_REM_ACCESS_ERR").
func (s WCStatus) Name() string {
	if int(s) < len(wcStatusText) {
		return wcStatusText[s].name
	}
	return "IBV_WC_STATUS_" + strconv.FormatUint(uint64(s), 10)
}

// GoString returns the C name, so %#v prints IBV_WC_REM_ACCESS_ERR.
func (s WCStatus) GoString() string { return s.Name() }

// Err returns nil for WCSuccess and a WCError otherwise (without
// allocating). errors.Is(err, ErrFlushed) holds for WCFlushError.
func (s WCStatus) Err() error {
	if s == WCSuccess {
		return nil
	}
	return WCError{Status: s}
}

// ErrFlushed is matched by the error of a completion flushed because its QP
// was in the error state (IBV_WC_WR_FLUSH_ERR): the work request was not
// executed. Everything posted on a QP that goes to the error state (a failed
// work request, a peer gone, QP.ToError, QP.Close) completes this way.
var ErrFlushed = errors.New("work request flushed: its QP is in the error state and the request was not executed")

// WCError is a failed completion status as an error (WCStatus.Err).
type WCError struct{ Status WCStatus }

func (e WCError) Error() string {
	return "work completion failed: " + e.Status.String() + " (" + e.Status.Name() + ")"
}

// Is makes errors.Is(err, ErrFlushed) true for flushed completions.
func (e WCError) Is(target error) bool {
	return target == ErrFlushed && e.Status == WCFlushError
}

// WCOpcode is the kind of work a completion reports (enum ib_uverbs_wc_opcode;
// rdma-core: enum ibv_wc_opcode). Receive completions have bit 7 set.
type WCOpcode uint32

const (
	WCOpSend            WCOpcode = 0   // IBV_WC_SEND
	WCOpRDMAWrite       WCOpcode = 1   // IBV_WC_RDMA_WRITE
	WCOpRDMARead        WCOpcode = 2   // IBV_WC_RDMA_READ
	WCOpCompSwap        WCOpcode = 3   // IBV_WC_COMP_SWAP
	WCOpFetchAdd        WCOpcode = 4   // IBV_WC_FETCH_ADD
	WCOpBindMW          WCOpcode = 5   // IBV_WC_BIND_MW
	WCOpLocalInv        WCOpcode = 6   // IBV_WC_LOCAL_INV
	WCOpTSO             WCOpcode = 7   // IBV_WC_TSO
	WCOpFlush           WCOpcode = 8   // IBV_WC_FLUSH (kernel 6.2+)
	WCOpAtomicWrite     WCOpcode = 9   // IBV_WC_ATOMIC_WRITE (kernel 6.2+)
	WCOpRecv            WCOpcode = 128 // IBV_WC_RECV
	WCOpRecvRDMAWithImm WCOpcode = 129 // IBV_WC_RECV_RDMA_WITH_IMM
)

var wcOpcodeNames = map[WCOpcode]string{
	WCOpSend:            "SEND",
	WCOpRDMAWrite:       "RDMA_WRITE",
	WCOpRDMARead:        "RDMA_READ",
	WCOpCompSwap:        "COMP_SWAP",
	WCOpFetchAdd:        "FETCH_ADD",
	WCOpBindMW:          "BIND_MW",
	WCOpLocalInv:        "LOCAL_INV",
	WCOpTSO:             "TSO",
	WCOpFlush:           "FLUSH",
	WCOpAtomicWrite:     "ATOMIC_WRITE",
	WCOpRecv:            "RECV",
	WCOpRecvRDMAWithImm: "RECV_RDMA_WITH_IMM",
}

// String returns the C name without its IBV_WC_ prefix ("RDMA_WRITE").
func (o WCOpcode) String() string {
	if s, ok := wcOpcodeNames[o]; ok {
		return s
	}
	return "WC_OPCODE_" + strconv.FormatUint(uint64(o), 10)
}

// IsRecv reports whether the completion is of a receive work request.
func (o WCOpcode) IsRecv() bool { return o&WCOpRecv != 0 }

// WCFlags are the flags of a work completion (enum ib_wc_flags).
type WCFlags uint32

const (
	WCGRH                WCFlags = 1 // the receive buffer starts with a 40-byte GRH area (rxe sets it on every receive)
	WCWithImm            WCFlags = 2 // Imm is valid
	WCWithInvalidate     WCFlags = 4 // InvalidatedRKey is valid
	WCIPCsumOK           WCFlags = 8
	WCWithSMAC           WCFlags = 16
	WCWithVLAN           WCFlags = 32
	WCWithNetworkHdrType WCFlags = 64
)

// String lists the flags: "GRH|WITH_IMM".
func (f WCFlags) String() string {
	if f == 0 {
		return "0"
	}
	names := []string{"GRH", "WITH_IMM", "WITH_INVALIDATE", "IP_CSUM_OK", "WITH_SMAC", "WITH_VLAN", "WITH_NETWORK_HDR_TYPE"}
	var parts []string
	for i, n := range names {
		if f&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if rest := f &^ (1<<len(names) - 1); rest != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(uint64(rest), 16))
	}
	return strings.Join(parts, "|")
}
