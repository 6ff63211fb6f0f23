package sys

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// traceID names one tracked resource; 0 means "not traced".
type traceID uint64

var (
	tracing   atomic.Bool
	traceMu   sync.Mutex
	nextTrace traceID
	live      = map[traceID]*traceRecord{}
)

type traceRecord struct {
	what      string
	stack     string
	collected bool
}

// EnableLeakTracing makes every FD, Mapping and EventFile created from now on
// remember the stack that created it, so Leaks can say where a leak came from.
func EnableLeakTracing() { tracing.Store(true) }

// track records the creating stack of a kind ("fd", "mmap", "event fd")
// of resource named what; the label is built only while tracing, so an
// untraced creation allocates nothing here.
func track(kind, what string) traceID {
	if !tracing.Load() {
		return 0
	}
	pcs := make([]uintptr, 32)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	var sb strings.Builder
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "runtime.") && !strings.HasPrefix(f.Function, "testing.") {
			fmt.Fprintf(&sb, "\t%s\n\t\t%s:%d\n", f.Function, f.File, f.Line)
		}
		if !more {
			break
		}
	}
	traceMu.Lock()
	defer traceMu.Unlock()
	nextTrace++
	live[nextTrace] = &traceRecord{what: kind + " " + what, stack: sb.String()}
	return nextTrace
}

func untrack(id traceID) {
	if id == 0 {
		return
	}
	traceMu.Lock()
	delete(live, id)
	traceMu.Unlock()
}

// markCollected notes that the GC safety net released a resource nobody closed.
// The record stays: dropping a resource without closing it is still a leak.
func markCollected(id traceID) {
	if id == 0 {
		return
	}
	traceMu.Lock()
	if r := live[id]; r != nil {
		r.collected = true
	}
	traceMu.Unlock()
}

// Leaks describes every traced resource that was never closed, one entry per
// resource with the stack that created it.
func Leaks() []string {
	traceMu.Lock()
	defer traceMu.Unlock()
	ids := make([]traceID, 0, len(live))
	for id := range live {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		r := live[id]
		note := "still open"
		if r.collected {
			note = "dropped without Close (released by the garbage collector)"
		}
		out = append(out, fmt.Sprintf("%s %s, created at:\n%s", r.what, note, r.stack))
	}
	return out
}

// Collected returns how many records of resources the garbage collector
// released (dropped without Close) are kept.
func Collected() int { return collected(false) }

// ForgetCollected drops the records of resources the garbage collector
// released (dropped without Close) and returns how many there were. Tests
// that drop objects on purpose to check the GC safety net call it so that
// the run's leak check stays meaningful for everything else.
func ForgetCollected() int { return collected(true) }

// collected counts the records of collected resources, and drops them if
// forget is set.
func collected(forget bool) int {
	traceMu.Lock()
	defer traceMu.Unlock()
	n := 0
	for id, r := range live {
		if r.collected {
			if forget {
				delete(live, id)
			}
			n++
		}
	}
	return n
}
