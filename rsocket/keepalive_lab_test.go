package rsocket

import (
	"bytes"
	"io"
	"testing"
	"time"
)

// TestKeepAlive: with Options.KeepAlive an idle connection sends keepalives
// (0-byte RDMA WRITEs on control slots, which the peer's program never
// sees) and stays usable both ways.
func TestKeepAlive(t *testing.T) {
	c, s := pair(t, &Dialer{Options: Options{KeepAlive: 20 * time.Millisecond}}, nil)
	ctrlSent := func() uint16 {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.ctrlSeqno
	}
	start := ctrlSent()
	if !faultPoll(func() bool { return ctrlSent()-start >= 5 }) {
		t.Fatalf("%d control messages in %v on an idle connection with KeepAlive 20ms; want 5 or more", ctrlSent()-start, faultWait)
	}
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err != nil {
		t.Fatalf("keepalives failed: %v", err)
	}
	// Both ways still work, and the peer read nothing but the data.
	msg := bytes.Repeat([]byte("keepalive"), 1000)
	go c.Write(msg)
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(s, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("after keepalives the peer read %d bytes, %v", len(got), err)
	}
	go s.Write(msg)
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("after keepalives we read %d bytes, %v", len(got), err)
	}
}
