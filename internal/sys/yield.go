package sys

import _ "unsafe" // for go:linkname

// Yield lets the goroutines queued on the caller's P run, then resumes the
// caller, normally on the same thread: a reschedule, which is what Go's sysmon looks
// for before it preempts a goroutine (runtime/proc.go retake: 10 ms
// without one, forcePreemptNS). runtime.Gosched does the same through the
// global run queue and wakes an idle thread on the way (goschedImpl calls
// wakep when a P is idle); after a blocking system call that costs a futex
// wake-up, and the woken thread often takes the goroutine while the old one
// goes to sleep: two futex calls and a thread switch per yield
// (docs/architecture.md §3).
//
// Yield is runtime.goyield, which the runtime keeps for packages that link
// to it (its comment there; go.dev/issue/67401): the current goroutine goes
// to the back of its P's run queue and the P schedules at once.
func Yield() { goyield() }

//go:linkname goyield runtime.goyield
func goyield()
