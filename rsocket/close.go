package rsocket

import (
	"time"
)

// Close ends the connection as rsocket does (rclose): it tells the peer
// (an in-band DISCONNECT), waits up to Options.CloseTimeout until
// everything written has reached the peer, then destroys the QP and the CM
// ID (the peer's CM sees DISCONNECTED) and frees the memory. Read and Write
// waiting in other goroutines return net.ErrClosed. Data received and not
// read is dropped. Close is idempotent and safe on a nil *Conn.
//
// rdma-core: rclose.
func (c *Conn) Close() error {
	if c == nil {
		return nil
	}
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

func (c *Conn) close() error {
	c.mu.Lock()
	send := c.connected
	c.closeStarted = true // waiting and later Reads and Writes end now, not after the shutdown
	c.interruptLocked()
	c.mu.Unlock()
	if send {
		c.set.logf("rsocket %v: disconnect", c.raddr)
		c.shutdown(func() uint32 { return ctrlDisconnect })
	}
	c.mu.Lock()
	c.closed = true
	c.writable, c.readable = false, false
	c.freeLater = c.borrowers > 0
	c.interruptLocked()
	for c.asleep > 0 { // interrupted above, they leave at once
		c.idle.Wait()
	}
	c.mu.Unlock()
	c.stopLoops()
	c.loops.Wait()
	err := c.cm.Close() // QP first: no more access to the buffers
	c.mu.Lock()
	if !c.freeLater {
		c.freeBuffers()
	}
	c.mu.Unlock()
	if err != nil {
		return c.opError("close", err)
	}
	return nil
}

// shutdown sends the control message code picks, with mu held, once a
// control slot is free, and waits until all our sends have completed
// (rshutdown), for at most CloseTimeout. A connection that ends meanwhile
// ends the wait. An accepted iWARP connection that is still quiet first
// waits for the client's first message, which the client sends at once
// (docs/rsocket.md §7): a message sent before it could reach the client
// behind the MPA reply, which siw fails with EPROTO (kernel: siw_cm.c
// siw_recv_mpa_rr), so the client would fail to connect instead of
// reading EOF. If it does not come within CloseTimeout, nothing is sent
// and the CM's disconnect alone ends the connection.
func (c *Conn) shutdown(code func() uint32) {
	c.shutMu.Lock()
	defer c.shutMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	timedOut := false
	timer := time.AfterFunc(c.set.CloseTimeout, func() {
		c.mu.Lock()
		timedOut = true
		c.interruptLocked()
		c.mu.Unlock()
	})
	defer timer.Stop()
	wait := func(done func() bool) bool {
		var sl sleeper
		for {
			ctx := c.wakeCtxLocked()
			c.pollLocked()
			if done() {
				return true
			}
			if c.closed { // a CloseWrite's wait, ended by Close
				return false
			}
			if timedOut {
				c.set.logf("rsocket %v: sends still in flight after %v", c.raddr, c.set.CloseTimeout)
				return false
			}
			c.sleepLocked(ctx, &sl)
		}
	}
	if !wait(func() bool { return !c.connected || (!c.quiet && c.ctrlSeqno != c.ctrlMax) }) || !c.connected {
		return
	}
	if err := c.sendCtrlLocked(code()); err != nil {
		c.failLocked(err)
		return
	}
	wait(c.allSentLocked)
}

// CloseWrite shuts down the writing side (rshutdown SHUT_WR): the peer
// reads what was written, then EOF, and may keep writing to us. It waits
// for what was written to reach the peer, as Close does. Writes after it
// fail with syscall.EPIPE.
//
// rdma-core: rshutdown with SHUT_WR.
func (c *Conn) CloseWrite() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return c.opError("close", errClosed)
	}
	if c.writeClosed {
		c.mu.Unlock()
		return nil
	}
	c.writeClosed = true // Writes fail from now on
	c.interruptLocked()
	send := c.connected
	c.mu.Unlock()
	if send {
		// SHUTDOWN or DISCONNECT is picked, and writable cleared, under mu
		// as the message is posted (as rshutdown does): a SHUTDOWN from the
		// peer before that leaves us not readable, so we send DISCONNECT;
		// one after it ends the connection (docs/rsocket.md §4). Clearing
		// writable earlier lets a SHUTDOWN arriving in between end the
		// connection with ours never sent: the peer's Read waits for ever.
		c.shutdown(func() uint32 {
			c.writable = false
			if !c.readable || c.readClosed {
				return ctrlDisconnect
			}
			return ctrlShutdown
		})
	}
	c.mu.Lock()
	c.writable = false
	c.mu.Unlock()
	return nil
}

// CloseRead shuts down the reading side (rshutdown SHUT_RD): Reads return
// EOF. The peer is told only if the writing side is shut down too; then the
// connection ends (DISCONNECT).
//
// rdma-core: rshutdown with SHUT_RD.
func (c *Conn) CloseRead() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return c.opError("close", errClosed)
	}
	c.readClosed = true
	c.interruptLocked()
	send := c.connected && c.writeClosed
	c.mu.Unlock()
	if send {
		c.shutdown(func() uint32 { return ctrlDisconnect })
	}
	return nil
}
