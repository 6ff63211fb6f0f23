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
// that a CQ armed with CQ.ReqNotify got a completion. Wait first tries a
// few non-blocking reads (SetSpin), then blocks its thread in the kernel or
// parks the goroutine in Go's netpoller (SetWaitMode); it honours a
// context either way.
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
	spin atomic.Int64
	mode atomic.Int32

	// reader holds one token while a Wait reads the channel: Waits read
	// one at a time. desc and buf (desc's bytes) are the read buffer of the
	// Wait in progress, kept here so that Wait allocates nothing.
	// threadWaits counts the Waits that blocked a thread, for the periodic
	// yield (see yieldEvery).
	reader      chan struct{}
	desc        abi.UverbsCompEventDesc
	buf         []byte
	threadWaits uint
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

// WaitMode says how CompChannel.Wait waits once its spin found no event.
type WaitMode int32

const (
	// WaitAuto blocks the thread (WaitThread) while fewer than
	// MaxThreadWaits Waits of the process do so, and parks (WaitPark)
	// beyond: a few channels get C's wake-up latency, thousands of them
	// do not cost thousands of OS threads. The default.
	WaitAuto WaitMode = iota
	// WaitThread blocks the calling OS thread in read(2) of the channel,
	// as rdma-core's ibv_get_cq_event does: the kernel wakes the thread
	// itself when the event comes. Cancellation and Close end the read by
	// pointing the descriptor it reads at another file and sending the
	// thread SIGURG, the signal Go uses to preempt goroutines
	// (docs/architecture.md §3). The thread is held for the
	// whole wait (Go's scheduler runs other goroutines on other threads
	// meanwhile, as for any blocking system call). With GOMAXPROCS=1, Go's
	// sysmon takes the only P from a thread blocked for more than 20 µs
	// and hands it to another thread, which costs a hand-off per Wait:
	// programs that wait on events on one CPU do better with
	// GOMAXPROCS=2 (cmd/rdma-perf sets it with -e).
	WaitThread
	// WaitPark parks the goroutine in Go's netpoller: no thread is held,
	// and the wake-up goes through the netpoller and the scheduler's
	// hand-offs (futex wake-ups, spinning threads), which under emulated
	// CPUs made a ping-pong 2 to 3 times as slow as C (BENCHMARKS.md).
	WaitPark
)

// MaxThreadWaits is how many Waits of WaitAuto channels may block a thread
// at once in the process; the others park in the netpoller.
const MaxThreadWaits = 64

// autoThreadWaits counts the Waits in progress on WaitAuto channels; the
// first MaxThreadWaits of them block a thread.
var autoThreadWaits atomic.Int64

// yieldEvery: a Wait that blocks its thread yields every yieldEvery Waits.
// Go's sysmon preempts a goroutine that has not been rescheduled for 10 ms
// (runtime/proc.go retake, forcePreemptNS) and, finding it in a system
// call, hands its P to another thread and goes back to polling every 20
// µs; a loop of short Waits that never parks trips this every 10 ms.
// Measured in the lab (rdma-pingpong -e, 6.12), the loop took 1.6 to 1.8
// times as long without the yield.
//
// The yield is sys.Yield, which reschedules on the same thread, where
// runtime.Gosched would often wake an idle one first: a futex wake-up, a
// futex sleep and a thread switch (BENCHMARKS.md, "The wait path, fifth
// round"). sys.Yield serves the global run queue only on every 61st
// schedule, so with every P busy a goroutine waiting there can wait behind
// 61*16 Waits, but only Waits that found their event at once: one that
// blocks longer than sysmon's sleep has its P handed to that goroutine.
const yieldEvery = 16

// DefaultSpin is the number of non-blocking reads Wait tries before it
// waits, unless SetSpin changes it: none. A Wait that blocks its thread
// (WaitThread) is woken by the kernel as soon as the event comes, so reads
// before it only add system calls; in the lab a spin of 2 to 8 reads made
// rdma-pingpong -e slower, not faster (BENCHMARKS.md). For WaitPark a
// spin can pay: an event that comes within a few reads (the ACK of a
// loopback send) is taken without the netpoller's park and wake-up.
const DefaultSpin = 0

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
	if err := ev.EnableThreadWait(); err != nil {
		ev.Close()
		return nil, &OpError{Op: op, Err: err}
	}
	ch := &CompChannel{ctx: c, h: newHandle(), ev: ev, reader: make(chan struct{}, 1), note: make(chan struct{})}
	ch.buf = bytesOf(&ch.desc)
	ch.spin.Store(DefaultSpin)
	if err := r.add(op, ch.h, kindCompChannel, ch); err != nil {
		ch.close(true)
		return nil, err
	}
	return ch, nil
}

// FD returns the channel's file descriptor, for callers that multiplex it
// with other files themselves and take its events with TryWait; each read
// returns one 8-byte struct ib_uverbs_comp_event_desc. The file is in
// non-blocking mode, except after a Wait that blocked its thread: such a
// Wait leaves it in blocking mode, and TryWait and a Wait that parks switch
// it back. It returns -1 once the channel is closed (the number may then
// name another file).
func (ch *CompChannel) FD() int {
	if ch == nil {
		return -1
	}
	return ch.ev.Raw()
}

// SetSpin sets how many non-blocking reads of the channel Wait tries
// before it waits; 0 waits at once. The default is DefaultSpin. More reads
// take more of the events that come soon without a wake-up, at the price
// of a busy CPU while a Wait that has to wait anyway spins; it pays with
// WaitPark.
func (ch *CompChannel) SetSpin(reads int) {
	if ch != nil {
		ch.spin.Store(int64(max(reads, 0)))
	}
}

// SetWaitMode sets how Wait waits once its spin found nothing: WaitAuto
// (the default), WaitThread or WaitPark. It refuses any other value.
func (ch *CompChannel) SetWaitMode(m WaitMode) error {
	if m < WaitAuto || m > WaitPark {
		return &OpError{Op: "set wait mode", Err: fmt.Errorf("wait mode %d: use WaitAuto, WaitThread or WaitPark", int32(m))}
	}
	if ch != nil {
		ch.mode.Store(int32(m))
	}
	return nil
}

func (m WaitMode) String() string {
	switch m {
	case WaitAuto:
		return "WaitAuto"
	case WaitThread:
		return "WaitThread"
	case WaitPark:
		return "WaitPark"
	}
	return fmt.Sprintf("WaitMode(%d)", int32(m))
}

// Wait waits until a CQ of this channel that was armed with ReqNotify gets
// a completion, and returns that CQ. The notification is one-shot: call
// cq.ReqNotify again before the next Wait, and poll the CQ after arming
// (arm, poll, then wait only if the CQ was empty) so that no completion is
// missed: CQ.PollWait is that loop. It returns ctx.Err() when ctx ends
// first, and an error matching ErrClosed when the channel is closed. Waits
// on one channel read it one at a time; one waiting for its turn also ends
// with its ctx. Wait allocates nothing when ctx cannot be cancelled (ctx.Done() is
// nil), nor, when it blocks its thread, when ctx is the context of the
// previous Wait (its context.AfterFunc registration is kept); a parking
// Wait under a cancellable ctx registers one per Wait.
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
	return ch.read(ctx)
}

// waitFor waits until an event of cq is read after its count of read
// events was seq, by this call or by another Wait on the channel, and
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
		if err != nil || got == cq {
			return err
		}
	}
	return nil
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

// read reads one event of a CQ of this channel, waiting as the mode says.
// Call with the reader token held.
func (ch *CompChannel) read(ctx context.Context) (*CQ, error) {
	thread := false
	switch WaitMode(ch.mode.Load()) {
	case WaitThread:
		thread = true
	case WaitAuto:
		if autoThreadWaits.Add(1) <= MaxThreadWaits {
			thread = true
		}
		defer autoThreadWaits.Add(-1)
	}
	if thread {
		if ch.threadWaits++; ch.threadWaits%yieldEvery == 0 {
			sys.Yield()
		}
	}
	for {
		var n int
		var err error
		if thread {
			n, err = ch.ev.ReadThread(ctx, ch.buf, int(ch.spin.Load()))
		} else {
			n, err = ch.ev.ReadSpin(ctx, ch.buf, int(ch.spin.Load()))
		}
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return nil, err
			}
			return nil, &OpError{Op: readEventOp, Err: err}
		}
		if cq, ok := ch.event(n, &ch.desc); ok {
			return cq, nil
		}
	}
}

// TryWait returns the CQ of a queued notification without waiting, or nil
// if none is queued or a Wait (or a CQ's WaitNotify) is reading the channel:
// that read takes the event, and taking it here instead would leave it
// waiting for another.
func (ch *CompChannel) TryWait() (*CQ, error) {
	if ch == nil {
		return nil, closedErr(readEventOp)
	}
	select {
	case ch.reader <- struct{}{}:
	default:
		return nil, nil
	}
	defer func() { <-ch.reader }()
	for {
		var desc abi.UverbsCompEventDesc
		n, err := ch.ev.TryRead(bytesOf(&desc))
		if err != nil {
			return nil, &OpError{Op: readEventOp, Err: err}
		}
		if n == 0 {
			return nil, nil
		}
		if cq, ok := ch.event(n, &desc); ok {
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
	if cq.ctx.mlx != nil {
		cq.mlx5Event()
	}
	cq.armed.Store(false)
	cq.events.Add(1)
	ch.noteM.Lock()
	if ch.blocked > 0 {
		close(ch.note)
		ch.note = make(chan struct{})
	}
	ch.noteM.Unlock()
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
