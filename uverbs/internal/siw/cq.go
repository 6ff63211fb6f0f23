package siw

import (
	"sync/atomic"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/mmio"
)

// wcStatus maps enum siw_wc_status to enum ib_wc_status (kernel: siw_cq.c
// map_cqe_status; libsiw map_cqe_status).
var wcStatus = [abi.SIW_NUM_WC_STATUS]WCStatus{
	abi.SIW_WC_SUCCESS:         WCSuccess,
	abi.SIW_WC_LOC_LEN_ERR:     WCLocalLengthError,
	abi.SIW_WC_LOC_PROT_ERR:    WCLocalProtectionError,
	abi.SIW_WC_LOC_QP_OP_ERR:   WCLocalQPOpError,
	abi.SIW_WC_WR_FLUSH_ERR:    WCFlushError,
	abi.SIW_WC_BAD_RESP_ERR:    WCBadResponseError,
	abi.SIW_WC_LOC_ACCESS_ERR:  WCLocalAccessError,
	abi.SIW_WC_REM_ACCESS_ERR:  WCRemoteAccessError,
	abi.SIW_WC_REM_INV_REQ_ERR: WCRemoteInvalidRequestError,
	abi.SIW_WC_GENERAL_ERR:     WCGeneralError,
}

// wcOpcode maps enum siw_opcode to enum ib_wc_opcode (kernel: siw_cq.c
// map_wc_opcode; libsiw map_cqe_opcode), WCOpUnknown for what has no
// completion opcode.
var wcOpcode = [256]WCOpcode{}

func init() {
	for i := range wcOpcode {
		wcOpcode[i] = WCOpUnknown
	}
	wcOpcode[abi.SIW_OP_WRITE] = WCOpRDMAWrite
	wcOpcode[abi.SIW_OP_READ] = WCOpRDMARead
	wcOpcode[abi.SIW_OP_READ_LOCAL_INV] = WCOpRDMARead
	wcOpcode[abi.SIW_OP_SEND] = WCOpSend
	wcOpcode[abi.SIW_OP_SEND_WITH_IMM] = WCOpSend
	wcOpcode[abi.SIW_OP_SEND_REMOTE_INV] = WCOpSend
	wcOpcode[abi.SIW_OP_FETCH_AND_ADD] = WCOpFetchAdd
	wcOpcode[abi.SIW_OP_COMP_AND_SWAP] = WCOpCompSwap
	wcOpcode[abi.SIW_OP_RECEIVE] = WCOpRecv
	wcOpcode[abi.SIW_OP_INVAL_STAG] = WCOpLocalInv
}

// decodeCQE reads the struct siw_cqe at e, whose flag word w was loaded
// with VALID set, into wc (every field is overwritten). An unknown siw
// status becomes WCGeneralError; VendorErr keeps siw's own status whenever
// it is not success.
func decodeCQE(e unsafe.Pointer, w uint32, wc *WC) {
	st := uint16(w >> 16)
	status := WCGeneralError
	if int(st) < len(wcStatus) {
		status = wcStatus[st]
	}
	var vendor uint32
	if st != abi.SIW_WC_SUCCESS {
		vendor = uint32(st)
	}
	var flags WCFlags
	var inval uint32
	if w&abi.SIW_WQE_REM_INVAL != 0 {
		flags = WCWithInvalidate
		inval = get32(e, cqeInvalSTag)
	}
	*wc = WC{
		ID:              get64(e, cqeID),
		Status:          status,
		Opcode:          wcOpcode[uint8(w>>8)],
		VendorErr:       vendor,
		ByteLen:         get32(e, cqeBytes),
		InvalidatedRKey: inval,
		QPN:             uint32(get64(e, cqeQPID)),
		Flags:           flags,
	}
}

// DecodeCQE decodes the struct siw_cqe at the start of b (at least
// CQESize bytes) into wc, whether or not its VALID flag is set. Poll is
// what reads a live ring; this is for tests and tools.
func DecodeCQE(b []byte, wc *WC) {
	e := unsafe.Pointer(unsafe.SliceData(b[:CQESize:CQESize]))
	decodeCQE(e, get32(e, flagWordOff), wc)
}

// CQ is the user side of a siw completion queue: num struct siw_cqe, then
// the struct siw_cq_ctrl notification word, in the mapping of cq_key
// (kernel: siw_verbs.c siw_create_cq).
//
// A CQ is not safe for concurrent use: hold the CQ's lock.
type CQ struct {
	r    ring
	ctrl *atomic.Uint32
}

// NewCQ checks a mapped completion queue of num elements (num_cqe of
// struct siw_uresp_create_cq), which must hold the control word after
// them, and disarms it as libsiw's siw_create_cq does.
func NewCQ(buf []byte, num uint32) (*CQ, error) {
	r, err := newRing(buf, num, CQESize, CQCtrlSize, "completion queue")
	if err != nil {
		return nil, err
	}
	q := &CQ{r: r, ctrl: (*atomic.Uint32)(unsafe.Add(r.base, uintptr(num)*uintptr(CQESize)))}
	q.ctrl.Store(abi.SIW_NOTIFY_NOT)
	return q, nil
}

// Poll decodes up to len(wcs) completions into wcs and returns how many:
// for each, it loads the element's flag word (acquire), stops at the first
// without VALID, decodes it and gives the element back to the kernel by
// clearing the word with a release store, after the reads (libsiw
// siw_poll_cq; the kernel writes an element only while its flags are 0:
// siw_qp.c siw_sqe_complete, siw_rqe_complete). It allocates nothing.
func (q *CQ) Poll(wcs []WC) int {
	n := 0
	for n < len(wcs) {
		fw := q.r.flagWord(q.r.next)
		w := mmio.LoadAcquire32(fw)
		if w&abi.SIW_WQE_VALID == 0 {
			break
		}
		decodeCQE(q.r.elem(q.r.next), w, &wcs[n])
		mmio.StoreRelease32(fw, 0)
		q.r.next++
		n++
	}
	return n
}

// Ready reports whether the next element holds a completion.
func (q *CQ) Ready() bool { return q.r.busy(q.r.next) }

// Size returns the number of elements.
func (q *CQ) Size() int { return int(q.r.num) }

// Arm asks the kernel for a completion event on the next completion
// (solicitedOnly false) or the next solicited one, by writing the control
// word after the elements: there is no command (libsiw siw_notify_cq; the
// kernel reads the word and disarms it when it raises the event, siw_qp.c
// siw_cq_notify_now). The store is sequentially consistent: the caller
// polls again after arming, and that load must not be ordered before this
// store, or a completion the kernel wrote just before reading the word
// would be missed by both (docs/siw.md §6).
func (q *CQ) Arm(solicitedOnly bool) {
	v := uint32(abi.SIW_NOTIFY_SOLICITED | abi.SIW_NOTIFY_NEXT_COMPLETION)
	if solicitedOnly {
		v = abi.SIW_NOTIFY_SOLICITED
	}
	q.ctrl.Store(v)
}

// Armed returns the control word: what the CQ is armed for, 0 once the
// kernel raised the event.
func (q *CQ) Armed() uint32 { return q.ctrl.Load() }
