package rdmacm

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/internal/unix"
	"github.com/goverbs/rdma/uverbs"
)

// PortSpace is the CM port space of an ID: it fixes the QP type (enum
// rdma_ucm_port_space).
type PortSpace uint16

const (
	// PortSpaceTCP is for reliable connected QPs (RDMA_PS_TCP).
	PortSpaceTCP PortSpace = 0x106 // RDMA_PS_TCP
	// PortSpaceUDP is for unreliable datagram QPs (RDMA_PS_UDP); connecting
	// exchanges QP numbers and QKeys (SIDR) instead of setting up a
	// connection.
	PortSpaceUDP PortSpace = 0x111 // RDMA_PS_UDP
)

// String returns ps's name.
func (ps PortSpace) String() string {
	switch ps {
	case PortSpaceTCP:
		return "RDMA_PS_TCP"
	case PortSpaceUDP:
		return "RDMA_PS_UDP"
	}
	return fmt.Sprintf("PortSpace(%#x)", uint16(ps))
}

func (ps PortSpace) qpType() uverbs.QPType {
	if ps == PortSpaceUDP {
		return uverbs.UD
	}
	return uverbs.RC
}

// ID is a CM identifier, the CM's counterpart of a socket: it is bound to an
// address, resolves the peer's address and route, and listens, connects,
// accepts or rejects. After address resolution (or binding to a
// device-specific address, or as a connection request) it knows its RDMA
// device (Device); CreateQP then makes a QP there that the ID moves through
// its states as librdmacm does.
//
// Methods that wait (ResolveAddr, ResolveRoute, Connect, Accept, GetEvent)
// take a context; only one goroutine should wait for an ID's events at a
// time. On a channel of NewAsyncEventChannel the Start methods take their
// place (cm_async.go). Close destroys the ID and is idempotent.
//
// The ID's methods are in three files: this one (its life and its events),
// cm_addr.go (addresses, routes, queries, options) and cm_connect.go (its
// QP and the connection's states).
//
// rdma-core: struct rdma_cm_id.
type ID struct {
	ch  *EventChannel
	uid uint64
	kid uint32
	ps  PortSpace

	// The channel's reader logs the ID's events while its owner may call
	// SetLogf.
	logf atomic.Pointer[func(format string, args ...any)]

	qmu    sync.Mutex
	queue  []Event
	notify chan struct{} // one token when queue may have grown
	// also, if set, is woken with notify: the listener's, for a request
	// that Listener.Accept waits on among others.
	also    atomic.Pointer[chan struct{}]
	done    chan struct{} // closed at DISCONNECTED, DEVICE_REMOVAL or Close
	doneOK  bool
	qclosed bool           // Close took the queue: nothing more is queued
	bg      sync.WaitGroup // answerDisconnect runs; Add only under qmu before qclosed

	mu       sync.Mutex
	closed   bool
	state    idState
	dev      *uverbs.DeviceInfo
	port     uint8
	local    netip.AddrPort // learnt with the device (queryDeviceLocked)
	remote   netip.AddrPort
	qp       *uverbs.QP
	reqParam ConnParam // a request's parameters, for Accept
}

type idState uint8

const (
	stateIdle idState = iota
	stateListening
	stateRequest   // a CONNECT_REQUEST not yet accepted or rejected
	stateConnected // established (RC) or resolved (UD)
	stateDisconnected
)

// CreateID makes an ID on the channel in the given port space.
//
// rdma-core: rdma_create_id.
func (ch *EventChannel) CreateID(ps PortSpace) (*ID, error) {
	const op = "create_id"
	if ps != PortSpaceTCP && ps != PortSpaceUDP {
		return nil, &sys.OpError{Op: op, Err: fmt.Errorf("port space %v: use PortSpaceTCP (RC) or PortSpaceUDP (UD): %w", ps, unix.EINVAL)}
	}
	id := newID(ch, ps)
	if err := ch.register(id); err != nil {
		return nil, &sys.OpError{Op: op, Err: err}
	}
	var resp abi.UcmCreateIDResp
	rb := bytesOf(&resp)
	body := abi.UcmCreateID{UID: id.uid, Response: addrOf(rb), PS: uint16(ps), QPType: uint8(ps.qpType())}
	if err := ch.command(op, abi.RDMA_USER_CM_CMD_CREATE_ID, bytesOf(&body), rb); err != nil {
		ch.unregister(id)
		return nil, err
	}
	id.kid = resp.ID
	return id, nil
}

func newID(ch *EventChannel, ps PortSpace) *ID {
	return &ID{ch: ch, ps: ps, notify: make(chan struct{}, 1), done: make(chan struct{})}
}

// newRequestID makes the ID of a connection request: the kernel made its
// id; its events are reported with our uid once ACCEPT sets it (kernel:
// core/ucma.c ucma_accept; until then they are dropped, ucma_event_handler).
func (ch *EventChannel) newRequestID(listener *ID, kid uint32) (*ID, error) {
	id := newID(ch, listener.ps)
	id.kid = kid
	id.logf.Store(listener.logf.Load())
	id.state = stateRequest
	if err := ch.register(id); err != nil {
		return nil, err
	}
	return id, nil
}

// SetLogf makes the ID report each CM step (command, event, QP transition)
// through logf; IDs of connection requests inherit it from the listener.
// It may be called at any time, also while events arrive. logf is called
// from the caller's goroutine and from the event channel's reader, at the
// same time too: it must be safe for concurrent use.
func (id *ID) SetLogf(logf func(format string, args ...any)) {
	if logf == nil {
		id.logf.Store(nil)
		return
	}
	id.logf.Store(&logf)
}

// logging reports whether the ID has a logf. The calls on a connection's
// path test it first: a log call's arguments are boxed, and allocate, even
// when nothing logs.
func (id *ID) logging() bool { return id.logf.Load() != nil }

func (id *ID) log(format string, args ...any) {
	if logf := id.logf.Load(); logf != nil {
		(*logf)(format, args...)
	}
}

// PortSpace returns the ID's port space.
//
// rdma-core: the ps of struct rdma_cm_id.
func (id *ID) PortSpace() PortSpace { return id.ps }

// Channel returns the event channel of the ID.
//
// rdma-core: the channel of struct rdma_cm_id.
func (id *ID) Channel() *EventChannel { return id.ch }

// locked runs f with the ID's lock held, the one way every command takes
// it; it fails with ErrClosed once the ID is closed.
func (id *ID) locked(op string, f func() error) error {
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.closed {
		return &sys.OpError{Op: op, Err: ErrClosed}
	}
	return f()
}

func (id *ID) command(op string, cmd uint32, body, resp []byte) error {
	return id.ch.command(op, cmd, body, resp)
}

// deliver queues e for the ID; false if the ID is closed (the caller then
// owns e.Request).
func (id *ID) deliver(e Event) bool {
	if id.logging() {
		id.log("event %v (status %d) on %s", e.Type, e.Status, id)
	}
	id.qmu.Lock()
	if id.qclosed {
		id.qmu.Unlock()
		return false
	}
	if e.Type == EventDisconnected {
		// The peer's disconnect request is answered at once (QP to ERR,
		// then DISCONNECT sends the DREP), so the peer's DISCONNECTED
		// comes without waiting for its DREQ to time out, and nothing can be
		// posted to a connection that is gone. librdmacm leaves this to
		// the application (rping calls rdma_disconnect on DISCONNECTED).
		// Not on the reader: it takes the ID's lock. Close waits for it.
		id.bg.Add(1)
		go id.answerDisconnect()
	}
	id.queue = append(id.queue, e)
	if isEnd(e.Type) && !id.doneOK {
		id.doneOK = true
		close(id.done)
	}
	id.qmu.Unlock()
	id.wake()
	return true
}

func (id *ID) answerDisconnect() {
	defer id.bg.Done()
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.closed || id.state != stateConnected || id.ps != PortSpaceTCP {
		return
	}
	id.disconnectLocked()
}

// isEnd reports events after which a connection is over.
func isEnd(t EventType) bool {
	return t == EventDisconnected || t == EventDeviceRemoval
}

func (id *ID) wake() {
	select {
	case id.notify <- struct{}{}:
	default:
	}
	if also := id.also.Load(); also != nil {
		select {
		case *also <- struct{}{}:
		default:
		}
	}
}

// Done returns a channel that is closed when the connection of the ID ends:
// a DISCONNECTED or DEVICE_REMOVAL event arrived, or the ID was closed.
func (id *ID) Done() <-chan struct{} { return id.done }

// GetEvent returns the ID's next event, waiting for one if none is queued.
// It returns ctx.Err() if ctx ends first and an error matching ErrClosed if
// the ID or its channel is closed.
//
// rdma-core: rdma_get_cm_event (for one ID), with rdma_ack_cm_event done.
func (id *ID) GetEvent(ctx context.Context) (Event, error) {
	if err := id.waitable("get_event"); err != nil {
		return Event{}, err
	}
	for {
		e, ok, err := id.nextEvent()
		if ok || err != nil {
			return e, err
		}
		select {
		case <-id.notify:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// unget puts e back at the head of the queue, for the next GetEvent.
func (id *ID) unget(e Event) {
	id.qmu.Lock()
	if !id.qclosed {
		id.queue = append([]Event{e}, id.queue...)
	}
	id.qmu.Unlock()
	id.wake()
}

// nextEvent takes the next queued event, if any; err is set once the ID or
// its channel is closed and nothing is queued.
func (id *ID) nextEvent() (e Event, ok bool, err error) {
	id.qmu.Lock()
	if len(id.queue) > 0 {
		e = id.queue[0]
		id.queue[0] = Event{}
		id.queue = id.queue[1:]
		id.qmu.Unlock()
		return e, true, nil
	}
	closed := id.qclosed
	id.qmu.Unlock()
	if err := id.ch.failure(); err != nil {
		return Event{}, false, &sys.OpError{Op: "get_event", Err: err}
	}
	if closed {
		return Event{}, false, &sys.OpError{Op: "get_event", Err: ErrClosed}
	}
	return Event{}, false, nil
}

// expect waits for the next event and returns it if it is want; any other
// event becomes an error.
func (id *ID) expect(ctx context.Context, op string, want EventType) (Event, error) {
	e, err := id.GetEvent(ctx)
	if err != nil {
		return e, err
	}
	if e.Type == want && e.Status == 0 {
		return e, nil
	}
	return e, eventError(op, e)
}

// String names the ID for logs: "cm_id 3 (RDMA_PS_TCP)".
func (id *ID) String() string {
	return fmt.Sprintf("cm_id %d (%v)", id.kid, id.ps)
}

// Close destroys the ID (DESTROY_ID; the kernel sends a disconnect request
// or a reject for a connection still open or pending). It does not close
// the QP: close that first, and poll its CQ for the flushed work. Events
// not yet taken are dropped; connection requests among them are refused.
// Close is idempotent.
//
// rdma-core: rdma_destroy_id.
func (id *ID) Close() error {
	if id == nil {
		return nil
	}
	// Stop queueing first, so that no answer to a disconnect starts after
	// the wait, then wait for those that run (they take id.mu).
	id.qmu.Lock()
	already := id.qclosed
	id.qclosed = true
	pending := id.queue
	id.queue = nil
	if !id.doneOK {
		id.doneOK = true
		close(id.done)
	}
	id.qmu.Unlock()
	if already {
		return nil
	}
	id.bg.Wait()
	id.mu.Lock()
	id.closed = true
	var resp abi.UcmDestroyIDResp
	rb := bytesOf(&resp)
	body := abi.UcmDestroyID{Response: addrOf(rb), ID: id.kid}
	if id.logging() {
		id.log("destroy %s", id)
	}
	err := id.command("destroy_id", abi.RDMA_USER_CM_CMD_DESTROY_ID, bytesOf(&body), rb)
	id.mu.Unlock()
	// Connection requests queued on a listener being destroyed: their
	// kernel ids are ours to destroy.
	for _, e := range pending {
		if e.Request != nil {
			e.Request.Close()
		}
	}
	id.wake()
	if uerr := id.ch.unregister(id); err == nil {
		err = uerr
	}
	return err
}
