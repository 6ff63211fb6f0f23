// Command perfbench compares rdma-perf with C perftest side by side in the
// rxe lab, and writes the ratios into BENCHMARKS.md. `make bench` runs it.
//
//	perfbench run -rdma-perf PATH -out FILE   in the lab: run the matrix, write a Markdown section
//	perfbench cmtime -cmtime PATH -out FILE   in the lab: our cmtime against rdma-core's, per step
//	perfbench rstream -rstream PATH -out FILE in the lab: our rstream against rdma-core's,
//	                                          over rsocket and over TCP
//	perfbench scale -rdma-perf PATH -lat-many PATH -out FILE
//	                                          in the lab: write_bw and send_bw with 1, 8
//	                                          and 64 QPs (-q), ours against perftest's,
//	                                          and send_lat's round-robin ping-pong over
//	                                          1, 8 and 64 QPs against test/perfbench/c/lat_many.c
//	perfbench connrate -cm-rate PATH -out FILE
//	                                          in the lab: connections per second, 16 dialers
//	                                          against a server, ours and test/perfbench/c/cm_rate.c
//	perfbench nvmeof -nvmeof PATH -out FILE   in the lab: NVMe over RDMA, cmd/nvmeof perf
//	                                          against fio on the kernel's host, and our
//	                                          target against the kernel's, served to fio
//	perfbench write [-in FILE] [-host FILE] [-cmtime FILE] [-rstream FILE] [-scale FILE] [-connrate FILE] [-nvmeof FILE] BENCHMARKS.md
//	                                          on the host: put the sections (and the host
//	                                          benchmarks' output) between their markers
//
// The method is docs/testing.md §5: the same guest, the same
// devices, sizes, depths, signalling (the tools' defaults, identical in
// both), inline size (0: perftest does not enable it on rxe), the same
// pinning (server on CPU 0, client on CPU 1 with taskset), runs interleaved
// C, Go, C, Go for each cell, the client's figures compared: average
// bandwidth, typical (median) latency and p99.9. Without -R on rxe0 over lo
// (GID index 1), with -R on the first veth end, whose address makes the CM
// use that device at both ends (docs/testing.md §3: tests without the CM between
// the two veth devices hang). Only ratios mean anything under TCG.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: perfbench run|cmtime|connrate|rstream|scale|nvmeof|write ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runCmd(os.Args[2:])
	case "cmtime":
		err = cmtimeCmd(os.Args[2:])
	case "connrate":
		err = connrateCmd(os.Args[2:])
	case "connrate-run":
		err = connrateRun(os.Args[2:])
	case "rstream":
		err = rstreamCmd(os.Args[2:])
	case "scale":
		err = scaleCmd(os.Args[2:])
	case "nvmeof":
		err = nvmeofCmd(os.Args[2:])
	case "write":
		err = writeCmd(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "perfbench:", err)
		os.Exit(1)
	}
}

// cell is one line of the table: a test at a size in a mode.
type cell struct {
	test   string
	size   int
	cm     bool
	events bool
	qps    int // -q, when above 1
	n      int // -n, when set; else iters()
	// cprog is the C side's program when it is not perftest's ib_TEST
	// (it takes perftest's options of the cell).
	cprog string
}

func (c cell) mode() string {
	m := "lo"
	if c.cm {
		m = "-R veth"
	}
	if c.events {
		m += " -e"
	}
	return m
}

func (c cell) lat() bool { return strings.HasSuffix(c.test, "_lat") }

// iters keeps each run to about a second under TCG.
func (c cell) iters() int {
	if c.n > 0 {
		return c.n
	}
	// Latency takes enough samples that p99.9 is not the single worst.
	switch {
	case c.lat() && c.size >= 65536:
		return 500
	case c.lat() && c.size >= 4096:
		return 1000
	case c.lat():
		return 2000
	case c.size >= 65536:
		return 200
	case c.size >= 4096:
		return 1000
	}
	return 2000
}

var sizes = []int{64, 4096, 65536}

func matrix() []cell {
	var cells []cell
	add := func(cm, events bool, tests ...string) {
		for _, t := range tests {
			for _, s := range sizes {
				cells = append(cells, cell{test: t, size: s, cm: cm, events: events})
			}
		}
	}
	all := []string{"write_bw", "send_bw", "read_bw", "write_lat", "send_lat", "read_lat"}
	add(false, false, all...)
	// Events: perftest refuses them with WRITE.
	add(false, true, "send_bw", "read_bw", "send_lat", "read_lat")
	add(true, false, "write_bw", "send_bw", "read_bw", "send_lat", "read_lat")
	add(true, true, "send_bw", "send_lat")
	return cells
}

// result is what one client printed.
type result struct {
	bw      float64 // MB/s, average
	typical float64 // µs
	p99     float64 // µs
	p999    float64 // µs
}

func runCmd(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	bin := fs.String("rdma-perf", "", "path of the rdma-perf binary")
	out := fs.String("out", "", "Markdown section to write")
	rounds := fs.Int("rounds", 5, "C/Go pairs per cell (the table has their medians)")
	filter := fs.String("only", "", "run only cells whose \"test size mode\" contains this")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *bin == "" || *out == "" {
		return fmt.Errorf("-rdma-perf and -out are required")
	}
	lo := os.Getenv("GOVERBS_LAB_LO_DEV")
	vdev, vaddr, err := firstVethEnd()
	if err != nil || lo == "" {
		return fmt.Errorf("run inside the lab (GOVERBS_LAB_LO_DEV and GOVERBS_LAB_VETH are not set)")
	}
	kernel, _ := exec.Command("uname", "-r").Output()
	start := time.Now()
	port := 20000
	type row struct {
		c     cell
		cs, g []result
		errs  []string
	}
	var rows []row
	for _, c := range matrix() {
		if *filter != "" && !strings.Contains(fmt.Sprintf("%s %d %s", c.test, c.size, c.mode()), *filter) {
			continue
		}
		r := row{c: c}
		for i := 0; i < *rounds; i++ {
			for _, ours := range []bool{false, true} {
				port++
				res, err := runPair(c, ours, *bin, lo, vdev, vaddr, port)
				if err != nil {
					who := "C perftest"
					if ours {
						who = "rdma-perf"
					}
					r.errs = append(r.errs, who+": "+err.Error())
					fmt.Fprintf(os.Stderr, "%s %s %d ours=%v: %v\n", c.mode(), c.test, c.size, ours, err)
					continue
				}
				if ours {
					r.g = append(r.g, res)
				} else {
					r.cs = append(r.cs, res)
				}
			}
		}
		fmt.Fprintln(os.Stderr, line(c, r.cs, r.g))
		rows = append(rows, r)
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, "Kernel %s in one lab guest (QEMU TCG, 2 vCPUs), %s; %d interleaved C/Go rounds per line, took %s.\n\n",
		strings.TrimSpace(string(kernel)), time.Now().UTC().Format("2006-01-02 15:04 MST"), *rounds, time.Since(start).Round(time.Second))
	fmt.Fprintf(&b, "Settings, identical for both: the tools' defaults except -s and -n (TX depth 128 for bandwidth and 1 for latency, one signaled send in 100 up to 8 KiB and every send above, inline 0, MTU of the port, one QP); -n %d/%d/%d for bandwidth and %d/%d/%d for latency at 64 B/4 KiB/64 KiB; -F; server on CPU 0 and client on CPU 1 (taskset); `lo` is rxe0 on lo with -x 1, `-R veth` the CM to 10.77.0.1 on rxe1; `-e` completion events. Figures are the client's; each is the median of the rounds.\n\n",
		cell{size: 64}.iters(), cell{size: 4096}.iters(), cell{size: 65536}.iters(), cell{test: "x_lat", size: 64}.iters(), cell{test: "x_lat", size: 4096}.iters(), cell{test: "x_lat", size: 65536}.iters())
	fmt.Fprintln(&b, "| mode | test | size | C perftest | rdma-perf | ours/C | C p99.9 | ours p99.9 | p99.9 ours/C |")
	fmt.Fprintln(&b, "|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		fmt.Fprintln(&b, line(r.c, r.cs, r.g))
	}
	fmt.Fprintln(&b, "\nBandwidth in MB/s (2^20 bytes), where ours/C at or above 1.00 is as fast; latency typical (median) and p99.9 in µs, where ours/C at or below 1.00 is as fast.")
	var failed []string
	for _, r := range rows {
		for _, e := range r.errs {
			failed = append(failed, fmt.Sprintf("%s %s %d: %s", r.c.mode(), r.c.test, r.c.size, e))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(&b, "\nRuns that failed (left out of the medians):\n\n")
		for _, f := range failed {
			fmt.Fprintf(&b, "- %s\n", f)
		}
	}
	return os.WriteFile(*out, b.Bytes(), 0o644)
}

// firstVethEnd is the lab's first veth end: its rxe device and address
// (GOVERBS_LAB_VETH is "device:netdev:addr,device:netdev:addr").
func firstVethEnd() (dev, addr string, err error) {
	veth := strings.Split(os.Getenv("GOVERBS_LAB_VETH"), ",")
	f := strings.Split(veth[0], ":")
	if len(veth) != 2 || len(f) != 3 {
		return "", "", fmt.Errorf("run inside the lab (GOVERBS_LAB_VETH=%q)", os.Getenv("GOVERBS_LAB_VETH"))
	}
	return f[0], f[2], nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

func pick(rs []result, f func(result) float64) float64 {
	var v []float64
	for _, r := range rs {
		v = append(v, f(r))
	}
	return median(v)
}

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func num(v float64) string {
	if v == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", v)
}

func line(c cell, cs, g []result) string {
	size := fmt.Sprintf("%d B", c.size)
	if c.size >= 1024 {
		size = fmt.Sprintf("%d KiB", c.size/1024)
	}
	if !c.lat() {
		cb, gb := pick(cs, func(r result) float64 { return r.bw }), pick(g, func(r result) float64 { return r.bw })
		return fmt.Sprintf("| %s | %s | %s | %s | %s | %s | | | |", c.mode(), c.test, size, num(cb), num(gb), ratio(gb, cb))
	}
	ct, gt := pick(cs, func(r result) float64 { return r.typical }), pick(g, func(r result) float64 { return r.typical })
	cp, gp := pick(cs, func(r result) float64 { return r.p999 }), pick(g, func(r result) float64 { return r.p999 })
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s | %s |", c.mode(), c.test, size, num(ct), num(gt), ratio(gt, ct), num(cp), num(gp), ratio(gp, cp))
}

// runLimit ends a pair that hangs. The longest run takes a few seconds;
// the rest is for a slow host. perftest's ib_send_lat -e hangs on 6.12
// (64 B, 2000 iterations).
const runLimit = time.Minute

// runPair runs one server and one client of the same tool and parses the
// client's table.
func runPair(c cell, ours bool, bin, lo, vdev, vaddr string, port int) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), runLimit)
	defer cancel()
	args := []string{"-p", strconv.Itoa(port), "-s", strconv.Itoa(c.size), "-n", strconv.Itoa(c.iters()), "-F"}
	if c.qps > 1 {
		args = append(args, "-q", strconv.Itoa(c.qps))
	}
	host := "127.0.0.1"
	if c.cm {
		args = append(args, "-d", vdev, "-R")
		host = vaddr
	} else {
		args = append(args, "-d", lo, "-x", "1")
	}
	if c.events {
		args = append(args, "-e")
	}
	cmd := func(cpu string, extra ...string) *exec.Cmd {
		a := []string{"-c", cpu}
		switch {
		case ours:
			a = append(a, bin, c.test)
		case c.cprog != "":
			a = append(a, c.cprog)
			if c.test == "write_lat" {
				a = append(a, "-w") // lat_many's RDMA WRITE ping-pong
			}
		default:
			a = append(a, "ib_"+c.test)
		}
		a = append(a, args...)
		a = append(a, extra...)
		x := exec.CommandContext(ctx, "taskset", a...)
		x.WaitDelay = 5 * time.Second
		return x
	}
	srv := cmd("0")
	var srvOut bytes.Buffer
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		return result{}, err
	}
	defer func() {
		cancel()
		srv.Wait()
	}()
	if c.cm {
		time.Sleep(time.Second) // perftest's -R client does not retry a refused connection
	} else if err := waitListening(ctx, port); err != nil {
		return result{}, err
	}
	// The table is on stdout; rdma-perf's progress line on stderr must not
	// be read as a line of it.
	cli := cmd("1", host)
	var errOut bytes.Buffer
	cli.Stderr = &errOut
	out, err := cli.Output()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("did not finish within %v (%v)", runLimit, err)
		}
		return result{}, fmt.Errorf("client: %v: %s", err, tail(append(out, errOut.Bytes()...)))
	}
	return parse(c, out)
}

func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// parse reads the line after the table's header.
func parse(c cell, out []byte) (result, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	header := false
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, " #bytes") {
			header = true
			continue
		}
		if !header {
			continue
		}
		f := strings.Fields(l)
		var v []float64
		for _, x := range f {
			n, err := strconv.ParseFloat(x, 64)
			if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
				return result{}, fmt.Errorf("table line %q", l)
			}
			v = append(v, n)
		}
		if c.lat() && len(v) == 9 {
			return result{typical: v[4], p99: v[7], p999: v[8]}, nil
		}
		if !c.lat() && len(v) == 5 {
			return result{bw: v[3]}, nil
		}
		return result{}, fmt.Errorf("table line %q", l)
	}
	return result{}, fmt.Errorf("no table in the client's output: %s", tail(out))
}

// waitListening waits until a TCP socket listens on port.
func waitListening(ctx context.Context, port int) error {
	want := fmt.Sprintf(":%04X", port)
	for {
		b, _ := os.ReadFile("/proc/net/tcp")
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if len(f) > 3 && strings.HasSuffix(f[1], want) && f[3] == "0A" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the server did not listen on port %d", port)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

const (
	perfBegin = "<!-- rdma-perf table: begin (written by make bench) -->"
	perfEnd   = "<!-- rdma-perf table: end -->"
	hostBegin = "<!-- host benchmarks: begin (written by make bench) -->"
	hostEnd   = "<!-- host benchmarks: end -->"
	cmBegin   = "<!-- cmtime table: begin (written by make bench) -->"
	cmEnd     = "<!-- cmtime table: end -->"
	rsBegin   = "<!-- rstream table: begin (written by make bench) -->"
	rsEnd     = "<!-- rstream table: end -->"
	scBegin   = "<!-- scaling table: begin (written by make bench) -->"
	scEnd     = "<!-- scaling table: end -->"
	crBegin   = "<!-- connection rate: begin (written by make bench) -->"
	crEnd     = "<!-- connection rate: end -->"
	nvBegin   = "<!-- nvmeof table: begin (written by make bench) -->"
	nvEnd     = "<!-- nvmeof table: end -->"
)

// writeCmd puts the lab's section, and the host benchmarks' output, between
// their markers in the file; the rest of it is left as it is.
func writeCmd(args []string) error {
	fs := flag.NewFlagSet("write", flag.ContinueOnError)
	in := fs.String("in", "", "section written by run")
	host := fs.String("host", "", "output of the host benchmarks (go test -bench)")
	cm := fs.String("cmtime", "", "section written by cmtime")
	rs := fs.String("rstream", "", "section written by rstream")
	sc := fs.String("scale", "", "section written by scale")
	cr := fs.String("connrate", "", "section written by connrate")
	nv := fs.String("nvmeof", "", "section written by nvmeof")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 || *in == "" && *cm == "" && *rs == "" && *sc == "" && *cr == "" && *nv == "" && *host == "" {
		return fmt.Errorf("usage: perfbench write [-in FILE] [-host FILE] [-cmtime FILE] [-rstream FILE] [-scale FILE] [-connrate FILE] [-nvmeof FILE] BENCHMARKS.md")
	}
	md := fs.Arg(0)
	doc, err := os.ReadFile(md)
	if err != nil {
		return err
	}
	s := string(doc)
	for _, sec := range []struct{ file, begin, end string }{{*in, perfBegin, perfEnd}, {*cm, cmBegin, cmEnd}, {*rs, rsBegin, rsEnd}, {*sc, scBegin, scEnd}, {*cr, crBegin, crEnd}, {*nv, nvBegin, nvEnd}} {
		if sec.file == "" {
			continue
		}
		body, err := os.ReadFile(sec.file)
		if err != nil {
			return err
		}
		if s, err = replace(s, sec.begin, sec.end, string(body)); err != nil {
			return err
		}
	}
	if *host != "" {
		h, err := os.ReadFile(*host)
		if err != nil {
			return err
		}
		var keep []string
		for _, l := range strings.Split(string(h), "\n") {
			if strings.HasPrefix(l, "Benchmark") || strings.HasPrefix(l, "cpu:") || strings.HasPrefix(l, "goos:") || strings.HasPrefix(l, "goarch:") {
				keep = append(keep, l)
			}
		}
		if s, err = replace(s, hostBegin, hostEnd, "```\n"+strings.Join(keep, "\n")+"\n```\n"); err != nil {
			return err
		}
	}
	return os.WriteFile(md, []byte(s), 0o644)
}

func replace(doc, begin, end, body string) (string, error) {
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		return "", fmt.Errorf("markers %q and %q not found in order", begin, end)
	}
	return doc[:i+len(begin)] + "\n" + body + doc[j:], nil
}
