package uverbs

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// PollWait refuses what it cannot do, ends with its context on an empty
// CQ, and returns completions that come while it sleeps.
func TestCQPollWait(t *testing.T) {
	e := newVerbsEnv(t)
	_, mr := e.memory(4096)
	ch := e.channel()
	cq := e.cq(64, ch)
	a, b := e.rcPair(cq, defaultCap)
	wcs := make([]WC, 4)

	bg := context.Background()
	if _, err := e.cq(4, nil).PollWait(bg, wcs); err == nil || !strings.Contains(err.Error(), "CQInit.Channel") {
		t.Errorf("PollWait on a CQ without a channel: %v, want an error naming CQInit.Channel", err)
	}
	if _, err := cq.PollWait(bg, nil); err == nil || !strings.Contains(err.Error(), "length 1") {
		t.Errorf("PollWait with no room: %v, want an error asking for a []WC of length 1", err)
	}

	for round := range 3 {
		ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
		n, err := cq.PollWait(ctx, wcs)
		cancel()
		if n != 0 || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("round %d: PollWait on an empty CQ = %d, %v; want 0, deadline exceeded", round, n, err)
		}
		// The send is posted while PollWait sleeps (the CQ was armed by
		// the call above and stays so).
		if err := b.PostRecv([]RecvWR{{ID: 2, SGEs: []SGE{mr.SGE(0, 64)}}}); err != nil {
			t.Fatal(err)
		}
		posted := make(chan error, 1)
		go func() {
			time.Sleep(50 * time.Millisecond)
			posted <- a.PostSend([]SendWR{{ID: 1, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(1024, 64)}}})
		}()
		ctx, cancel = context.WithTimeout(bg, 20*time.Second)
		got := map[uint64]bool{}
		for len(got) < 2 {
			n, err := cq.PollWait(ctx, wcs)
			if err != nil {
				t.Fatalf("round %d: PollWait after %d completions: %v", round, len(got), err)
			}
			for _, wc := range wcs[:n] {
				if wc.Status != WCSuccess || got[wc.ID] {
					t.Fatalf("round %d: completion %+v (have %v)", round, wc, got)
				}
				got[wc.ID] = true
			}
		}
		cancel()
		if err := <-posted; err != nil {
			t.Fatal(err)
		}
	}
}

// Two CQs share one channel and are waited for at once by two goroutines:
// whichever reads the channel also reads the other CQ's events, and the
// other waiter must still return with its completion (a waiter that only
// waited for the reader's turn, or read the channel again, would sleep
// until its deadline).
func TestCQPollWaitSharedChannel(t *testing.T) {
	e := newVerbsEnv(t)
	_, mr := e.memory(4096)
	ch := e.channel()
	type side struct {
		cq   *CQ
		a, b *QP
		got  chan error
	}
	var sides [2]*side
	for i := range sides {
		cq := e.cq(64, ch)
		a, b := e.rcPair(cq, defaultCap)
		sides[i] = &side{cq: cq, a: a, b: b, got: make(chan error)}
	}
	for round := range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		var running sync.WaitGroup
		for _, s := range sides {
			running.Add(1)
			go func() {
				defer running.Done()
				wcs := make([]WC, 1)
				for {
					_, err := s.cq.PollWait(ctx, wcs)
					if err == nil && wcs[0].Status != WCSuccess {
						err = wcs[0].Status.Err()
					}
					select {
					case s.got <- err:
					case <-ctx.Done():
						return
					}
				}
			}()
		}
		for step := range 60 {
			// Both are waiting before each send, and the side that gets
			// it alternates in an order that is not the waiters' own.
			s := sides[(step/2+step)%2]
			if err := s.b.PostRecv([]RecvWR{{ID: uint64(step), SGEs: []SGE{mr.SGE(0, 64)}}}); err != nil {
				t.Fatal(err)
			}
			if err := s.a.PostSend([]SendWR{{ID: uint64(step), Op: OpSend, SGEs: []SGE{mr.SGE(1024, 64)}}}); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-s.got:
				if err != nil {
					t.Fatalf("round %d, step %d: %v", round, step, err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("round %d, step %d: the receive's completion did not wake its waiter", round, step)
			}
		}
		// The next round's waiters start once these have returned.
		cancel()
		running.Wait()
	}
}

// The event-driven round trip through PollWait allocates nothing, under a
// context that cannot end and under one cancellable context kept from call
// to call.
func TestCQPollWaitAllocs(t *testing.T) {
	w := newWakeupEnv(t)
	cctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, ctx := range []context.Context{context.Background(), cctx} {
		allocs := testing.AllocsPerRun(50, func() {
			if err := w.b.PostRecv(w.recv); err != nil {
				t.Fatal(err)
			}
			if err := w.a.PostSend(w.send); err != nil {
				t.Fatal(err)
			}
			for got := 0; got < 2; {
				n, err := w.cq.PollWait(ctx, w.wcs)
				if err != nil {
					t.Fatal(err)
				}
				got += n
			}
		})
		if allocs != 0 {
			t.Errorf("context %v: %v allocations per round trip, want 0", ctx, allocs)
		}
	}
}

// A PollWait that found its CQ empty and armed, and then gets the turn to
// read the channel, returns with the completions if another read the CQ's
// event in between: with the CQ disarmed no event would end a read of its
// own. (Under load this was an rsocket Read or Write asleep for good.) The
// other reader comes in through testHookTurn, at that point of the first
// look, and the completions are posted there too, so that the CQ was empty
// when PollWait polled.
func TestCQPollWaitTurnAfterEvent(t *testing.T) {
	e := newVerbsEnv(t)
	ch, cq, a, b, mr := e.notifyRig()
	bg := context.Background()
	t.Cleanup(func() { testHookTurn = nil })
	wcs := make([]WC, 4)
	for round := range 3 {
		if err := cq.ReqNotify(false); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(bg, 20*time.Second)
		var other error
		first := true
		testHookTurn = func() {
			if first {
				first = false
				sendOne(t, a, b, mr)
				ch.reader <- struct{}{}
				var got *CQ
				if got, other = ch.read(ctx); other == nil && got != cq {
					other = fmt.Errorf("read the event of %p, want the CQ's %p", got, cq)
				}
				<-ch.reader
			}
		}
		got := 0
		for got < 2 {
			n, err := cq.PollWait(ctx, wcs)
			if err != nil {
				t.Fatalf("round %d: PollWait after another read its CQ's event (%d of 2 completions): %v", round, got, err)
			}
			got += n
		}
		cancel()
		testHookTurn = nil
		if first {
			t.Fatalf("round %d: PollWait never reached its wait", round)
		}
		if other != nil {
			t.Fatalf("round %d: the other read: %v", round, other)
		}
	}
}

// Close of a CQ ends the PollWait in progress on it with ErrClosed, the
// channel staying open: the waiter reads the channel, parked in the
// netpoller, and the kernel raises nothing for a destroyed CQ. A PollWait
// of another CQ of the channel, waiting for its turn meanwhile, takes over
// the read and returns the completions that come next; the channel then
// closes without ErrBusy.
func TestCQPollWaitCQClosed(t *testing.T) {
	e := newVerbsEnv(t)
	ch, cq, a, b, mr := e.notifyRig()
	gone, err := e.ctx.CreateCQ(CQInit{Depth: 4, Channel: ch})
	if err != nil {
		t.Fatal(err)
	}
	goneDone := make(chan error, 1)
	go func() { _, err := gone.PollWait(context.Background(), make([]WC, 1)); goneDone <- err }()
	awaitPollWait(t, "[IO wait", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	wcs := make([]WC, 2)
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() { n, err := cq.PollWait(ctx, wcs); done <- result{n, err} }()
	awaitPollWait(t, "[select", 1)

	if err := gone.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-goneDone:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("PollWait after its CQ closed: %v, want ErrClosed", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("closing the CQ did not end its PollWait")
	}
	sendOne(t, a, b, mr)
	r := <-done
	if r.err != nil || r.n < 1 {
		t.Fatalf("PollWait of the other CQ: %d, %v; want its completions", r.n, r.err)
	}
	for _, wc := range wcs[:r.n] {
		if wc.Status != WCSuccess {
			t.Fatalf("completion %+v", wc)
		}
	}
}

// awaitPollWait waits until n goroutines are asleep in PollWait in the
// state head names ("[IO wait": reading the channel; "[select": waiting
// for another's read).
func awaitPollWait(t *testing.T, head string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for countIn("(*CQ).PollWait(", head) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d PollWait calls in %s, want %d", countIn("(*CQ).PollWait(", head), head, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// notifyRig returns the set-up of the PollWait tests: a CQ with a
// completion channel, shared by a connected RC pair, and an MR to send from.
func (e *verbsEnv) notifyRig() (*CompChannel, *CQ, *QP, *QP, *MR) {
	_, mr := e.memory(4096)
	ch := e.channel()
	cq := e.cq(64, ch)
	a, b := e.rcPair(cq, defaultCap)
	return ch, cq, a, b, mr
}

// sendOne posts a receive on b and a signalled 64-byte SEND on a: two
// completions on their CQ.
func sendOne(t *testing.T, a, b *QP, mr *MR) {
	t.Helper()
	if err := b.PostRecv([]RecvWR{{ID: 2, SGEs: []SGE{mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if err := a.PostSend([]SendWR{{ID: 1, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(1024, 64)}}}); err != nil {
		t.Fatal(err)
	}
}

// waitingIn counts the goroutines asleep in fn: blocked in a system call
// (read), parked in the netpoller, or in a select (waiting for another's
// read of the channel).
func waitingIn(fn string) int {
	buf := make([]byte, 1<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		if strings.Contains(g, fn) && (strings.Contains(head, "[syscall") || strings.Contains(head, "[IO wait") || strings.Contains(head, "[select")) {
			n++
		}
	}
	return n
}
