package nvmeof

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goverbs/rdma/rdmacm"
	"github.com/goverbs/rdma/uverbs"
)

// A tQueue is one queue of a controller on the target's side: its RC
// connection, and one registered buffer:
//
//	depth × recvSize      command capsules, received here (recvSize is 64
//	                      bytes, plus the in-capsule data on I/O queues)
//	ctxs × 32             response capsules, sent from here
//	slots × slotSize      data buffers: what the target reads from the host
//	                      with RDMA READ, or writes to it with RDMA WRITE
//	pages × pageSlot      small data buffers, one per entry on an I/O queue,
//	                      for commands of up to 4 KiB
//
// Data buffer s is a large one (slotSize: MDTS) below len(slots), a small
// one above: most commands of a random workload move 4 KiB, and the large
// buffers, few because each is MDTS, are kept for those that need them.
//
// A command keeps its receive buffer until its response is posted (the
// receive is posted again first, as the kernel's target does, so that the
// host's next command finds it), and a context (its response capsule and
// the send credits it holds) until the send of the response completes.
// Commands run concurrently on I/O queues and in order on the admin
// queue. The send queue is shared out by credits, one per work request.
type tQueue struct {
	session
	conn *rdmacm.Conn
	qp   *uverbs.QP
	cq   *uverbs.CQ
	buf  *uverbs.Buffer
	mr   *uverbs.MR

	depth    int // receives posted: the host's hsqsize + 1
	recvSize int
	rspOff   int
	slotOff  int
	slotSize int
	nslots   int // large data buffers

	ctxs    []cmdCtx
	freeCtx chan int
	slots   chan int // free large data buffers
	pages   chan int // free small ones; nil on the admin queue
	credits chan struct{}
	sqhd    uint16 // the poller's: the submission queue head after each command

	adminCmds chan int // the admin queue's commands, in order
	ioCmds    chan int // an I/O queue's commands, to a worker that waits for one
	workers   sync.WaitGroup

	mu          sync.Mutex
	why         error
	byHost      bool // the host disconnected
	dead        chan struct{}
	pollDone    chan struct{}
	established time.Time
}

// cmdCtx is one command in flight.
type cmdCtx struct {
	recv    int
	byteLen int
	sqhd    uint16
	slot    atomic.Int32 // data buffer held, -1 for none
	credits atomic.Int32 // send credits held until the response's send completes
	pending atomic.Int32 // response sends not yet complete
	readErr chan uverbs.WCStatus
	req     request

	// The command's work requests, made with the queue so that a command
	// allocates nothing: its receive posted again, the RDMA READ of its
	// data, and its response (an RDMA WRITE of its data and up to two
	// SENDs: FaultDuplicateResponse).
	recvWR  [1]uverbs.RecvWR
	readWR  [1]uverbs.SendWR
	sendWRs [3]uverbs.SendWR
	sges    [5]uverbs.SGE // recvWR's, readWR's, then sendWRs'
}

// Work request IDs: the kind in the high word, a receive buffer or a
// context in the low one.
const (
	wrRecv  = 1 << 32
	wrRead  = 2 << 32
	wrWrite = 3 << 32
	wrSend  = 4 << 32
)

const rspSlot = 32 // bytes per response capsule buffer (FaultLongResponse sends 32)

// newQueue builds a queue for a connection request: its buffer, MR and
// posted receives. The caller accepts or rejects the request.
func (t *Target) newQueue(conn *rdmacm.Conn, cm cmQueueRequest) (q *tQueue, err error) {
	q = &tQueue{
		conn:     conn,
		qp:       conn.QP(),
		cq:       conn.CQ(),
		depth:    int(cm.hsqsize) + 1,
		recvSize: sqeSize,
		slotSize: t.set.maxIO,
		dead:     make(chan struct{}),
		pollDone: make(chan struct{}),
	}
	q.session = session{t: t, cm: cm, local: conn.LocalAddr()}
	q.session.end = func(why error) { q.fail(why, false) }
	nslots, npages := adminSlots, 0
	if cm.qid != 0 {
		q.recvSize += t.set.inline
		nslots = min(q.depth, maxIOSlots)
		if q.slotSize > pageSlot {
			npages = q.depth
		}
	}
	q.nslots = nslots
	ncred := 3 * q.depth // at most a READ, a WRITE and two SENDs per command, the READ done first
	nctx := q.depth + ncred
	q.rspOff = q.depth * q.recvSize
	q.slotOff = (q.rspOff + nctx*rspSlot + 4095) &^ 4095
	size := q.slotOff + nslots*q.slotSize + npages*pageSlot
	if q.buf, err = uverbs.AllocBuffer(size); err != nil {
		return nil, err
	}
	if q.mr, err = conn.RegMR(q.buf.Bytes(), uverbs.AccessLocalWrite); err != nil {
		return q, err
	}
	q.ctxs = make([]cmdCtx, nctx)
	q.freeCtx = make(chan int, nctx)
	for i := range q.ctxs {
		c := &q.ctxs[i]
		c.slot.Store(-1)
		c.readErr = make(chan uverbs.WCStatus, 1)
		c.recvWR[0].SGEs = c.sges[0:1]
		c.readWR[0] = uverbs.SendWR{ID: wrRead | uint64(i), Op: uverbs.OpRead, Flags: uverbs.SendSignaled, SGEs: c.sges[1:2]}
		for k := range c.sendWRs {
			c.sendWRs[k].SGEs = c.sges[2+k : 3+k]
		}
		q.freeCtx <- i
	}
	q.slots = make(chan int, nslots)
	for i := range nslots {
		q.slots <- i
	}
	if npages > 0 {
		q.pages = make(chan int, npages)
		for i := range npages {
			q.pages <- nslots + i
		}
	}
	q.credits = make(chan struct{}, ncred)
	for range ncred {
		q.credits <- struct{}{}
	}
	wrs := make([]uverbs.RecvWR, q.depth)
	for i := range wrs {
		wrs[i] = uverbs.RecvWR{ID: wrRecv | uint64(i), SGEs: []uverbs.SGE{q.mr.SGE(i*q.recvSize, q.recvSize)}}
	}
	if err := q.qp.PostRecv(wrs); err != nil {
		return q, fmt.Errorf("posting receives: %w", err)
	}
	return q, nil
}

// start runs the established queue: its poller, the admin queue's worker
// and the goroutine that frees it when it ends.
func (q *tQueue) start() {
	q.established = time.Now()
	if q.cm.qid == 0 {
		q.adminCmds = make(chan int, q.depth)
		q.workers.Add(1)
		go q.adminWorker()
	} else {
		q.ioCmds = make(chan int)
	}
	go q.poll()
	go q.lifecycle()
}

func (q *tQueue) recvBuf(i int) []byte { return q.buf.Bytes()[i*q.recvSize:][:q.recvSize] }
func (q *tQueue) rspBuf(i int) []byte  { return q.buf.Bytes()[q.rspOff+i*rspSlot:][:rspSlot] }

// pageSlot is the size of the small data buffers.
const pageSlot = 4096

// slotAt is where data buffer i starts in the queue's buffer, and its size.
func (q *tQueue) slotAt(i int) (off, size int) {
	if i < q.nslots {
		return q.slotOff + i*q.slotSize, q.slotSize
	}
	return q.slotOff + q.nslots*q.slotSize + (i-q.nslots)*pageSlot, pageSlot
}

func (q *tQueue) slotBuf(i int) []byte {
	off, size := q.slotAt(i)
	return q.buf.Bytes()[off:][:size]
}

// fail ends the queue; the first reason is kept. byHost says the host
// disconnected it.
func (q *tQueue) fail(why error, byHost bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.why != nil {
		return
	}
	q.why, q.byHost = why, byHost
	close(q.dead)
}

func (q *tQueue) ended() bool {
	select {
	case <-q.dead:
		return true
	default:
		return false
	}
}

// lifecycle waits for the queue to end, tells its controller, and frees
// everything in order: the connection is shut down (the QP flushes what
// was posted), the poller and the workers end, then the buffer goes.
func (q *tQueue) lifecycle() {
	defer q.t.removeQueue(q)
	// A queue that no Connect command makes part of a controller within
	// ConnectTimeout is dropped: nothing else would end it.
	connectBy := time.NewTimer(q.t.set.connectTimeout)
	defer connectBy.Stop()
	for wait := true; wait; {
		select {
		case <-q.conn.Done():
			q.fail(fmt.Errorf("queue %d: the host disconnected", q.cm.qid), true)
			wait = false
		case <-q.dead:
			wait = false
		case <-connectBy.C:
			if q.ctrl.Load() == nil {
				q.fail(fmt.Errorf("%w: queue %d: no Connect command within %v", ErrProtocol, q.cm.qid, q.t.set.connectTimeout), false)
			}
		}
	}
	q.mu.Lock()
	why, byHost := q.why, q.byHost
	q.mu.Unlock()
	if !byHost {
		q.t.set.logf("nvmeof target %v: queue %d from %v ended: %v", q.t.addr, q.cm.qid, q.conn.RemoteAddr(), why)
	}
	q.closed(why, byHost)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	q.conn.Shutdown(ctx)
	cancel()
	q.conn.Close()
	<-q.pollDone
	q.workers.Wait()
	q.buf.Close()
}

// poll takes the queue's completions until the CQ is closed.
func (q *tQueue) poll() {
	defer close(q.pollDone)
	if q.adminCmds != nil {
		defer close(q.adminCmds)
	} else {
		defer close(q.ioCmds)
	}
	var wcs [32]uverbs.WC
	for {
		n, err := q.cq.PollWait(context.Background(), wcs[:])
		if err != nil {
			q.fail(fmt.Errorf("%w: queue %d: %v", ErrControllerLost, q.cm.qid, err), false)
			return
		}
		for i := range wcs[:n] {
			q.complete(&wcs[i])
		}
	}
}

// wcFailed ends the queue on a failed completion; a flushed one only
// says the queue is ending already.
func (q *tQueue) wcFailed(wc *uverbs.WC, what string) bool {
	if wc.Status == uverbs.WCSuccess {
		return false
	}
	if wc.Status != uverbs.WCFlushError {
		q.fail(fmt.Errorf("%w: queue %d: %s: %v", ErrControllerLost, q.cm.qid, what, wc.Status.Err()), false)
	}
	return true
}

func (q *tQueue) complete(wc *uverbs.WC) {
	i := int(uint32(wc.ID))
	switch wc.ID &^ 0xffffffff {
	case wrRecv:
		if q.wcFailed(wc, "receive") || q.ended() {
			return
		}
		var ci int
		select {
		case ci = <-q.freeCtx:
		default:
			q.fail(fmt.Errorf("%w: queue %d: more commands in flight than the queue holds", ErrProtocol, q.cm.qid), false)
			return
		}
		c := &q.ctxs[ci]
		c.recv, c.byteLen = i, int(wc.ByteLen)
		// The head moves by one with each command taken (the kernel's
		// target: nvmet_req_init); sqsize is the queue's entries.
		q.sqhd = uint16((int(q.sqhd) + 1) % q.depth)
		c.sqhd = q.sqhd
		if q.adminCmds != nil {
			q.adminCmds <- ci
			return
		}
		// To a worker that waits, or a new one: a queue has as many
		// as it had commands at once, and keeps them until it ends.
		select {
		case q.ioCmds <- ci:
		default:
			q.workers.Add(1)
			go q.ioWorker(ci)
		}
	case wrRead:
		c := &q.ctxs[i]
		q.credits <- struct{}{}
		q.wcFailed(wc, "RDMA READ of the host's data")
		c.readErr <- wc.Status
	case wrWrite:
		// Unsignaled: only a failure completes.
		q.wcFailed(wc, "RDMA WRITE of data to the host")
	case wrSend:
		q.wcFailed(wc, "send of a response")
		c := &q.ctxs[i]
		if c.pending.Add(-1) == 0 {
			q.release(i)
		}
	}
}

// release gives a command's credits, data buffer and context back.
func (q *tQueue) release(ci int) {
	c := &q.ctxs[ci]
	for range c.credits.Swap(0) {
		q.credits <- struct{}{}
	}
	if s := int(c.slot.Swap(-1)); s >= q.nslots {
		q.pages <- s
	} else if s >= 0 {
		q.slots <- s
	}
	q.freeCtx <- ci
}

// ioWorker runs command ci, then the commands the poller hands it, at
// once and concurrently with the queue's other workers.
func (q *tQueue) ioWorker(ci int) {
	defer q.workers.Done()
	for ok := true; ok; ci, ok = <-q.ioCmds {
		if !q.ended() {
			q.handle(ci)
		}
	}
}

func (q *tQueue) adminWorker() {
	defer q.workers.Done()
	for ci := range q.adminCmds {
		if !q.ended() {
			q.handle(ci)
		}
	}
}

// handle runs one command and answers it.
func (q *tQueue) handle(ci int) {
	c := &q.ctxs[ci]
	capsule := q.recvBuf(c.recv)[:min(c.byteLen, q.recvSize)]
	sq, err := parseSQE(capsule)
	if err != nil {
		// The kernel's target makes the controller fatal too
		// (nvmet_rdma_recv_done: "capsule size less than 64 bytes").
		q.fail(fmt.Errorf("queue %d: %w", q.cm.qid, err), false)
		return
	}
	r := &c.req
	*r = request{sqe: sq, raw: capsule[:sqeSize], capsule: capsule, ctx: ci}
	if !q.execute(r, q) {
		return
	}
	if !r.hold {
		q.respond(ci)
	}
}

// buffer takes a data buffer for the command (dataPath): a small one if
// it is enough, else a large one, else the first that is freed.
func (q *tQueue) buffer(r *request) ([]byte, bool) {
	var s int
	small := q.pages
	if r.need > pageSlot {
		small = nil // a receive from a nil channel never happens
	}
	select {
	case s = <-small:
	default:
		select {
		case s = <-small:
		case s = <-q.slots:
		case <-q.dead:
			return nil, false
		}
	}
	q.ctxs[r.ctx].slot.Store(int32(s))
	return q.slotBuf(s), true
}

func (q *tQueue) credit() bool {
	select {
	case <-q.credits:
		return true
	case <-q.dead:
		return false
	}
}

// fetch reads the host's data with RDMA READ into the command's buffer
// (dataPath).
func (q *tQueue) fetch(r *request) bool {
	c := &q.ctxs[r.ctx]
	if !q.credit() {
		return false
	}
	off, _ := q.slotAt(int(c.slot.Load()))
	wr := &c.readWR[0]
	wr.SGEs[0] = q.mr.SGE(off, r.need)
	wr.RemoteAddr, wr.RKey = r.sqe.sgl.addr, r.sqe.sgl.key
	if err := q.qp.PostSend(c.readWR[:]); err != nil {
		// The credit is not given back: the READ may have been posted
		// all the same and complete, flushed, later, which gives it back
		// (siw refuses the doorbell of a request it has in its ring when
		// the QP went to the error state: uverbs QP.PostSend). Given twice,
		// the credits would overflow and block the poller.
		q.fail(fmt.Errorf("%w: queue %d: RDMA READ: %v", ErrControllerLost, q.cm.qid, err), false)
		return false
	}
	select {
	case st := <-c.readErr:
		return st == uverbs.WCSuccess
	case <-q.dead:
		return false
	}
}

// respond posts the command's receive buffer again and sends its response
// (after the read data, with RDMA WRITE, if any), or misbehaves as
// TargetConfig.Fault says.
func (q *tQueue) respond(ci int) {
	c := &q.ctxs[ci]
	r := &c.req
	fault := NoFault
	if q.t.set.fault != nil {
		fault = q.t.set.fault(q.cm.qid, r.sqe.opcode)
	}
	cid := r.sqe.cid
	if fault == FaultUnknownCommandID {
		cid = ^cid
	}
	sqhd := c.sqhd
	if q.noSQHD.Load() {
		sqhd = 0xffff
	}
	rsp := q.rspBuf(ci)
	clear(rsp)
	putCQE(rsp, r.result, sqhd, q.cm.qid, cid, r.status)
	// Post the receive again before the response goes: the host may send
	// its next command as soon as it sees it.
	c.recvWR[0].ID = wrRecv | uint64(c.recv)
	c.recvWR[0].SGEs[0] = q.mr.SGE(c.recv*q.recvSize, q.recvSize)
	if err := q.qp.PostRecv(c.recvWR[:]); err != nil {
		q.fail(fmt.Errorf("%w: queue %d: posting a receive: %v", ErrControllerLost, q.cm.qid, err), false)
		return
	}
	if fault == FaultNoResponse {
		q.release(ci)
		return
	}
	sends, length := 1, cqeSize
	switch fault {
	case FaultDuplicateResponse:
		sends = 2
	case FaultShortResponse:
		length = 8
	case FaultLongResponse:
		length = rspSlot
	}
	n := 0
	if r.out > 0 {
		off, _ := q.slotAt(int(c.slot.Load()))
		wr := &c.sendWRs[n]
		wr.ID, wr.Op, wr.Flags = wrWrite|uint64(ci), uverbs.OpWrite, 0
		wr.SGEs[0] = q.mr.SGE(off, r.out)
		wr.RemoteAddr, wr.RKey = r.sqe.sgl.addr, r.sqe.sgl.key
		n++
	}
	for k := range sends {
		wr := &c.sendWRs[n]
		wr.ID, wr.Op, wr.Flags = wrSend|uint64(ci), uverbs.OpSend, uverbs.SendSignaled
		wr.InvalidateRKey = 0
		if r.invalidate && k == 0 {
			// The host asked for its key to be invalidated (mapSGL):
			// the response invalidates it on arrival, after the data
			// (drivers/nvme/target/rdma.c nvmet_rdma_queue_response:
			// IB_WR_SEND_WITH_INV, ex.invalidate_rkey). A duplicate
			// (FaultDuplicateResponse) goes plain: the key is gone.
			wr.Op, wr.InvalidateRKey = uverbs.OpSendInv, r.sqe.sgl.key
		}
		wr.SGEs[0] = q.mr.SGE(q.rspOff+ci*rspSlot, length)
		wr.RemoteAddr, wr.RKey = 0, 0
		n++
	}
	wrs := c.sendWRs[:n]
	for range wrs {
		if !q.credit() {
			return
		}
		c.credits.Add(1)
	}
	c.pending.Store(int32(sends))
	if err := q.qp.PostSend(wrs); err != nil {
		q.fail(fmt.Errorf("%w: queue %d: sending a response: %v", ErrControllerLost, q.cm.qid, err), false)
	}
}
