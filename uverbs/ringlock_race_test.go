//go:build race

package uverbs

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/rdma/uverbs/internal/rxe"
)

// panicOf runs f and returns what it panicked with, as a string, or "".
func panicOf(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

// In race builds a SingleGoroutine queue reports a second goroutine that
// uses it while another is inside one of its calls: here the other holds
// the elided lock as Poll or PostRecv would, and the call of this test's
// goroutine must panic, naming the queue and the option. Once the other
// has left, the same call from this goroutine is fine: calls in turn keep
// the promise.
func TestSingleGoroutineOverlapReported(t *testing.T) {
	cq, _ := fakeCQ(t, true)
	qp, _ := fakeQP(t, true)
	rqBuf, _, _ := fakeRing(t, 6, 64)
	rq, err := rxe.NewRQ(rqBuf, 1)
	if err != nil {
		t.Fatal(err)
	}
	st := qp.drv.(*rxe.QPState)
	st.RQ, st.HasRQ = *rq, true
	wcs := make([]WC, 4)
	for _, c := range []struct {
		name string
		lock *ringLock
		call func()
	}{
		{"a fake CQ", &cq.mu, func() { cq.Poll(wcs) }},
		{"a fake QP", &qp.recvMu, func() { qp.PostRecv([]RecvWR{{ID: 1}}) }},
	} {
		inside, leave, left := make(chan struct{}), make(chan struct{}), make(chan struct{})
		go func() {
			c.lock.Lock()
			close(inside)
			<-leave
			c.lock.Unlock()
			close(left)
		}()
		<-inside
		msg := panicOf(c.call)
		close(leave)
		<-left
		if !strings.Contains(msg, c.name) || !strings.Contains(msg, "SingleGoroutine") {
			t.Errorf("%s used by two goroutines at once: panic %q, want one naming the queue and SingleGoroutine", c.name, msg)
		}
		if msg := panicOf(c.call); msg != "" {
			t.Errorf("%s used in turn: panic %q", c.name, msg)
		}
	}
}

// A race build reports two goroutines that use a SingleGoroutine queue
// with nothing of the caller's ordering their calls, even when the calls
// never overlap: the elided lock writes a plain word the race detector
// watches (ringLock.enterSingle). The misuse runs in a child process,
// since a reported race fails the test that has it.
func TestSingleGoroutineUnorderedReported(t *testing.T) {
	if os.Getenv("GOVERBS_SINGLE_MISUSE") == "1" {
		cq, produce := fakeCQ(t, true)
		produce()
		go func() { cq.Poll(make([]WC, 1)) }()
		// No synchronisation with the goroutine: only time passes, so
		// whichever poll comes second is unordered with the first.
		time.Sleep(100 * time.Millisecond)
		cq.Poll(make([]WC, 1))
		time.Sleep(100 * time.Millisecond)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSingleGoroutineUnorderedReported$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "GOVERBS_SINGLE_MISUSE=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !bytes.Contains(out, []byte("WARNING: DATA RACE")) || !bytes.Contains(out, []byte("enterSingle")) {
		t.Fatalf("two goroutines polled a SingleGoroutine CQ in turn without synchronisation; want a race report in enterSingle, got (%v):\n%s", err, out)
	}
	// The same in turn through a channel keeps the promise: no report.
	cq, produce := fakeCQ(t, true)
	produce()
	done := make(chan struct{})
	go func() { cq.Poll(make([]WC, 1)); close(done) }()
	<-done
	if _, err := cq.Poll(make([]WC, 1)); err != nil {
		t.Fatal(err)
	}
}
