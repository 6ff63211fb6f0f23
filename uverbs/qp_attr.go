package uverbs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/unix"
)

// QPState is the state of a QP (enum ib_qp_state; rdma-core: enum
// ibv_qp_state).
type QPState uint8

const (
	QPStateReset QPState = 0 // IBV_QPS_RESET: just created; nothing can be posted
	QPStateInit  QPState = 1 // IBV_QPS_INIT: receives can be posted
	QPStateRTR   QPState = 2 // IBV_QPS_RTR: ready to receive
	QPStateRTS   QPState = 3 // IBV_QPS_RTS: ready to send
	QPStateSQD   QPState = 4 // IBV_QPS_SQD: send queue drained
	QPStateSQE   QPState = 5 // IBV_QPS_SQE: send queue error
	QPStateError QPState = 6 // IBV_QPS_ERR: everything posted completes with WCFlushError
)

// String returns the short name ibv_devinfo and the rdma tool print:
// "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR".
func (s QPState) String() string {
	names := [...]string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"}
	if int(s) < len(names) {
		return names[s]
	}
	return "QPState(" + strconv.Itoa(int(s)) + ")"
}

// QPAttrMask says which fields of a QPAttr a Modify sets or a Query asks
// for (enum ib_qp_attr_mask; rdma-core: enum ibv_qp_attr_mask). rxe refuses
// bits above QPAttrDestQPN with EOPNOTSUPP.
type QPAttrMask uint32

const (
	QPAttrState            QPAttrMask = 1 << 0  // IBV_QP_STATE
	QPAttrCurState         QPAttrMask = 1 << 1  // IBV_QP_CUR_STATE
	QPAttrEnSQDAsyncNotify QPAttrMask = 1 << 2  // IBV_QP_EN_SQD_ASYNC_NOTIFY
	QPAttrAccessFlags      QPAttrMask = 1 << 3  // IBV_QP_ACCESS_FLAGS
	QPAttrPKeyIndex        QPAttrMask = 1 << 4  // IBV_QP_PKEY_INDEX
	QPAttrPort             QPAttrMask = 1 << 5  // IBV_QP_PORT
	QPAttrQKey             QPAttrMask = 1 << 6  // IBV_QP_QKEY
	QPAttrAV               QPAttrMask = 1 << 7  // IBV_QP_AV
	QPAttrPathMTU          QPAttrMask = 1 << 8  // IBV_QP_PATH_MTU
	QPAttrTimeout          QPAttrMask = 1 << 9  // IBV_QP_TIMEOUT
	QPAttrRetryCount       QPAttrMask = 1 << 10 // IBV_QP_RETRY_CNT
	QPAttrRNRRetry         QPAttrMask = 1 << 11 // IBV_QP_RNR_RETRY
	QPAttrRQPSN            QPAttrMask = 1 << 12 // IBV_QP_RQ_PSN
	QPAttrMaxRDAtomic      QPAttrMask = 1 << 13 // IBV_QP_MAX_QP_RD_ATOMIC
	QPAttrAltPath          QPAttrMask = 1 << 14 // IBV_QP_ALT_PATH
	QPAttrMinRNRTimer      QPAttrMask = 1 << 15 // IBV_QP_MIN_RNR_TIMER
	QPAttrSQPSN            QPAttrMask = 1 << 16 // IBV_QP_SQ_PSN
	QPAttrMaxDestRDAtomic  QPAttrMask = 1 << 17 // IBV_QP_MAX_DEST_RD_ATOMIC
	QPAttrPathMigState     QPAttrMask = 1 << 18 // IBV_QP_PATH_MIG_STATE
	QPAttrCap              QPAttrMask = 1 << 19 // IBV_QP_CAP
	QPAttrDestQPN          QPAttrMask = 1 << 20 // IBV_QP_DEST_QPN

	// QPAttrAll asks Query for everything.
	QPAttrAll QPAttrMask = 1<<21 - 1
)

var qpAttrMaskNames = [...]string{
	"STATE", "CUR_STATE", "EN_SQD_ASYNC_NOTIFY", "ACCESS_FLAGS", "PKEY_INDEX", "PORT", "QKEY", "AV",
	"PATH_MTU", "TIMEOUT", "RETRY_CNT", "RNR_RETRY", "RQ_PSN", "MAX_QP_RD_ATOMIC", "ALT_PATH",
	"MIN_RNR_TIMER", "SQ_PSN", "MAX_DEST_RD_ATOMIC", "PATH_MIG_STATE", "CAP", "DEST_QPN",
}

// String lists the bits by their C suffixes: "STATE|PKEY_INDEX|PORT".
func (m QPAttrMask) String() string {
	if m == 0 {
		return "0"
	}
	var parts []string
	for i, n := range qpAttrMaskNames {
		if m&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if rest := m &^ QPAttrAll; rest != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(uint64(rest), 16))
	}
	return strings.Join(parts, "|")
}

// AHAttr is an address vector: where a connected QP sends (QPAttr.AH) or
// where a UD work request goes (CreateAH). On RoCE every address is global:
// DGID is the peer's GID (its IP address, IPv4 as ::ffff:a.b.c.d) and
// SGIDIndex the index of the local RoCE v2 GID to send from
// (Device.GIDIndexForIP), within 0 to MaxSGIDIndex.
//
// rdma-core: struct ibv_ah_attr with its struct ibv_global_route.
type AHAttr struct {
	DGID         GID
	FlowLabel    uint32
	SGIDIndex    int
	HopLimit     uint8 // for RoCE v2 the kernel uses the route's hop limit
	TrafficClass uint8
	SL           uint8
	Port         uint8 // 0 means port 1 in the QP helpers and CreateAH
	DLID         uint16
	SrcPathBits  uint8
	StaticRate   uint8
}

// MaxSGIDIndex is the largest GID index an address vector can carry: the
// kernel's sgid_index is one byte (struct ib_uverbs_global_route).
const MaxSGIDIndex = 255

// check refuses what the kernel's encoding cannot carry.
func (a *AHAttr) check() error {
	if a.SGIDIndex < 0 || a.SGIDIndex > MaxSGIDIndex {
		return fmt.Errorf("SGIDIndex %d: an address vector's GID index is 0 to %d: %w", a.SGIDIndex, MaxSGIDIndex, unix.EINVAL)
	}
	return nil
}

// global reports whether the address has a GRH (is_global): it does exactly
// when DGID is set, which RoCE always needs.
func (a *AHAttr) global() bool { return !a.DGID.IsZero() }

func (a *AHAttr) toDest() abi.UverbsQPDest {
	d := abi.UverbsQPDest{
		DGID:         a.DGID,
		FlowLabel:    a.FlowLabel,
		DLID:         a.DLID,
		SGIDIndex:    uint8(a.SGIDIndex),
		HopLimit:     a.HopLimit,
		TrafficClass: a.TrafficClass,
		SL:           a.SL,
		SrcPathBits:  a.SrcPathBits,
		StaticRate:   a.StaticRate,
		PortNum:      a.Port,
	}
	if a.global() {
		d.IsGlobal = 1
	}
	return d
}

func ahFromDest(d *abi.UverbsQPDest) AHAttr {
	return AHAttr{
		DGID:         d.DGID,
		FlowLabel:    d.FlowLabel,
		SGIDIndex:    int(d.SGIDIndex),
		HopLimit:     d.HopLimit,
		TrafficClass: d.TrafficClass,
		SL:           d.SL,
		Port:         d.PortNum,
		DLID:         d.DLID,
		SrcPathBits:  d.SrcPathBits,
		StaticRate:   d.StaticRate,
	}
}

// toAHAttr converts to struct ib_uverbs_ah_attr, the other encoding of an
// address vector (CREATE_AH; docs/abi.md §3.14: fields move between the
// two).
func (a *AHAttr) toAHAttr() abi.UverbsAHAttr {
	r := abi.UverbsAHAttr{
		GRH: abi.UverbsGlobalRoute{
			DGID:         a.DGID,
			FlowLabel:    a.FlowLabel,
			SGIDIndex:    uint8(a.SGIDIndex),
			HopLimit:     a.HopLimit,
			TrafficClass: a.TrafficClass,
		},
		DLID:        a.DLID,
		SL:          a.SL,
		SrcPathBits: a.SrcPathBits,
		StaticRate:  a.StaticRate,
		PortNum:     a.Port,
	}
	if a.global() {
		r.IsGlobal = 1
	}
	return r
}

// QPAttr are the attributes of a QP that Modify changes and Query reads
// (rdma-core: struct ibv_qp_attr). Only the fields named by the mask matter.
type QPAttr struct {
	State    QPState
	CurState QPState
	PathMTU  MTU
	QKey     uint32 // UD; bit 31 set needs privilege (EPERM)
	RQPSN    uint32
	SQPSN    uint32
	DestQPN  uint32
	// Access are the remote rights the QP grants its peer
	// (AccessRemoteWrite, AccessRemoteRead, AccessRemoteAtomic).
	Access           Access
	PKeyIndex        uint16
	Port             uint8
	AH               AHAttr // the primary path (QPAttrAV)
	MaxRDAtomic      uint8  // RDMA READ/atomics this side may have outstanding
	MaxDestRDAtomic  uint8  // RDMA READ/atomics a peer may have outstanding here
	MinRNRTimer      uint8
	Timeout          uint8 // 4.096 µs × 2^Timeout; 0 means no retransmission timer at all
	RetryCount       uint8
	RNRRetry         uint8 // 7 means retry forever
	EnSQDAsyncNotify bool
	PathMigState     uint8

	// Query only.
	SQDraining bool
	Cap        QPCap
	SignalAll  bool
}

func (a *QPAttr) encode(cmd *abi.UverbsModifyQP, mask QPAttrMask) {
	cmd.AttrMask = uint32(mask)
	cmd.Dest = a.AH.toDest()
	cmd.QKey = a.QKey
	cmd.RQPSN = a.RQPSN
	cmd.SQPSN = a.SQPSN
	cmd.DestQPNum = a.DestQPN
	cmd.QPAccessFlags = uint32(a.Access)
	cmd.PKeyIndex = a.PKeyIndex
	cmd.QPState = uint8(a.State)
	cmd.CurQPState = uint8(a.CurState)
	cmd.PathMTU = uint8(a.PathMTU)
	cmd.PathMigState = a.PathMigState
	if a.EnSQDAsyncNotify {
		cmd.EnSQDAsyncNotify = 1
	}
	cmd.MaxRDAtomic = a.MaxRDAtomic
	cmd.MaxDestRDAtomic = a.MaxDestRDAtomic
	cmd.MinRNRTimer = a.MinRNRTimer
	cmd.PortNum = a.Port
	cmd.Timeout = a.Timeout
	cmd.RetryCnt = a.RetryCount
	cmd.RNRRetry = a.RNRRetry
}

func decodeQPAttr(r *abi.UverbsQueryQPResp) QPAttr {
	return QPAttr{
		State:           QPState(r.QPState),
		CurState:        QPState(r.CurQPState),
		PathMTU:         MTU(r.PathMTU),
		QKey:            r.QKey,
		RQPSN:           r.RQPSN,
		SQPSN:           r.SQPSN,
		DestQPN:         r.DestQPNum,
		Access:          Access(r.QPAccessFlags),
		PKeyIndex:       r.PKeyIndex,
		Port:            r.PortNum,
		AH:              ahFromDest(&r.Dest),
		MaxRDAtomic:     r.MaxRDAtomic,
		MaxDestRDAtomic: r.MaxDestRDAtomic,
		MinRNRTimer:     r.MinRNRTimer,
		Timeout:         r.Timeout,
		RetryCount:      r.RetryCnt,
		RNRRetry:        r.RNRRetry,
		PathMigState:    r.PathMigState,
		SQDraining:      r.SQDraining != 0,
		SignalAll:       r.SQSigAll != 0,
		Cap: QPCap{
			MaxSendWR:  int(r.MaxSendWR),
			MaxRecvWR:  int(r.MaxRecvWR),
			MaxSendSGE: int(r.MaxSendSGE),
			MaxRecvSGE: int(r.MaxRecvSGE),
			MaxInline:  int(r.MaxInlineData),
		},
	}
}

// Modify changes the attributes of the QP named by mask (write() command
// MODIFY_QP). The kernel checks the transition and the required attributes
// (kernel: core/verbs.c ib_modify_qp_is_ok) and answers EINVAL for a wrong
// one. ToInit, ToRTR, ToRTS and ToError use the right masks for the QP type.
//
// Moving to QPStateReset is refused while work requests are outstanding:
// the kernel would wipe them without completions (kernel:
// sw/rxe/rxe_qp.c rxe_qp_reset); move to QPStateError and poll first.
//
// rdma-core: ibv_modify_qp.
func (qp *QP) Modify(attr *QPAttr, mask QPAttrMask) error {
	const op = "modify_qp"
	if attr == nil {
		return &OpError{Op: op, Err: fmt.Errorf("nil attributes: %w", unix.EINVAL)}
	}
	qp.sendMu.Lock()
	defer qp.sendMu.Unlock()
	qp.recvMu.Lock()
	defer qp.recvMu.Unlock()
	if qp.closed {
		return closedErr(op)
	}
	if mask&QPAttrState != 0 && attr.State == QPStateReset {
		if s, r := qp.pendingNow(); s+r > 0 {
			return &OpError{Op: op, Err: fmt.Errorf("QP %#x has %d send and %d receive work requests outstanding, which a move to RESET would discard without completions: move it to ERR and poll them first: %w", qp.qpn, s, r, unix.EBUSY)}
		}
	}
	return qp.modifyLocked(attr, mask)
}

// modifyLocked issues MODIFY_QP; the caller holds both ring locks, or is
// Close draining a QP already marked closed.
func (qp *QP) modifyLocked(attr *QPAttr, mask QPAttrMask) error {
	const op = "modify_qp"
	if mask&QPAttrState != 0 && attr.State != QPStateError && qp.inFinalError() {
		return qp.errLeaveFinalError(op, attr.State)
	}
	if mask&QPAttrAV != 0 {
		if err := attr.AH.check(); err != nil {
			return &OpError{Op: op, Err: err}
		}
	}
	var cmd abi.UverbsModifyQP
	attr.encode(&cmd, mask)
	cmd.QPHandle = qp.handle
	if err := qp.ctx.write(op, abi.IB_USER_VERBS_CMD_MODIFY_QP, bytesOf(&cmd), nil); err != nil {
		if mask&QPAttrState != 0 {
			cause := unwrapOp(err)
			if errors.Is(cause, unix.EINVAL) {
				// kernel: core/verbs.c ib_modify_qp_is_ok, called by
				// sw/rxe/rxe_qp.c rxe_qp_chk_attr.
				return &OpError{Op: op, Err: fmt.Errorf("QP %#x %v -> %v with %v: %w: the kernel refused the transition or its attributes: "+
					"a QP goes RESET -> INIT -> RTR -> RTS (ToInit, ToRTR, ToRTS set the attributes each step requires), and to ERR or RESET from any state; "+
					"check the state with Query and the attribute values (port, GID index, path MTU)", qp.qpn, qp.State(), attr.State, mask, cause)}
			}
			return &OpError{Op: op, Err: fmt.Errorf("QP %#x %v -> %v with %v: %w", qp.qpn, qp.State(), attr.State, mask, cause)}
		}
		return err
	}
	if mask&QPAttrState != 0 {
		qp.state.Store(uint32(attr.State))
		if attr.State == QPStateReset {
			qp.providerReset()
		}
	}
	if mask&QPAttrPort != 0 {
		qp.port = attr.Port
	}
	return nil
}

// unwrapOp strips an *OpError so that a caller can wrap the cause with more
// context under the same op.
func unwrapOp(err error) error {
	if op, ok := err.(*OpError); ok {
		return op.Err
	}
	return err
}

// Query returns the QP's attributes (write() command QUERY_QP). The kernel
// fills everything whatever the mask; the state it reports also refreshes
// State (the kernel moves a QP to ERR by itself on a fatal error).
//
// rdma-core: ibv_query_qp.
func (qp *QP) Query(mask QPAttrMask) (QPAttr, error) {
	const op = "query_qp"
	if mask == 0 {
		mask = QPAttrAll
	}
	qp.sendMu.Lock()
	defer qp.sendMu.Unlock()
	if qp.closed {
		return QPAttr{}, closedErr(op)
	}
	req := abi.UverbsQueryQP{QPHandle: qp.handle, AttrMask: uint32(mask)}
	var resp abi.UverbsQueryQPResp
	if err := qp.ctx.write(op, abi.IB_USER_VERBS_CMD_QUERY_QP, bytesOf(&req), bytesOf(&resp)); err != nil {
		return QPAttr{}, err
	}
	a := decodeQPAttr(&resp)
	a.State = qp.queriedState(a.State)
	qp.state.Store(uint32(a.State))
	return a, nil
}

// InitAttr are the attributes of the RESET -> INIT transition.
type InitAttr struct {
	Port      uint8  // 0 means 1
	PKeyIndex uint16 // rxe has one P_Key, at index 0
	// Access are the remote rights granted to the peer (RC, UC).
	Access Access
	QKey   uint32 // UD only
}

// RTRAttr are the attributes of the INIT -> RTR transition.
type RTRAttr struct {
	// PathMTU is the path MTU; 0 means the port's active MTU. It must not
	// exceed the active MTU: rxe drops larger packets (docs/abi.md §6.8).
	PathMTU         MTU
	DestQPN         uint32 // the peer's QPN
	RQPSN           uint32 // the peer's first send PSN
	MaxDestRDAtomic uint8  // 0 means 16
	MinRNRTimer     uint8  // 0 means 655.36 ms (IB encoding); 12 is 0.64 ms
	AH              AHAttr // the peer's address; Port 0 means the QP's port
}

// RTSAttr are the attributes of the RTR -> RTS transition.
type RTSAttr struct {
	SQPSN uint32 // this side's first send PSN (the peer's RQPSN)
	// Timeout is the ACK timeout, 4.096 µs × 2^Timeout. 0 disables the
	// retransmission timer, so a lost peer hangs the QP forever; 14
	// (about 67 ms) is a common choice.
	Timeout     uint8
	RetryCount  uint8 // 0..7 retransmissions before WCRetryExceededError
	RNRRetry    uint8 // 0..6 RNR retries, 7 = forever
	MaxRDAtomic uint8 // 0 means 16
}

// ToInit moves the QP from RESET to INIT with the attributes its type
// needs (RC/UC: PKEY_INDEX|PORT|ACCESS_FLAGS; UD: PKEY_INDEX|PORT|QKEY).
//
// rdma-core: ibv_modify_qp to IBV_QPS_INIT.
func (qp *QP) ToInit(a InitAttr) error {
	attr := QPAttr{State: QPStateInit, PKeyIndex: a.PKeyIndex, Port: a.Port, Access: a.Access, QKey: a.QKey}
	if attr.Port == 0 {
		attr.Port = 1
	}
	mask := QPAttrState | QPAttrPKeyIndex | QPAttrPort
	if qp.typ == UD {
		mask |= QPAttrQKey
	} else {
		mask |= QPAttrAccessFlags
	}
	return qp.Modify(&attr, mask)
}

// ToRTR moves the QP from INIT to RTR (RC: AV|PATH_MTU|DEST_QPN|RQ_PSN|
// MAX_DEST_RD_ATOMIC|MIN_RNR_TIMER; UC: AV|PATH_MTU|DEST_QPN|RQ_PSN; UD:
// the state alone).
//
// rdma-core: ibv_modify_qp to IBV_QPS_RTR.
func (qp *QP) ToRTR(a RTRAttr) error {
	const op = "modify_qp"
	attr := QPAttr{State: QPStateRTR}
	mask := QPAttrState
	if qp.typ != UD {
		if a.AH.DGID.IsZero() {
			return &OpError{Op: op, Err: fmt.Errorf("RTR: AH.DGID is empty; RoCE needs the peer's GID (its IP address, IPv4 as ::ffff:a.b.c.d): %w", unix.EINVAL)}
		}
		attr.AH = a.AH
		if attr.AH.Port == 0 {
			attr.AH.Port = qp.port
		}
		if attr.AH.Port == 0 {
			attr.AH.Port = 1
		}
		attr.PathMTU = a.PathMTU
		if attr.PathMTU == 0 {
			pa, err := qp.ctx.QueryPort(attr.AH.Port)
			if err != nil {
				return err
			}
			attr.PathMTU = pa.ActiveMTU
		}
		attr.DestQPN, attr.RQPSN = a.DestQPN, a.RQPSN
		mask |= QPAttrAV | QPAttrPathMTU | QPAttrDestQPN | QPAttrRQPSN
		if qp.typ == RC {
			attr.MaxDestRDAtomic, attr.MinRNRTimer = a.MaxDestRDAtomic, a.MinRNRTimer
			if attr.MaxDestRDAtomic == 0 {
				attr.MaxDestRDAtomic = 16
			}
			mask |= QPAttrMaxDestRDAtomic | QPAttrMinRNRTimer
		}
	}
	return qp.Modify(&attr, mask)
}

// ToRTS moves the QP from RTR to RTS (RC: TIMEOUT|RETRY_CNT|RNR_RETRY|
// SQ_PSN|MAX_QP_RD_ATOMIC; UC, UD: SQ_PSN).
//
// rdma-core: ibv_modify_qp to IBV_QPS_RTS.
func (qp *QP) ToRTS(a RTSAttr) error {
	attr := QPAttr{State: QPStateRTS, SQPSN: a.SQPSN}
	mask := QPAttrState | QPAttrSQPSN
	if qp.typ == RC {
		attr.Timeout, attr.RetryCount, attr.RNRRetry, attr.MaxRDAtomic = a.Timeout, a.RetryCount, a.RNRRetry, a.MaxRDAtomic
		if attr.MaxRDAtomic == 0 {
			attr.MaxRDAtomic = 16
		}
		mask |= QPAttrTimeout | QPAttrRetryCount | QPAttrRNRRetry | QPAttrMaxRDAtomic
	}
	return qp.Modify(&attr, mask)
}

// ToError moves the QP to the error state: everything posted and not yet
// executed completes with WCFlushError.
func (qp *QP) ToError() error {
	return qp.Modify(&QPAttr{State: QPStateError}, QPAttrState)
}
