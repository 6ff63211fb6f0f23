package uverbs

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
)

// EventType is the type of an asynchronous event (kernel: enum
// ib_event_type, whose values the async event file carries; rdma-core: enum
// ibv_event_type).
type EventType uint32

// Async event types. rxe raises CQErr (CQ overflow), SQDrained,
// SRQLimitReached, QPLastWQEReached (kernel 6.12, SRQ QPs) and, through the
// core, PortActive, PortErr and GIDChange (docs/abi.md §3.13).
const (
	EventCQErr            EventType = 0
	EventQPFatal          EventType = 1
	EventQPReqErr         EventType = 2
	EventQPAccessErr      EventType = 3
	EventCommEst          EventType = 4
	EventSQDrained        EventType = 5
	EventPathMig          EventType = 6
	EventPathMigErr       EventType = 7
	EventDeviceFatal      EventType = 8
	EventPortActive       EventType = 9
	EventPortErr          EventType = 10
	EventLIDChange        EventType = 11
	EventPKeyChange       EventType = 12
	EventSMChange         EventType = 13
	EventSRQErr           EventType = 14
	EventSRQLimitReached  EventType = 15
	EventQPLastWQEReached EventType = 16
	EventClientReregister EventType = 17
	EventGIDChange        EventType = 18
	EventWQFatal          EventType = 19
)

// eventNames are rdma-core's ibv_event_type_str texts.
var eventNames = [...]string{
	EventCQErr:            "CQ error",
	EventQPFatal:          "local work queue catastrophic error",
	EventQPReqErr:         "invalid request local work queue error",
	EventQPAccessErr:      "local access violation work queue error",
	EventCommEst:          "communication established",
	EventSQDrained:        "send queue drained",
	EventPathMig:          "path migrated",
	EventPathMigErr:       "path migration request error",
	EventDeviceFatal:      "local catastrophic error",
	EventPortActive:       "port active",
	EventPortErr:          "port error",
	EventLIDChange:        "LID change",
	EventPKeyChange:       "P_Key change",
	EventSMChange:         "SM change",
	EventSRQErr:           "SRQ catastrophic error",
	EventSRQLimitReached:  "SRQ limit reached",
	EventQPLastWQEReached: "last WQE reached",
	EventClientReregister: "client reregistration",
	EventGIDChange:        "GID table change",
	EventWQFatal:          "WQ fatal",
}

// String returns rdma-core's description (ibv_event_type_str).
func (t EventType) String() string {
	if int(t) < len(eventNames) {
		return eventNames[t]
	}
	return "unknown event " + strconv.Itoa(int(t))
}

// PortEvent reports whether events of this type concern a port (their element
// is the port number); the others concern a CQ, QP, SRQ or WQ (their element
// is the object's user handle) or the whole device.
func (t EventType) PortEvent() bool {
	switch t {
	case EventPortActive, EventPortErr, EventLIDChange, EventPKeyChange,
		EventSMChange, EventClientReregister, EventGIDChange:
		return true
	}
	return false
}

// AsyncEvent is one asynchronous event of a device (struct
// ib_uverbs_async_event_desc).
type AsyncEvent struct {
	Type EventType
	// Element identifies what the event is about: the user handle the
	// object was created with for CQ/QP/SRQ/WQ events, the port number for
	// port events, 0 for DEVICE_FATAL.
	Element uint64
	// Port is the port number for port events, else 0.
	Port uint8
}

// String returns e's name.
func (e AsyncEvent) String() string {
	if e.Type.PortEvent() {
		return fmt.Sprintf("%s (port %d)", e.Type, e.Port)
	}
	if e.Type == EventDeviceFatal {
		return e.Type.String()
	}
	return fmt.Sprintf("%s (handle %d)", e.Type, e.Element)
}

func decodeAsyncEvent(b []byte) AsyncEvent {
	d := (*abi.UverbsAsyncEventDesc)(unsafe.Pointer(unsafe.SliceData(b)))
	e := AsyncEvent{Type: EventType(d.EventType), Element: d.Element}
	if e.Type.PortEvent() {
		e.Port = uint8(d.Element)
	}
	return e
}

// NextEvent waits for the next asynchronous event of the device and returns
// it. The wait parks the goroutine in Go's netpoller (no OS thread is held)
// and ends with ctx.Err() when ctx is done, or with an error matching
// ErrClosed when the Device is closed. One goroutine at a time should call
// NextEvent.
//
// Events queue in kernel memory until read; a program that creates QPs, CQs
// or SRQs should keep reading them.
//
// rdma-core: ibv_get_async_event (no ibv_ack_async_event is needed).
func (c *Device) NextEvent(ctx context.Context) (AsyncEvent, error) {
	const op = "read async event"
	if c == nil || c.async == nil {
		return AsyncEvent{}, &OpError{Op: op, Err: ErrClosed}
	}
	var desc abi.UverbsAsyncEventDesc
	buf := bytesOf(&desc)
	n, err := c.async.Read(ctx, buf)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return AsyncEvent{}, err
		}
		return AsyncEvent{}, &OpError{Op: op, Err: err}
	}
	if n != len(buf) {
		return AsyncEvent{}, &OpError{Op: op, Err: fmt.Errorf("short async event: %d of %d bytes", n, len(buf))}
	}
	return decodeAsyncEvent(buf), nil
}

// TryNextEvent returns the next queued asynchronous event without waiting;
// ok is false when none is queued.
//
// rdma-core: ibv_get_async_event on a non-blocking async_fd.
func (c *Device) TryNextEvent() (ev AsyncEvent, ok bool, err error) {
	const op = "read async event"
	if c == nil || c.async == nil {
		return AsyncEvent{}, false, &OpError{Op: op, Err: ErrClosed}
	}
	var desc abi.UverbsAsyncEventDesc
	buf := bytesOf(&desc)
	n, err := c.async.TryRead(buf)
	if err != nil {
		return AsyncEvent{}, false, &OpError{Op: op, Err: err}
	}
	if n == 0 {
		return AsyncEvent{}, false, nil
	}
	if n != len(buf) {
		return AsyncEvent{}, false, &OpError{Op: op, Err: fmt.Errorf("short async event: %d of %d bytes", n, len(buf))}
	}
	return decodeAsyncEvent(buf), true, nil
}

// Events returns an iterator over the device's asynchronous events. It
// yields each event with a nil error, and stops after yielding the error
// that ended the wait (ctx done, Device closed):
//
//	for ev, err := range c.Events(ctx) {
//		if err != nil {
//			break
//		}
//		...
//	}
//
// rdma-core: ibv_get_async_event, ibv_ack_async_event.
func (c *Device) Events(ctx context.Context) iter.Seq2[AsyncEvent, error] {
	return func(yield func(AsyncEvent, error) bool) {
		for {
			ev, err := c.NextEvent(ctx)
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
}
