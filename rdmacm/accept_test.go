package rdmacm

import (
	"context"
	"testing"
	"time"
)

// An accepted request ends with whatever event the CM sends first: the
// peer's RTU (ESTABLISHED), its DREQ when that overtook the RTU
// (DISCONNECTED with status 0: accepted, and ended; docs/kernel-behaviour.md
// §2), or a failure.
func TestAwaitEstablished(t *testing.T) {
	for _, c := range []struct {
		name    string
		e       Event
		ok      bool
		requeue bool // the event stays queued for GetEvent
	}{
		{"established", Event{Type: EventEstablished}, true, false},
		{"disconnected before the RTU", Event{Type: EventDisconnected}, true, true},
		{"disconnect timed out", Event{Type: EventDisconnected, Status: -110}, false, false},
		{"rejected", Event{Type: EventRejected, Status: 28}, false, false},
		{"unreachable", Event{Type: EventUnreachable, Status: -110}, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			// No kernel here: the ID stays idle, so that the DISCONNECTED
			// event queues no disconnect command.
			id := newID(&EventChannel{}, PortSpaceTCP)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			id.deliver(c.e)
			err := id.awaitEstablished(ctx, "accept")
			if (err == nil) != c.ok {
				t.Fatalf("awaitEstablished after %v (status %d) = %v, want success %v", c.e.Type, c.e.Status, err, c.ok)
			}
			e, ok, err := id.nextEvent()
			if err != nil {
				t.Fatal(err)
			}
			if ok != c.requeue || ok && e.Type != c.e.Type {
				t.Errorf("after awaitEstablished the queue holds %v (%v), want the event again: %v", e.Type, ok, c.requeue)
			}
			if c.e.Type == EventDisconnected {
				select {
				case <-id.Done():
				default:
					t.Error("Done is open after DISCONNECTED")
				}
			}
			id.bg.Wait()
		})
	}
}
