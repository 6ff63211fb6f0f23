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
// exchange (user and system, start-up included, from the rusage of the
// client's exit: no perf needed), and their ratios. Under the
// lab's emulated CPUs only such same-guest ratios mean anything
// (docs/testing.md §5). One call does the whole comparison, whatever b.N is.
func BenchmarkVersusRdmaCore(b *testing.B) {
	const iters, rounds = 2000, 3
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
	// usec runs one server and one client and returns the client's
	// usec/iter and its CPU time per exchange in µs.
	usec := func(ours bool, size int, events bool) (float64, float64) {
		port++
		args := []string{"-d", dev, "-g", gid, "-p", strconv.Itoa(port), "-s", strconv.Itoa(size), "-n", strconv.Itoa(iters)}
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
		if o.iters != iters || o.usec <= 0 {
			b.Fatalf("%v printed:\n%s", cli.Args, out)
		}
		cpu := cli.ProcessState.UserTime() + cli.ProcessState.SystemTime()
		return o.usec, float64(cpu.Microseconds()) / iters
	}

	type row struct {
		mode       string
		size       int
		c, g       float64 // usec/iter
		cCPU, gCPU float64 // the client's CPU µs per exchange
	}
	var rows []row
	for _, events := range []bool{false, true} {
		for _, size := range []int{64, 4096} {
			var cs, gs, ccpu, gcpu []float64
			for range rounds {
				u, cpu := usec(false, size, events)
				cs, ccpu = append(cs, u), append(ccpu, cpu)
				u, cpu = usec(true, size, events)
				gs, gcpu = append(gs, u), append(gcpu, cpu)
			}
			r := row{mode: "poll", size: size, c: median(cs), g: median(gs), cCPU: median(ccpu), gCPU: median(gcpu)}
			if events {
				r.mode = "events"
			}
			rows = append(rows, r)
			b.ReportMetric(r.g/r.c, fmt.Sprintf("%s-%dB-ratio", r.mode, size))
			b.ReportMetric(r.gCPU/r.cCPU, fmt.Sprintf("%s-%dB-cpu-ratio", r.mode, size))
		}
	}
	fmt.Printf("\nrdma-pingpong vs ibv_rc_pingpong, rc on %s, %d exchanges, median of %d interleaved rounds (client usec/iter; client CPU µs per exchange, start-up included)\n", dev, iters, rounds)
	fmt.Printf("%-7s %6s %12s %12s %7s %9s %9s %7s\n", "mode", "size", "C", "Go", "Go/C", "C cpu", "Go cpu", "cpu G/C")
	for _, r := range rows {
		fmt.Printf("%-7s %6d %12.2f %12.2f %7.2f %9.1f %9.1f %7.2f\n", r.mode, r.size, r.c, r.g, r.g/r.c, r.cCPU, r.gCPU, r.gCPU/r.cCPU)
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
