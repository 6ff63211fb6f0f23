package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"time"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/internal/unix"
)

// The asynchronous path: a channel without a reader goroutine, whose
// caller starts a step on many IDs and then takes their events, in the
// order the kernel reports them, from the one channel (rdma-core's
// rdma_get_cm_event on a channel shared by many IDs, as cmtime and
// servers use it).

// NewAsyncEventChannel opens the CM for the asynchronous path. Its IDs
// start their steps with StartResolveAddr, StartResolveRoute,
// StartConnect, StartAccept and Disconnect, which return as soon as the
// kernel has the command, and the events of all of them are taken with
// GetEvents or GetEvent on the channel: no goroutine stands between the
// kernel and the caller. The methods that wait for an ID's own events
// (ResolveAddr, ResolveRoute, Connect, Accept, ID.GetEvent) refuse IDs of
// such a channel; NewEventChannel is the channel for them.
//
// What librdmacm does inside rdma_get_cm_event is done so too: the device
// of an ID is learnt when its ADDR_RESOLVED is taken, and the new ID of a
// connection request is made when its CONNECT_REQUEST is. Work on the
// device (moving the QP, opening devices, allocating PDs) is never done
// while taking events: the caller does it, where it likes, with
// CompleteConnect on a CONNECT_RESPONSE and CreateQP plus StartAccept on a
// CONNECT_REQUEST. A DISCONNECTED is not answered by the package either:
// call Disconnect, as librdmacm's programs do.
//
// rdma-core: rdma_create_event_channel.
func NewAsyncEventChannel() (*EventChannel, error) { return openChannel(true) }

// Async reports whether the channel was opened with NewAsyncEventChannel.
func (ch *EventChannel) Async() bool { return ch.async }

// GetEvent waits for the next event of any ID of the channel; Event.ID
// says which. See GetEvents.
//
// rdma-core: rdma_get_cm_event, with rdma_ack_cm_event done.
func (ch *EventChannel) GetEvent(ctx context.Context) (Event, error) {
	var one [1]Event
	n, err := ch.GetEvents(ctx, one[:])
	if n == 1 {
		return one[0], nil
	}
	return Event{}, err
}

// GetEvents fills evs with events of the channel's IDs: it waits for the
// first and then takes those the kernel has queued, up to len(evs),
// without waiting again. It returns how many it took; an error only with
// none, when ctx ends (ctx.Err()) or the channel is closed (ErrClosed).
// Events of IDs closed meanwhile are dropped, and connection requests for
// a listener that is gone refused. One goroutine at a time takes events;
// others wait for it. Nothing needs acknowledging.
//
// Only for channels of NewAsyncEventChannel.
//
// rdma-core: rdma_get_cm_event in a loop, each event acknowledged.
func (ch *EventChannel) GetEvents(ctx context.Context, evs []Event) (int, error) {
	const op = "get_event"
	if !ch.async {
		return 0, &sys.OpError{Op: op, Err: fmt.Errorf("this channel hands each event to its ID: take them with ID.GetEvent, or open the channel with NewAsyncEventChannel: %w", unix.EINVAL)}
	}
	if len(evs) == 0 {
		return 0, nil
	}
	ch.getM.Lock()
	defer ch.getM.Unlock()
	if ch.get == nil {
		ch.get = newGetEventCmd()
	}
	g := ch.get
	var pin runtime.Pinner
	g.pin(&pin)
	defer pin.Unpin()
	n := 0
	for n < len(evs) {
		*g.resp = abi.UcmEventResp{}
		var err error
		if n == 0 {
			err = ch.ev.CommandWaitContext(ctx, op, unsafe.Pointer(&g.buf[0]), uintptr(len(g.buf)))
		} else {
			err = ch.ev.Command(op, unsafe.Pointer(&g.buf[0]), uintptr(len(g.buf)))
			if errors.Is(err, unix.EAGAIN) {
				break
			}
		}
		if err != nil {
			if n > 0 {
				break
			}
			if errors.Is(err, sys.ErrClosed) {
				return 0, &sys.OpError{Op: op, Err: ErrClosed}
			}
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return 0, err
			}
			return 0, &sys.OpError{Op: op, Err: err}
		}
		ch.hold()
		e, ok := ch.take(g.resp)
		last := ch.releaseByReader()
		if ok {
			evs[n] = e
			n++
		}
		if last {
			break
		}
	}
	if n == 0 {
		return 0, &sys.OpError{Op: op, Err: ErrClosed}
	}
	return n, nil
}

// take turns one event of an async channel into the caller's Event: the
// kernel's part of librdmacm's rdma_get_cm_event (rdma-core:
// librdmacm/cma.c ucma_process_addr_resolved, ucma_process_conn_req).
func (ch *EventChannel) take(r *abi.UcmEventResp) (Event, bool) {
	ch.mu.Lock()
	owner := ch.ids[r.UID]
	ch.mu.Unlock()
	if EventType(r.Event) == EventConnectRequest {
		if owner == nil || !owner.listening() {
			ch.destroyKernelID(r.ID)
			return Event{}, false
		}
		e := decodeEvent(r, owner.ps == PortSpaceUDP)
		req, err := ch.newRequestID(owner, r.ID)
		if err != nil {
			ch.destroyKernelID(r.ID)
			return Event{}, false
		}
		req.reqParam = e.Param
		e.Request = req
		e.ID = owner
		if owner.logging() {
			owner.log("event %v (status %d) on %s: %s", e.Type, e.Status, owner, req)
		}
		return e, true
	}
	if owner == nil || owner.takenClosed() {
		return Event{}, false
	}
	e := decodeEvent(r, owner.ps == PortSpaceUDP)
	e.ID = owner
	if owner.logging() {
		owner.log("event %v (status %d) on %s", e.Type, e.Status, owner)
	}
	switch {
	case e.Type == EventAddrResolved:
		if err := owner.locked("resolve_addr", owner.queryDeviceLocked); err != nil {
			owner.log("%s: the resolved address names no device we can use: %v", owner, err)
			e.Type, e.Status = EventAddrError, -int(unix.ENODEV)
			if n := errnoOf(err); n != 0 {
				e.Status = -int(n)
			}
		}
	case e.Type == EventEstablished && owner.ps == PortSpaceUDP:
		owner.setState(stateConnected)
	case isEnd(e.Type):
		owner.qmu.Lock()
		if !owner.doneOK {
			owner.doneOK = true
			close(owner.done)
		}
		owner.qmu.Unlock()
	}
	return e, true
}

// takenClosed reports an ID that Close has begun to destroy.
func (id *ID) takenClosed() bool {
	id.qmu.Lock()
	defer id.qmu.Unlock()
	return id.qclosed
}

// waitable refuses an ID of an async channel to the methods that wait for
// its own events.
func (id *ID) waitable(op string) error {
	if id.ch.async {
		return &sys.OpError{Op: op, Err: fmt.Errorf("%s is on an asynchronous channel, whose events are taken with EventChannel.GetEvents: start the step with the Start method instead (or create the ID on a NewEventChannel): %w", id, unix.EINVAL)}
	}
	return nil
}

// startable refuses an ID of a channel that routes events to the IDs to
// the Start methods: nothing would take the step's event.
func (id *ID) startable(op string) error {
	if !id.ch.async {
		return &sys.OpError{Op: op, Err: fmt.Errorf("%s is on a channel that hands events to their IDs: use the waiting method (ResolveAddr, ResolveRoute, Connect, Accept), or create the ID on a NewAsyncEventChannel: %w", id, unix.EINVAL)}
	}
	return nil
}

// StartResolveAddr starts ResolveAddr's step and returns once the kernel
// has it: ADDR_RESOLVED or ADDR_ERROR follows on the channel. After
// ADDR_RESOLVED the ID knows its device. Only on an async channel.
//
// rdma-core: rdma_resolve_addr on an asynchronous channel.
func (id *ID) StartResolveAddr(src, dst netip.AddrPort, timeout time.Duration) error {
	const op = "resolve_addr"
	if err := id.startable(op); err != nil {
		return err
	}
	return id.startResolveAddr(op, src, dst, timeout)
}

// StartResolveRoute starts ResolveRoute's step: ROUTE_RESOLVED or
// ROUTE_ERROR follows on the channel. Only on an async channel.
//
// rdma-core: rdma_resolve_route on an asynchronous channel.
func (id *ID) StartResolveRoute(timeout time.Duration) error {
	const op = "resolve_route"
	if err := id.startable(op); err != nil {
		return err
	}
	return id.startResolveRoute(op, timeout)
}

// StartConnect sends the connection request of Connect and returns: for
// RC, CONNECT_RESPONSE follows on the channel (then call CompleteConnect),
// or REJECTED, UNREACHABLE or CONNECT_ERROR; for UD, ESTABLISHED with the
// peer's QP number, QKey and address, or an error event. On an iWARP
// device (siw) RC has no CONNECT_RESPONSE: ESTABLISHED follows instead,
// the kernel's iw_cm having moved the QP to RTS (kernel: core/cma.c
// cma_iw_handler), and CompleteConnect answers that event. Only on an
// async channel.
//
// rdma-core: rdma_connect on an asynchronous channel.
func (id *ID) StartConnect(param ConnParam, data []byte) error {
	const op = "connect"
	if err := id.startable(op); err != nil {
		return err
	}
	return id.startConnect(op, param, data)
}

// CompleteConnect finishes an RC connection after its CONNECT_RESPONSE:
// the QP goes to RTR and RTS and the RTU is sent, after which the
// connection is established (the kernel reports no ESTABLISHED to the
// active side). On failure the request is refused, the QP is in ERR, and
// the error says why; Close the ID then.
//
// On an iWARP device it answers ESTABLISHED instead, on either side (after
// StartConnect or StartAccept): the kernel already moved the QP to RTS and
// sent what the protocol needs, so CompleteConnect only takes the QP's
// state from the kernel, as Connect and Accept do. A connection already
// over by then (the peer disconnected at once) is taken as established
// with its QP in ERR, and its DISCONNECTED event follows. Without it,
// uverbs may keep the QP at INIT or RTR and refuse to post.
//
// rdma-core: librdmacm/cma.c ucma_process_conn_resp, which
// rdma_get_cm_event runs for IDs with a QP.
func (id *ID) CompleteConnect() error {
	const op = "connect"
	return id.locked(op, func() error {
		if id.ps == PortSpaceTCP && id.qp != nil && id.isIWARP() {
			// The iWARP CM sends no CONNECT_RESPONSE, and the RC
			// answer to one would fail here: siw ignores INIT and RTR
			// once connected, and the kernel refuses the RTU's ACCEPT
			// (kernel: core/cma.c rdma_accept on iWARP).
			if id.state != stateIdle && id.state != stateConnected && id.state != stateDisconnected {
				return &sys.OpError{Op: op, Err: fmt.Errorf("%s: on iWARP, CompleteConnect answers the ESTABLISHED of an RC ID started with StartConnect or StartAccept: %w", id, unix.EINVAL)}
			}
			return id.establishedIWARPLocked()
		}
		if id.ps != PortSpaceTCP || id.qp == nil || id.state != stateIdle {
			return &sys.OpError{Op: op, Err: fmt.Errorf("%s: CompleteConnect answers the CONNECT_RESPONSE of an RC ID started with StartConnect: %w", id, unix.EINVAL)}
		}
		return id.completeConnectLocked()
	})
}

// StartAccept accepts the connection request this ID stands for as Accept
// does, but returns once the accept is sent: ESTABLISHED follows on the
// channel for RC (nothing for UD). The QP goes to RTS here, on the
// caller's goroutine, except on an iWARP device (siw), where the kernel
// moves it once the connection is up: call CompleteConnect on the
// ESTABLISHED event there before posting sends. Only on an async channel.
//
// rdma-core: rdma_accept on an asynchronous channel.
func (id *ID) StartAccept(param ConnParam, data []byte) error {
	const op = "accept"
	if err := id.startable(op); err != nil {
		return err
	}
	if err := id.checkAcceptData(op, data); err != nil {
		return err
	}
	return id.locked(op, func() error { return id.acceptLocked(op, param, data) })
}

// Err returns the event's failure as the waiting methods report it (an
// *EventError or a *RejectError), or nil for an event that is no failure.
//
// rdma-core: the status of struct rdma_cm_event.
func (e Event) Err() error {
	switch e.Type {
	case EventAddrError, EventRouteError, EventConnectError, EventUnreachable, EventRejected,
		EventDeviceRemoval, EventMulticastError:
		return eventError(e.Type.op(), e)
	}
	if e.Status != 0 {
		return eventError(e.Type.op(), e)
	}
	return nil
}

// op names the step an event ends, for its error.
func (t EventType) op() string {
	switch t {
	case EventAddrResolved, EventAddrError:
		return "resolve_addr"
	case EventRouteResolved, EventRouteError:
		return "resolve_route"
	case EventConnectResponse, EventConnectError, EventUnreachable, EventRejected, EventEstablished:
		return "connect"
	case EventDisconnected:
		return "disconnect"
	}
	return "get_event"
}
