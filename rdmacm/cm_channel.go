package rdmacm

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/internal/unix"
)

// Where the CM lives. Tests point these at fakes.
var (
	devicePath     = "/dev/infiniband/rdma_cm"
	abiVersionPath = "/sys/class/misc/rdma_cm/abi_version"
)

// EventChannel is an open /dev/infiniband/rdma_cm: the channel through
// which the kernel reports the events of the IDs created on it, and the file
// every CM command is written to. Its fd is non-blocking and waited on
// through Go's netpoller by one goroutine, which reads each event and hands
// it to the ID it concerns; each ID has its own queue (ID.GetEvent), so many
// IDs (a listener and all its connections) share one channel without
// stealing each other's events. A channel of NewAsyncEventChannel has no
// such goroutine: its caller takes every ID's events (GetEvents).
//
// The kernel destroys every ID of a channel when its fd is closed
// (kernel: core/ucma.c ucma_close), and Close does the same: it closes the
// IDs still open on the channel, then the fd (the package doc's Close).
//
// rdma-core: struct rdma_event_channel (rdma_create_event_channel).
type EventChannel struct {
	ev *sys.EventFile

	mu      sync.Mutex
	ids     map[uint64]*ID // by uid, the handle the kernel reports events with
	nextUID uint64
	refs    int  // open IDs, plus one until Close
	closing bool // Close was called
	err     error
	done    chan struct{} // closed when the reader stops (at once if async)

	// async: no reader goroutine; the caller takes the events of all IDs
	// with GetEvents (cm_async.go), which getM serialises.
	async bool
	getM  sync.Mutex
	get   *getEventCmd
}

// NewEventChannel opens the CM. Without the rdma_ucm module or any RDMA
// device the error says how to get them.
//
// rdma-core: rdma_create_event_channel.
func NewEventChannel() (*EventChannel, error) { return openChannel(false) }

func openChannel(async bool) (*EventChannel, error) {
	if err := checkABI(); err != nil {
		return nil, err
	}
	raw, err := unix.Open(devicePath, unix.O_RDWR|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		raw, err = unix.Open(devicePath, unix.O_RDWR|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, explainOpen(err)
	}
	ev, err := sys.NewEventFile(raw, "rdma_cm")
	if err != nil {
		return nil, err
	}
	ch := &EventChannel{ev: ev, ids: make(map[uint64]*ID), nextUID: 1, refs: 1, done: make(chan struct{}), async: async}
	if async {
		close(ch.done) // no reader goroutine
	} else {
		go ch.read()
	}
	return ch, nil
}

func explainOpen(err error) error {
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENODEV), errors.Is(err, unix.ENXIO):
		return &sys.OpError{Op: "open " + devicePath, Err: fmt.Errorf("%w: %w", ErrNoCM, err)}
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return &sys.OpError{Op: "open " + devicePath, Err: fmt.Errorf("%w: the RDMA CM device is not accessible to this user: run as root or give the user rw access to %s (rdma-core's udev rules give it to everyone)", err, devicePath)}
	}
	return &sys.OpError{Op: "open " + devicePath, Err: err}
}

// checkABI refuses a CM whose command ABI we do not speak. librdmacm takes
// versions 3 and 4; the commands used here (BIND, RESOLVE_ADDR, QUERY) are
// those of version 4 (RDMA_USER_CM_ABI_VERSION, the same on 6.1 and 6.12).
//
// A version found good is remembered for the life of the process: reading
// sysfs for every Dial cost a dialer 6% of its CPU in the lab.
func checkABI() error {
	if abiChecked.Load() {
		return nil
	}
	if err := readABI(); err != nil {
		return err
	}
	abiChecked.Store(true)
	return nil
}

var abiChecked atomic.Bool

func readABI() error {
	b, err := os.ReadFile(abiVersionPath)
	if err != nil {
		return nil // no sysfs: let the open say what is wrong
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || v != abi.RDMA_USER_CM_ABI_VERSION {
		return fmt.Errorf("rdma_cm ABI version %q in %s, this package speaks %d", strings.TrimSpace(string(b)), abiVersionPath, abi.RDMA_USER_CM_ABI_VERSION)
	}
	return nil
}

// Close closes the IDs still open on the channel, as ID.Close does (newest
// first: the requests a listener queued before the listener), then the fd,
// as the kernel destroys the IDs of a closed fd (kernel: core/ucma.c
// ucma_close). Calls waiting on its IDs or on the channel return an error
// matching ErrClosed. Close is idempotent; it returns the first error of an
// ID's DESTROY_ID, the IDs being closed all the same.
//
// rdma-core: rdma_destroy_event_channel (which expects its IDs destroyed
// first, and leaves the rest to the kernel's close).
func (ch *EventChannel) Close() error {
	if ch == nil {
		return nil
	}
	ch.mu.Lock()
	if ch.closing {
		ch.mu.Unlock()
		return nil
	}
	ch.closing = true // no ID is created from here on (register)
	ids := make([]*ID, 0, len(ch.ids))
	for _, id := range ch.ids {
		ids = append(ids, id)
	}
	ch.mu.Unlock()
	sort.Slice(ids, func(i, j int) bool { return ids[i].uid > ids[j].uid })
	var first error
	for _, id := range ids {
		if err := id.Close(); err != nil && first == nil {
			first = err
		}
	}
	ch.mu.Lock()
	if err := ch.releaseLocked(); first == nil {
		first = err
	}
	return first
}

// release gives up the hold of the package's own object that opened the
// channel and shares it with what it made (a Listener with the
// connections it accepted): the fd is closed at once if no ID is open,
// else when the last one is.
func (ch *EventChannel) release() error {
	ch.mu.Lock()
	if ch.closing {
		ch.mu.Unlock()
		return nil
	}
	ch.closing = true
	return ch.releaseLocked()
}

// releaseLocked drops one reference; it unlocks ch.mu. The last one
// closes the fd and waits for the reader to stop, unless the reader holds
// it (see read), in which case the reader closes the fd itself.
func (ch *EventChannel) releaseLocked() error {
	ch.refs--
	last := ch.refs == 0
	ch.mu.Unlock()
	if !last {
		return nil
	}
	err := ch.ev.Close()
	<-ch.done
	return err
}

// hold takes a reference for the reader while it handles one event, so
// that an ID the reader closes (a request nobody can take any more) never
// drops the last reference and waits on itself.
func (ch *EventChannel) hold() {
	ch.mu.Lock()
	ch.refs++
	ch.mu.Unlock()
}

// releaseByReader drops the reader's hold; if it was the last reference it
// closes the fd and reports true: the reader then stops.
func (ch *EventChannel) releaseByReader() bool {
	ch.mu.Lock()
	ch.refs--
	last := ch.refs == 0
	ch.mu.Unlock()
	if last {
		ch.ev.Close()
	}
	return last
}

// command writes one CM command: the header and body, with the response
// (if any) at resp. Both must stay on the heap for the call (the kernel
// writes through the address stored in the body); command pins them.
func (ch *EventChannel) command(op string, cmd uint32, body []byte, resp []byte) error {
	buf := make([]byte, int(unsafe.Sizeof(abi.UcmCmdHdr{}))+len(body))
	hdr := (*abi.UcmCmdHdr)(unsafe.Pointer(&buf[0]))
	hdr.Cmd = cmd
	hdr.In = uint16(len(body))
	hdr.Out = uint16(len(resp))
	copy(buf[unsafe.Sizeof(*hdr):], body)
	var pin runtime.Pinner
	pin.Pin(&buf[0])
	if len(resp) > 0 {
		pin.Pin(&resp[0])
	}
	defer pin.Unpin()
	err := ch.ev.Command(op, unsafe.Pointer(&buf[0]), uintptr(len(buf)))
	runtime.KeepAlive(resp)
	return err
}

// read is the channel's reader: it waits for events through the netpoller
// and routes each to its ID until the fd is closed.
func (ch *EventChannel) read() {
	defer close(ch.done)
	g := newGetEventCmd()
	resp, buf := g.resp, g.buf
	var pin runtime.Pinner
	g.pin(&pin)
	defer pin.Unpin()
	for {
		*resp = abi.UcmEventResp{}
		err := ch.ev.CommandWait("get_event", unsafe.Pointer(&buf[0]), uintptr(len(buf)))
		if err != nil {
			if !errors.Is(err, sys.ErrClosed) {
				ch.fail(&sys.OpError{Op: "get_event", Err: err})
			} else {
				ch.fail(ErrClosed)
			}
			return
		}
		ch.hold()
		ch.route(resp)
		if ch.releaseByReader() {
			return
		}
	}
}

// getEventCmd is a GET_EVENT command and the response it points at.
type getEventCmd struct {
	buf  []byte
	resp *abi.UcmEventResp
}

func newGetEventCmd() *getEventCmd {
	g := &getEventCmd{resp: new(abi.UcmEventResp), buf: make([]byte, unsafe.Sizeof(abi.UcmCmdHdr{})+unsafe.Sizeof(abi.UcmGetEvent{}))}
	hdr := (*abi.UcmCmdHdr)(unsafe.Pointer(&g.buf[0]))
	hdr.Cmd = abi.RDMA_USER_CM_CMD_GET_EVENT
	hdr.In = uint16(unsafe.Sizeof(abi.UcmGetEvent{}))
	hdr.Out = uint16(unsafe.Sizeof(*g.resp))
	body := (*abi.UcmGetEvent)(unsafe.Pointer(&g.buf[unsafe.Sizeof(*hdr)]))
	body.Response = uint64(uintptr(unsafe.Pointer(g.resp)))
	return g
}

// pin keeps the command and its response in place while the kernel may
// write through the address in the body.
func (g *getEventCmd) pin(p *runtime.Pinner) {
	p.Pin(g.resp)
	p.Pin(&g.buf[0])
}

// fail wakes every waiter of the channel's IDs with err.
func (ch *EventChannel) fail(err error) {
	ch.mu.Lock()
	ch.err = err
	ids := make([]*ID, 0, len(ch.ids))
	for _, id := range ch.ids {
		ids = append(ids, id)
	}
	ch.mu.Unlock()
	for _, id := range ids {
		id.wake()
	}
}

// route hands one event to its ID. A CONNECT_REQUEST carries the
// listener's uid and the kernel id of a new ID (kernel: core/ucma.c
// ucma_event_handler): that ID is made here. An event for an ID that is
// gone is dropped; a request for a listener that is gone is refused by
// destroying the new kernel id (the kernel answers the peer with a REJ).
// route does no device work: the request's device is found by whoever
// takes the request (Listener.GetRequest), so that one slow lookup never
// holds up the other events of the channel.
func (ch *EventChannel) route(r *abi.UcmEventResp) {
	ch.mu.Lock()
	owner := ch.ids[r.UID]
	ch.mu.Unlock()
	if EventType(r.Event) == EventConnectRequest {
		if owner == nil || !owner.listening() {
			ch.destroyKernelID(r.ID)
			return
		}
		e := decodeEvent(r, owner.ps == PortSpaceUDP)
		req, err := ch.newRequestID(owner, r.ID)
		if err != nil {
			ch.destroyKernelID(r.ID)
			return
		}
		req.reqParam = e.Param
		e.Request = req
		if !owner.deliver(e) {
			req.Close()
		}
		return
	}
	if owner == nil {
		return
	}
	owner.deliver(decodeEvent(r, owner.ps == PortSpaceUDP))
}

// destroyKernelID destroys a kernel id that no ID object owns.
func (ch *EventChannel) destroyKernelID(kid uint32) {
	var resp abi.UcmDestroyIDResp
	body := abi.UcmDestroyID{ID: kid}
	rb := bytesOf(&resp)
	body.Response = addrOf(rb)
	ch.command("destroy_id", abi.RDMA_USER_CM_CMD_DESTROY_ID, bytesOf(&body), rb)
}

// register makes a uid for id and takes a reference on the channel.
func (ch *EventChannel) register(id *ID) error {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.closing || ch.err != nil {
		return ErrClosed
	}
	id.uid = ch.nextUID
	ch.nextUID++
	ch.ids[id.uid] = id
	ch.refs++
	return nil
}

// unregister forgets id and drops its reference.
func (ch *EventChannel) unregister(id *ID) error {
	ch.mu.Lock()
	if _, ok := ch.ids[id.uid]; !ok {
		ch.mu.Unlock()
		return nil
	}
	delete(ch.ids, id.uid)
	return ch.releaseLocked()
}

func (ch *EventChannel) failure() error {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.err
}

// bytesOf views a fixed-size ABI struct (no Go pointers inside).
func bytesOf[T any](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}

func addrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }
