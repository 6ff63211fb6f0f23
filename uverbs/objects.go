package uverbs

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/goverbs/rdma/internal/unix"
)

// This file keeps track of the verbs objects of each Device: which objects
// are open (so that Device.Close can close them in dependency order), which
// children each parent still has (so that a parent refuses to close under
// its children), and which object a user handle names (so that async and
// completion events can say which CQ, QP or SRQ they are about).
//
// User handles are never Go pointers: the kernel only echoes them back
// (kernel: core/uverbs_cmd.c stores cmd.user_handle in the uobject and
// returns it in ib_uverbs_async_event_desc.element and
// ib_uverbs_comp_event_desc.cq_handle). They come from one process-wide
// counter, so a handle names at most one object ever.

// objKind orders Device.Close: every kind is closed before the kinds after
// it, children before parents.
type objKind int

const (
	kindQP objKind = iota
	kindAH
	kindSRQ
	kindMR
	kindCQ
	kindPD
	kindCompChannel
)

var kindNames = [...]string{
	kindQP:          "QP",
	kindAH:          "AH",
	kindSRQ:         "SRQ",
	kindMR:          "MR",
	kindCQ:          "CQ",
	kindPD:          "PD",
	kindCompChannel: "completion channel",
}

func (k objKind) String() string { return kindNames[k] }

// verbsObject is what the registry can close. force skips the refusals
// (children still open, work in flight): Device.Close uses it after closing
// everything in order, so that nothing stays mapped once the descriptor is
// gone.
type verbsObject interface {
	close(force bool) error
}

var (
	nextHandle atomic.Uint64

	// byHandle maps the user handle of a CQ, QP or SRQ to a weak pointer
	// to the object, so that a Device and its objects dropped without
	// Close can still be collected (and their descriptor closed by the GC
	// safety net). The strong references live in the Device's registry.
	byHandle sync.Map // uint64 -> handleRef
)

// handleRef is a weak reference to the object a user handle names.
type handleRef struct {
	cq  weak.Pointer[CQ]
	qp  weak.Pointer[QP]
	srq weak.Pointer[SRQ]
}

// forgetHandle is the GC cleanup of an object that was never closed.
func forgetHandle(h uint64) { byHandle.Delete(h) }

// newHandle returns a fresh user handle (never 0).
func newHandle() uint64 { return nextHandle.Add(1) }

// registry is the set of open objects of one Device. It lives in the
// Device, so it never keeps a dropped Device reachable.
type registry struct {
	mu      sync.Mutex
	closing bool
	objs    map[uint64]regEntry
}

type regEntry struct {
	kind objKind
	obj  verbsObject
}

// objects returns the Device's registry, creating it (and its close hook)
// on first use. It fails with ErrClosed once the Device is closing.
func (c *Device) objects(op string) (*registry, error) {
	if c == nil {
		return nil, &OpError{Op: op, Err: ErrClosed}
	}
	c.regMu.Lock()
	defer c.regMu.Unlock()
	if r := c.reg; r != nil {
		return r, nil
	}
	r := &registry{objs: map[uint64]regEntry{}}
	if _, ok := c.onClose(func() { r.closeAll() }); !ok {
		return nil, &OpError{Op: op, Err: ErrClosed}
	}
	c.reg = r
	return r, nil
}

// add records an open object under its handle. It fails with ErrClosed if
// the Device started closing, in which case the caller destroys the object
// itself.
func (r *registry) add(op string, h uint64, kind objKind, o verbsObject) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closing {
		return &OpError{Op: op, Err: ErrClosed}
	}
	r.objs[h] = regEntry{kind, o}
	switch x := o.(type) {
	case *CQ:
		byHandle.Store(h, handleRef{cq: weak.Make(x)})
		runtime.AddCleanup(x, forgetHandle, h)
	case *QP:
		byHandle.Store(h, handleRef{qp: weak.Make(x)})
		runtime.AddCleanup(x, forgetHandle, h)
	case *SRQ:
		byHandle.Store(h, handleRef{srq: weak.Make(x)})
		runtime.AddCleanup(x, forgetHandle, h)
	}
	return nil
}

// remove forgets a closed object.
func (r *registry) remove(h uint64) {
	r.mu.Lock()
	delete(r.objs, h)
	r.mu.Unlock()
	byHandle.Delete(h)
}

// closeAll closes every object still open when the Device closes: QPs first
// (each drained, so that posted work completes before anything it uses goes
// away), then AHs, SRQs, MRs, CQs, PDs and completion channels; newest first
// within a kind. Whatever refuses (it cannot normally happen in this order)
// is closed by force in a second pass.
func (r *registry) closeAll() {
	r.mu.Lock()
	r.closing = true
	type item struct {
		h uint64
		regEntry
	}
	items := make([]item, 0, len(r.objs))
	for h, e := range r.objs {
		items = append(items, item{h, e})
	}
	r.mu.Unlock()
	sort.Slice(items, func(i, j int) bool {
		if items[i].kind != items[j].kind {
			return items[i].kind < items[j].kind
		}
		return items[i].h > items[j].h
	})
	var refused []item
	for _, it := range items {
		if err := it.obj.close(false); err != nil && errors.Is(err, ErrBusy) {
			refused = append(refused, it)
		}
	}
	for _, it := range refused {
		it.obj.close(true)
	}
}

// lookupHandle returns the open object with user handle h, or nil.
func lookupHandle(h uint64) verbsObject {
	v, ok := byHandle.Load(h)
	if !ok {
		return nil
	}
	ref := v.(handleRef)
	if p := ref.cq.Value(); p != nil {
		return p
	}
	if p := ref.qp.Value(); p != nil {
		return p
	}
	if p := ref.srq.Value(); p != nil {
		return p
	}
	return nil
}

// ErrBusy is matched (errors.Is) by the error of a Close that is refused
// because the object is still in use: a PD with MRs, QPs, SRQs or AHs, a CQ
// or SRQ that QPs use, a completion channel with CQs, an MR while posted
// work names its lkey, a Buffer that an MR registers. It also matches
// unix.EBUSY, the kernel's answer to the same mistakes
// (kernel: core/rdma_core.c uverbs_destroy_uobject, ib_destroy_usecnt).
var ErrBusy error = &busyError{msg: "object is in use"}

type busyError struct{ msg string }

func (e *busyError) Error() string { return e.msg }
func (e *busyError) Is(target error) bool {
	return target == ErrBusy || target == unix.EBUSY
}

// children tracks the live children of a parent object, and whether the
// parent has started closing. A child holds a slot before its create command
// and adopts it after, so a concurrent parent Close never deallocates under
// a child being created.
type children struct {
	mu      sync.Mutex
	closed  bool
	pending int
	set     map[any]objKind
}

// hold reserves a child slot. It fails with ErrClosed when the parent is
// closed.
func (ch *children) hold(op, parent string) error {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.closed {
		return &OpError{Op: op, Err: fmt.Errorf("the %s is closed: %w", parent, ErrClosed)}
	}
	ch.pending++
	return nil
}

// adopt turns a held slot into child o.
func (ch *children) adopt(o any, k objKind) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.pending--
	if ch.set == nil {
		ch.set = map[any]objKind{}
	}
	ch.set[o] = k
}

// unhold gives back a slot that was not adopted (the create failed).
func (ch *children) unhold() {
	ch.mu.Lock()
	ch.pending--
	ch.mu.Unlock()
}

// drop forgets child o.
func (ch *children) drop(o any) {
	ch.mu.Lock()
	delete(ch.set, o)
	ch.mu.Unlock()
}

// beginClose marks the parent closed, unless it still has children (and
// force is false): then it returns an error matching ErrBusy that names
// them. It returns closed=true if the parent was already closed.
func (ch *children) beginClose(op, parent string, force bool) (already bool, err error) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.closed {
		return true, nil
	}
	if !force && (len(ch.set) > 0 || ch.pending > 0) {
		counts := map[objKind]int{}
		for _, k := range ch.set {
			counts[k]++
		}
		var parts []string
		for k := kindQP; k <= kindCompChannel; k++ {
			if n := counts[k]; n > 0 {
				parts = append(parts, plural(n, k.String()))
			}
		}
		if ch.pending > 0 {
			parts = append(parts, plural(ch.pending, "object")+" being created")
		}
		return false, &OpError{Op: op, Err: &busyError{msg: fmt.Sprintf(
			"the %s is still used by %s: close them first (Device.Close closes everything in order)",
			parent, strings.Join(parts, ", "))}}
	}
	ch.closed = true
	return false, nil
}

// reopen undoes beginClose after the kernel refused to destroy the parent.
func (ch *children) reopen() {
	ch.mu.Lock()
	ch.closed = false
	ch.mu.Unlock()
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func closedErr(op string) error { return &OpError{Op: op, Err: ErrClosed} }

// QP returns the QP an event is about, or nil if the event is not a QP event
// or the QP was closed since.
//
// rdma-core: element.qp of struct ibv_async_event.
func (e AsyncEvent) QP() *QP {
	switch e.Type {
	case EventQPFatal, EventQPReqErr, EventQPAccessErr, EventCommEst, EventSQDrained,
		EventPathMig, EventPathMigErr, EventQPLastWQEReached:
		qp, _ := lookupHandle(e.Element).(*QP)
		return qp
	}
	return nil
}

// CQ returns the CQ an event is about (EventCQErr: the CQ overflowed and is
// no longer usable), or nil.
//
// rdma-core: element.cq of struct ibv_async_event.
func (e AsyncEvent) CQ() *CQ {
	if e.Type == EventCQErr {
		cq, _ := lookupHandle(e.Element).(*CQ)
		return cq
	}
	return nil
}

// SRQ returns the SRQ an event is about (EventSRQLimitReached,
// EventSRQErr), or nil.
//
// rdma-core: element.srq of struct ibv_async_event.
func (e AsyncEvent) SRQ() *SRQ {
	switch e.Type {
	case EventSRQErr, EventSRQLimitReached:
		srq, _ := lookupHandle(e.Element).(*SRQ)
		return srq
	}
	return nil
}

var eventCNames = [...]string{
	EventCQErr:            "IBV_EVENT_CQ_ERR",
	EventQPFatal:          "IBV_EVENT_QP_FATAL",
	EventQPReqErr:         "IBV_EVENT_QP_REQ_ERR",
	EventQPAccessErr:      "IBV_EVENT_QP_ACCESS_ERR",
	EventCommEst:          "IBV_EVENT_COMM_EST",
	EventSQDrained:        "IBV_EVENT_SQ_DRAINED",
	EventPathMig:          "IBV_EVENT_PATH_MIG",
	EventPathMigErr:       "IBV_EVENT_PATH_MIG_ERR",
	EventDeviceFatal:      "IBV_EVENT_DEVICE_FATAL",
	EventPortActive:       "IBV_EVENT_PORT_ACTIVE",
	EventPortErr:          "IBV_EVENT_PORT_ERR",
	EventLIDChange:        "IBV_EVENT_LID_CHANGE",
	EventPKeyChange:       "IBV_EVENT_PKEY_CHANGE",
	EventSMChange:         "IBV_EVENT_SM_CHANGE",
	EventSRQErr:           "IBV_EVENT_SRQ_ERR",
	EventSRQLimitReached:  "IBV_EVENT_SRQ_LIMIT_REACHED",
	EventQPLastWQEReached: "IBV_EVENT_QP_LAST_WQE_REACHED",
	EventClientReregister: "IBV_EVENT_CLIENT_REREGISTER",
	EventGIDChange:        "IBV_EVENT_GID_CHANGE",
	EventWQFatal:          "IBV_EVENT_WQ_FATAL",
}

// Name returns rdma-core's C name of the event type, e.g.
// "IBV_EVENT_SRQ_LIMIT_REACHED".
func (t EventType) Name() string {
	if int(t) < len(eventCNames) {
		return eventCNames[t]
	}
	return fmt.Sprintf("IBV_EVENT_%d", uint32(t))
}

// forget removes a closed object from its Device's registry.
func (c *Device) forget(h uint64) {
	c.regMu.Lock()
	r := c.reg
	c.regMu.Unlock()
	if r != nil {
		r.remove(h)
	} else {
		byHandle.Delete(h)
	}
}

// ignoreClosedContext drops ErrClosed from a destroy command: once the
// Device's descriptor is closed the kernel has destroyed every object made
// through it (kernel: core/uverbs_main.c ib_uverbs_close ->
// uverbs_destroy_ufile_hw).
func ignoreClosedContext(err error) error {
	if errors.Is(err, ErrClosed) {
		return nil
	}
	return err
}

func errNilParent(what string) error {
	return fmt.Errorf("nil %s", what)
}
