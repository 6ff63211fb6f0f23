package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/testutil"
)

// BenchmarkVersusRdmaCore runs ibv_rc_pingpong against itself and this
// program (as a process of its own) against itself on the lab's rxe0, RC,
// 2000 exchanges, polling and with completion events (-e), at 64 B and
// 4 KiB. The C and Go runs alternate (C Go C Go ...), three rounds each; it
// prints the medians of the client's usec/iter and of its CPU time per
// exchange (user and system, from the rusage of the client's exit: no perf
// needed), and their ratios. The CPU time is given twice: per exchange of
// the whole run, start-up included, and per exchange beyond a first 200
// (the difference between the run of 2000 and one of 200 in the same
// round, over 1800), where start-up, which is much of a run, cancels out.
// Under the lab's emulated CPUs only such same-guest ratios mean anything
// (docs/testing.md §5). One call does the whole comparison, whatever b.N is.
func BenchmarkVersusRdmaCore(b *testing.B) {
	const iters, short, rounds = 2000, 200, 3
	dev := testutil.LoopbackDevice(b)
	gid := strconv.Itoa(loopbackGIDIndex(b, dev))
	tool, err := exec.LookPath("ibv_rc_pingpong")
	if err != nil {
		b.Fatalf("ibv_rc_pingpong (rdma-core's ibverbs-utils) is needed: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	port := 19400
	// run runs one server and one client of n exchanges and returns the
	// client's usec/iter and its CPU time in µs.
	run := func(ours bool, size, n int, events bool) (float64, float64) {
		port++
		args := []string{"-d", dev, "-g", gid, "-p", strconv.Itoa(port), "-s", strconv.Itoa(size), "-n", strconv.Itoa(n)}
		if events {
			args = append(args, "-e")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := func(args ...string) *exec.Cmd {
			c := exec.CommandContext(ctx, tool, args...)
			if ours {
				c = exec.CommandContext(ctx, self, append([]string{"rc"}, args...)...)
				c.Env = append(os.Environ(), asChildEnv+"=1")
			}
			c.WaitDelay = 10 * time.Second
			return c
		}
		srv := cmd(args...)
		var srvOut testutil.SyncBuffer
		srv.Stdout, srv.Stderr = &srvOut, &srvOut
		if err := srv.Start(); err != nil {
			b.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- srv.Wait() }()
		if err := testutil.WaitListening(ctx, port, false, exited); err != nil {
			b.Fatalf("server %v: %v\n%s", srv.Args, err, &srvOut)
		}
		cli := cmd(append(args, "127.0.0.1")...)
		out, err := cli.CombinedOutput()
		if serr := <-exited; err != nil || serr != nil {
			b.Fatalf("%v: %v, server: %v\nclient output:\n%s\nserver output:\n%s", cli.Args, err, serr, out, &srvOut)
		}
		o := parseOutput(b, "client", string(out))
		if o.iters != n || o.usec <= 0 {
			b.Fatalf("%v printed:\n%s", cli.Args, out)
		}
		cpu := cli.ProcessState.UserTime() + cli.ProcessState.SystemTime()
		return o.usec, float64(cpu.Microseconds())
	}
	// usec returns run's usec/iter for a run of iters exchanges, its CPU
	// time per exchange, and the CPU time per exchange beyond the first
	// short ones (a run of short exchanges subtracted).
	usec := func(ours bool, size int, events bool) (u, cpu, marginal float64) {
		u, total := run(ours, size, iters, events)
		_, first := run(ours, size, short, events)
		return u, total / iters, (total - first) / (iters - short)
	}

	type row struct {
		mode       string
		size       int
		c, g       float64 // usec/iter
		cCPU, gCPU float64 // the client's CPU µs per exchange
		cMar, gMar float64 // the same beyond the first short exchanges
	}
	var rows []row
	for _, events := range []bool{false, true} {
		for _, size := range []int{64, 4096} {
			var cs, gs, ccpu, gcpu, cmar, gmar []float64
			for range rounds {
				u, cpu, mar := usec(false, size, events)
				cs, ccpu, cmar = append(cs, u), append(ccpu, cpu), append(cmar, mar)
				u, cpu, mar = usec(true, size, events)
				gs, gcpu, gmar = append(gs, u), append(gcpu, cpu), append(gmar, mar)
			}
			r := row{mode: "poll", size: size, c: median(cs), g: median(gs), cCPU: median(ccpu), gCPU: median(gcpu), cMar: median(cmar), gMar: median(gmar)}
			if events {
				r.mode = "events"
			}
			rows = append(rows, r)
			b.ReportMetric(r.g/r.c, fmt.Sprintf("%s-%dB-ratio", r.mode, size))
			b.ReportMetric(r.gCPU/r.cCPU, fmt.Sprintf("%s-%dB-cpu-ratio", r.mode, size))
			// Start-up varies from process to process: a difference of
			// two runs can come out at or below zero on a noisy guest.
			if r.gMar > 0 && r.cMar > 0 {
				b.ReportMetric(r.gMar/r.cMar, fmt.Sprintf("%s-%dB-cpu-after-%d-ratio", r.mode, size, short))
			}
		}
	}
	fmt.Printf("\nrdma-pingpong vs ibv_rc_pingpong, rc on %s, %d exchanges, median of %d interleaved rounds (client usec/iter; client CPU µs per exchange, start-up included, and per exchange after the first %d)\n", dev, iters, rounds, short)
	fmt.Printf("%-7s %6s %12s %12s %7s %9s %9s %7s %9s %9s %7s\n", "mode", "size", "C", "Go", "Go/C", "C cpu", "Go cpu", "cpu G/C", "C after", "Go after", "G/C")
	for _, r := range rows {
		fmt.Printf("%-7s %6d %12.2f %12.2f %7.2f %9.1f %9.1f %7.2f %9.1f %9.1f %7.2f\n", r.mode, r.size, r.c, r.g, r.g/r.c, r.cCPU, r.gCPU, r.gCPU/r.cCPU, r.cMar, r.gMar, r.gMar/r.cMar)
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
