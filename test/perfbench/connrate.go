package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goverbs/rdma/internal/testutil"
	"github.com/goverbs/rdma/rdmacm"
)

// connrateCmd measures connections per second in the lab: a server
// accepting from 16 concurrent dialers, each setting up and tearing down
// one connection after another. The servers are ours (rdmacm.Listen and
// Accept, a goroutine per connection until the client disconnects) and
// librdmacm's (test/perfbench/c/cm_rate.c: one thread taking the events
// of one channel); the dialers ours (rdmacm.Dial and Conn.Close in 16
// goroutines) and librdmacm's (cm_rate -s: 16 threads of rdma_create_ep,
// rdma_connect, rdma_disconnect, rdma_destroy_ep). Every pairing runs,
// interleaved, server pinned to CPU 0 and dialers to CPU 1, on the first
// veth end's address; the table has the medians.
func connrateCmd(args []string) error {
	var f struct {
		cm, out         string
		rounds, dialers int
		seconds         int
	}
	fs := flag.NewFlagSet("connrate", flag.ContinueOnError)
	fs.StringVar(&f.cm, "cm-rate", "", "path of test/perfbench/c/cm_rate built")
	fs.StringVar(&f.out, "out", "", "Markdown rows to write")
	fs.IntVar(&f.rounds, "rounds", 3, "rounds of every pairing")
	fs.IntVar(&f.dialers, "dialers", 16, "concurrent dialers")
	fs.IntVar(&f.seconds, "t", 8, "seconds per run")
	if err := fs.Parse(args); err != nil || f.cm == "" || f.out == "" {
		return fmt.Errorf("usage: perfbench connrate -cm-rate PATH -out FILE [-rounds N] [-dialers N] [-t SECONDS] (%v)", err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	_, addr, err := firstVethEnd()
	if err != nil {
		return err
	}
	kernel, _ := exec.Command("uname", "-r").Output()
	type pairing struct{ server, dialer string }
	pairings := []pairing{{"C", "C"}, {"Go", "Go"}, {"C", "Go"}, {"Go", "C"}}
	cmd := func(who string, args ...string) []string {
		if who == "C" {
			return append([]string{f.cm}, args...)
		}
		return append([]string{self, "connrate-run"}, args...)
	}
	rates := map[pairing][]float64{}
	var failed []string
	port := 8100
	for r := 0; r < f.rounds; r++ {
		for _, p := range pairings {
			port++
			ps := strconv.Itoa(port)
			rate, err := connratePair(port, cmd(p.server, "-b", addr, "-p", ps),
				cmd(p.dialer, "-s", addr, "-p", ps, "-n", strconv.Itoa(f.dialers), "-t", strconv.Itoa(f.seconds)))
			if err != nil {
				failed = append(failed, fmt.Sprintf("%s server, %s dialers: %v", p.server, p.dialer, err))
				fmt.Fprintln(os.Stderr, failed[len(failed)-1])
				continue
			}
			fmt.Fprintf(os.Stderr, "%s server, %s dialers: %.1f connections/s\n", p.server, p.dialer, rate)
			rates[p] = append(rates[p], rate)
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "Kernel %s in one lab guest (QEMU TCG, 2 vCPUs), %s; %d dialers, %d s per run, %d interleaved rounds, medians; server on CPU 0, dialers on CPU 1, on the first veth end's address.\n\n",
		strings.TrimSpace(string(kernel)), time.Now().UTC().Format("2006-01-02 15:04 MST"), f.dialers, f.seconds, f.rounds)
	fmt.Fprintln(&b, "| server | dialers | connections/s | against C/C |")
	fmt.Fprintln(&b, "|---|---|---:|---:|")
	base := 0.0
	if v := rates[pairings[0]]; len(v) > 0 {
		base = median(v)
	}
	names := map[string]string{"C": "librdmacm (cm_rate.c)", "Go": "ours (rdmacm)"}
	for _, p := range pairings {
		v := rates[p]
		if len(v) == 0 {
			fmt.Fprintf(&b, "| %s | %s | failed | |\n", names[p.server], names[p.dialer])
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %.1f | %s |\n", names[p.server], names[p.dialer], median(v), ratio(median(v), base))
	}
	if len(failed) > 0 {
		fmt.Fprintf(&b, "\nRuns that failed (left out of the medians):\n\n")
		for _, f := range failed {
			fmt.Fprintf(&b, "- %s\n", f)
		}
	}
	return os.WriteFile(f.out, b.Bytes(), 0o644)
}

// connratePair runs one server and one set of dialers and returns the
// dialers' connections per second.
func connratePair(port int, server, dialer []string) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := exec.CommandContext(ctx, "taskset", append([]string{"-c", "0"}, server...)...)
	var serr bytes.Buffer
	srv.Stderr = &serr
	if err := srv.Start(); err != nil {
		return 0, err
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	defer func() {
		srv.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			srv.Process.Kill()
			<-exited
		}
	}()
	if err := testutil.WaitListening(ctx, port, true, exited); err != nil {
		return 0, fmt.Errorf("%v: %s", err, tail(serr.Bytes()))
	}
	out, err := exec.CommandContext(ctx, "taskset", append([]string{"-c", "1"}, dialer...)...).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("dialers: %v: %s%s", err, tail(out), tail(serr.Bytes()))
	}
	var n, fails int64
	var secs float64
	for _, l := range strings.Split(string(out), "\n") {
		if _, err := fmt.Sscanf(l, "connections %d seconds %f failures %d", &n, &secs, &fails); err == nil {
			break
		}
	}
	switch {
	case secs == 0:
		return 0, fmt.Errorf("no result line: %s", tail(out))
	case fails > 0:
		return 0, fmt.Errorf("%d failed connections (of %d): %s", fails, n+fails, tail(serr.Bytes()))
	}
	return float64(n) / secs, nil
}

// connrateRun is the Go side of cm_rate, with its flags and output:
// -b ADDR serves with rdmacm.Listen until SIGTERM; -s ADDR dials.
func connrateRun(args []string) error {
	var bind, server string
	port, dialers, seconds := 7471, 16, 10
	fs := flag.NewFlagSet("connrate-run", flag.ContinueOnError)
	fs.StringVar(&bind, "b", "", "serve on this address")
	fs.StringVar(&server, "s", "", "dial this address")
	fs.IntVar(&port, "p", port, "port")
	fs.IntVar(&dialers, "n", dialers, "concurrent dialers")
	fs.IntVar(&seconds, "t", seconds, "seconds")
	profile := fs.String("cpuprofile", "", "write a CPU profile of this side here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	// The same QP as cm_rate.c's: one work request of one SGE each way.
	cfg := &rdmacm.Config{SendDepth: 1, RecvDepth: 1}
	if server != "" {
		return connrateDial(server+":"+strconv.Itoa(port), cfg, dialers, time.Duration(seconds)*time.Second)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	l, err := rdmacm.Listen(ctx, bind+":"+strconv.Itoa(port), cfg)
	if err != nil {
		return err
	}
	defer l.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := l.Accept(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			select {
			case <-c.Done():
			case <-ctx.Done():
			}
		}()
	}
}

func connrateDial(addr string, cfg *rdmacm.Config, dialers int, d time.Duration) error {
	ctx := context.Background()
	var n, fails atomic.Int64
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for range dialers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				c, err := rdmacm.Dial(ctx, addr, cfg)
				if err != nil {
					fails.Add(1)
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					continue
				}
				n.Add(1)
				c.Close()
			}
		}()
	}
	wg.Wait()
	fmt.Printf("connections %d seconds %.3f failures %d\n", n.Load(), time.Since(start).Seconds(), fails.Load())
	if firstErr != nil {
		return errors.Join(errors.New("a dial failed"), firstErr)
	}
	return nil
}
