package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/internal/unix"
	"github.com/goverbs/rdma/uverbs"
)

// The connection's side of an ID: its QP, moved through INIT, RTR and RTS
// with the CM's attributes, and the CM's connection states (connect,
// accept, reject, disconnect), as librdmacm's cma.c does them.

// udpQKey is the QKey of every QP in the UDP port space (RDMA_UDP_QKEY;
// kernel: core/cma.c cma_set_qkey).
const udpQKey = 0x01234567

// ConnParam are the connection parameters sent with a connect or an accept
// (rdma-core: struct rdma_conn_param).
type ConnParam struct {
	// ResponderResources is how many RDMA READ/atomic requests the peer may
	// have outstanding at this side; InitiatorDepth how many this side may
	// have outstanding at the peer. 255 means the device's maximum.
	ResponderResources uint8
	InitiatorDepth     uint8
	// RetryCount is how often a request is retransmitted when no ACK
	// comes (at most 7); RNRRetryCount how often after a receiver-not-ready
	// NAK (7 means for ever).
	RetryCount    uint8
	RNRRetryCount uint8
}

// DefaultConnParam returns what librdmacm sends when given no parameters:
// the device's maximum READ depths and 7 retries of each kind (rdma-core:
// librdmacm/cma.c rdma_connect, rdma_accept with conn_param NULL). Each call
// returns a fresh value, free to change.
func DefaultConnParam() ConnParam {
	return ConnParam{ResponderResources: 255, InitiatorDepth: 255, RetryCount: 7, RNRRetryCount: 7}
}

// Private data limits of the IB CM messages once the CM's own header for IP
// addressing is taken off (docs/abi.md §4.3), for IB and RoCE devices.
const (
	MaxConnectPrivateData = 56  // REQ
	MaxAcceptPrivateData  = 196 // REP
	MaxRejectPrivateData  = 148 // REJ
	MaxUDConnectData      = 180 // SIDR REQ
	MaxUDAcceptData       = 136 // SIDR REP
)

// MaxIWARPPrivateData is the private data limit of a connection request,
// accept or reject on an iWARP device (siw), where MPA carries the data as
// given, with no CM header (docs/siw.md, the RDMA CM over iWARP). The
// kernel passes at most RDMA_MAX_PRIVATE_DATA (256) bytes
// (include/uapi/rdma/rdma_user_cm.h), and MPA version 2, siw's default,
// counts its 4-byte enhanced connection header (struct mpa_v2_data) in the
// frame's private data length: siw refuses an accept of more than 252
// bytes (siw_cm.c siw_accept), and the peer drops a request whose length
// exceeds 256 (siw_recv_mpa_rr). siw_send_mpareqrep adds the 4 bytes in a
// u8, so 252 bytes would go out with a length of 0: 251 is the most that
// arrives.
const MaxIWARPPrivateData = 251

// privateDataLimit is the most private data the ID's message carries: ib
// on IB and RoCE, ud on the UDP port space, MaxIWARPPrivateData on an
// iWARP device.
func (id *ID) privateDataLimit(ib, ud int) int {
	if id.ps == PortSpaceUDP {
		return ud
	}
	if _, iwarp := id.iwarpDevice(); iwarp {
		return MaxIWARPPrivateData
	}
	return ib
}

// iwarpDevice returns the ID's device and whether it is iWARP, finding a
// connection request's device first if no command has needed it yet. It
// takes the ID's lock: the private data checks run before the commands
// that take it.
func (id *ID) iwarpDevice() (uverbs.DeviceInfo, bool) {
	dev, _, ok := id.device()
	return dev, ok && dev.Transport() == uverbs.TransportIWARP
}

// checkPrivateData refuses data longer than limit for a message of what
// ("a connection request", "an accept", "a reject").
func (id *ID) checkPrivateData(op, what string, data []byte, limit int) error {
	if len(data) <= limit {
		return nil
	}
	via := "the CM carries"
	if dev, iwarp := id.iwarpDevice(); iwarp {
		via = fmt.Sprintf("MPA (iWARP, device %s) carries", dev.Name)
	}
	return &sys.OpError{Op: op, Err: fmt.Errorf("%d bytes of private data, %s at most %d in %s: send at most %d: %w", len(data), via, limit, what, limit, unix.EINVAL)}
}

// checkConnectData refuses private data too long for a connection request.
func (id *ID) checkConnectData(op string, data []byte) error {
	return id.checkPrivateData(op, "a connection request", data, id.privateDataLimit(MaxConnectPrivateData, MaxUDConnectData))
}

// CreateQP makes the ID's QP on pd, which must belong to the ID's device,
// and moves it to INIT with the attributes the CM gives (INIT_QP_ATTR);
// a UD QP goes on to RTS, ready to send once the peer's QP number is
// known. The QP type comes from the port space. The ID does not own the QP:
// close the QP before the ID's PD and CQs, as usual, and Close the ID after.
//
// init.SingleGoroutine is refused: when the peer disconnects, the ID moves
// the QP to the error state from a goroutine of its own (as rdma-core's
// rdma_disconnect does, before the DREP), which such a QP does not allow.
// Its CQs may be SingleGoroutine ones.
//
// rdma-core: rdma_create_qp.
func (id *ID) CreateQP(pd *uverbs.PD, init uverbs.QPInit) (qp *uverbs.QP, err error) {
	const op = "create_qp"
	if init.SingleGoroutine {
		return nil, &sys.OpError{Op: op, Err: fmt.Errorf("QPInit.SingleGoroutine: the CM moves the QP to the error state from its own goroutine when the peer disconnects, so its QP cannot promise one goroutine; leave it unset (its CQs may set CQInit.SingleGoroutine): %w", unix.EINVAL)}
	}
	err = id.locked(op, func() error {
		qp, err = id.createQPLocked(op, pd, init)
		return err
	})
	return qp, err
}

func (id *ID) createQPLocked(op string, pd *uverbs.PD, init uverbs.QPInit) (*uverbs.QP, error) {
	if err := id.requestDeviceLocked(); err != nil {
		return nil, err
	}
	if id.dev == nil {
		return nil, &sys.OpError{Op: op, Err: fmt.Errorf("%s has no RDMA device yet: resolve an address first (or use a connection request's ID): %w", id, unix.EINVAL)}
	}
	if pd == nil {
		return nil, &sys.OpError{Op: op, Err: fmt.Errorf("nil PD: %w", unix.EINVAL)}
	}
	if got := pd.Device().Info(); got.NodeGUID != id.dev.NodeGUID || got.Name != id.dev.Name {
		return nil, &sys.OpError{Op: op, Err: fmt.Errorf("the PD is on device %s but %s is on %s: open %s for this connection: %w", got.Name, id, id.dev.Name, id.dev.Name, unix.EINVAL)}
	}
	if id.qp != nil {
		return nil, &sys.OpError{Op: op, Err: fmt.Errorf("%s already has QP %#x: %w", id, id.qp.QPN(), unix.EBUSY)}
	}
	init.Type = id.ps.qpType()
	qp, err := pd.CreateQP(init)
	if err != nil {
		return nil, err
	}
	if id.logging() {
		id.log("created %v QP %#x on %s (send %d, recv %d, inline %d)", qp.Type(), qp.QPN(), id.dev.Name, qp.Cap().MaxSendWR, qp.Cap().MaxRecvWR, qp.Cap().MaxInline)
	}
	if err := id.modifyLocked(qp, uverbs.QPStateInit, 255); err != nil {
		qp.Close()
		return nil, err
	}
	if id.ps == PortSpaceUDP {
		// rdma-core: librdmacm/cma.c ucma_init_ud_qp: RTR needs only the
		// state, RTS the send PSN.
		if err := qp.Modify(&uverbs.QPAttr{State: uverbs.QPStateRTR}, uverbs.QPAttrState); err != nil {
			qp.Close()
			return nil, err
		}
		if err := qp.Modify(&uverbs.QPAttr{State: uverbs.QPStateRTS}, uverbs.QPAttrState|uverbs.QPAttrSQPSN); err != nil {
			qp.Close()
			return nil, err
		}
		id.log("QP %#x INIT -> RTR -> RTS (UD)", qp.QPN())
	}
	id.qp = qp
	return qp, nil
}

// QP returns the QP made by CreateQP, or nil.
//
// rdma-core: the qp of struct rdma_cm_id.
func (id *ID) QP() *uverbs.QP {
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.qp
}

// initQPAttrOp names the INIT_QP_ATTR command for a state, as a constant
// for the three a connection passes through, so that the command's name
// costs a connection no allocation.
func initQPAttrOp(state uverbs.QPState) string {
	switch state {
	case uverbs.QPStateInit:
		return "init_qp_attr INIT"
	case uverbs.QPStateRTR:
		return "init_qp_attr RTR"
	case uverbs.QPStateRTS:
		return "init_qp_attr RTS"
	}
	return "init_qp_attr " + state.String()
}

// initQPAttr asks the CM for the attributes of a move of the ID's QP to
// state (INIT_QP_ATTR). The answer is struct ib_uverbs_qp_attr with a mask
// of the fields that matter (kernel: core/cma.c rdma_init_qp_attr,
// core/cm.c ib_cm_init_qp_attr).
func (id *ID) initQPAttrLocked(state uverbs.QPState) (uverbs.QPAttr, uverbs.QPAttrMask, error) {
	resp := new(abi.UverbsQPAttr)
	rb := bytesOf(resp)
	body := abi.UcmInitQPAttr{Response: addrOf(rb), ID: id.kid, QPState: uint32(state)}
	if err := id.command(initQPAttrOp(state), abi.RDMA_USER_CM_CMD_INIT_QP_ATTR, bytesOf(&body), rb); err != nil {
		return uverbs.QPAttr{}, 0, id.requestGone(err)
	}
	a := uverbs.QPAttr{
		State:           uverbs.QPState(resp.QPState),
		CurState:        uverbs.QPState(resp.CurQPState),
		PathMTU:         uverbs.MTU(resp.PathMTU),
		QKey:            resp.QKey,
		RQPSN:           resp.RQPSN,
		SQPSN:           resp.SQPSN,
		DestQPN:         resp.DestQPNum,
		Access:          uverbs.Access(resp.QPAccessFlags),
		PKeyIndex:       resp.PKeyIndex,
		Port:            resp.PortNum,
		AH:              ahFromKernel(&resp.AHAttr),
		MaxRDAtomic:     resp.MaxRDAtomic,
		MaxDestRDAtomic: resp.MaxDestRDAtomic,
		MinRNRTimer:     resp.MinRNRTimer,
		Timeout:         resp.Timeout,
		RetryCount:      resp.RetryCnt,
		RNRRetry:        resp.RNRRetry,
		PathMigState:    uint8(resp.PathMigState),
	}
	return a, uverbs.QPAttrMask(resp.QPAttrMask), nil
}

// modifyLocked moves qp to state with the CM's attributes. depth, unless
// 255, replaces the READ depth the CM gives: responder resources at RTR,
// initiator depth at RTS (rdma-core: librdmacm/cma.c ucma_modify_qp_rtr,
// ucma_modify_qp_rts).
func (id *ID) modifyLocked(qp *uverbs.QP, state uverbs.QPState, depth uint8) error {
	attr, mask, err := id.initQPAttrLocked(state)
	if err != nil {
		return err
	}
	if depth != 255 {
		switch state {
		case uverbs.QPStateRTR:
			attr.MaxDestRDAtomic = depth
		case uverbs.QPStateRTS:
			attr.MaxRDAtomic = depth
		}
	}
	from := qp.State()
	if err := qp.Modify(&attr, mask); err != nil {
		return err
	}
	if id.logging() {
		switch state {
		case uverbs.QPStateRTR:
			id.log("QP %#x %v -> RTR (%v): dest QPN %#x, RQ PSN %#x, path MTU %v, dest GID %v, sgid index %d, responder resources %d",
				qp.QPN(), from, mask, attr.DestQPN, attr.RQPSN, attr.PathMTU, attr.AH.DGID, attr.AH.SGIDIndex, attr.MaxDestRDAtomic)
		case uverbs.QPStateRTS:
			id.log("QP %#x %v -> RTS (%v): SQ PSN %#x, timeout %d, retry %d, rnr retry %d, initiator depth %d",
				qp.QPN(), from, mask, attr.SQPSN, attr.Timeout, attr.RetryCount, attr.RNRRetry, attr.MaxRDAtomic)
		default:
			id.log("QP %#x %v -> %v (%v): port %d, access %v", qp.QPN(), from, state, mask, attr.Port, attr.Access)
		}
	}
	return nil
}

// connParam encodes p for CONNECT or ACCEPT (struct rdma_ucm_conn_param).
func (id *ID) connParam(p ConnParam, data []byte) abi.UcmConnParam {
	k := abi.UcmConnParam{
		ResponderResources: p.ResponderResources,
		InitiatorDepth:     p.InitiatorDepth,
		RetryCount:         min(p.RetryCount, 7),
		RNRRetryCount:      min(p.RNRRetryCount, 7),
		Valid:              1,
	}
	if id.qp != nil {
		k.QPNum = id.qp.QPN()
		if id.qp.SRQ() != nil {
			k.SRQ = 1
		}
	}
	if id.ps == PortSpaceUDP {
		k.QKey = udpQKey
	}
	k.PrivateDataLen = uint8(copy(k.PrivateData[:], data))
	return k
}

// deviceDepths resolves 255 to the device's READ depths (rdma-core:
// librdmacm/cma.c ucma_valid_param and rdma_connect use max_qp_rd_atom and
// max_qp_init_rd_atom).
func (id *ID) deviceDepths(p ConnParam) (ConnParam, error) {
	if p.ResponderResources != 255 && p.InitiatorDepth != 255 {
		return p, nil
	}
	if id.qp == nil {
		if p.ResponderResources == 255 {
			p.ResponderResources = 0
		}
		if p.InitiatorDepth == 255 {
			p.InitiatorDepth = 0
		}
		return p, nil
	}
	attr, err := id.qp.PD().Device().Query()
	if err != nil {
		return p, err
	}
	if p.ResponderResources == 255 {
		p.ResponderResources = uint8(min(attr.MaxQPRDAtom, 254))
	}
	if p.InitiatorDepth == 255 {
		p.InitiatorDepth = uint8(min(attr.MaxQPInitRDAtom, 254))
	}
	return p, nil
}

// Connect sends a connection request with param and data (at most
// MaxConnectPrivateData bytes; MaxUDConnectData for UD,
// MaxIWARPPrivateData on iWARP) and waits until the connection is
// established. For RC, on the reply it moves the QP to RTR and RTS and
// sends the final ACCEPT (the RTU), as librdmacm does
// (docs/abi.md §4.4), and returns the reply's event, whose PrivateData is
// the peer's. For UD it returns the ESTABLISHED event with the peer's QP
// number, QKey and address.
//
// A rejection is a *RejectError, no answer an *EventError matching
// ErrUnreachable; ctx ending returns ctx.Err(): Close the ID then.
//
// On siw the kernel makes the TCP connection inside the CONNECT command,
// blocking (kernel: siw_cm.c siw_connect): ctx cannot cut that part
// short, and a host that does not answer costs the kernel's TCP connect
// timeout (about two minutes with the default tcp_syn_retries) before
// the *EventError matching ErrUnreachable comes back.
//
// rdma-core: rdma_connect.
func (id *ID) Connect(ctx context.Context, param ConnParam, data []byte) (Event, error) {
	const op = "connect"
	if err := id.waitable(op); err != nil {
		return Event{}, err
	}
	if err := id.startConnect(op, param, data); err != nil {
		return Event{}, err
	}
	if id.ps == PortSpaceUDP {
		e, err := id.expect(ctx, op, EventEstablished)
		if err == nil {
			id.setState(stateConnected)
		}
		return e, err
	}
	if id.isIWARP() {
		// The iWARP CM makes no CONNECT_RESPONSE: the kernel's iw_cm
		// moves the QP to RTS itself once the MPA exchange is done, and
		// reports ESTABLISHED (kernel: core/cma.c cma_iw_handler;
		// rdma-core: librdmacm/cma.c takes that event as it comes).
		e, err := id.expect(ctx, op, EventEstablished)
		if err != nil {
			return e, err
		}
		return e, id.locked(op, id.establishedIWARPLocked)
	}
	e, err := id.expect(ctx, op, EventConnectResponse)
	if err != nil {
		return e, err
	}
	if err := id.locked(op, id.completeConnectLocked); err != nil {
		if errors.Is(err, ErrClosed) {
			return e, err
		}
		return e, id.connectError(ctx, err)
	}
	e.Type = EventEstablished
	if id.logging() {
		id.log("event %v on %s (after the RTU)", e.Type, id)
	}
	return e, nil
}

// startConnect issues CONNECT; the answer is an event.
func (id *ID) startConnect(op string, param ConnParam, data []byte) error {
	if err := id.checkConnectData(op, data); err != nil {
		return err
	}
	err := id.locked(op, func() error {
		if id.ps == PortSpaceTCP && id.qp == nil {
			return &sys.OpError{Op: op, Err: fmt.Errorf("%s has no QP: call CreateQP first: %w", id, unix.EINVAL)}
		}
		p, err := id.deviceDepths(param)
		if err != nil {
			return err
		}
		body := abi.UcmConnect{ConnParam: id.connParam(p, data), ID: id.kid}
		if id.logging() {
			id.log("connect %s: QPN %#x, responder resources %d, initiator depth %d, retry %d, rnr retry %d, %d bytes of private data",
				id, body.ConnParam.QPNum, p.ResponderResources, p.InitiatorDepth, body.ConnParam.RetryCount, body.ConnParam.RNRRetryCount, len(data))
		}
		return id.command(op, abi.RDMA_USER_CM_CMD_CONNECT, bytesOf(&body), nil)
	})
	return connectCommandError(op, err)
}

// connectCommandError is the error of a failed CONNECT command. siw makes
// the TCP connection in the command itself, blocking (kernel: siw_cm.c
// siw_connect, kernel_bindconnect), so what other devices report as an
// event comes back as the command's errno: ECONNREFUSED (nothing listens)
// is the REJECTED of an invalid service ID; ETIMEDOUT, EHOSTUNREACH and
// ENETUNREACH (no host answered) are the UNREACHABLE event.
func connectCommandError(op string, err error) error {
	switch {
	case errors.Is(err, unix.ECONNREFUSED):
		return &RejectError{Op: op, Reason: RejectInvalidServiceID}
	case errors.Is(err, unix.ETIMEDOUT), errors.Is(err, unix.EHOSTUNREACH), errors.Is(err, unix.ENETUNREACH):
		return &EventError{Op: op, Event: EventUnreachable, Status: -int(errnoOf(err))}
	}
	return err
}

// completeConnectLocked is librdmacm's ucma_process_conn_resp: INIT again
// (the access rights now follow the agreed READ depths), RTR, RTS, then an
// ACCEPT without parameters, which makes the kernel send the RTU. On
// failure the QP goes to ERR and the connection is refused.
func (id *ID) completeConnectLocked() error {
	qp := id.qp
	err := id.modifyLocked(qp, uverbs.QPStateInit, 255)
	if err == nil {
		err = id.modifyLocked(qp, uverbs.QPStateRTR, 255)
	}
	if err == nil {
		err = id.modifyLocked(qp, uverbs.QPStateRTS, 255)
	}
	if err == nil {
		body := abi.UcmAccept{ID: id.kid}
		if id.logging() {
			id.log("send RTU on %s (ACCEPT without parameters)", id)
		}
		err = id.command("accept (rtu)", abi.RDMA_USER_CM_CMD_ACCEPT, bytesOf(&body), nil)
	}
	if err != nil {
		qp.ToError()
		id.rejectLocked(nil)
		return err
	}
	id.state = stateConnected
	return nil
}

// explainWait bounds how long a failed handshake waits for the CM's event
// that says why (the peer's REJ or DREQ is usually already queued: the CM
// changes the connection's state, which made the command fail, in the same
// step that reports the event).
const explainWait = time.Second

// connectError is the error of a handshake that could not be completed
// after the peer's reply, because the peer rejected or went away between
// its reply and the RTU: the CM's event that says so (a *RejectError, or
// an *EventError for DISCONNECTED or UNREACHABLE), else a CONNECT_ERROR
// *EventError matching ErrUnreachable, as librdmacm reports the case
// (rdma-core: librdmacm/cma.c ucma_process_conn_resp).
func (id *ID) connectError(ctx context.Context, cause error) error {
	id.log("connect %s: the handshake failed after the reply: %v", id, cause)
	wctx, cancel := context.WithTimeout(ctx, explainWait)
	defer cancel()
	if e, err := id.GetEvent(wctx); err == nil && e.Type != EventEstablished && e.Type != EventConnectResponse {
		return eventError("connect", e)
	}
	status := -int(errnoOf(cause))
	if status == 0 {
		status = -int(unix.ECONNABORTED)
	}
	return &EventError{Op: "connect", Event: EventConnectError, Status: status}
}

func (id *ID) setState(s idState) {
	id.mu.Lock()
	id.state = s
	id.mu.Unlock()
}

// Accept accepts the connection request this ID stands for, with param and
// data (at most MaxAcceptPrivateData bytes; MaxUDAcceptData for UD,
// MaxIWARPPrivateData on iWARP). For RC the QP (CreateQP) goes to RTR and
// RTS first, with READ depths that are the smaller of param's and the
// request's (255: the request's), and Accept waits until the peer's RTU
// establishes the connection. A UD accept
// returns at once.
//
// rdma-core: rdma_accept.
func (id *ID) Accept(ctx context.Context, param ConnParam, data []byte) error {
	const op = "accept"
	if err := id.waitable(op); err != nil {
		return err
	}
	if err := id.checkAcceptData(op, data); err != nil {
		return err
	}
	err := id.locked(op, func() error { return id.acceptLocked(op, param, data) })
	if err != nil || id.ps == PortSpaceUDP {
		return err
	}
	if err := id.awaitEstablished(ctx, op); err != nil {
		return err
	}
	if id.isIWARP() {
		return id.locked(op, id.establishedIWARPLocked)
	}
	return nil
}

// isRequest reports whether the ID stands for a connection request not
// yet answered.
func (id *ID) isRequest() bool {
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.state == stateRequest && !id.closed
}

// isIWARP reports whether the ID's device is iWARP (siw; iWARP
// hardware): its QPs are connected by the kernel's iw_cm, which moves
// them to RTS itself (kernel: core/iwcm.c). id.dev is set once, before
// a connection is made.
func (id *ID) isIWARP() bool {
	return id.dev != nil && id.dev.Transport() == uverbs.TransportIWARP
}

// establishedIWARPLocked takes an iWARP connection as established: the
// kernel moved the QP to RTS (RTR and RTS from INIT_QP_ATTR carry no state
// on iWARP: kernel core/iwcm.c iwcm_init_qp_rts_attr), so the QP's state
// is read back from the kernel, which lets the QP post. Where the kernel
// does not report it (siw in 6.1: siw_verbs.c siw_query_qp leaves it
// unset, and uverbs keeps its own record, INIT or RTR), the move to RTS is
// made again from here: RTS to RTS changes nothing (kernel: siw_qp.c
// siw_qp_nextstate_from_rts), and it records RTS.
//
// Any other state (ERR, SQD, CLOSING) means the connection was
// established and is already over: siw moves the QP to RTS before it
// reports ESTABLISHED (kernel: siw_cm.c siw_accept, siw_proc_mpareply),
// and a peer that writes and disconnects at once can have its TCP close,
// or our answer to its DISCONNECTED (ID.deliver), move the QP to ERROR
// before this read-back runs. What the peer sent has landed, so the
// connection counts as established, as on IB (awaitEstablished), with
// the QP recorded as it is and the DISCONNECTED event queued or on its
// way. It is never moved to RTS then: siw ignores a move out of ERROR
// (siw_qp.c siw_qp_modify) and from CLOSING drops the error, so forcing
// RTS would record RTS on a dead QP.
func (id *ID) establishedIWARPLocked() error {
	if qp := id.qp; qp != nil {
		a, err := qp.Query(uverbs.QPAttrState)
		if err != nil {
			return err
		}
		if iwarpForceRTS(a.State) {
			if err := qp.Modify(&uverbs.QPAttr{State: uverbs.QPStateRTS}, uverbs.QPAttrState); err != nil {
				return err
			}
		}
		switch qp.State() {
		case uverbs.QPStateRTS:
			id.log("QP %#x is in RTS (moved by the iWARP CM; the kernel reported %v)", qp.QPN(), a.State)
		default:
			id.log("QP %#x is in %v (the kernel reported %v): established and already over", qp.QPN(), qp.State(), a.State)
		}
	}
	if id.state != stateDisconnected {
		// Not when the peer's DISCONNECTED was answered already.
		id.state = stateConnected
	}
	return nil
}

// iwarpForceRTS reports whether, from the state read back after an iWARP
// ESTABLISHED, uverbs' record must be moved to RTS: INIT and RTR are
// states the kernel did not report; RTS needs nothing, and any other state
// is a connection already over (see establishedIWARPLocked).
func iwarpForceRTS(s uverbs.QPState) bool {
	return s == uverbs.QPStateInit || s == uverbs.QPStateRTR
}

// checkRejectData refuses private data too long for a reject.
func (id *ID) checkRejectData(op string, data []byte) error {
	return id.checkPrivateData(op, "a reject", data, id.privateDataLimit(MaxRejectPrivateData, MaxRejectPrivateData))
}

// checkAcceptData refuses private data too long for an accept.
func (id *ID) checkAcceptData(op string, data []byte) error {
	return id.checkPrivateData(op, "an accept", data, id.privateDataLimit(MaxAcceptPrivateData, MaxUDAcceptData))
}

// awaitEstablished waits for the ESTABLISHED event of an accepted request.
// A DISCONNECTED event (status 0) first means the peer established the
// connection, used it and ended it before our CM saw its RTU: a DREQ is
// only sent from ESTABLISHED (kernel: core/cm.c cm_send_dreq_locked), and
// the CM handles each MAD on a work queue that can run the DREQ before
// the RTU. What the peer sent has landed, so the accept succeeds, as
// librdmacm's rdma_accept does (ucma_complete fails only on a non-zero
// status), and the DISCONNECTED event stays queued for the caller, with
// Done closed (docs/kernel-behaviour.md §2).
func (id *ID) awaitEstablished(ctx context.Context, op string) error {
	e, err := id.expect(ctx, op, EventEstablished)
	if err != nil && e.Type == EventDisconnected && e.Status == 0 {
		id.log("%s: the peer ended the connection before its RTU was seen: established and disconnected", id)
		id.unget(e)
		return nil
	}
	return err
}

func (id *ID) acceptLocked(op string, param ConnParam, data []byte) error {
	if id.state != stateRequest {
		return &sys.OpError{Op: op, Err: fmt.Errorf("%s is not a connection request (take one from a listener's CONNECT_REQUEST event): %w", id, unix.EINVAL)}
	}
	if id.qp == nil {
		return &sys.OpError{Op: op, Err: fmt.Errorf("%s has no QP: call CreateQP first: %w", id, unix.EINVAL)}
	}
	p, err := id.deviceDepths(param)
	if err != nil {
		return err
	}
	if id.ps == PortSpaceTCP {
		// rdma-core: librdmacm/cma.c rdma_accept takes the request's values,
		// bounded by the device.
		p.ResponderResources = min(p.ResponderResources, id.reqParam.ResponderResources)
		p.InitiatorDepth = min(p.InitiatorDepth, id.reqParam.InitiatorDepth)
		qp := id.qp
		err := id.modifyLocked(qp, uverbs.QPStateInit, 255)
		if err == nil {
			err = id.modifyLocked(qp, uverbs.QPStateRTR, p.ResponderResources)
		}
		if err == nil {
			err = id.modifyLocked(qp, uverbs.QPStateRTS, p.InitiatorDepth)
		}
		if err != nil {
			qp.ToError()
			return err
		}
	}
	body := abi.UcmAccept{UID: id.uid, ConnParam: id.connParam(p, data), ID: id.kid}
	if id.logging() {
		id.log("accept %s: QPN %#x, responder resources %d, initiator depth %d, rnr retry %d, %d bytes of private data",
			id, body.ConnParam.QPNum, p.ResponderResources, p.InitiatorDepth, body.ConnParam.RNRRetryCount, len(data))
	}
	if err := id.command(op, abi.RDMA_USER_CM_CMD_ACCEPT, bytesOf(&body), nil); err != nil {
		id.qp.ToError()
		return id.requestGone(err)
	}
	id.state = stateConnected
	return nil
}

// errRequestGone: the CM no longer holds the connection request (the peer
// gave it up, or it timed out), so it cannot be answered.
var errRequestGone = errors.New("the peer gave up its connection request")

// requestGone marks a CM command's EINVAL on a request as errRequestGone:
// the CM refuses INIT_QP_ATTR and ACCEPT once the request left its
// REQ_RCVD state (kernel: core/cm.c ib_cm_init_qp_attr, ib_send_cm_rep).
func (id *ID) requestGone(err error) error {
	if id.state == stateRequest && errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("%w: %w", errRequestGone, err)
	}
	return err
}

// Reject refuses the connection request this ID stands for, with data (at
// most MaxRejectPrivateData bytes, MaxIWARPPrivateData on iWARP) for the
// peer; the peer gets a *RejectError with reason 28 (consumer defined). Close the ID after.
//
// rdma-core: rdma_reject.
func (id *ID) Reject(data []byte) error {
	const op = "reject"
	if err := id.checkRejectData(op, data); err != nil {
		return err
	}
	return id.locked(op, func() error { return id.rejectLocked(data) })
}

func (id *ID) rejectLocked(data []byte) error {
	body := abi.UcmReject{ID: id.kid}
	body.PrivateDataLen = uint8(copy(body.PrivateData[:], data))
	id.log("reject %s with %d bytes of private data", id, len(data))
	err := id.command("reject", abi.RDMA_USER_CM_CMD_REJECT, bytesOf(&body), nil)
	if err == nil {
		id.state = stateIdle
	}
	return err
}

// Disconnect moves the ID's QP to ERR, so that everything posted comes back
// flushed, and sends a disconnect request; both sides then get a
// DISCONNECTED event (Done is closed). Calling it again does nothing; an
// ID that was never connected gives ErrNotConnected.
//
// rdma-core: rdma_disconnect.
func (id *ID) Disconnect() error {
	const op = "disconnect"
	return id.locked(op, func() error {
		if id.state != stateConnected && id.state != stateDisconnected {
			return &sys.OpError{Op: op, Err: fmt.Errorf("%s: %w", id, ErrNotConnected)}
		}
		return id.disconnectLocked()
	})
}

// disconnectIfConnected disconnects an established RC connection and does
// nothing otherwise (Conn.Close).
func (id *ID) disconnectIfConnected() error {
	return id.locked("disconnect", func() error {
		if id.state != stateConnected || id.ps != PortSpaceTCP {
			return nil
		}
		return id.disconnectLocked()
	})
}

func (id *ID) disconnectLocked() error {
	if id.state == stateDisconnected {
		return nil
	}
	if id.qp != nil && id.qp.State() != uverbs.QPStateError {
		// rdma-core: librdmacm/cma.c rdma_disconnect moves the QP to ERR
		// first (ucma_modify_qp_err).
		if err := id.qp.ToError(); err != nil {
			// A QP closed by its owner needs no move; the peer must
			// still be told.
			id.log("QP %#x -> ERR: %v", id.qp.QPN(), err)
		} else {
			id.log("QP %#x -> ERR", id.qp.QPN())
		}
	}
	body := abi.UcmDisconnect{ID: id.kid}
	if id.logging() {
		id.log("disconnect %s", id)
	}
	err := id.command("disconnect", abi.RDMA_USER_CM_CMD_DISCONNECT, bytesOf(&body), nil)
	if err == nil || errors.Is(err, unix.EINVAL) {
		// EINVAL: the CM had ended the connection already (the peer's
		// DREQ, or a timeout); there is nothing left to end.
		id.state = stateDisconnected
		if err != nil {
			id.log("disconnect %s: the CM had ended it already", id)
		}
		return nil
	}
	return err
}

// EstablishNow tells the CM the connection is established before the RTU
// arrives, e.g. because a receive completed on the QP (NOTIFY with
// IB_EVENT_COMM_EST; rxe never raises that event itself).
//
// rdma-core: rdma_establish... (ucma NOTIFY).
func (id *ID) EstablishNow() error {
	const op = "notify"
	return id.locked(op, func() error {
		body := abi.UcmNotify{ID: id.kid, Event: 4} // IB_EVENT_COMM_EST
		return id.command(op, abi.RDMA_USER_CM_CMD_NOTIFY, bytesOf(&body), nil)
	})
}
