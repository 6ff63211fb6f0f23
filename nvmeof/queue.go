package nvmeof

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/goverbs/rdma/rdmacm"
	"github.com/goverbs/rdma/uverbs"
)

// A queue is one submission/completion queue pair of a controller over its
// own RC connection (NVMe over Fabrics RDMA transport: one QP per queue).
// Its memory is one mapped, registered buffer:
//
//	entries × 64 bytes   command capsules, sent from here
//	entries × 16 bytes   response capsules, received here
//	slots × dataSize     each command's data: the target reads or writes it
//	                     through the keyed SGL, or it follows the capsule
//
// A slot is a command in flight; its index is the command identifier. A
// slot is free again once both the send of its capsule and its response
// have completed (the send's completion says the capsule buffer may be
// reused; the response may come first).
type queue struct {
	id       uint16
	entries  int // the submission queue's size (hsqsize+1)
	slots    int // commands in flight at most
	dataSize int // bytes of data per slot
	inline   int // in-capsule data the target takes (I/O queues), 0 for none

	conn *rdmacm.Conn
	qp   *uverbs.QP
	cq   *uverbs.CQ
	buf  *uverbs.Buffer
	mr   *uverbs.MR

	free chan int // free slot indices

	// The work requests, made once: PostSend and PostRecv keep a pointer
	// to what they are given, so a request built per call would escape
	// to the heap. A slot's send request is its command's alone; the
	// receives are reposted by the poller only.
	sends   [][1]uverbs.SendWR
	sendSGE [][2]uverbs.SGE
	recvs   []uverbs.RecvWR

	mu       sync.Mutex
	reqs     []slot
	err      error         // why the queue ended; set once
	dead     chan struct{} // closed when err is set
	timeout  time.Duration // a command unanswered this long ends the queue
	onFail   func(error)   // called once, after err is set
	pollDone chan struct{}
	watchEnd chan struct{}

	// life is held shared by every command for its whole exchange, and
	// exclusively by close while it frees the buffer.
	life sync.RWMutex
}

// slot states: a command is posted; its send and its response complete in
// either order.
type slot struct {
	done      chan struct{} // receives when sent and answered (cap 1)
	posted    time.Time     // zero when free
	sent      bool
	answered  bool
	abandoned bool // the caller stopped waiting: free the slot on completion
	cqe       completion
}

// Work request IDs: a send's is its slot, a receive's has recvID set.
const recvID = 1 << 32

type queueConfig struct {
	address  string
	qid      uint16
	entries  int
	dataSize int
	timeout  time.Duration
	cm       rdmacm.Config
	onFail   func(error) // the queue's onFail, set before its goroutines start
}

// dialQueue connects a queue's RDMA connection, with the transport's
// private data, and posts its receives. The Fabrics Connect command is
// the caller's.
func dialQueue(ctx context.Context, qc queueConfig) (q *queue, err error) {
	cm := qc.cm
	cm.SendDepth = qc.entries
	cm.RecvDepth = qc.entries
	cm.SendSGE = 2 // the capsule and its in-capsule data
	cm.RecvSGE = 1
	cm.CQDepth = 2 * qc.entries
	cm.PrivateData = cmRequest(qc.qid, qc.entries)
	conn, err := rdmacm.Dial(ctx, qc.address, &cm)
	if err != nil {
		var rej *rdmacm.RejectError
		if errors.As(err, &rej) {
			if reason, ok := cmRejectReason(rej.PrivateData); ok {
				return nil, fmt.Errorf("nvmeof: the target refused queue %d: %s: %w", qc.qid, reason, err)
			}
		}
		return nil, fmt.Errorf("nvmeof: connecting queue %d to %s: %w", qc.qid, qc.address, err)
	}
	// Undo on failure through locals: the returns below set q to nil.
	// The connection goes first, and with it the MR over the buffer.
	var buf *uverbs.Buffer
	defer func() {
		if err != nil {
			conn.Close()
			buf.Close()
		}
	}()
	crqsize, err := parseCMAccept(conn.PeerPrivateData())
	if err != nil {
		return nil, err
	}
	q = &queue{
		id:       qc.qid,
		entries:  qc.entries,
		slots:    min(qc.entries-1, crqsize),
		dataSize: qc.dataSize,
		conn:     conn,
		qp:       conn.QP(),
		cq:       conn.CQ(),
		dead:     make(chan struct{}),
		timeout:  qc.timeout,
		onFail:   qc.onFail,
		pollDone: make(chan struct{}),
		watchEnd: make(chan struct{}),
	}
	if q.slots < 1 {
		return nil, fmt.Errorf("%w: the target's receive queue for queue %d holds %d commands", ErrProtocol, qc.qid, crqsize)
	}
	size := q.entries*(sqeSize+cqeSize) + q.slots*q.dataSize
	if buf, err = uverbs.AllocBuffer(size); err != nil {
		return nil, fmt.Errorf("nvmeof: queue %d: %w", qc.qid, err)
	}
	q.buf = buf
	access := uverbs.AccessLocalWrite | uverbs.AccessRemoteRead | uverbs.AccessRemoteWrite
	if q.mr, err = conn.RegMR(q.buf.Bytes(), access); err != nil {
		return nil, fmt.Errorf("nvmeof: queue %d: %w", qc.qid, err)
	}
	q.reqs = make([]slot, q.slots)
	q.free = make(chan int, q.slots)
	for i := range q.reqs {
		q.reqs[i].done = make(chan struct{}, 1)
		q.free <- i
	}
	q.sends = make([][1]uverbs.SendWR, q.slots)
	q.sendSGE = make([][2]uverbs.SGE, q.slots)
	recvSGE := make([]uverbs.SGE, q.entries)
	q.recvs = make([]uverbs.RecvWR, q.entries)
	for i := range q.recvs {
		recvSGE[i] = q.mr.SGE(q.entries*sqeSize+i*cqeSize, cqeSize)
		q.recvs[i] = uverbs.RecvWR{ID: recvID | uint64(i), SGEs: recvSGE[i : i+1]}
	}
	if err = q.qp.PostRecv(q.recvs); err != nil {
		return nil, fmt.Errorf("nvmeof: queue %d: posting receives: %w", qc.qid, err)
	}
	go q.poll()
	go q.watch()
	return q, nil
}

func (q *queue) sqe(i int) []byte { return q.buf.Bytes()[i*sqeSize : (i+1)*sqeSize] }
func (q *queue) data(i int) []byte {
	return q.buf.Bytes()[q.entries*(sqeSize+cqeSize)+i*q.dataSize:][:q.dataSize]
}
func (q *queue) dataAddr(i int) uint64 {
	return q.mr.Addr() + uint64(q.entries*(sqeSize+cqeSize)+i*q.dataSize)
}

// fail ends the queue: every command waiting returns err, and later ones
// too. The first error is kept.
func (q *queue) fail(err error) {
	q.mu.Lock()
	if q.err != nil {
		q.mu.Unlock()
		return
	}
	q.err = err
	close(q.dead)
	q.mu.Unlock()
	// Disconnect at once, as the kernel's host does in its error recovery
	// (drivers/nvme/host/rdma.c nvme_rdma_error_recovery_work): over iWARP
	// the target's side of the connection, and with it its controller's
	// teardown, waits for ours to close (seen with siw: nvmet's port
	// removal blocks until then). The memory stays until close.
	q.conn.Disconnect()
	if q.onFail != nil {
		q.onFail(err)
	}
}

func (q *queue) failed() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}

// poll takes the queue's completions until the CQ is closed.
func (q *queue) poll() {
	defer close(q.pollDone)
	var wcs [16]uverbs.WC
	for {
		n, err := q.cq.PollWait(context.Background(), wcs[:])
		if err != nil {
			q.fail(fmt.Errorf("%w: queue %d: %v", ErrControllerLost, q.id, err))
			return
		}
		for i := range wcs[:n] {
			q.complete(&wcs[i])
		}
	}
}

func (q *queue) complete(wc *uverbs.WC) {
	if wc.Status != uverbs.WCSuccess {
		q.fail(fmt.Errorf("%w: queue %d: %v", ErrControllerLost, q.id, wc.Status.Err()))
		return
	}
	if wc.ID&recvID != 0 {
		// A response is the bytes received, whatever the WC's flags: a
		// target that answered with a SEND with Invalidate
		// (WCWithInvalidate) changes nothing here. This host names its
		// queue's standing key without the Invalidate sub type
		// (setKeyedSGL), so a target has no cause to; one that did
		// anyway would, on a device that takes the key (siw), leave the
		// next transfer to fail with a remote access error, which ends
		// the queue as any failed completion does.
		i := int(wc.ID &^ recvID)
		off := q.entries*sqeSize + i*cqeSize
		cqe, err := parseCompletion(q.buf.Bytes()[off : off+int(wc.ByteLen)])
		if err == nil {
			err = q.qp.PostRecv(q.recvs[i : i+1])
		}
		if err != nil {
			q.fail(fmt.Errorf("%w: queue %d: %w", ErrControllerLost, q.id, err))
			return
		}
		q.answer(cqe)
		return
	}
	q.mu.Lock()
	s := &q.reqs[wc.ID]
	s.sent = true
	q.finishLocked(int(wc.ID))
	q.mu.Unlock()
}

// answer matches a response to its command.
func (q *queue) answer(cqe completion) {
	q.mu.Lock()
	i := int(cqe.cid)
	if i >= len(q.reqs) || q.reqs[i].posted.IsZero() || q.reqs[i].answered {
		q.mu.Unlock()
		q.fail(fmt.Errorf("%w: %w: queue %d: a response for command %d, which is not outstanding", ErrControllerLost, ErrProtocol, q.id, cqe.cid))
		return
	}
	s := &q.reqs[i]
	s.cqe = cqe
	s.answered = true
	q.finishLocked(i)
	q.mu.Unlock()
}

func (q *queue) finishLocked(i int) {
	s := &q.reqs[i]
	if !s.sent || !s.answered {
		return
	}
	if s.abandoned {
		*s = slot{done: s.done}
		q.free <- i
		return
	}
	s.done <- struct{}{}
}

// watch ends the queue when its connection ends or a command goes
// unanswered past the queue's timeout (the kernel's host resets the
// controller then: drivers/nvme/host/rdma.c nvme_rdma_timeout).
func (q *queue) watch() {
	defer close(q.watchEnd)
	tick := time.NewTicker(min(q.timeout/4, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-q.dead:
			return
		case <-q.conn.Done():
			q.fail(fmt.Errorf("%w: the connection of queue %d ended", ErrControllerLost, q.id))
			return
		case now := <-tick.C:
			q.mu.Lock()
			late := -1
			for i := range q.reqs {
				if p := q.reqs[i].posted; !p.IsZero() && now.Sub(p) > q.timeout {
					late = i
					break
				}
			}
			q.mu.Unlock()
			if late >= 0 {
				q.fail(fmt.Errorf("%w: queue %d: command %d unanswered after %v", ErrControllerLost, q.id, late, q.timeout))
				return
			}
		}
	}
}

// exchange is one command: in (a write's data) or out (a read's buffer)
// goes through the slot's data area; the slot's own memory is what the
// target reads or writes. inline sends in's bytes in the capsule when
// the target takes that many there.
func (q *queue) exchange(ctx context.Context, op string, cmd *command, in, out []byte) (completion, error) {
	q.life.RLock()
	defer q.life.RUnlock()
	if q.buf == nil { // closed: close frees it under life's write lock
		return completion{}, q.opErr(op)
	}
	var i int
	select {
	case i = <-q.free:
	case <-q.dead:
		return completion{}, q.opErr(op)
	case <-ctx.Done():
		return completion{}, fmt.Errorf("nvmeof: %s: %w", op, ctx.Err())
	}
	n := max(len(in), len(out))
	if n > q.dataSize {
		q.free <- i
		return completion{}, fmt.Errorf("nvmeof: %s: %d bytes exceed the queue's %d per command", op, n, q.dataSize)
	}
	c := *cmd
	c.setCID(uint16(i))
	sges := &q.sendSGE[i]
	sges[0] = q.mr.SGE(i*sqeSize, sqeSize)
	nsge := 1
	switch {
	case len(in) > 0 && len(in) <= q.inline:
		copy(q.data(i), in)
		c.setInlineSGL(n)
		sges[1] = uverbs.SGE{Addr: q.dataAddr(i), Length: uint32(n), LKey: q.mr.LKey()}
		nsge = 2
	case len(in) > 0:
		copy(q.data(i), in)
		c.setKeyedSGL(q.dataAddr(i), n, q.mr.RKey())
	default:
		// No data, or the target writes it: a keyed descriptor of
		// length 0 says no data, as the kernel's host sends
		// (drivers/nvme/host/rdma.c nvme_rdma_set_sg_null).
		c.setKeyedSGL(q.dataAddr(i), n, q.mr.RKey())
	}
	copy(q.sqe(i), c[:])

	q.mu.Lock()
	if q.err != nil {
		q.mu.Unlock()
		return completion{}, q.opErr(op)
	}
	q.reqs[i].posted = time.Now()
	q.mu.Unlock()
	wr := &q.sends[i]
	wr[0] = uverbs.SendWR{ID: uint64(i), Op: uverbs.OpSend, Flags: uverbs.SendSignaled, SGEs: sges[:nsge]}
	if err := q.qp.PostSend(wr[:]); err != nil {
		q.fail(fmt.Errorf("%w: queue %d: %v", ErrControllerLost, q.id, err))
		return completion{}, q.opErr(op)
	}

	select {
	case <-q.reqs[i].done:
	case <-q.dead:
		return completion{}, q.opErr(op)
	case <-ctx.Done():
		q.mu.Lock()
		select {
		case <-q.reqs[i].done:
			// It completed meanwhile: go on as if it had not ended.
			q.mu.Unlock()
		default:
			q.reqs[i].abandoned = true
			q.mu.Unlock()
			return completion{}, fmt.Errorf("nvmeof: %s: %w", op, ctx.Err())
		}
	}
	q.mu.Lock()
	cqe := q.reqs[i].cqe
	q.reqs[i] = slot{done: q.reqs[i].done}
	q.mu.Unlock()
	if cqe.status != 0 {
		q.free <- i
		return cqe, statusError(op, cqe.status)
	}
	copy(out, q.data(i))
	q.free <- i
	return cqe, nil
}

func (q *queue) opErr(op string) error {
	return fmt.Errorf("nvmeof: %s: %w", op, q.failed())
}

// close ends the queue with err (for commands still waiting), disconnects,
// and frees everything once the QP is gone.
func (q *queue) close(err error) {
	q.fail(err)
	q.life.Lock()
	defer q.life.Unlock()
	if q.buf == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	q.conn.Shutdown(ctx)
	cancel()
	q.conn.Close()
	<-q.pollDone
	<-q.watchEnd
	q.buf.Close()
	q.buf = nil
}
