package rsocket

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/goverbs/rdma/internal/mmio"
	"github.com/goverbs/rdma/rdmacm"
	"github.com/goverbs/rdma/uverbs"
)

// Conn is an rsocket stream: a net.Conn over an RC connection that speaks
// rsocket's protocol, so the peer may be a program on librdmacm's rsocket
// (rstream, LD_PRELOAD=librspreload.so) or on this package.
//
// Read and Write may be called from two goroutines at once; two Reads (or
// two Writes) at once take turns. Close unblocks both. Errors are
// *net.OpError values: a deadline that passed matches os.ErrDeadlineExceeded,
// a closed Conn net.ErrClosed, a peer that went away without a shutdown
// syscall.ECONNRESET; io.EOF ends a stream the peer shut down in order.
type Conn struct {
	cm           *rdmacm.Conn
	qp           *uverbs.QP
	cq           *uverbs.CQ
	ch           *uverbs.CompChannel // the CQ's completion channel, used by it alone
	set          settings
	laddr, raddr *Addr

	readMu  sync.Mutex // one Read or WriteTo at a time
	writeMu sync.Mutex // one Write or ReadFrom at a time

	// mu guards the protocol state below and the CQ: whoever holds it polls.
	mu          sync.Mutex
	connected   bool // control messages and credits may still be sent
	readable    bool // the peer may still send: it has not shut down its side
	writable    bool // we may still send: no CloseWrite, the connection has not ended
	readClosed  bool // CloseRead
	writeClosed bool // CloseWrite
	reset       bool // the connection ended without the peer's shutdown
	// borrowers counts ReadFrom and WriteTo calls using the buffers
	// outside mu; the last one frees them if Close came meanwhile.
	borrowers int
	freeLater bool
	err       error // fatal: a failed work request or a protocol violation
	closed    bool
	// closeStarted: Close was called; Read and Write return net.ErrClosed
	// while it sends its disconnect and waits.
	closeStarted bool

	// Receive side (rsocket: rbuf, rmsg, rseq_no, rseq_comp, ...).
	rbuf       *uverbs.Buffer
	rmr        *uverbs.MR
	rbufSize   uint32
	rbufOffset uint32   // where the next unread byte is
	rbufAvail  uint32   // consumed or never published bytes not yet published
	rbufFree   uint32   // where the next published segment starts
	rbufQueued uint32   // received bytes not yet read
	rmsg       []uint32 // lengths of received messages not yet read, a ring
	rmsgHead   int
	rmsgLen    int
	rseqNo     uint16 // messages fully read
	rseqComp   uint16 // when to grant credits next
	remoteSGL  rsSGE  // the peer's target slot array
	remoteSlot uint32 // the next of the peer's slots to publish a segment in
	peerOrder  binary.ByteOrder
	recvs      []uverbs.RecvWR // rq receives with no SGE, reposted as consumed
	// On iWARP (msgSend) each receive takes a 4-byte message into its own
	// word after the receive buffer: recvSGEs are their SGEs, and
	// recvNext is the word of the next receive to post (the receives
	// complete in the order they were posted).
	recvSGEs []uverbs.SGE
	recvNext int

	// Send side (rsocket: sbuf, ssgl, sseq_no, sseq_comp, target_sgl, ...).
	sbuf      *uverbs.Buffer // the send ring, then ctrlInFlight control scratch areas
	smr       *uverbs.MR
	sbufSize  uint32
	sbufHead  uint32 // where the next write is copied to
	sbufAvail uint32
	sseqNo    uint16 // data messages sent
	sseqComp  uint16 // the peer's limit for sseqNo
	sqeAvail  int    // send work requests free for data
	ctrlSeqno uint16 // control messages posted
	ctrlMax   uint16 // control messages allowed: completed + ctrlInFlight
	tbuf      *uverbs.Buffer
	tmr       *uverbs.MR
	slot      int // the target slot data goes to next
	inline    uint32
	wr        [2]uverbs.SendWR
	sges      [2]uverbs.SGE
	msgSGE    [1]uverbs.SGE // msgSend: the 4-byte message of a SEND
	wcs       [32]uverbs.WC

	// msgSend is rsocket's mode for devices without immediate data
	// (iWARP; docs/rsocket.md §7): every message is a 4-byte SEND, and
	// data and segments go as a plain RDMA WRITE followed by that SEND.
	msgSend bool
	// quiet: an accepted iWARP connection sends nothing until the first
	// message from the client has arrived (docs/rsocket.md §7).
	quiet bool

	// A Read, Write or shutdown that finds nothing to do sleeps on the
	// completion channel itself (see sleepLocked). wakeCtx, under mu, is
	// the context of those waits: interruptLocked cancels it when
	// something other than a completion should wake them (a deadline,
	// Close, the end of the connection), and the next sleeper makes a new
	// one. asleep counts the sleepers; Close waits for them to leave
	// (idle) before it destroys the CQ. cqEvents counts the CQ's events
	// that sleepers read.
	wakeCtx    context.Context
	wakeCancel context.CancelFunc
	asleep     int
	cqEvents   uint64
	idle       sync.Cond

	rdl, wdl  *deadline
	stopLoops context.CancelFunc
	loops     sync.WaitGroup
	closeOnce sync.Once
	shutMu    sync.Mutex // one shutdown wait at a time
	closeErr  error
}

// Work request IDs: the kind in the high 32 bits, bytes or the control
// code below.
const (
	wrRecv uint64 = 1 << 62
	wrData uint64 = 1 << 32
	wrSGL  uint64 = 2 << 32
	wrCtrl uint64 = 3 << 32
	wrMsg  uint64 = 4 << 32 // msgSend: the SEND that follows a data WRITE
)

// msgSize is RS_MSG_SIZE, the message of a SEND in msgSend mode: the
// 32-bit value that is the immediate otherwise.
const msgSize = 4

// newConn builds the buffers of a connection whose QP the CM made, and
// posts its receives: rsocket posts them before CONNECT or ACCEPT (rs_create_ep).
func newConn(cm *rdmacm.Conn, s settings) (c *Conn, err error) {
	c = &Conn{cm: cm, qp: cm.QP(), cq: cm.CQ(), ch: cm.Channel(), set: s,
		rbufSize: s.rbufSize, sbufSize: s.sbufSize,
		rdl: newDeadline(), wdl: newDeadline()}
	c.idle.L = &c.mu
	c.rdl.onExpire, c.wdl.onExpire = c.interrupt, c.interrupt
	c.laddr, c.raddr = &Addr{cm.LocalAddr()}, &Addr{cm.RemoteAddr()}
	defer func() {
		if err != nil {
			// The MRs first: a registered buffer refuses to be freed.
			for _, mr := range [...]*uverbs.MR{c.rmr, c.tmr, c.smr} {
				if mr != nil {
					mr.Close()
				}
			}
			c.freeBuffers()
			c = nil
		}
	}()
	// rsocket picks its message mode from the device's transport
	// (rs_create_ep): iWARP has no immediate data.
	info := cm.Device().Info()
	c.msgSend = info.Transport() == uverbs.TransportIWARP
	rbufLen := int(s.rbufSize)
	if c.msgSend {
		rbufLen += s.RQSize * msgSize // rs_init_bufs: a word per receive after the buffer
	}
	if c.rbuf, err = uverbs.AllocBuffer(rbufLen); err != nil {
		return c, err
	}
	// The send ring, then the control messages' scratch areas, then the
	// word a message SEND is copied from (inline, so one word serves all).
	if c.sbuf, err = uverbs.AllocBuffer(int(s.sbufSize) + ctrlInFlight*ctrlMsgSize + msgSize); err != nil {
		return c, err
	}
	if c.tbuf, err = uverbs.AllocBuffer(targetSGEs * sgeSize); err != nil {
		return c, err
	}
	remote := uverbs.AccessLocalWrite | uverbs.AccessRemoteWrite
	if c.rmr, err = cm.RegMR(c.rbuf.Bytes(), remote); err != nil {
		return c, err
	}
	if c.tmr, err = cm.RegMR(c.tbuf.Bytes(), remote); err != nil {
		return c, err
	}
	if c.smr, err = cm.RegMR(c.sbuf.Bytes(), uverbs.AccessLocalWrite); err != nil {
		return c, err
	}
	c.inline = uint32(c.qp.Cap().MaxInline)
	if c.msgSend && c.inline < msgSize {
		// rs_create_ep fails the same way (ENOTSUP).
		return c, fmt.Errorf("rsocket on the iWARP device %s sends its messages inline: Options.Inline must be at least %d (the QP has %d)", cm.Device().Name(), msgSize, c.inline)
	}
	c.msgSGE[0] = c.smr.SGE(int(s.sbufSize)+ctrlInFlight*ctrlMsgSize, msgSize)
	c.rmsg = make([]uint32, s.RQSize)
	c.recvs = make([]uverbs.RecvWR, s.RQSize)
	for i := range c.recvs {
		c.recvs[i].ID = wrRecv
	}
	if c.msgSend {
		c.recvSGEs = make([]uverbs.SGE, s.RQSize)
		c.fillRecvs(s.RQSize)
	}
	c.rbufFree, c.rbufAvail = c.rbufSize/2, c.rbufSize/2
	c.rseqComp = uint16(s.RQSize / 2)
	c.sbufAvail = c.sbufSize
	c.sqeAvail = s.SQSize
	c.ctrlMax = ctrlInFlight
	return c, c.qp.PostRecv(c.recvs)
}

// fillRecvs prepares the first n entries of recvs for the next n receive
// words, on iWARP (rs_post_recv: the receive's wr_id names its word).
func (c *Conn) fillRecvs(n int) {
	for i := range n {
		w := c.recvNext
		c.recvNext = (c.recvNext + 1) % len(c.recvs)
		c.recvSGEs[i] = c.rmr.SGE(int(c.rbufSize)+w*msgSize, msgSize)
		c.recvs[i] = uverbs.RecvWR{ID: wrRecv | uint64(w), SGEs: c.recvSGEs[i : i+1]}
	}
}

// freeBuffers frees the memory of a connection whose CM Conn is closed or
// was never made (the MRs went with it).
func (c *Conn) freeBuffers() {
	c.rbuf.Close()
	c.sbuf.Close()
	c.tbuf.Close()
}

// connData is what this side tells the peer: little-endian, no iomap, two
// target slots, the first half of the receive buffer.
func (c *Conn) connData() []byte {
	d := connData{
		Version:   protocolVersion,
		Flags:     connFlagIOMap, // with 0 slots, as rsocket without RDMA_IOMAPSIZE
		Credits:   uint16(c.set.RQSize),
		TargetSGL: rsSGE{Addr: c.tmr.Addr(), Key: c.tmr.RKey(), Length: targetSGEs},
		DataBuf:   rsSGE{Addr: c.rmr.Addr(), Key: c.rmr.RKey(), Length: c.rbufSize / 2},
	}
	b := make([]byte, connDataLen)
	d.marshal(b)
	return b
}

// start takes the peer's connection data (rs_save_conn_data), starts the
// goroutines that watch the CM (and send keepalives), and grants the first
// credits, which publish the second half of the receive buffer.
func (c *Conn) start(peer connData) {
	c.remoteSGL = peer.TargetSGL
	c.remoteSlot = 1 % peer.TargetSGL.Length
	c.peerOrder = peer.peerOrder()
	// Slot 1 is left as it is: it starts zeroed, and the peer may have
	// published its second half there already (its first credit update
	// can arrive before our side of the CM handshake ends).
	c.setSlot(0, peer.DataBuf)
	c.sseqComp = peer.Credits
	c.connected, c.readable, c.writable = true, true, true

	ctx, cancel := context.WithCancel(context.Background())
	c.stopLoops = cancel
	c.loops.Add(1)
	go c.watchCM(ctx)
	if c.set.KeepAlive > 0 {
		c.loops.Add(1)
		go c.keepAlive(ctx)
	}
	c.mu.Lock()
	c.updateCreditsLocked()
	c.mu.Unlock()
}

// Target slots live in registered memory the peer writes; we read and
// write them with atomic word accesses. They are little-endian: we declare
// RS_CONN_FLAG_NET clear, and the peer swaps to that order.
func (c *Conn) slotSGE(i int) rsSGE {
	b := c.tbuf.Bytes()
	return rsSGE{Addr: mmio.U64(b, i*sgeSize).Load(), Key: mmio.U32(b, i*sgeSize+8).Load(), Length: mmio.U32(b, i*sgeSize+12).Load()}
}

func (c *Conn) setSlot(i int, s rsSGE) {
	b := c.tbuf.Bytes()
	mmio.U64(b, i*sgeSize).Store(s.Addr)
	mmio.U32(b, i*sgeSize+8).Store(s.Key)
	mmio.U32(b, i*sgeSize+12).Store(s.Length)
}

func (c *Conn) slotLength() uint32 { return mmio.U32(c.tbuf.Bytes(), c.slot*sgeSize+12).Load() }

// sleepLocked is one step of a wait for completions, taken with mu held
// by a caller that polled and found nothing to do. Like rsocket
// (rs_get_comp), it arms the CQ only when about to block: a CQ armed all
// the time costs an event, a wake-up and two system calls per completion
// while the callers are busy polling anyway. Not armed: it arms, and the
// caller polls again, since what came before the arm raises no event.
// Armed: it waits for the CQ's event on the connection's completion
// channel, which no other CQ uses (the goroutine parks in the netpoller),
// or until ctx, taken from wakeCtxLocked before the caller looked at its
// state, is cancelled.
//
// A Read and a Write sleep on the CQ at once, and whichever reads the
// event polls for both (docs/rsocket.md §2.6). So the reader of an event
// wakes the other sleepers (interruptLocked): the other may have polled
// before the completion came and wait for an event that was just taken.
// And a sleeper whose arm an event read by another may have used up
// (cqEvents moved since it armed) arms again instead of waiting: the
// event's reader polled after it, and the CQ may be disarmed.
func (c *Conn) sleepLocked(ctx context.Context, s *sleeper) {
	if s.armed && s.events != c.cqEvents {
		s.armed = false
	}
	if !s.armed {
		s.events = c.cqEvents
	}
	c.asleep++
	c.mu.Unlock()
	var err error
	if s.armed {
		_, err = c.ch.Wait(ctx)
	} else {
		err = c.cq.ReqNotify(false)
	}
	c.mu.Lock()
	if s.armed && err == nil {
		// Read an event (Wait returns one it read even if ctx ended).
		c.cqEvents++
		if c.asleep > 1 {
			c.interruptLocked()
		}
	}
	if c.asleep--; c.asleep == 0 && c.closeStarted {
		c.idle.Broadcast()
	}
	if err != nil && ctx.Err() == nil {
		c.failLocked(err)
	}
	s.armed = !s.armed && err == nil
}

// sleeper is the state of one caller's sleepLocked steps: whether it armed
// the CQ, and the connection's cqEvents before it did.
type sleeper struct {
	armed  bool
	events uint64
}

// wakeCtxLocked returns the context sleepers wait under. Take it before
// looking at the state a wait depends on: a change after that cancels it.
func (c *Conn) wakeCtxLocked() context.Context {
	if c.wakeCtx == nil {
		c.wakeCtx, c.wakeCancel = context.WithCancel(context.Background())
	}
	return c.wakeCtx
}

// interruptLocked wakes every sleeper: a change they must see that no
// completion reports.
func (c *Conn) interruptLocked() {
	if c.wakeCtx != nil {
		c.wakeCancel()
		c.wakeCtx, c.wakeCancel = nil, nil
	}
}

func (c *Conn) interrupt() {
	c.mu.Lock()
	c.interruptLocked()
	c.mu.Unlock()
}

// watchCM ends the connection when the CM reports that it ended
// (DISCONNECTED: the peer destroyed its ID or its host went away).
func (c *Conn) watchCM(ctx context.Context) {
	defer c.loops.Done()
	select {
	case <-c.cm.Done():
	case <-ctx.Done():
		return
	}
	c.mu.Lock()
	c.pollLocked() // what the peer sent before it left
	if c.connected {
		c.connected, c.writable = false, false
		c.reset = c.readable // no in-band DISCONNECT or SHUTDOWN came first
	}
	c.interruptLocked()
	c.mu.Unlock()
}

// keepAlive sends a keepalive each period in which nothing was sent
// (rsocket: tcp_svc_send_keepalive): a 0-byte RDMA WRITE with no
// immediate, address and key 0, on a control slot.
func (c *Conn) keepAlive(ctx context.Context) {
	defer c.loops.Done()
	t := time.NewTicker(c.set.KeepAlive)
	defer t.Stop()
	c.mu.Lock()
	last := c.sseqNo
	c.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.mu.Lock()
		c.pollLocked() // frees the control slots of earlier keepalives
		if c.connected && !c.quiet && c.sseqNo == last && c.ctrlSeqno != c.ctrlMax {
			c.wr[0] = uverbs.SendWR{ID: wrCtrl | ctrlKeepalive, Op: uverbs.OpWrite, Flags: uverbs.SendSignaled}
			c.ctrlSeqno++
			if err := c.qp.PostSend(c.wr[:1]); err != nil {
				c.ctrlSeqno--
				c.failLocked(err)
			}
		}
		last = c.sseqNo
		c.mu.Unlock()
	}
}

func (c *Conn) failLocked(err error) {
	if c.err == nil && !c.closed {
		c.err = err
		c.set.logf("rsocket %v: %v", c.raddr, err)
	}
	c.connected, c.writable = false, false
	c.interruptLocked() // a call asleep in the other direction learns of it
}

// pollLocked takes every completion on the CQ (rs_poll_cq), reposts a
// receive for each message received, and grants credits if they are due.
func (c *Conn) pollLocked() {
	if c.closed {
		return
	}
	received := 0
	for {
		n, err := c.cq.Poll(c.wcs[:])
		if err != nil {
			c.failLocked(err)
			return
		}
		for i := range c.wcs[:n] {
			wc := &c.wcs[i]
			if wc.ID&wrRecv != 0 {
				if wc.Status == uverbs.WCSuccess {
					received++
					c.quiet = false
					c.receivedLocked(wc)
				}
				continue
			}
			c.sentLocked(wc)
		}
		if n < len(c.wcs) {
			break
		}
	}
	// Not once the CM reported the end: the QP is then in the error state,
	// and a receive posted to it may stay unflushed, holding up Close
	// (docs/kernel-behaviour.md §3).
	if received > 0 && c.connected && !isClosed(c.cm.Done()) {
		if c.msgSend {
			c.fillRecvs(received)
		}
		if err := c.qp.PostRecv(c.recvs[:received]); err != nil {
			c.failLocked(err)
		}
	}
	c.updateCreditsLocked()
}

// receivedLocked handles one message from the peer: its immediate, or on
// iWARP the 4-byte message its SEND put in the receive's word (rs_poll_cq).
func (c *Conn) receivedLocked(wc *uverbs.WC) {
	msg := wc.Imm
	switch {
	case wc.Flags&uverbs.WCWithImm != 0:
	case c.msgSend && wc.Opcode == uverbs.WCOpRecv && wc.ByteLen == msgSize:
		// rsocket sends the word in its own byte order, which is the
		// one it declared (RS_CONN_FLAG_NET, docs/rsocket.md §7).
		w := int(c.rbufSize) + int(uint32(wc.ID))*msgSize
		msg = c.peerOrder.Uint32(c.rbuf.Bytes()[w : w+msgSize])
	default:
		c.failLocked(fmt.Errorf("%w: a message without immediate data (%v, %d bytes)", ErrProtocol, wc.Opcode, wc.ByteLen))
		return
	}
	v := immValue(msg)
	switch immOp(msg) {
	case opSGL:
		c.sseqComp = uint16(v)
	case opIOMapSGL:
		c.failLocked(ErrIOMap)
	case opCtrl:
		switch v {
		case ctrlDisconnect:
			c.connected, c.writable, c.readable = false, false, false
		case ctrlShutdown:
			if c.writable {
				c.readable = false
			} else {
				c.connected, c.readable = false, false
			}
		}
		// Other codes are ignored, as rsocket does.
	case opWrite:
		// Not sent by rsocket; ignored as rsocket does.
	default: // data; rsocket takes the reserved ops 1, 3 and 5 as data too
		published := c.rbufSize - c.rbufAvail
		switch {
		case v == 0:
			c.failLocked(fmt.Errorf("%w: a data message of 0 bytes", ErrProtocol))
		case c.rmsgLen == len(c.rmsg):
			c.failLocked(fmt.Errorf("%w: more than %d unread messages (credits exceeded)", ErrProtocol, len(c.rmsg)))
		case uint64(c.rbufQueued)+uint64(v) > uint64(published):
			c.failLocked(fmt.Errorf("%w: %d bytes written beyond the %d bytes published", ErrProtocol, v, published-c.rbufQueued))
		default:
			c.rmsg[(c.rmsgHead+c.rmsgLen)%len(c.rmsg)] = v
			c.rmsgLen++
			c.rbufQueued += v
		}
	}
}

// sentLocked handles the completion of one of our sends.
func (c *Conn) sentLocked(wc *uverbs.WC) {
	switch wc.ID &^ (1<<32 - 1) {
	case wrData:
		c.sqeAvail++
		c.sbufAvail += uint32(wc.ID)
	case wrMsg:
		c.sqeAvail++
	case wrSGL:
		c.ctrlMax++
	case wrCtrl:
		c.ctrlMax++
		if uint32(wc.ID) == ctrlDisconnect {
			c.connected, c.writable = false, false
		}
	}
	if wc.Status != uverbs.WCSuccess && c.connected {
		// The connection is gone, as with a CM DISCONNECTED: a killed
		// peer's kernel may free its memory (remote access error) before
		// its CM ID goes, so either can come first.
		c.failLocked(fmt.Errorf("%w (%v): %w", ErrQP, wc.Status, errReset))
	}
}

// updateCreditsLocked grants the peer credits and publishes a segment of
// the receive buffer when half of it is free or half the credits are used
// (rs_give_credits, rs_send_credits).
func (c *Conn) updateCreditsLocked() {
	half := c.rbufSize / 2
	if !c.connected || c.quiet || c.ctrlFreeLocked() < c.ctrlPerMsg() ||
		c.rbufAvail < half && int16(c.rseqNo-c.rseqComp) < 0 {
		return
	}
	c.rseqComp = c.rseqNo + uint16(c.set.RQSize/2)
	limit := uint32(c.rseqNo + uint16(c.set.RQSize))
	wr := &c.wr[0]
	*wr = uverbs.SendWR{Op: uverbs.OpWriteImm, Flags: uverbs.SendSignaled, Imm: immediate(opSGL, limit)}
	if c.msgSend {
		wr.Op, wr.Imm = uverbs.OpWrite, 0
	}
	if c.rbufAvail >= half {
		scratch := c.sbufSize + uint32(c.ctrlSeqno%ctrlInFlight)*ctrlMsgSize
		rsSGE{Addr: c.rmr.Addr() + uint64(c.rbufFree), Key: c.rmr.RKey(), Length: half}.
			put(c.sbuf.Bytes()[scratch:scratch+sgeSize], c.peerOrder)
		c.sges[0] = c.smr.SGE(int(scratch), sgeSize)
		wr.ID, wr.SGEs = wrSGL, c.sges[:1]
		wr.RemoteAddr = c.remoteSGL.Addr + uint64(c.remoteSlot)*sgeSize
		wr.RKey = c.remoteSGL.Key
		c.rbufAvail -= half
		c.rbufFree = (c.rbufFree + half) % c.rbufSize
		c.remoteSlot = (c.remoteSlot + 1) % c.remoteSGL.Length
	} else {
		wr.ID = wrSGL // credits only: no SGE, no target (rs_post_msg)
		if c.msgSend {
			c.postMsgLocked(wrSGL, immediate(opSGL, limit))
			return
		}
	}
	n := 1
	if c.msgSend {
		// The segment's WRITE, then the message that announces it
		// (rs_post_write_msg); each takes a control slot.
		c.setMsgLocked(&c.wr[1], wrSGL, immediate(opSGL, limit))
		n = 2
	}
	c.ctrlSeqno += uint16(n)
	if err := c.qp.PostSend(c.wr[:n]); err != nil {
		c.ctrlSeqno -= uint16(n)
		c.failLocked(err)
	}
}

// ctrlPerMsg is how many control slots a credit update may take: two on
// iWARP, where a published segment is a WRITE and a SEND (rs_2ctrl_avail).
func (c *Conn) ctrlPerMsg() uint16 {
	if c.msgSend {
		return 2
	}
	return 1
}

// ctrlFreeLocked is how many control slots are free.
func (c *Conn) ctrlFreeLocked() uint16 { return c.ctrlMax - c.ctrlSeqno }

// setMsgLocked makes wr the SEND of the 4-byte message msg, inline
// (rs_post_msg, rs_post_write_msg), in the byte order the peer declared,
// which is how rsocket reads it.
func (c *Conn) setMsgLocked(wr *uverbs.SendWR, id uint64, msg uint32) {
	b := c.sbuf.Bytes()[c.sbufSize+ctrlInFlight*ctrlMsgSize:]
	c.peerOrder.PutUint32(b[:msgSize], msg)
	*wr = uverbs.SendWR{ID: id, Op: uverbs.OpSend, Flags: uverbs.SendSignaled | uverbs.SendInline, SGEs: c.msgSGE[:]}
}

// postMsgLocked posts a control message as a SEND on iWARP; the caller
// checked that a control slot is free.
func (c *Conn) postMsgLocked(id uint64, msg uint32) {
	c.setMsgLocked(&c.wr[0], id, msg)
	c.ctrlSeqno++
	if err := c.qp.PostSend(c.wr[:1]); err != nil {
		c.ctrlSeqno--
		c.failLocked(err)
	}
}

// sendCtrlLocked posts a control message; the caller checked that a
// control slot is free.
func (c *Conn) sendCtrlLocked(code uint32) error {
	c.wr[0] = uverbs.SendWR{ID: wrCtrl | uint64(code), Op: uverbs.OpWriteImm, Flags: uverbs.SendSignaled, Imm: immediate(opCtrl, code)}
	if c.msgSend {
		c.setMsgLocked(&c.wr[0], wrCtrl|uint64(code), immediate(opCtrl, code))
	}
	c.ctrlSeqno++
	if err := c.qp.PostSend(c.wr[:1]); err != nil {
		c.ctrlSeqno--
		return err
	}
	return nil
}

func (c *Conn) allSentLocked() bool {
	return !c.connected || c.ctrlMax-c.ctrlSeqno == ctrlInFlight && c.sqeAvail == c.set.SQSize
}

// canSendLocked is rs_can_send: a free work request, RS_SNDLOWAT bytes of
// send buffer, a credit, and room in the current target slot.
func (c *Conn) canSendLocked() bool {
	return !c.quiet && c.sqeAvail >= c.sqePerData() && c.sbufAvail >= min(sndLowat, c.sbufSize) && c.sseqNo != c.sseqComp && c.slotLength() != 0
}

// sqePerData is how many send work requests a data message takes: on
// iWARP the WRITE and its message SEND (rs_can_send, rs_write_data).
func (c *Conn) sqePerData() int {
	if c.msgSend {
		return 2
	}
	return 1
}

// sendLimitLocked is how much the next write may carry: want, within the
// free send buffer and the current target slot.
func (c *Conn) sendLimitLocked(want int) uint32 {
	n := uint32(min(want, maxTransfer))
	return min(n, c.sbufAvail, c.slotLength())
}

// postDataLocked posts n bytes already in the send ring at sbufHead as one
// data message into the current target slot (rs_write_data). The slot is
// advanced in registered memory before the post, as rsocket does, so that
// an emptied slot reads 0 until the peer publishes the next segment there.
func (c *Conn) postDataLocked(n uint32) error {
	s := c.slotSGE(c.slot)
	c.setSlot(c.slot, rsSGE{Addr: s.Addr + uint64(n), Key: s.Key, Length: s.Length - n})
	if s.Length == n {
		c.slot = (c.slot + 1) % targetSGEs
	}
	nsge := 1
	if first := c.sbufSize - c.sbufHead; n > first {
		c.sges[0] = c.smr.SGE(int(c.sbufHead), int(first))
		c.sges[1] = c.smr.SGE(0, int(n-first))
		nsge = 2
	} else {
		c.sges[0] = c.smr.SGE(int(c.sbufHead), int(n))
	}
	flags := uverbs.SendSignaled
	if n <= c.inline {
		flags |= uverbs.SendInline
	}
	c.wr[0] = uverbs.SendWR{ID: wrData | uint64(n), Op: uverbs.OpWriteImm, Flags: flags,
		SGEs: c.sges[:nsge], Imm: immediate(opData, n), RemoteAddr: s.Addr, RKey: s.Key}
	k := 1
	if c.msgSend {
		c.wr[0].Op, c.wr[0].Imm = uverbs.OpWrite, 0
		c.setMsgLocked(&c.wr[1], wrMsg, immediate(opData, n))
		k = 2
	}
	c.sseqNo++
	c.sqeAvail -= k
	c.sbufAvail -= n
	c.sbufHead = (c.sbufHead + n) % c.sbufSize
	if err := c.qp.PostSend(c.wr[:k]); err != nil {
		c.failLocked(err)
		return err
	}
	return nil
}

// copyToRing copies p into the send ring at sbufHead, wrapping.
func (c *Conn) copyToRing(p []byte) {
	b := c.sbuf.Bytes()[:c.sbufSize]
	k := copy(b[c.sbufHead:], p)
	copy(b, p[k:])
}

// Read reads data the peer wrote. It returns io.EOF once the peer shut
// down or closed its side and everything it sent has been read.
//
// rdma-core: rrecv, rread.
func (c *Conn) Read(p []byte) (int, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	var n int
	err := c.waitRead(func() { n = c.readLocked(p) })
	return n, err
}

// waitRead waits until data can be read and calls take with mu held, or
// returns why it cannot (EOF, deadline, close, failure).
func (c *Conn) waitRead(take func()) error {
	spin, sl := c.set.Spin, sleeper{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		ctx := c.wakeCtxLocked()
		if isClosed(c.rdl.wait()) {
			return c.opError("read", os.ErrDeadlineExceeded)
		}
		if c.closeStarted {
			return c.opError("read", errClosed)
		}
		if c.rmsgLen == 0 {
			c.pollLocked()
		}
		if c.rmsgLen > 0 && !c.readClosed {
			take()
			c.updateCreditsLocked()
			return nil
		}
		if err := c.readEndLocked(); err != nil {
			return err
		}
		if spin > 0 {
			spin--
			c.mu.Unlock()
			c.mu.Lock()
			continue
		}
		c.sleepLocked(ctx, &sl)
	}
}

// readEndLocked says why nothing more will come, or nil to wait.
func (c *Conn) readEndLocked() error {
	switch {
	case c.readClosed:
		return io.EOF
	case c.err != nil:
		return c.opError("read", c.err)
	case c.reset:
		return c.opError("read", errReset)
	case !c.readable:
		return io.EOF
	}
	return nil
}

// readLocked copies queued data into p (rrecv) and counts the messages
// read in full.
func (c *Conn) readLocked(p []byte) int {
	n := 0
	for n < len(p) && c.rmsgLen > 0 {
		m := &c.rmsg[c.rmsgHead]
		k := min(uint32(len(p)-n), *m)
		c.consumeLocked(p[n:n+int(k)], k)
		n += int(k)
	}
	return n
}

// consumeLocked copies k bytes of the first queued message into dst (if
// not nil) and gives their room back.
func (c *Conn) consumeLocked(dst []byte, k uint32) {
	m := &c.rmsg[c.rmsgHead]
	if dst != nil {
		rb := c.rbuf.Bytes()
		first := copy(dst, rb[c.rbufOffset:min(c.rbufOffset+k, c.rbufSize)])
		copy(dst[first:], rb[:int(k)-first])
	}
	c.rbufOffset = (c.rbufOffset + k) % c.rbufSize
	c.rbufAvail += k
	c.rbufQueued -= k
	if *m -= k; *m == 0 {
		c.rseqNo++
		c.rmsgHead = (c.rmsgHead + 1) % len(c.rmsg)
		c.rmsgLen--
	}
}

// Write writes p to the peer and returns once all of it is in flight (the
// send buffer holds what the peer has not acknowledged yet). It blocks
// while the peer's receive buffer is full.
//
// rdma-core: rsend, rwrite.
func (c *Conn) Write(p []byte) (int, error) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	n := 0
	size := olapStart // rsend: the first write small, each next one twice as big
	for n < len(p) {
		err := c.waitWrite("write", func() error {
			k := c.sendLimitLocked(min(size, len(p)-n))
			c.copyToRing(p[n : n+int(k)])
			if err := c.postDataLocked(k); err != nil {
				return err
			}
			n += int(k)
			size = min(size*2, maxTransfer)
			return nil
		})
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// waitWrite waits until a data message can be sent and calls send with mu
// held, or returns why it cannot.
func (c *Conn) waitWrite(op string, send func() error) error {
	spin, sl := c.set.Spin, sleeper{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		ctx := c.wakeCtxLocked()
		if isClosed(c.wdl.wait()) {
			return c.opError(op, os.ErrDeadlineExceeded)
		}
		if err := c.writeEndLocked(op); err != nil {
			return err
		}
		if !c.canSendLocked() {
			c.pollLocked()
		}
		if c.writable && c.canSendLocked() {
			if err := send(); err != nil {
				return c.opError(op, err)
			}
			return nil
		}
		if spin > 0 {
			spin--
			c.mu.Unlock()
			c.mu.Lock()
			continue
		}
		c.sleepLocked(ctx, &sl)
	}
}

func (c *Conn) writeEndLocked(op string) error {
	switch {
	case c.closeStarted:
		return c.opError(op, errClosed)
	case c.err != nil:
		return c.opError(op, c.err)
	case c.writeClosed:
		return c.opError(op, errPipe)
	case !c.writable:
		return c.opError(op, errReset)
	}
	return nil
}

func (c *Conn) opError(op string, err error) error {
	if err == io.EOF {
		return err
	}
	return &net.OpError{Op: op, Net: Network, Source: c.laddr, Addr: c.raddr, Err: err}
}

// LocalAddr returns the local address (an *Addr).
//
// rdma-core: rgetsockname.
func (c *Conn) LocalAddr() net.Addr { return c.laddr }

// RemoteAddr returns the peer's address (an *Addr).
//
// rdma-core: rgetpeername.
func (c *Conn) RemoteAddr() net.Addr { return c.raddr }

// SetDeadline sets the read and write deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	c.rdl.set(t)
	c.wdl.set(t)
	return nil
}

// SetReadDeadline sets the deadline of Read and WriteTo, waiting ones
// included; the zero time means none.
func (c *Conn) SetReadDeadline(t time.Time) error { c.rdl.set(t); return nil }

// SetWriteDeadline sets the deadline of Write and ReadFrom, waiting ones
// included; the zero time means none. A Write that times out has written
// part of its data: the count says how much.
func (c *Conn) SetWriteDeadline(t time.Time) error { c.wdl.set(t); return nil }
