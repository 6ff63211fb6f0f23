package rdmacm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/uverbs"
)

// PortSpace is the CM port space of an ID: it fixes the QP type (enum
// rdma_ucm_port_space).
type PortSpace uint16

const (
	// PortSpaceTCP is for reliable connected QPs (RDMA_PS_TCP).
	PortSpaceTCP PortSpace = abi.RDMA_PS_TCP
	// PortSpaceUDP is for unreliable datagram QPs (RDMA_PS_UDP); connecting
	// exchanges QP numbers and QKeys (SIDR) instead of setting up a
	// connection.
	PortSpaceUDP PortSpace = abi.RDMA_PS_UDP
)

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

// DefaultConnParam is what librdmacm sends when given no parameters: the
// device's maximum READ depths and 7 retries of each kind (rdma-core:
// librdmacm/cma.c rdma_connect, rdma_accept with conn_param NULL).
var DefaultConnParam = ConnParam{ResponderResources: 255, InitiatorDepth: 255, RetryCount: 7, RNRRetryCount: 7}

// Private data limits of the IB CM messages once the CM's own header for IP
// addressing is taken off (abi-reference §4.3).
const (
	MaxConnectPrivateData = 56  // REQ
	MaxAcceptPrivateData  = 196 // REP
	MaxRejectPrivateData  = 148 // REJ
	MaxUDConnectData      = 180 // SIDR REQ
	MaxUDAcceptData       = 136 // SIDR REP
)

// ID is a CM identifier, the CM's counterpart of a socket: it is bound to an
// address, resolves the peer's address and route, and listens, connects,
// accepts or rejects. After address resolution (or binding to a
// device-specific address, or as a connection request) it knows its RDMA
// device (Device); CreateQP then makes a QP there that the ID moves through
// its states as librdmacm does.
//
// Methods that wait (ResolveAddr, ResolveRoute, Connect, Accept, GetEvent)
// take a context; only one goroutine should wait for an ID's events at a
// time. Close destroys the ID and is idempotent.
//
// rdma-core: struct rdma_cm_id.
type ID struct {
	ch  *EventChannel
	uid uint64
	kid uint32
	ps  PortSpace

	logf func(format string, args ...any)

	qmu     sync.Mutex
	queue   []Event
	notify  chan struct{} // one token when queue may have grown
	done    chan struct{} // closed at DISCONNECTED, DEVICE_REMOVAL or Close
	doneOK  bool
	qclosed bool // Close took the queue: nothing more is queued

	mu       sync.Mutex
	closed   bool
	state    idState
	dev      *uverbs.DeviceInfo
	port     uint8
	qp       *uverbs.QP
	reqParam ConnParam // a request's parameters, for Accept
	failed   bool      // connection setup failed: later events are stale
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
	id.logf = listener.logf
	id.state = stateRequest
	if err := ch.register(id); err != nil {
		return nil, err
	}
	return id, nil
}

// SetLogf makes the ID report each CM step (command, event, QP transition)
// through logf; IDs of connection requests inherit it from the listener.
func (id *ID) SetLogf(logf func(format string, args ...any)) { id.logf = logf }

func (id *ID) log(format string, args ...any) {
	if id.logf != nil {
		id.logf(format, args...)
	}
}

// PortSpace returns the ID's port space.
func (id *ID) PortSpace() PortSpace { return id.ps }

// Channel returns the event channel of the ID.
func (id *ID) Channel() *EventChannel { return id.ch }

// lock takes the ID's lock for a command; it fails once the ID is closed.
func (id *ID) lock(op string) error {
	id.mu.Lock()
	if id.closed {
		id.mu.Unlock()
		return &sys.OpError{Op: op, Err: ErrClosed}
	}
	return nil
}

func (id *ID) command(op string, cmd uint32, body, resp []byte) error {
	return id.ch.command(op, cmd, body, resp)
}

// deliver queues e for the ID; false if the ID is closed (the caller then
// owns e.Request).
func (id *ID) deliver(e Event) bool {
	id.log("event %v (status %d) on %s", e.Type, e.Status, id)
	if e.Type == EventDisconnected {
		// The peer's disconnect request is answered at once (QP to ERR,
		// then DISCONNECT sends the DREP), so the peer's DISCONNECTED
		// comes without waiting for its DREQ to time out, and nothing can be
		// posted to a connection that is gone. librdmacm leaves this to
		// the application (rping calls rdma_disconnect on DISCONNECTED).
		go id.answerDisconnect()
	}
	id.qmu.Lock()
	if id.qclosed {
		id.qmu.Unlock()
		return false
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
	for {
		id.qmu.Lock()
		if len(id.queue) > 0 {
			e := id.queue[0]
			id.queue[0] = Event{}
			id.queue = id.queue[1:]
			id.qmu.Unlock()
			return e, nil
		}
		id.qmu.Unlock()
		if err := id.ch.failure(); err != nil {
			return Event{}, &sys.OpError{Op: "get_event", Err: err}
		}
		id.mu.Lock()
		closed := id.closed
		id.mu.Unlock()
		if closed {
			return Event{}, &sys.OpError{Op: "get_event", Err: ErrClosed}
		}
		select {
		case <-id.notify:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// String names the ID for logs: "cm_id 3 (RDMA_PS_TCP)".
func (id *ID) String() string {
	return fmt.Sprintf("cm_id %d (%v)", id.kid, id.ps)
}

// Bind binds the ID to a local address; port 0 picks a free port. Binding
// to an address of an RDMA device's netdev also binds the ID to that device.
//
// rdma-core: rdma_bind_addr.
func (id *ID) Bind(addr netip.AddrPort) error {
	const op = "bind"
	if err := id.lock(op); err != nil {
		return err
	}
	defer id.mu.Unlock()
	var body abi.UcmBind
	size, err := encodeSockaddr(&body.Addr, addr)
	if err != nil {
		return &sys.OpError{Op: op, Err: err}
	}
	body.ID = id.kid
	body.AddrSize = size
	id.log("bind %s to %v", id, addr)
	if err := id.command(op, abi.RDMA_USER_CM_CMD_BIND, bytesOf(&body), nil); err != nil {
		if errors.Is(err, unix.EADDRINUSE) {
			return &sys.OpError{Op: op, Err: fmt.Errorf("%v: address in use by another CM ID (set ReuseAddr, or pick another port): %w", addr, unix.EADDRINUSE)}
		}
		if errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, unix.ENODEV) {
			return &sys.OpError{Op: op, Err: fmt.Errorf("%v is not an address of this machine with an RDMA device on its netdev (add one with `rdma-link add rxe0 netdev <netdev>`): %w", addr.Addr(), unix.Errno(errnoOf(err)))}
		}
		return err
	}
	return id.queryDeviceLocked()
}

func errnoOf(err error) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return 0
}

// Listen makes the ID listen for connection requests; backlog <= 0 takes the
// kernel's limit (net.rdma_ucm.max_backlog, 1024 by default). Requests come
// as EventConnectRequest events whose Request is a new ID.
//
// rdma-core: rdma_listen.
func (id *ID) Listen(backlog int) error {
	const op = "listen"
	if err := id.lock(op); err != nil {
		return err
	}
	defer id.mu.Unlock()
	if backlog < 0 {
		backlog = 0
	}
	body := abi.UcmListen{ID: id.kid, Backlog: uint32(backlog)}
	id.log("listen on %s, backlog %d", id, backlog)
	if err := id.command(op, abi.RDMA_USER_CM_CMD_LISTEN, bytesOf(&body), nil); err != nil {
		return err
	}
	id.state = stateListening
	return nil
}

func (id *ID) listening() bool {
	id.mu.Lock()
	defer id.mu.Unlock()
	return !id.closed && id.state == stateListening
}

// ResolveAddr resolves dst to an RDMA device, port and GID (through the
// neighbour table: ARP or ND), from src if it is valid, and waits for the
// answer. timeout bounds the kernel's attempt (0 means 2 s, librdmacm's
// usual choice); ctx bounds the wait. A failure is an *EventError matching
// ErrAddrResolve.
//
// rdma-core: rdma_resolve_addr.
func (id *ID) ResolveAddr(ctx context.Context, src, dst netip.AddrPort, timeout time.Duration) error {
	const op = "resolve_addr"
	if err := id.lock(op); err != nil {
		return err
	}
	var body abi.UcmResolveAddr
	body.ID = id.kid
	body.TimeoutMs = timeoutMs(timeout)
	dsize, err := encodeSockaddr(&body.DstAddr, dst)
	if err != nil {
		id.mu.Unlock()
		return &sys.OpError{Op: op, Err: fmt.Errorf("destination: %w", err)}
	}
	body.DstSize = dsize
	if src.Addr().IsValid() {
		ssize, err := encodeSockaddr(&body.SrcAddr, src)
		if err != nil {
			id.mu.Unlock()
			return &sys.OpError{Op: op, Err: fmt.Errorf("source: %w", err)}
		}
		body.SrcSize = ssize
	}
	if body.SrcSize != 0 {
		id.log("resolve address %v from %v (timeout %d ms) on %s", dst, src.Addr(), body.TimeoutMs, id)
	} else {
		id.log("resolve address %v (timeout %d ms) on %s", dst, body.TimeoutMs, id)
	}
	err = id.command(op, abi.RDMA_USER_CM_CMD_RESOLVE_ADDR, bytesOf(&body), nil)
	id.mu.Unlock()
	if err != nil {
		switch {
		case errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, unix.ENODEV):
			route := fmt.Sprintf("destination %v", dst)
			if src.Addr().IsValid() {
				route = fmt.Sprintf("source %v, %s", src.Addr(), route)
			}
			return &sys.OpError{Op: op, Err: fmt.Errorf("%s: %w: no usable source address with an RDMA device on its netdev (add a device with `rdma-link add rxe0 netdev <netdev>`; a new IPv6 address is usable once duplicate address detection ends)", route, errnoOf(err))}
		case errors.Is(err, unix.ENETUNREACH) || errors.Is(err, unix.EHOSTUNREACH):
			return &EventError{Op: op, Event: EventAddrError, Status: -int(errnoOf(err))}
		}
		return err
	}
	if _, err := id.expect(ctx, op, EventAddrResolved); err != nil {
		return err
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.queryDeviceLocked()
}

// ResolveRoute resolves the route to the address ResolveAddr found and
// waits for it. For RoCE the kernel computes it at once from the IP route
// (kernel: core/cma.c cma_resolve_iboe_route).
//
// rdma-core: rdma_resolve_route.
func (id *ID) ResolveRoute(ctx context.Context, timeout time.Duration) error {
	const op = "resolve_route"
	if err := id.lock(op); err != nil {
		return err
	}
	body := abi.UcmResolveRoute{ID: id.kid, TimeoutMs: timeoutMs(timeout)}
	id.log("resolve route on %s (timeout %d ms)", id, body.TimeoutMs)
	err := id.command(op, abi.RDMA_USER_CM_CMD_RESOLVE_ROUTE, bytesOf(&body), nil)
	id.mu.Unlock()
	if err != nil {
		return err
	}
	_, err = id.expect(ctx, op, EventRouteResolved)
	return err
}

func timeoutMs(d time.Duration) uint32 {
	if d <= 0 {
		return 2000
	}
	ms := d.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	if ms > 1<<31 {
		ms = 1 << 31
	}
	return uint32(ms)
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

// Query returns what the kernel knows of the ID's addresses, device and
// path.
//
// rdma-core: rdma_query_addr, rdma_query_gid, rdma_query_route (QUERY with
// RDMA_USER_CM_QUERY_ADDR, _GID and _PATH).
func (id *ID) Query() (Info, error) {
	if err := id.lock("query"); err != nil {
		return Info{}, err
	}
	defer id.mu.Unlock()
	return id.queryLocked()
}

// Info is the result of Query.
type Info struct {
	Local, Remote netip.AddrPort
	Device        string // the ID's RDMA device, "" before it has one
	Port          uint8
	PKey          uint16 // the address's PKey; 0 on RoCE, whose path PKey is 0xffff
	NodeGUID      uverbs.GUID
	SGID, DGID    uverbs.GID
	Paths         []PathRecord // after route resolution
}

// PathRecord is one path the CM resolved (an IB path record, the wire
// format of IBA 15.2.5.16; for RoCE the kernel fills it from the IP route).
type PathRecord struct {
	DGID, SGID uverbs.GID
	PKey       uint16
	SL         uint8
	MTU        uverbs.MTU
	Rate       uint8
	// PacketLifeTime is the exponent the ACK timeout derives from
	// (4.096 µs × 2^x).
	PacketLifeTime uint8
	Raw            [64]byte
}

func decodePathRecord(raw []byte) PathRecord {
	p := PathRecord{}
	copy(p.Raw[:], raw)
	copy(p.DGID[:], raw[8:24])
	copy(p.SGID[:], raw[24:40])
	p.PKey = uint16(raw[50])<<8 | uint16(raw[51])
	p.SL = raw[53] & 0x0f
	p.MTU = uverbs.MTU(raw[54] & 0x3f)
	p.Rate = raw[55] & 0x3f
	p.PacketLifeTime = raw[56] & 0x3f
	return p
}

func (id *ID) queryAddrLocked() (*abi.UcmQueryAddrResp, error) {
	resp := new(abi.UcmQueryAddrResp)
	rb := bytesOf(resp)
	body := abi.UcmQuery{Response: addrOf(rb), ID: id.kid, Option: abi.RDMA_USER_CM_QUERY_ADDR}
	if err := id.command("query addr", abi.RDMA_USER_CM_CMD_QUERY, bytesOf(&body), rb); err != nil {
		return nil, err
	}
	return resp, nil
}

// addrs returns the ID's local and remote addresses (QUERY(ADDR) only).
func (id *ID) addrs() (local, remote netip.AddrPort) {
	if id.lock("query addr") != nil {
		return
	}
	defer id.mu.Unlock()
	a, err := id.queryAddrLocked()
	if err != nil {
		return
	}
	return decodeSockaddr(a.SrcAddr.Anon0[:a.SrcSize]), decodeSockaddr(a.DstAddr.Anon0[:a.DstSize])
}

func (id *ID) queryLocked() (Info, error) {
	a, err := id.queryAddrLocked()
	if err != nil {
		return Info{}, err
	}
	info := Info{
		Local:    decodeSockaddr(a.SrcAddr.Anon0[:a.SrcSize]),
		Remote:   decodeSockaddr(a.DstAddr.Anon0[:a.DstSize]),
		Port:     a.PortNum,
		PKey:     uint16(a.PKey>>8 | a.PKey<<8),
		NodeGUID: uverbs.GUID(beUint64(a.NodeGUID)),
	}
	if id.dev != nil {
		info.Device = id.dev.Name
	}
	if a.NodeGUID == 0 {
		return info, nil
	}
	g := new(abi.UcmQueryAddrResp)
	gb := bytesOf(g)
	body := abi.UcmQuery{Response: addrOf(gb), ID: id.kid, Option: abi.RDMA_USER_CM_QUERY_GID}
	if err := id.command("query gid", abi.RDMA_USER_CM_CMD_QUERY, bytesOf(&body), gb); err != nil {
		return info, err
	}
	if gid, ok := decodeSockaddrIB(g.SrcAddr.Anon0[:g.SrcSize]); ok {
		info.SGID = gid
	}
	if gid, ok := decodeSockaddrIB(g.DstAddr.Anon0[:g.DstSize]); ok {
		info.DGID = gid
	}
	// QUERY(PATH): a count and up to n struct ib_path_rec_data; librdmacm
	// leaves room for 6.
	const maxPaths = 6
	pb := make([]byte, unsafe.Sizeof(abi.UcmQueryPathResp{})+maxPaths*unsafe.Sizeof(abi.IBPathRecData{}))
	body = abi.UcmQuery{Response: addrOf(pb), ID: id.kid, Option: abi.RDMA_USER_CM_QUERY_PATH}
	if err := id.command("query path", abi.RDMA_USER_CM_CMD_QUERY, bytesOf(&body), pb); err != nil {
		return info, err
	}
	n := int((*abi.UcmQueryPathResp)(unsafe.Pointer(&pb[0])).NumPaths)
	for i := 0; i < n && i < maxPaths; i++ {
		off := int(unsafe.Sizeof(abi.UcmQueryPathResp{})) + i*int(unsafe.Sizeof(abi.IBPathRecData{}))
		rec := (*abi.IBPathRecData)(unsafe.Pointer(&pb[off]))
		info.Paths = append(info.Paths, decodePathRecord(bytesOf(&rec.PathRec)))
	}
	return info, nil
}

// queryDeviceLocked learns the ID's device from QUERY(ADDR) and finds it
// among the uverbs devices (abi-reference §4.7: by ibdev_index and node GUID
// as librdmacm's ucma_get_device does). An ID bound to a wildcard address
// has no device yet (node_guid 0).
func (id *ID) queryDeviceLocked() error {
	a, err := id.queryAddrLocked()
	if err != nil {
		return err
	}
	if a.NodeGUID == 0 {
		return nil
	}
	dev, err := findDevice(uverbs.GUID(beUint64(a.NodeGUID)), a.IBDevIndex)
	if err != nil {
		return &sys.OpError{Op: "query addr", Err: err}
	}
	id.dev = dev
	id.port = a.PortNum
	id.log("%s is on device %s port %d", id, dev.Name, a.PortNum)
	return nil
}

// findDevice is the device with that node GUID (and kernel index, when both
// sides know it).
func findDevice(guid uverbs.GUID, index uint32) (*uverbs.DeviceInfo, error) {
	devs, err := uverbs.Devices()
	if err != nil {
		return nil, err
	}
	for i := range devs {
		d := &devs[i]
		if d.NodeGUID != guid {
			continue
		}
		if d.Source == "netlink" && index != ^uint32(0) && d.Index != index {
			continue
		}
		return d, nil
	}
	return nil, fmt.Errorf("the CM chose the RDMA device with node GUID %v (index %d), which has no uverbs device here: %w", guid, index, uverbs.ErrNoDevice)
}

// Device returns the ID's RDMA device and port, or ok false when it has
// none yet (before ResolveAddr, or bound to a wildcard address).
func (id *ID) Device() (dev uverbs.DeviceInfo, port uint8, ok bool) {
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.dev == nil {
		return uverbs.DeviceInfo{}, 0, false
	}
	return *id.dev, id.port, true
}

// SetOption sets an option of the ID: the ACK timeout of its QP, its type
// of service, or address reuse (SET_OPTION, level RDMA_OPTION_ID).
func (id *ID) setOption(name string, optname uint32, val []byte) error {
	op := "set_option " + name
	if err := id.lock(op); err != nil {
		return err
	}
	defer id.mu.Unlock()
	var pin runtime.Pinner
	pin.Pin(&val[0])
	defer pin.Unpin()
	body := abi.UcmSetOption{Optval: addrOf(val), ID: id.kid, Level: abi.RDMA_OPTION_ID, Optname: optname, Optlen: uint32(len(val))}
	id.log("set option %s = %v on %s", name, val, id)
	return id.command(op, abi.RDMA_USER_CM_CMD_SET_OPTION, bytesOf(&body), nil)
}

// SetTOS sets the type of service of the ID's traffic (RDMA_OPTION_ID_TOS);
// call it before ResolveRoute.
//
// rdma-core: rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS).
func (id *ID) SetTOS(tos uint8) error {
	return id.setOption("tos", abi.RDMA_OPTION_ID_TOS, []byte{tos})
}

// SetReuseAddr lets the ID bind to an address in use (RDMA_OPTION_ID_REUSEADDR);
// call it before Bind.
func (id *ID) SetReuseAddr(on bool) error {
	v := make([]byte, 4) // an int
	if on {
		binary.NativeEndian.PutUint32(v, 1)
	}
	return id.setOption("reuseaddr", abi.RDMA_OPTION_ID_REUSEADDR, v)
}

// SetACKTimeout sets the ACK timeout of the ID's QP to 4.096 µs × 2^t
// instead of the one derived from the packet lifetime (19 on 6.1, 17 on
// 6.12 for RoCE: abi-reference §4.9). Set it before the QP is moved to RTS
// (before Connect or Accept).
//
// rdma-core: rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT).
func (id *ID) SetACKTimeout(t uint8) error {
	return id.setOption("ack_timeout", abi.RDMA_OPTION_ID_ACK_TIMEOUT, []byte{t})
}
