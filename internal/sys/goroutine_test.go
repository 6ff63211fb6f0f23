package sys

import (
	"sync"
	"testing"
)

// Goroutine is the same for one goroutine all its life and differs between
// goroutines that run at the same time.
func TestGoroutine(t *testing.T) {
	if !GoroutineKnown {
		t.Skip("Goroutine does not tell goroutines apart on this architecture")
	}
	me := Goroutine()
	if me == 0 {
		t.Fatal("Goroutine returned 0")
	}
	const n = 8
	ids := make([]uintptr, n)
	var started, done sync.WaitGroup
	release := make(chan struct{})
	for i := range n {
		started.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ids[i] = Goroutine()
			started.Done()
			<-release // all alive at once
			for range 1000 {
				if Goroutine() != ids[i] {
					panic("Goroutine changed within one goroutine")
				}
			}
		}()
	}
	started.Wait()
	seen := map[uintptr]bool{me: true}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("two live goroutines share %#x", id)
		}
		seen[id] = true
	}
	close(release)
	done.Wait()
	if Goroutine() != me {
		t.Fatal("Goroutine changed within the test's goroutine")
	}
}

// RegisterMembarrier succeeds on the kernels the module supports (4.14 and
// later), and Membarrier then returns.
func TestMembarrier(t *testing.T) {
	if err := RegisterMembarrier(); err != nil {
		t.Fatal(err)
	}
	Membarrier()
}
