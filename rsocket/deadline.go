package rsocket

import (
	"sync"
	"time"
)

// deadline is one direction's deadline, as net.Conn's Set*Deadline want
// it: it applies to calls already waiting and to later ones. wait returns a
// channel that is closed once the deadline has passed; a new deadline in the
// future gives a fresh channel. Only set allocates.
type deadline struct {
	mu      sync.Mutex
	timer   *time.Timer
	expired chan struct{}
}

func newDeadline() *deadline { return &deadline{expired: make(chan struct{})} }

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.expired // the timer fired: wait until its function closed the channel
	}
	d.timer = nil
	passed := isClosed(d.expired)
	if t.IsZero() {
		if passed {
			d.expired = make(chan struct{})
		}
		return
	}
	wait := time.Until(t)
	if wait <= 0 {
		if !passed {
			close(d.expired)
		}
		return
	}
	if passed {
		d.expired = make(chan struct{})
	}
	ch := d.expired
	d.timer = time.AfterFunc(wait, func() { close(ch) })
}

func (d *deadline) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.expired
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
