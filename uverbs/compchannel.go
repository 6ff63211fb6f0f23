package uverbs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/sys"
)

// CompChannel is a completion channel: a file on which the kernel reports
// that a CQ armed with CQ.ReqNotify got a completion. Wait reads the next
// event, parking the goroutine in Go's netpoller until there is one; it
// honours a context.
//
// Close refuses (ErrBusy) while CQs created with the channel are open.
// Close is idempotent and safe on a nil *CompChannel; a Wait in progress
// returns an error matching ErrClosed.
//
// rdma-core: struct ibv_comp_channel.
type CompChannel struct {
	ctx  *Device
	h    uint64
	ev   *sys.EventFile
	kids children

	// reader holds one token while a Wait reads the channel: Waits read
	// one at a time. desc and buf (desc's bytes) are the read buffer of the
	// Wait in progress, kept here so that Wait allocates nothing.
	reader chan struct{}
	desc   abi.UverbsCompEventDesc
	buf    []byte
	// last is the CQ of the last event read, so that the next event of the
	// same CQ is resolved without the process-wide handle table. CQ.Close
	// clears it; a CQ closing while its event is resolved may stay in it
	// until the next event of another CQ, and matches no later event
	// (handles are never reused, and the kernel drops a destroyed CQ's
	// queued events). The channel holds its open CQs anyway (kids).
	last atomic.Pointer[CQ]

	// PollWait calls that wait for another's read count themselves in
	// blocked and wait on note, which is closed and replaced when an event
	// is read while blocked > 0 (so the single waiter of a channel never
	// allocates).
	noteM   sync.Mutex
	note    chan struct{}
	blocked int
}

// NewCompChannel creates a completion channel (write() command
// CREATE_COMP_CHANNEL).
//
// rdma-core: ibv_create_comp_channel.
func (c *Device) NewCompChannel() (*CompChannel, error) {
	const op = "create_comp_channel"
	r, err := c.objects(op)
	if err != nil {
		return nil, err
	}
	var req abi.UverbsCreateCompChannel
	var resp abi.UverbsCreateCompChannelResp
	if err := c.write(op, abi.IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, bytesOf(&req), bytesOf(&resp)); err != nil {
		return nil, err
	}
	ev, err := sys.NewEventFile(int(resp.FD), "completion channel "+c.dev.Name)
	if err != nil {
		return nil, &OpError{Op: op, Err: err}
	}
	ch := &CompChannel{ctx: c, h: newHandle(), ev: ev, reader: make(chan struct{}, 1), note: make(chan struct{})}
	ch.buf = bytesOf(&ch.desc)
	if err := r.add(op, ch.h, kindCompChannel, ch); err != nil {
		ch.close(true)
		return nil, err
	}
	return ch, nil
}

// FD returns the channel's file descriptor, for callers that multiplex it
// with other files themselves (epoll, poll): it is readable when an event
// is queued, and a Wait then returns that event without waiting (unless
// another Wait takes it first). The file is in non-blocking mode for its
// whole life and is registered with Go's netpoller; do not read it or
// change its flags directly, since each read takes an event from the
// channel's Waits. It returns -1 once the channel is closed (the number may
// then name another file).
//
// rdma-core: the fd of struct ibv_comp_channel.
func (ch *CompChannel) FD() int {
	if ch == nil {
		return -1
	}
	return ch.ev.Raw()
}

// Wait waits until a CQ of this channel that was armed with ReqNotify gets
// a completion, and returns that CQ. The notification is one-shot: call
// cq.ReqNotify again before the next Wait, and poll the CQ after arming
// (arm, poll, then wait only if the CQ was empty) so that no completion is
// missed: CQ.PollWait is that loop. It returns ctx.Err() when ctx ends
// first, and an error matching ErrClosed when the channel is closed. An
// event that was read is returned even if ctx ended or Close came
// meanwhile. Waits on one channel read it one at a time; one waiting for
// its turn also ends with its ctx.
//
// Wait reads the channel at once and, when no event is queued, parks the
// goroutine in Go's netpoller (the file is non-blocking; the kernel's poll
// reports it readable when an event is queued, core/uverbs_main.c
// ib_uverbs_event_poll). No thread is held while it waits. It allocates
// nothing when ctx cannot be cancelled (ctx.Done() is nil) or shares the
// Done channel of the previous Wait's context: that context.AfterFunc
// registration is kept until a Wait under another context, or Close, and
// keeps the channel reachable meanwhile.
//
// rdma-core: ibv_get_cq_event (no ibv_ack_cq_events is needed).
func (ch *CompChannel) Wait(ctx context.Context) (*CQ, error) {
	if ch == nil {
		return nil, closedErr(readEventOp)
	}
	select {
	case ch.reader <- struct{}{}:
	default: // another Wait is reading
		select {
		case ch.reader <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	defer func() { <-ch.reader }()
	for {
		cq, err := ch.read(ctx)
		if !errors.Is(err, sys.ErrInterrupted) {
			return cq, err
		}
		// A CQ.Close woke the reader for its PollWait: read on.
	}
}

// waitFor is PollWait's wait: it waits until an event of cq is read after
// its count of read events was seq, by this call or by another Wait on the
// channel, and
// returns nil then, or at once if that happened already or cq is not
// armed. A call that finds another reading waits for its turn or for any
// event to be read, and then looks again: so CQs sharing the channel can be
// waited for at once without one's event being lost to the other's waiter.
func (ch *CompChannel) waitFor(ctx context.Context, cq *CQ, seq uint64) error {
	for cq.waiting(seq) {
		if testHookTurn != nil {
			testHookTurn()
		}
		reading, err := ch.turn(ctx, cq, seq)
		if err != nil || !reading {
			return err
		}
		// Look again with the token held: the previous holder may have
		// read cq's event after the look above, or turn's select may have
		// taken the token when it could as well have taken the news of
		// that read. A read now would wait for an event that no arm will
		// raise.
		if !cq.waiting(seq) {
			<-ch.reader
			return nil
		}
		got, err := ch.read(ctx)
		<-ch.reader
		if errors.Is(err, sys.ErrInterrupted) {
			continue // a CQ.Close woke the reader: look again
		}
		if err != nil || got == cq {
			return err
		}
	}
	return nil
}

// wake is CQ.Close's wake-up of the PollWait calls of a closed CQ, which
// may read the channel (read) or wait for their turn (turn): it ends the
// read, whose PollWait gives the turn on, and the waits for a turn (a Wait
// reading meanwhile keeps it), and each PollWait then looks at its CQ
// again (waitFor). Those of other CQs, and Wait, look again and wait on.
func (ch *CompChannel) wake() {
	ch.wakeBlocked()
	ch.ev.Interrupt()
}

// wakeBlocked ends the waits for the reader's turn (turn).
func (ch *CompChannel) wakeBlocked() {
	ch.noteM.Lock()
	if ch.blocked > 0 {
		close(ch.note)
		ch.note = make(chan struct{})
	}
	ch.noteM.Unlock()
}

// testHookTurn, set only by tests, runs in waitFor between its look at cq
// and turn, where another's read of cq's event changes both. Tests set it
// only while no other wait of the package runs.
var testHookTurn func()

// turn takes the reader's token and returns true, or returns false once
// an event was read by another (cq may have been disarmed by it).
func (ch *CompChannel) turn(ctx context.Context, cq *CQ, seq uint64) (bool, error) {
	select {
	case ch.reader <- struct{}{}:
		return true, nil
	default:
	}
	ch.noteM.Lock()
	ch.blocked++
	note := ch.note
	ch.noteM.Unlock()
	defer func() {
		ch.noteM.Lock()
		ch.blocked--
		ch.noteM.Unlock()
	}()
	// Counted in blocked before this look: an event read after it closes
	// note.
	if !cq.waiting(seq) {
		return false, nil
	}
	select {
	case ch.reader <- struct{}{}:
		return true, nil
	case <-note:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

const readEventOp = "read completion event"

// read reads one event of a CQ of this channel. Call with the reader
// token held. It returns sys.ErrInterrupted when a CQ.Close woke it (wake).
func (ch *CompChannel) read(ctx context.Context) (*CQ, error) {
	for {
		n, err := ch.ev.Read(ctx, ch.buf)
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || err == sys.ErrInterrupted {
				return nil, err
			}
			return nil, &OpError{Op: readEventOp, Err: err}
		}
		if cq, ok := ch.event(n, &ch.desc); ok {
			return cq, nil
		}
	}
}

// event resolves one event and marks its CQ as no longer armed; ok is false
// for an event of a CQ that was closed since (the kernel drops queued events
// of a destroyed CQ, so this is a narrow race) or of a foreign handle.
func (ch *CompChannel) event(n int, desc *abi.UverbsCompEventDesc) (*CQ, bool) {
	if n != len(bytesOf(desc)) {
		return nil, false
	}
	cq := ch.last.Load()
	if cq == nil || cq.h != desc.CQHandle {
		if cq, _ = lookupHandle(desc.CQHandle).(*CQ); cq == nil || cq.ch != ch {
			return nil, false
		}
		// A CQ that closed since the lookup may be stored here after
		// Close cleared last: it matches no later event (last).
		ch.last.Store(cq)
	}
	// mlx5: the arm sequence moves on first, so that an arm by a waiter
	// that sees the CQ disarmed below carries the new number (the device
	// ignores an arm with the number of the one that fired).
	cq.providerEvent()
	cq.armed.Store(false)
	cq.events.Add(1)
	ch.wakeBlocked()
	return cq, true
}

// Close closes the channel's file. It refuses with an error matching
// ErrBusy while CQs created with the channel are open.
//
// rdma-core: ibv_destroy_comp_channel.
func (ch *CompChannel) Close() error {
	if ch == nil {
		return nil
	}
	return ch.close(false)
}

func (ch *CompChannel) close(force bool) error {
	already, err := ch.kids.beginClose("destroy_comp_channel", "completion channel", force)
	if already || err != nil {
		return err
	}
	ch.ctx.forget(ch.h)
	if err := ch.ev.Close(); err != nil {
		return &OpError{Op: "destroy_comp_channel", Err: fmt.Errorf("close: %w", err)}
	}
	return nil
}
