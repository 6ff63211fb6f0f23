package sys

import (
	"runtime"
	"testing"
)

// Yield runs what is queued on the P before it returns: with one P, a
// goroutine just started has run by then. (A timer that fires during the
// schedule may put its goroutine first and the started one behind the
// caller, so a few rounds may miss; a Yield that does not reschedule
// misses them all.)
func TestYieldRunsQueued(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const rounds = 100
	missed := 0
	for range rounds {
		ran := make(chan struct{})
		go close(ran)
		Yield()
		select {
		case <-ran:
		default:
			missed++
			<-ran
		}
	}
	if missed > rounds/10 {
		t.Fatalf("in %d of %d rounds the goroutine started before Yield had not run when it returned", missed, rounds)
	}
}
