package main

// cycles returns the time-stamp counter (RDTSC). Its rate is calibrated
// against the wall clock over each run (see clock).
func cycles() int64
