package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// cmtimeCmd compares our cmd/cmtime with rdma-core's cmtime in the lab:
// for each connection count, rounds of a C pair (C server, C client) and a
// Go pair, interleaved, on the first veth end's address; the table has the
// medians of each step's µs per connection, and the whole set-up (create
// id to connect).
func cmtimeCmd(args []string) error {
	var f struct {
		bin, out, counts string
		rounds           int
	}
	fs := flag.NewFlagSet("cmtime", flag.ContinueOnError)
	fs.StringVar(&f.bin, "cmtime", "", "path of our cmtime binary")
	fs.StringVar(&f.out, "out", "", "Markdown section to write")
	fs.IntVar(&f.rounds, "rounds", 3, "C/Go pairs per connection count")
	fs.StringVar(&f.counts, "n", "100,1000", "connection counts")
	if err := fs.Parse(args); err != nil || f.bin == "" || f.out == "" {
		return fmt.Errorf("usage: perfbench cmtime -cmtime PATH -out FILE [-rounds N] [-n COUNTS] (%v)", err)
	}
	_, addr, err := firstVethEnd()
	if err != nil {
		return err
	}
	kernel, _ := exec.Command("uname", "-r").Output()
	start := time.Now()
	var b bytes.Buffer
	fmt.Fprintf(&b, "Kernel %s in one lab guest (QEMU TCG, 2 vCPUs), %s; %d interleaved C/Go rounds per count, took %%s.\n\n",
		strings.TrimSpace(string(kernel)), time.Now().UTC().Format("2006-01-02 15:04 MST"), f.rounds)
	fmt.Fprintln(&b, "| connections | step | C µs/conn | Go µs/conn | Go/C |")
	fmt.Fprintln(&b, "|---:|---|---:|---:|---:|")
	var failed []string
	port := 7900
	for _, ns := range strings.Split(f.counts, ",") {
		n, err := strconv.Atoi(ns)
		if err != nil {
			return fmt.Errorf("-n %q: %w", f.counts, err)
		}
		runs := map[bool][]map[string]float64{}
		for r := 0; r < f.rounds; r++ {
			for _, ours := range []bool{false, true} {
				port++
				tool := "cmtime"
				if ours {
					tool = f.bin
				}
				steps, err := cmtimePair(tool, addr, port, n)
				if err != nil {
					failed = append(failed, fmt.Sprintf("%s, %d connections: %v", tool, n, err))
					fmt.Fprintln(os.Stderr, failed[len(failed)-1])
					continue
				}
				runs[ours] = append(runs[ours], steps)
			}
		}
		for _, s := range append(cmtimeSteps, "set-up") {
			c, g := cmtimeMedian(runs[false], s), cmtimeMedian(runs[true], s)
			l := fmt.Sprintf("| %d | %s | %s | %s | %s |", n, s, num(c), num(g), ratio(g, c))
			fmt.Fprintln(&b, l)
			fmt.Fprintln(os.Stderr, l)
		}
	}
	fmt.Fprintln(&b, "\nµs per connection: the whole step's time divided by the connections (cmtime's last column); set-up is create id through connect. Go/C at or below 1.00 is as fast as librdmacm.")
	if len(failed) > 0 {
		fmt.Fprintf(&b, "\nRuns that failed (left out of the medians):\n\n")
		for _, f := range failed {
			fmt.Fprintf(&b, "- %s\n", f)
		}
	}
	sec := strings.Replace(b.String(), "%s", time.Since(start).Round(time.Second).String(), 1)
	return os.WriteFile(f.out, []byte(sec), 0o644)
}

// The steps of cmtime's table without -b.
var cmtimeSteps = []string{"create id", "resolve addr", "resolve route", "create qp", "connect", "disconnect", "destroy"}

// cmtimePair runs one server and one client of the same tool and returns
// the client's µs per connection by step.
func cmtimePair(tool, addr string, port, n int) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := strconv.Itoa(port)
	srv := exec.CommandContext(ctx, "taskset", "-c", "0", tool, "-b", addr, "-p", p)
	var serr bytes.Buffer
	srv.Stderr = &serr
	if err := srv.Start(); err != nil {
		return nil, err
	}
	defer func() {
		srv.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { srv.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			srv.Process.Kill()
			<-done
		}
	}()
	time.Sleep(time.Second) // cmtime's client does not wait for a late server
	out, err := exec.CommandContext(ctx, "taskset", "-c", "1", tool, "-s", addr, "-p", p, "-c", strconv.Itoa(n)).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("client: %v: %s", err, tail(out))
	}
	if bytes.Contains(out, []byte("error")) || bytes.Contains(out, []byte("failure")) {
		return nil, fmt.Errorf("client reports failed connections: %s", tail(out))
	}
	return parseCmtime(out)
}

// parseCmtime reads the last column of cmtime's table and adds the set-up.
func parseCmtime(out []byte) (map[string]float64, error) {
	steps := map[string]float64{}
	for _, l := range strings.Split(string(out), "\n") {
		name, rest, ok := strings.Cut(l, ":")
		f := strings.Fields(rest)
		if !ok || len(f) != 4 {
			continue
		}
		v, err := strconv.ParseFloat(f[3], 64)
		if err != nil {
			continue
		}
		steps[strings.TrimSpace(name)] = v
	}
	for i, s := range cmtimeSteps {
		v, ok := steps[s]
		if !ok {
			return nil, fmt.Errorf("no %q row in the table", s)
		}
		if i <= 4 { // create id .. connect
			steps["set-up"] += v
		}
	}
	return steps, nil
}

func cmtimeMedian(runs []map[string]float64, step string) float64 {
	var v []float64
	for _, r := range runs {
		v = append(v, r[step])
	}
	if len(v) == 0 {
		return 0
	}
	return median(v)
}
