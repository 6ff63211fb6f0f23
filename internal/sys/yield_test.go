package sys

import (
	"runtime"
	"testing"
)

// Yield runs what is queued on the P before it returns: with one P, a
// goroutine just started has run by then.
func TestYieldRunsQueued(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for i := range 100 {
		ran := make(chan struct{})
		go close(ran)
		Yield()
		select {
		case <-ran:
		default:
			t.Fatalf("round %d: the goroutine started before Yield had not run when it returned", i)
		}
	}
}
