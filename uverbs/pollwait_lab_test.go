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

var waitModes = []WaitMode{WaitAuto, WaitThread, WaitPark}

// PollWait refuses what it cannot do, ends with its context on an empty
// CQ, and returns completions that come while it sleeps, in every mode.
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

	for _, mode := range waitModes {
		if err := ch.SetWaitMode(mode); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
		n, err := cq.PollWait(ctx, wcs)
		cancel()
		if n != 0 || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%v: PollWait on an empty CQ = %d, %v; want 0, deadline exceeded", mode, n, err)
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
				t.Fatalf("%v: PollWait after %d completions: %v", mode, len(got), err)
			}
			for _, wc := range wcs[:n] {
				if wc.Status != WCSuccess || got[wc.ID] {
					t.Fatalf("%v: completion %+v (have %v)", mode, wc, got)
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
	for _, mode := range waitModes {
		if err := ch.SetWaitMode(mode); err != nil {
			t.Fatal(err)
		}
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
					t.Fatalf("%v, step %d: %v", mode, step, err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("%v, step %d: the receive's completion did not wake its waiter", mode, step)
			}
		}
		// The next mode's waiters start once these have returned.
		cancel()
		running.Wait()
	}
}

// The event-driven round trip through PollWait allocates nothing, in each
// mode.
func TestCQPollWaitAllocs(t *testing.T) {
	w := newWakeupEnv(t)
	bg := context.Background()
	for _, mode := range waitModes {
		w.ch.SetWaitMode(mode)
		allocs := testing.AllocsPerRun(50, func() {
			if err := w.b.PostRecv(w.recv); err != nil {
				t.Fatal(err)
			}
			if err := w.a.PostSend(w.send); err != nil {
				t.Fatal(err)
			}
			for got := 0; got < 2; {
				n, err := w.cq.PollWait(bg, w.wcs)
				if err != nil {
					t.Fatal(err)
				}
				got += n
			}
		})
		if allocs != 0 {
			t.Errorf("%v: %v allocations per round trip, want 0", mode, allocs)
		}
	}
}

// WaitNotify returns at once on a CQ that is not armed, ends with its
// context on an armed CQ with nothing to report, and returns once a
// completion that comes while it sleeps raises the event; two goroutines
// asleep on one armed CQ both return with that one event. A CQ without a
// channel is refused.
func TestCQWaitNotify(t *testing.T) {
	e := newVerbsEnv(t)
	ch, cq, a, b, mr := e.notifyRig()
	bg := context.Background()
	noChannel := e.cq(4, nil)
	for name, wait := range map[string]func() error{
		"WaitNotify":      func() error { return noChannel.WaitNotify(bg) },
		"WaitNotifySince": func() error { return noChannel.WaitNotifySince(bg, 0) },
	} {
		if err := wait(); err == nil || !strings.Contains(err.Error(), "CQInit.Channel") {
			t.Errorf("%s on a CQ without a channel: %v, want an error naming CQInit.Channel", name, err)
		}
	}
	wcs := make([]WC, 4)
	for _, mode := range waitModes {
		if err := ch.SetWaitMode(mode); err != nil {
			t.Fatal(err)
		}
		// Not armed: nothing to wait for, even with a context that ended.
		ended, cancel := context.WithCancel(bg)
		cancel()
		if err := cq.WaitNotify(ended); err != nil {
			t.Fatalf("%v: WaitNotify on a CQ that is not armed: %v, want nil at once", mode, err)
		}
		if err := cq.ReqNotify(false); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
		err := cq.WaitNotify(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%v: WaitNotify on an armed, idle CQ: %v, want deadline exceeded", mode, err)
		}
		// Still armed: the send posted now raises the event both wake on.
		if err := b.PostRecv([]RecvWR{{ID: 2, SGEs: []SGE{mr.SGE(0, 64)}}}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel = context.WithTimeout(bg, 20*time.Second)
		woke := make(chan error, 2)
		for range 2 {
			go func() { woke <- cq.WaitNotify(ctx) }()
		}
		// Both asleep before the send, so that one reads the event and the
		// other must learn of it.
		for asleep := 0; asleep < 2; asleep = waitingIn("(*CQ).WaitNotify(") {
			if ctx.Err() != nil {
				t.Fatalf("%v: %d of 2 WaitNotify calls asleep", mode, asleep)
			}
			time.Sleep(time.Millisecond)
		}
		if err := a.PostSend([]SendWR{{ID: 1, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(1024, 64)}}}); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := <-woke; err != nil {
				t.Fatalf("%v: WaitNotify with a completion coming: %v", mode, err)
			}
		}
		cancel()
		// Both completions are there to poll.
		got := 0
		for deadline := time.Now().Add(20 * time.Second); got < 2 && time.Now().Before(deadline); {
			n, err := cq.Poll(wcs)
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
		if got != 2 {
			t.Fatalf("%v: %d completions after the event, want 2", mode, got)
		}
	}
}

// A WaitNotify that finds its CQ armed and then gets the turn to read the
// channel returns at once if another read the CQ's event in between: with
// the CQ disarmed no event would end a read of its own. (Under load this
// was an rsocket Read or Write asleep for good.) The other reader comes in
// through testHookTurn, at that point of the first look.
func TestCQWaitNotifyTurnAfterEvent(t *testing.T) {
	e := newVerbsEnv(t)
	ch, cq, a, b, mr := e.notifyRig()
	bg := context.Background()
	t.Cleanup(func() { testHookTurn = nil })
	for _, mode := range waitModes {
		if err := ch.SetWaitMode(mode); err != nil {
			t.Fatal(err)
		}
		if err := cq.ReqNotify(false); err != nil {
			t.Fatal(err)
		}
		sendOne(t, a, b, mr)
		ctx, cancel := context.WithTimeout(bg, 20*time.Second)
		var other error
		first := true
		testHookTurn = func() {
			if first {
				first = false
				ch.reader <- struct{}{}
				var got *CQ
				if got, other = ch.read(ctx); other == nil && got != cq {
					other = fmt.Errorf("read the event of %p, want the CQ's %p", got, cq)
				}
				<-ch.reader
			}
		}
		err := cq.WaitNotify(ctx)
		cancel()
		testHookTurn = nil
		if other != nil {
			t.Fatalf("%v: the other read: %v", mode, other)
		}
		if err != nil {
			t.Fatalf("%v: WaitNotify after another read its CQ's event: %v, want nil at once", mode, err)
		}
		if n := pollCount(t, cq, 2); n != 2 {
			t.Fatalf("%v: %d completions, want 2", mode, n)
		}
	}
}

// WaitNotifySince returns at once when the CQ's event was read and the CQ
// armed again by another since the caller took its NotifySeq, where
// WaitNotify, which cannot tell, waits for the next event: the other's
// poll may have taken what the caller waits for (an rsocket Read and Write
// of one connection slept for good that way).
func TestCQWaitNotifySince(t *testing.T) {
	e := newVerbsEnv(t)
	ch, cq, a, b, mr := e.notifyRig()
	bg := context.Background()
	for _, mode := range waitModes {
		if err := ch.SetWaitMode(mode); err != nil {
			t.Fatal(err)
		}
		seq := cq.NotifySeq()
		if err := cq.ReqNotify(false); err != nil {
			t.Fatal(err)
		}
		sendOne(t, a, b, mr)
		// The other goroutine: reads the event, polls, arms again.
		ctx, cancel := context.WithTimeout(bg, 20*time.Second)
		if got, err := ch.Wait(ctx); err != nil || got != cq {
			t.Fatalf("%v: Wait: %v, %v; want the CQ", mode, got, err)
		}
		if n := pollCount(t, cq, 2); n != 2 {
			t.Fatalf("%v: %d completions, want 2", mode, n)
		}
		if err := cq.ReqNotify(false); err != nil {
			t.Fatal(err)
		}
		if got := cq.NotifySeq(); got != seq+1 {
			t.Errorf("%v: NotifySeq %d after one event, want %d", mode, got, seq+1)
		}
		if err := cq.WaitNotifySince(ctx, seq); err != nil {
			t.Fatalf("%v: WaitNotifySince after another read the event: %v, want nil at once", mode, err)
		}
		cancel()
		// WaitNotify cannot tell: armed, nothing coming, it waits.
		ctx, cancel = context.WithTimeout(bg, 50*time.Millisecond)
		err := cq.WaitNotify(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%v: WaitNotify on an armed, idle CQ: %v, want deadline exceeded", mode, err)
		}
		// And WaitNotifySince with the count of now waits as well.
		ctx, cancel = context.WithTimeout(bg, 50*time.Millisecond)
		err = cq.WaitNotifySince(ctx, cq.NotifySeq())
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%v: WaitNotifySince with the current count on an armed, idle CQ: %v, want deadline exceeded", mode, err)
		}
	}
}

// notifyRig returns the set-up of the WaitNotify tests: a CQ with a
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

// pollCount polls cq until want completions came or 20 s passed, and
// returns how many came.
func pollCount(t *testing.T, cq *CQ, want int) int {
	t.Helper()
	wcs := make([]WC, 4)
	got := 0
	for deadline := time.Now().Add(20 * time.Second); got < want && time.Now().Before(deadline); {
		n, err := cq.Poll(wcs)
		if err != nil {
			t.Fatal(err)
		}
		got += n
	}
	return got
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
