package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"
)

// The table of perftest's output (perftest_parameters.h @ v4.5-0.17, whose
// binaries print "MB/sec" where later versions print "MiB/sec"; the unit
// is 2^20 bytes in both).
const (
	resultLine   = "---------------------------------------------------------------------------------------"
	resultFmt    = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]"
	resultFmtG   = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
	resultFmtLat = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] "
	resultFmtDur = " #bytes        #iterations       t_avg[usec]    tps average"
	// latMeasureTail is how many of the worst samples perftest drops
	// (LAT_MEASURE_TAIL).
	latMeasureTail = 2
)

// clock converts time-stamp counter ticks to time: the ratio is measured
// against the wall clock over the run, from its first to its last sample.
type clock struct {
	t0 time.Time
	c0 int64
	// perUsec is ticks per microsecond (perftest: cpu_mhz).
	perUsec float64
}

func startClock() clock { return clock{t0: time.Now(), c0: cycles()} }

// stop sets the rate from the time since start.
func (c *clock) stop() {
	dt := time.Since(c.t0)
	dc := cycles() - c.c0
	if dt <= 0 || dc <= 0 {
		c.perUsec = 1000 // cycles() counts nanoseconds where there is no TSC
		return
	}
	c.perUsec = float64(dc) / (float64(dt.Nanoseconds()) / 1000)
}

// bwResult is one line of a bandwidth table.
type bwResult struct {
	size    int
	iters   int
	peak    float64 // MB/s or Gb/s
	avg     float64
	msgRate float64 // Mpps
}

// bwStats computes perftest's print_report_bw from the post and
// completion times of each work request: the average from the first post
// to the last completion, the peak as the best rate over spans that end on
// a signaled request.
func bwStats(size, cqMod int, posted, completed []int64, perUsec float64, gbits bool) bwResult {
	n := len(posted)
	r := bwResult{size: size, iters: n}
	if n == 0 {
		return r
	}
	cyclesPerSec := perUsec * 1e6
	format := float64(0x100000)
	if gbits {
		format = 125000000
	}
	total := float64(completed[n-1] - posted[0])
	if total <= 0 {
		total = 1
	}
	r.avg = float64(size) * float64(n) * cyclesPerSec / (total * format)
	r.msgRate = float64(n) * cyclesPerSec / (total * 1e6)
	// Peak: perftest's loop over i and the signaled j >= i, in cycles per
	// message; completed[j] is known only for signaled requests.
	opt := completed[n-1] - posted[0]
	if n <= 20000 { // the loop is quadratic; perftest's too, but C is patient
		for i := 0; i < n; i++ {
			for j := roundUp(i+1, cqMod) - 1; j < n; j += cqMod {
				if t := (completed[j] - posted[i]) / int64(j-i+1); t < opt {
					opt = t
				}
			}
			if n%cqMod != 0 {
				j := n - 1
				if t := (completed[j] - posted[i]) / int64(j-i+1); t < opt {
					opt = t
				}
			}
		}
	}
	if opt > 0 {
		r.peak = float64(size) * cyclesPerSec / (float64(opt) * format)
	}
	return r
}

func roundUp(x, m int) int { return (x + m - 1) / m * m }

// print writes the line as perftest's REPORT_FMT.
func (r bwResult) print(w io.Writer) {
	fmt.Fprintf(w, " %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f\n", r.size, r.iters, r.peak, r.avg, r.msgRate)
}

// latResult is one line of a latency table, in microseconds.
type latResult struct {
	size                  int
	iters                 int
	min, max, typical     float64
	avg, stdev, p99, p999 float64
}

// latStats computes perftest's print_report_lat from the post times of the
// iterations: the deltas between consecutive posts, sorted, the two worst
// dropped; typical is the median; the figures are divided by 2 (RTT/2) for
// send and write and not for read and atomics. "max" is delta[n], the
// better of the two dropped samples, which is what perftest prints.
func latStats(size int, posted []int64, perUsec float64, rttFactor int) latResult {
	r := latResult{size: size, iters: len(posted)}
	if len(posted) < latMeasureTail+2 {
		return r
	}
	delta := make([]int64, len(posted)-1)
	for i := range delta {
		delta[i] = posted[i+1] - posted[i]
	}
	slices.Sort(delta)
	n := len(delta) - latMeasureTail
	q := perUsec * float64(rttFactor)
	us := func(c int64) float64 { return float64(c) / q }
	var median int64
	if (n-1)%2 != 0 { // perftest get_median
		median = (delta[n/2] + delta[n/2-1]) / 2
	} else {
		median = delta[n/2]
	}
	var sum float64
	for _, d := range delta[:n] {
		sum += us(d)
	}
	r.avg = sum / float64(n)
	var v float64
	for _, d := range delta[:n] {
		v += (r.avg - us(d)) * (r.avg - us(d))
	}
	r.stdev = math.Sqrt(v / float64(n))
	r.min = us(delta[0])
	r.max = us(delta[n])
	r.typical = us(median)
	r.p99 = us(delta[int(math.Ceil(float64(n)*0.99))])
	r.p999 = us(delta[int(math.Ceil(float64(n)*0.999))])
	return r
}

// print writes the line as perftest's REPORT_FMT_LAT.
func (r latResult) print(w io.Writer) {
	fmt.Fprintf(w, " %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n",
		r.size, r.iters, r.min, r.max, r.typical, r.avg, r.stdev, r.p99, r.p999)
}

// printLatDuration writes a duration-mode latency line (REPORT_FMT_LAT_DUR):
// the average over the sampled window and the transactions per second.
func printLatDuration(w io.Writer, size, iters int, window time.Duration, rttFactor int) {
	var lat, tps float64
	if iters > 0 && window > 0 {
		us := float64(window.Nanoseconds()) / 1000
		lat = us / float64(rttFactor) / float64(iters)
		tps = float64(iters) / window.Seconds()
	}
	fmt.Fprintf(w, " %-7d       %d            %-7.2f        %-7.2f\n", size, iters, lat, tps)
}
