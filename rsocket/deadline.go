package rsocket

import (
	"sync"
	"time"
)

// deadline is one direction's deadline, as net.Conn's Set*Deadline want
// it: it applies to calls already waiting and to later ones. wait returns a
// channel that is closed once the deadline has passed; a new deadline in the
// future gives a fresh channel. onExpire runs once the channel is closed:
// it wakes the calls asleep (Conn.interrupt). Only set allocates.
type deadline struct {
	mu       sync.Mutex
	timer    *time.Timer
	expired  chan struct{}
	onExpire func()
}

func newDeadline() *deadline { return &deadline{expired: make(chan struct{})} }

func (d *deadline) set(t time.Time) {
	if d.update(t) {
		d.onExpire() // not under d.mu: it takes Conn.mu, which is held around wait
	}
}

// update sets the deadline and reports whether it passed just now.
func (d *deadline) update(t time.Time) bool {
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
		return false
	}
	wait := time.Until(t)
	if wait <= 0 {
		if !passed {
			close(d.expired)
			return true
		}
		return false
	}
	if passed {
		d.expired = make(chan struct{})
	}
	ch := d.expired
	d.timer = time.AfterFunc(wait, func() {
		close(ch)
		d.onExpire()
	})
	return false
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
