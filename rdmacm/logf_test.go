package rdmacm

import (
	"sync"
	"sync/atomic"
	"testing"
)

// The channel's reader logs each event it delivers while the ID's owner may
// set the ID's log function; a connection request's ID takes the
// listener's. Run with -race (make unit does): the reader and SetLogf
// share the function.
func TestSetLogfWhileDelivering(t *testing.T) {
	ch := &EventChannel{ids: make(map[uint64]*ID), nextUID: 1}
	listener := newID(ch, PortSpaceTCP)
	var logged atomic.Int64
	count := func(string, ...any) { logged.Add(1) }

	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // as EventChannel.route does, on the reader
		defer wg.Done()
		for range 200 {
			listener.deliver(Event{Type: EventConnectRequest})
			req, err := ch.newRequestID(listener, 7)
			if err != nil {
				t.Error(err)
				return
			}
			req.deliver(Event{Type: EventEstablished})
		}
	}()
	for range 200 {
		listener.SetLogf(count)
		listener.SetLogf(nil)
	}
	wg.Wait()

	listener.SetLogf(count)
	before := logged.Load()
	listener.deliver(Event{Type: EventConnectRequest})
	req, err := ch.newRequestID(listener, 8)
	if err != nil {
		t.Fatal(err)
	}
	req.deliver(Event{Type: EventEstablished})
	if n := logged.Load() - before; n != 2 {
		t.Errorf("with SetLogf set, the listener's and the request's events logged %d lines, want 2", n)
	}
	listener.SetLogf(nil)
	before = logged.Load()
	listener.deliver(Event{Type: EventConnectRequest})
	if n := logged.Load() - before; n != 0 {
		t.Errorf("after SetLogf(nil) an event logged %d lines", n)
	}
}
