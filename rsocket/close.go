package rsocket

import (
	"time"
)

// Close ends the connection as rsocket does (rclose): it tells the peer
// (an in-band DISCONNECT), waits up to Options.CloseTimeout until
// everything written has reached the peer, then destroys the QP and the CM
// ID (the peer's CM sees DISCONNECTED) and frees the memory. Read and Write
// waiting in other goroutines return net.ErrClosed. Data received and not
// read is dropped. Close is idempotent.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

func (c *Conn) close() error {
	c.mu.Lock()
	send := c.connected
	c.closeStarted = true // waiting and later Reads and Writes end now, not after the shutdown
	c.mu.Unlock()
	c.wake()
	if send {
		c.set.logf("rsocket %v: disconnect", c.raddr)
		c.shutdown(func() uint32 { return ctrlDisconnect })
	}
	c.mu.Lock()
	c.closed = true
	c.writable, c.readable = false, false
	c.freeLater = c.borrowers > 0
	c.mu.Unlock()
	close(c.closing)
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
// ends the wait.
func (c *Conn) shutdown(code func() uint32) {
	// One at a time (Close with CloseWrite, say): cwake holds one token.
	c.shutMu.Lock()
	defer c.shutMu.Unlock()
	timer := time.NewTimer(c.set.CloseTimeout)
	defer timer.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	wait := func(done func() bool) bool {
		for {
			c.pollLocked()
			if done() {
				return true
			}
			c.mu.Unlock()
			c.sleeping()
			select {
			case <-c.cwake:
			case <-timer.C:
				c.mu.Lock()
				c.set.logf("rsocket %v: sends still in flight after %v", c.raddr, c.set.CloseTimeout)
				return false
			}
			c.mu.Lock()
		}
	}
	if !wait(func() bool { return !c.connected || c.ctrlSeqno != c.ctrlMax }) || !c.connected {
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
	send := c.connected
	c.mu.Unlock()
	c.wake()
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
func (c *Conn) CloseRead() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return c.opError("close", errClosed)
	}
	c.readClosed = true
	send := c.connected && c.writeClosed
	c.mu.Unlock()
	c.wake()
	if send {
		c.shutdown(func() uint32 { return ctrlDisconnect })
	}
	return nil
}
