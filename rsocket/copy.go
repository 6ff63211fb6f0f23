package rsocket

import (
	"io"
)

// ReadFrom reads from r straight into the send ring until EOF and sends
// it, one copy less than io.Copy through a buffer (io.ReaderFrom).
func (c *Conn) ReadFrom(r io.Reader) (int64, error) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	var total int64
	for {
		var room []byte
		err := c.waitWrite("readfrom", func() error {
			k := min(c.sendLimitLocked(maxTransfer), c.sbufSize-c.sbufHead)
			room = c.sbuf.Bytes()[c.sbufHead : c.sbufHead+k]
			c.borrowers++
			return nil
		})
		if err != nil {
			return total, err
		}
		// Only this goroutine moves sbufHead and the target slot, and room
		// is free send buffer: it can be filled without mu.
		n, rerr := r.Read(room)
		c.mu.Lock()
		err = c.giveBackLocked("readfrom")
		if err == nil && n > 0 {
			if err = c.writeEndLocked("readfrom"); err == nil {
				if err = c.postDataLocked(uint32(n)); err != nil {
					err = c.opError("readfrom", err)
				}
			}
		}
		c.mu.Unlock()
		if err != nil {
			return total, err
		}
		total += int64(n)
		if rerr == io.EOF {
			return total, nil
		}
		if rerr != nil {
			return total, rerr
		}
	}
}

// WriteTo writes what the peer sends to w, straight from the receive
// buffer, until EOF (io.WriterTo).
func (c *Conn) WriteTo(w io.Writer) (int64, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	var total int64
	for {
		var data []byte
		err := c.waitRead(func() {
			k := min(c.rmsg[c.rmsgHead], c.rbufSize-c.rbufOffset)
			data = c.rbuf.Bytes()[c.rbufOffset : c.rbufOffset+k]
			c.borrowers++
		})
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		// The peer writes this part of the buffer again only after we
		// consume it and publish it anew.
		n, werr := w.Write(data)
		c.mu.Lock()
		err = c.giveBackLocked("writeto")
		if err == nil {
			c.consumeLocked(nil, uint32(len(data)))
			c.updateCreditsLocked()
		}
		c.mu.Unlock()
		total += int64(n)
		if werr == nil && n < len(data) {
			werr = io.ErrShortWrite
		}
		if werr != nil {
			return total, werr
		}
		if err != nil {
			return total, err
		}
	}
}

// giveBackLocked ends a borrow of the buffers; the last borrower frees
// them if Close came meanwhile.
func (c *Conn) giveBackLocked(op string) error {
	c.borrowers--
	if !c.closed {
		return nil
	}
	if c.borrowers == 0 && c.freeLater {
		c.freeBuffers()
		c.freeLater = false
	}
	return c.opError(op, errClosed)
}
