package sys

import _ "unsafe" // for go:linkname

// Yield lets the goroutines on the caller's P's local run queue run, then
// resumes the caller: a reschedule, which is what Go's sysmon looks for
// before it preempts a goroutine (runtime/proc.go retake: 10 ms without
// one, forcePreemptNS). It is runtime.goyield, which the runtime keeps for
// packages that link to it (its comment there; go.dev/issue/67401): the
// goroutine goes to the back of its P's local run queue and that P
// schedules at once, so it normally resumes on the same thread.
//
// runtime.Gosched puts the goroutine on the global run queue instead and,
// when a P is idle and no thread is spinning, wakes an idle thread
// (goschedImpl calls wakep). For a goroutine that has just come back from a
// blocking system call that thread is asleep in a futex: a futex wake-up,
// its futex sleep again, and often a move of the goroutine to it, per
// yield (docs/architecture.md §3).
//
// What Yield does not do:
//   - It serves the global run queue only as any schedule does, on every
//     61st (findRunnable): goroutines waiting there (a signal's receiver, a
//     goroutine back from a system call that found no P) wait behind up to
//     60 Yields when every P is busy. A loop that yields for long should
//     call runtime.Gosched now and then.
//   - A goroutine locked to its thread (runtime.LockOSThread) cannot be
//     scheduled on its P's thread by itself: its thread hands the P to
//     another and takes it back, two wake-ups, as with runtime.Gosched.
//   - The execution tracer shows each Yield as a preemption (GoPreempt),
//     not as a GoSched.
func Yield() { goyield() }

//go:linkname goyield runtime.goyield
func goyield()
